/* SPDX-License-Identifier: MIT */
/*
 * The hot parts of the sync table and the compensation, inlined into the wrappers
 * (sync_wrap.c): an object's home slot, and a thread's delay. Include after rt.h.
 */
#ifndef SONDE_RT_SYNC_INLINE_H
#define SONDE_RT_SYNC_INLINE_H

#include "rt.h"

#define RT_SYNC_BITS 16

extern struct rt_sync_obj *rt_sync_table;
extern uint64_t rt_sync_full_fp, rt_sync_skip_fp, rt_sync_op_fp;

static inline uint32_t rt_sync_home(uintptr_t key)
{
	return (uint32_t)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> (64 - RT_SYNC_BITS));
}

/* The object at addr: its home slot when it is there (nearly always), else the table's search. */
static inline struct rt_sync_obj *rt_sync_get(const void *addr, uint32_t kind, uintptr_t site)
{
	struct rt_sync_obj *o;

	if (likely(rt_sync_table)) {
		o = &rt_sync_table[rt_sync_home((uintptr_t)addr)];
		if (likely(atomic_load_explicit(&o->key, memory_order_relaxed) == (uintptr_t)addr))
			return o;
	}
	return rt_sync_find(addr, kind, site);
}

/* The thread's own probe pairs in its delay (and its skipped calls, rt_sync_delay): at the
 * start-up calibration's price, or with --insitu at the thread's in-situ price (scaled for a
 * skipped call: sprof_insitu_skip_price) from when it is usable (sync_pairs, sync_rule.h). The
 * rules compare threads' delays as they run, so the prices must be right then: at the
 * calibrated 19 ns against 1-7 ns in situ, a barrier took the wrong thread for the last to
 * arrive (docs/measurement.md, "Where it is used"). */
static inline uint64_t rt_sync_pairs_fp(const struct rt_thread *t)
{
	return sync_pairs_cost(&t->sync.pairs, t->probes, rt_sync_full_fp);
}

/* A thread's delay x = x0 + o - shift, o from its counts (costs in ticks, 16 fraction bits). */
static inline int64_t rt_sync_delay(const struct rt_thread *t)
{
	uint64_t o = (rt_sync_pairs_fp(t) +
		      sync_pairs_cost(&t->sync.skips, t->skips, rt_sync_skip_fp) +
		      t->sync.ops * rt_sync_op_fp) >> 16;

	return t->sync.x0 + (int64_t)(o + t->calib_ticks) - t->sync.shift;
}

/*
 * The part of the delay that is probe costs at the start-up price (its own probe pairs counted
 * so, its skips, and the part of x0 and shift inherited from such costs). The report prices
 * these again with the run's final costs: stored beside x wherever x is, this part is what it
 * rescales (docs/measurement.md, "Which costs").
 */
static inline int64_t rt_sync_delay_q(const struct rt_thread *t)
{
	uint64_t q = (sync_pairs_q(&t->sync.pairs, t->probes, rt_sync_full_fp) +
		      sync_pairs_q(&t->sync.skips, t->skips, rt_sync_skip_fp)) >> 16;

	return t->sync.x0q + (int64_t)q - t->sync.shiftq;
}

#endif
