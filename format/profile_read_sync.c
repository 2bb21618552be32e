/* SPDX-License-Identifier: MIT */
/* The validating reader of the SYNC and SYNC_COMP records (profile_sync.h,
 * docs/format-profile.md); called by profile_read.c for those record types. */
#include "profile_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sprof_read_sync(struct sprof_file *f, struct sprof_buf *b, char *err, size_t errlen)
{
	struct sprof_sync *s;

	f->syncs = sprof_grow(f->syncs, &f->nsyncs, sizeof(*s));
	if (!f->syncs)
		return snprintf(err, errlen, "too many synchronization objects"), -1;
	s = &f->syncs[f->nsyncs - 1];
	s->kind = sprof_get_u32(b);
	s->flags = sprof_get_u32(b);
	s->addr = sprof_get_u64(b);
	s->site = sprof_get_u64(b);
	s->site_module = (int32_t)sprof_get_u32(b);
	sprof_get_u32(b);
	s->site_vaddr = sprof_get_u64(b);
	s->acquires = sprof_get_u64(b);
	s->shared = sprof_get_u64(b);
	s->contended = sprof_get_u64(b);
	s->failed = sprof_get_u64(b);
	s->timeouts = sprof_get_u64(b);
	s->releases = sprof_get_u64(b);
	s->broadcasts = sprof_get_u64(b);
	s->wait_ns = sprof_get_u64(b);
	s->wait_max_ns = sprof_get_u64(b);
	s->hold_ns = sprof_get_u64(b);
	s->hold_samples = sprof_get_u64(b);
	if (b->error)
		return 0; /* the caller reports the size */
	if (s->kind == 0 || s->kind >= SPROF_SYNC_KINDS)
		return snprintf(err, errlen, "SYNC record of unknown kind %u", s->kind), -1;
	if (s->flags & ~(SPROF_SYNC_F_INIT | SPROF_SYNC_F_OVERFLOW))
		return snprintf(err, errlen, "SYNC record with unknown flags 0x%x", s->flags), -1;
	if (s->site_module < -1 || (s->site_module >= 0 && (uint32_t)s->site_module >= f->nmodules))
		return snprintf(err, errlen, "SYNC record names a module that is not in the file"),
		       -1;
	if (s->wait_max_ns > s->wait_ns || s->hold_samples > s->acquires)
		return snprintf(err, errlen, "SYNC record at 0x%llx: inconsistent values",
				(unsigned long long)s->addr), -1;
	return 0;
}

int sprof_read_sync_comp(struct sprof_file *f, struct sprof_buf *b, char *err, size_t errlen)
{
	struct sprof_sync_comp *c;
	uint32_t i, found = 0;

	f->sync_comps = sprof_grow(f->sync_comps, &f->nsync_comps, sizeof(*c));
	if (!f->sync_comps)
		return snprintf(err, errlen, "too many SYNC_COMP records"), -1;
	c = &f->sync_comps[f->nsync_comps - 1];
	c->thread = sprof_get_u32(b);
	c->wakes_unneeded = sprof_get_u32(b);
	c->probes = sprof_get_u64(b);
	c->skips = sprof_get_u64(b);
	c->ops = sprof_get_u64(b);
	c->o_sync_ns = sprof_get_f64(b);
	c->calib_ns = sprof_get_u64(b);
	c->x0_ns = (int64_t)sprof_get_u64(b);
	c->shift_ns = (int64_t)sprof_get_u64(b);
	c->waits = sprof_get_u64(b);
	c->wait_ns = sprof_get_u64(b);
	c->wait_c_ns = (int64_t)sprof_get_u64(b);
	if (b->error)
		return 0;
	for (i = 0; i < f->nthreads; i++)
		found |= f->threads[i].index == c->thread;
	for (i = 0; i + 1 < f->nsync_comps; i++)
		if (f->sync_comps[i].thread == c->thread)
			found = 0;
	if (!found)
		return snprintf(err, errlen, "SYNC_COMP record for thread %u: no such thread, or twice",
				c->thread), -1;
	if (!(c->o_sync_ns >= 0 && c->o_sync_ns < 1e9) || c->waits > c->wait_ns + c->waits)
		return snprintf(err, errlen, "SYNC_COMP record for thread %u: values out of range",
				c->thread), -1;
	return 0;
}

void sprof_free_sync(struct sprof_file *f)
{
	free(f->syncs);
	free(f->sync_comps);
}
