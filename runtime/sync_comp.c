/* SPDX-License-Identifier: MIT */
/*
 * Shared-memory parallel compensation (MODELS §2.4, last paragraph; docs/measurement.md).
 *
 * Each thread has o, its accumulated measurement overhead (probe pairs times their calibrated
 * cost, wrapped calls times theirs, in-run calibration time), and x, its delay: how much earlier
 * it would be where it is without measurement. x = x0 + o - shift, where x0 was inherited from
 * the creator and shift sums (w' - w) over the thread's waits. A releaser stores its x in the
 * object; an acquire that waited w applies
 *     x_r' = min(x_r + w, x_s)      w' = w + x_r - x_r'
 * pthread_join takes the exiting thread's x; a barrier takes the latest approximated arrival.
 * o is kept as counts (probes, skips, ops): the writer stores them and the tool recomputes o
 * with the final calibration; the min() above uses the start-up calibration. So that what a
 * thread inherits can be priced again too, the probe-cost part of every delay (xq) travels with
 * it: x0q and shiftq are the parts of x0 and shift that came from probe costs.
 */
#include "rt.h"
#include "sync_inline.h"
#include "sync_rule.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int rt_sync_on;
double rt_sync_o_ns, rt_sync_full_ns, rt_sync_skip_ns;

/* Costs in ticks, fixed point with 16 fraction bits: x costs three multiplications. */
uint64_t rt_sync_full_fp, rt_sync_skip_fp, rt_sync_op_fp;
static int64_t clock_ticks; /* one clock read, calibrated */

static uint64_t to_fp(double ns)
{
	double v = ns * rt_ticks_per_ns() * 65536.0;

	return v > 0 ? (uint64_t)v : 0;
}

int64_t rt_sync_x(const struct rt_thread *t)
{
	return rt_sync_delay(t);
}

int64_t rt_sync_xq(const struct rt_thread *t)
{
	return rt_sync_delay_q(t);
}

/* The delay a wait leaves (x_new, by one of the rules of sync_rule.h), its probe-cost part and
 * the wait's counts. */
static void waited(struct rt_thread *t, uint64_t w, int64_t x_r, int64_t x_new, int64_t w_c,
		   int64_t xq_s)
{
	int64_t q_r = rt_sync_xq(t);

	t->sync.shift += x_r - x_new;
	t->sync.shiftq += q_r - sync_rule_q(x_r, w, x_new, q_r, xq_s);
	t->sync.waits++;
	t->sync.wait += w;
	t->sync.wait_c += w_c;
}

/* A wait of w ticks that ended g ticks after a releaser whose delay was x_s (xq_s of it probe
 * costs) released (g = 0: the release ended the wait). */
void rt_sync_inherit(struct rt_thread *t, uint64_t w, int64_t x_s, int64_t xq_s, uint64_t g)
{
	int64_t x_r = rt_sync_x(t), w_c, x_new = sync_rule_late(x_r, w, x_s, g, &w_c);

	waited(t, w, x_r, x_new, w_c, xq_s);
}

/* A sleep of w ticks on a mutex, released d ticks after it began (sync_rule_woken). */
void rt_sync_woken(struct rt_thread *t, uint64_t w, uint64_t d, int64_t x_s, int64_t xq_s)
{
	int64_t x_r = rt_sync_x(t), w_c, x_new = sync_rule_woken(x_r, w, d, x_s, &w_c);

	waited(t, w, x_r, x_new, w_c, xq_s);
}

/* The same for a mutex: with SONDE_SYNC_RULE=collide, sync_rule_collide with the collision
 * costs measured at start-up (sync_collide.c); its cases are counted. */
void rt_sync_mutex_woken(struct rt_thread *t, uint64_t w, uint64_t d, int64_t x_s, int64_t xq_s)
{
	int64_t x_r, w_c, x_new, x_old;
	uint64_t r = d < w ? d : w; /* the release, after the wait began */

	if (likely(!rt_sync_collide_on)) {
		rt_sync_woken(t, w, d, x_s, xq_s);
		return;
	}
	x_r = rt_sync_x(t);
	x_old = sync_rule_woken(x_r, w, d, x_s, &w_c);
	x_new = sync_rule_collide(x_r, w, d, x_s, rt_sync_collide_s, rt_sync_collide_c,
				  rt_sync_collide_l, &w_c);
	rt_sync_collide_count(sync_rule_collision(x_r, r, x_s, rt_sync_collide_s), x_new, x_old,
			      x_r + (int64_t)r - x_s);
	waited(t, w, x_r, x_new, w_c, xq_s);
}

/*
 * At the end of a wrapper whose real call waited (or timed out) and returned at t1: its own
 * bookkeeping since then, measured, adds to the thread's delay (sync_rule_own). Only calls that
 * read the clock anyway come here: an uncontended acquisition reads none, and costs o_sync.
 */
void rt_sync_own(struct rt_thread *t, uint64_t t1)
{
	t->sync.shift -= sync_rule_own(t1, rt_now(), clock_ticks);
}

