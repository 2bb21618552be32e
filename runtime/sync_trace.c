/* SPDX-License-Identifier: MIT */
/*
 * Synchronization events of `sonde run --trace --sync` (docs/format-trace.md): a release
 * (unlock, post, signal, a barrier arrival) records SYNC_RELEASE(object, seq); a call that
 * blocked records SYNC_WAIT(object) when it starts and SYNC_DONE(object, seq) when it got
 * through, seq naming the release that let it through (the object's release count then; for a
 * barrier, its generation). `sonde analyze` matches them into happens-before edges. The object
 * is defined once per process by a DEF_SYNC record, in the stream of the first thread to use it.
 */
#include "rt.h"

#include <errno.h>

#define RT_SYNC_TRACED 0x200u /* flags: its DEF_SYNC is in the trace */

static void define(struct rt_thread *t, struct rt_sync_obj *o, uint32_t id)
{
	uint64_t rec[5];
	uintptr_t site = atomic_load_explicit(&o->site, memory_order_relaxed);
	uint64_t vaddr;
	int32_t mod = rt_sync_site_module(site, &vaddr);

	rec[0] = id | (uint64_t)atomic_load_explicit(&o->kind, memory_order_relaxed) << 32;
	rec[1] = atomic_load_explicit(&o->key, memory_order_relaxed);
	rec[2] = site;
	rec[3] = (uint32_t)mod |
		 (uint64_t)(atomic_load_explicit(&o->flags, memory_order_relaxed) & 0xffu) << 32;
	rec[4] = vaddr;
	if (rec[1] == 0 || (atomic_load_explicit(&o->flags, memory_order_relaxed) &
			    SPROF_SYNC_F_OVERFLOW))
		rec[1] = 0;
	rt_trace_long(t, STRC_DEF_SYNC, rec, sizeof(rec));
}

void rt_sync_trace(struct rt_thread *t, struct rt_sync_obj *o, unsigned type, uint64_t seq)
{
	uint32_t id = rt_sync_id(o);
	int saved = errno; /* a buffer hand-off makes a system call: errno stays the program's */

	if (!(atomic_fetch_or_explicit(&o->flags, RT_SYNC_TRACED, memory_order_relaxed) &
	      RT_SYNC_TRACED))
		define(t, o, id);
	rt_trace_record(t, type, id, &seq, type == STRC_SYNC_WAIT ? 0 : 1);
	errno = saved;
}