/* --insitu: the thread's in-situ price, when usable, for its pairs and (scaled) its skipped
 * calls from now on (sync_inline.h). */
void rt_sync_set_price(struct rt_thread *t, int usable, double ns)
{
	double skip = sprof_insitu_skip_price(ns, rt_sync_full_ns, rt_sync_skip_ns);

	sync_pairs_price(&t->sync.pairs, t->probes, rt_sync_full_fp, usable, to_fp(ns));
	sync_pairs_price(&t->sync.skips, t->skips, rt_sync_skip_fp, usable, to_fp(skip));
}

/* A new thread starts as late as its creator was when it created it. */
void rt_sync_thread_start(struct rt_thread *t, int64_t x0, int64_t x0q)
{
	t->sync.x0 = x0;
	t->sync.x0q = x0q;
}

/* An ending thread leaves its delay where pthread_join finds it: the object of its pthread_t. */
void rt_sync_thread_exit(struct rt_thread *t)
{
	struct rt_sync_obj *o;

	if (!rt_sync_on)
		return;
	o = rt_sync_find((const void *)pthread_self(), SPROF_SYNC_THREAD, 0);
	atomic_store_explicit(&o->x, rt_sync_x(t), memory_order_relaxed);
	atomic_store_explicit(&o->xq, rt_sync_xq(t), memory_order_relaxed);
	atomic_store_explicit(&o->ended, rt_now(), memory_order_relaxed);
	atomic_fetch_or_explicit(&o->flags, RT_SYNC_EXITED, memory_order_release);
}

/*
 * After a join that returned 0 (begun at t0, returned at t1): the joined thread's delay. A thread
 * that ended before the join began was not waited for: its delay counts with the time since
 * its end (sync_rule_late), else a join of a long-finished, less delayed thread would pull the
 * joiner's delay down to it.
 */
void rt_sync_join(struct rt_thread *t, uint64_t thread, uint64_t t0, uint64_t t1)
{
	struct rt_sync_obj *o = rt_sync_find((const void *)thread, SPROF_SYNC_THREAD, 0);
	uint64_t w = t1 - t0, ended;

	t->sync.ops++;
	atomic_fetch_add_explicit(&o->acquires, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&o->wait, w, memory_order_relaxed);
	if (atomic_load_explicit(&o->flags, memory_order_acquire) & RT_SYNC_EXITED) {
		ended = atomic_load_explicit(&o->ended, memory_order_relaxed);
		rt_sync_inherit(t, w, atomic_load_explicit(&o->x, memory_order_relaxed),
				atomic_load_explicit(&o->xq, memory_order_relaxed),
				ended < t0 && t1 > ended ? t1 - ended : 0);
	}
	rt_sync_own(t, t1);
}

/* Whether this acquisition's hold time is measured: about one in 32, at random intervals so
 * that a periodic pattern of holds is not sampled in step with it. */
int rt_sync_hold_sample(struct rt_thread *t)
{
	uint32_t r;

	if (likely(t->sync.hold_countdown--))
		return 0;
	r = t->sync.rand ? t->sync.rand : (uint32_t)(uintptr_t)t | 1u;
	r ^= r << 13;
	r ^= r >> 17;
	r ^= r << 5;
	t->sync.rand = r;
	t->sync.hold_countdown = r & 63; /* 0..63: one sample per 32 acquisitions on average */
	return 1;
}

/* At start-up, after the probes' calibration: SONDE_SYNC, the table, the wrappers' cost. */
void rt_sync_init(void)
{
	const char *v = getenv("SONDE_SYNC");
	struct rt_thread *scratch;
	double ns = 0;

	rt_sync_on = v && *v && *v != '0';
	if (!rt_sync_on)
		return;
	rt_sync_wrap_init();
	if (rt_sync_table_init() != 0) {
		rt_log("--sync: cannot map the table of synchronization objects: not measuring them");
		rt_sync_on = 0;
		return;
	}
	scratch = rt_thread_new(0);
	if (scratch && rt_sync_calibrate(scratch, &ns) == 0)
		rt_sync_o_ns = ns;
	if (scratch)
		rt_thread_release(scratch);
	rt_sync_full_ns = rt_calib.o_full;
	rt_sync_skip_ns = rt_calib.o_skip;
	rt_sync_full_fp = to_fp(rt_calib.o_full);
	rt_sync_skip_fp = to_fp(rt_calib.o_skip);
	rt_sync_op_fp = to_fp(rt_sync_o_ns);
	clock_ticks = (int64_t)(rt_calib.clock_ns * rt_ticks_per_ns());
	rt_sync_collide_init();
}

/* A forked child starts its delays afresh, as it starts its profile. */
void rt_sync_after_fork(struct rt_thread *t)
{
	if (t)
		memset(&t->sync, 0, sizeof(t->sync));
	if (rt_sync_on)
		rt_sync_table_reset();
	rt_sync_collide_after_fork();
}
