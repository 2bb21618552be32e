/* SPDX-License-Identifier: MIT */
/*
 * The shared-memory compensation rule (MODELS §2.4), alone so that unit tests can check it on
 * synthetic delays (tests/unit/test_sync.c). All values in one unit (ticks or ns).
 */
#ifndef SONDE_SYNC_RULE_H
#define SONDE_SYNC_RULE_H

#include <stdint.h>

/*
 * A wait of w that ended because a releaser with delay x_s released: the waiter's new delay,
 * x_r' = min(x_r + w, x_s); *w_c gets the approximated wait w' = w + x_r - x_r' (>= 0).
 */
static inline int64_t sync_rule_wait(int64_t x_r, uint64_t w, int64_t x_s, int64_t *w_c)
{
	int64_t x_new = x_r + (int64_t)w;

	if (x_s < x_new)
		x_new = x_s;
	*w_c = (int64_t)w + x_r - x_new;
	return x_new;
}

/*
 * An acquisition that found the release already done: it completed g >= 0 after the release,
 * having waited w (little or nothing). Without measurement it would have waited only if the
 * release came after its arrival there too, so the releaser's delay counts with the g it had
 * in hand: x_r' = min(x_r + w, x_s + g), w' as above. With g = 0 this is sync_rule_wait, which
 * is right for a wait that the release ended (the wake-up latency stays in w').
 */
static inline int64_t sync_rule_late(int64_t x_r, uint64_t w, int64_t x_s, uint64_t g,
				     int64_t *w_c)
{
	return sync_rule_wait(x_r, w, x_s + (int64_t)g, w_c);
}

/*
 * A wait that a wake-up ended: released d after the wait began (0 <= d <= w), the waiter ran
 * again w - d later (the wake-up latency). Without measurement the waiter arrived at its start
 * less x_r and the release came at its time less x_s. Only if it arrived first did it sleep, and
 * pay the same latency: x_r' = x_s. Otherwise it found the lock free, and its whole measured wait,
 * the latency too, is delay: x_r' = x_r + w. sync_rule_wait (d = w) cannot tell the second case
 * within the latency after the release, and keeps the latency as a wait there
 * (docs/measurement.md, "Wake-ups").
 */
static inline int64_t sync_rule_woken(int64_t x_r, uint64_t w, uint64_t d, int64_t x_s,
				      int64_t *w_c)
{
	int64_t x_new = x_r + (int64_t)(d < w ? d : w) > x_s ? x_s : x_r + (int64_t)w;

	*w_c = (int64_t)w + x_r - x_new;
	return x_new;
}

/*
 * A release at t_rel, by a thread of delay x_s, that woke a waiter of approximated arrival arr
 * (its clock before the lock call less its delay then): without measurement the release came
 * before that arrival, the waiter found the lock free and nobody slept, so the wake-up that the
 * release paid (a futex wake: microseconds of the waker's CPU) is the measurement's cost, and goes
 * into the waker's delay. The waiter's rule decides the same case alike (sync_rule_woken:
 * x_r + d <= x_s). SYNC_NO_ARRIVAL: no waiter noted its arrival (a fresh object's 0).
 */
#define SYNC_NO_ARRIVAL 0

static inline int sync_rule_wake_unneeded(int64_t arr, uint64_t t_rel, int64_t x_s)
{
	return arr != SYNC_NO_ARRIVAL && (int64_t)t_rel - x_s <= arr;
}

/*
 * What a sleep on a mutex would have been without measurement (sync_rule_collide): the waiter
 * found the lock free, followed the release on its way into the futex sleep, or slept. A
 * fourth case: it slept there but not here (the measured release came within s).
 */
enum sync_collision { SYNC_FREE, SYNC_FOLLOWED, SYNC_SLEPT, SYNC_WOULD_SLEEP };

/*
 * The case of a mutex wait (released d after its start, d <= w) whose waiter has delay x_r and
 * whose releaser x_s: without measurement the release came d_c = x_r + d - x_s after the
 * waiter's arrival. A release within s of the arrival finds the waiter still on its way into
 * the futex sleep (s measured by sync_collide.c).
 */
static inline enum sync_collision sync_rule_collision(int64_t x_r, uint64_t d, int64_t x_s,
						      uint64_t s)
{
	int64_t d_c = x_r + (int64_t)d - x_s;

	if (d_c <= 0)
		return SYNC_FREE;
	if (d_c < (int64_t)s)
		return SYNC_FOLLOWED;
	return d < s ? SYNC_WOULD_SLEEP : SYNC_SLEPT;
}

/*
 * sync_rule_woken with the uninstrumented collision's cost (SONDE_SYNC_RULE=collide,
 * docs/measurement.md "Collisions"). A wait of w, released d after it began; the latency
 * lat = w - d after the release is a sleep's wake-up when the waiter had gone to sleep, a
 * collision's short cost when the release came while it was still on its way. With s the time
 * that way takes, c what such a collision costs and l what a wake-up costs (all three measured
 * in the running process), the waiter's approximated wait w' = d_c + its latency there:
 *     found it free (d_c <= 0)   w' = 0              x_r' = x_r + w
 *     followed (0 < d_c < s)     w' = d_c + min(lat, c)
 *     slept (d_c >= s, d >= s)   w' = d_c + lat      x_r' = x_s (sync_rule_woken)
 *     would sleep (d < s <= d_c) w' = d_c + max(lat, l)
 * With s = 0 this is sync_rule_woken.
 */
static inline int64_t sync_rule_collide(int64_t x_r, uint64_t w, uint64_t d, int64_t x_s,
					uint64_t s, uint64_t c, uint64_t l, int64_t *w_c)
{
	uint64_t dd = d < w ? d : w, lat = w - dd;
	int64_t x_new = x_s;

	switch (sync_rule_collision(x_r, dd, x_s, s)) {
	case SYNC_FREE:
		x_new = x_r + (int64_t)w;
		break;
	case SYNC_FOLLOWED:
		x_new = x_s + (int64_t)(lat - (lat < c ? lat : c));
		break;
	case SYNC_WOULD_SLEEP:
		x_new = x_s - (int64_t)(lat < l ? l - lat : 0);
		break;
	case SYNC_SLEPT:
		break;
	}
	*w_c = (int64_t)w + x_r - x_new;
	return x_new;
}

/*
 * The calibration's line between a collision's latency c and a wake-up's l (sync_collide.c):
 * halfway, or 0 when a wake-up costs less than twice a collision (no step for the rule to tell).
 */
static inline uint64_t sync_collide_mid(uint64_t c, uint64_t l)
{
	return l >= 2 * c && l > 0 ? c + (l - c) / 2 : 0;
}

/*
 * Two releases that a wait needed both, the second g after the first (a condition variable's
 * signal, then the unlock of the mutex the waiter takes again): the one release at the second's
 * time that stands for them. Unmeasured, the waiter runs after the later of the two approximated
 * releases, at (second - x_2) or (first - x_1) = (second - (x_1 + g)): the delay of that release
 * is min(x_2, x_1 + g). Returns 1 when it is the first's (x_1 + g), 0 when the second's.
 */
static inline int sync_rule_then(int64_t x_1, uint64_t g, int64_t x_2, int64_t *x)
{
	if (x_1 + (int64_t)g < x_2) {
		*x = x_1 + (int64_t)g;
		return 1;
	}
	*x = x_2;
	return 0;
}

/*
 * The probe-cost part of the new delay x_new that sync_rule_wait or sync_rule_late gave to a
 * thread whose delay was x_r (of it q_r probe costs) after a wait of w: its own when the rule
 * kept x_r + w (w is time, not probe costs), else the releaser's q_s. The report prices these
 * parts again with the run's final probe costs (tool/sync_price.h).
 */
static inline int64_t sync_rule_q(int64_t x_r, uint64_t w, int64_t x_new, int64_t q_r, int64_t q_s)
{
	return x_new == x_r + (int64_t)w ? q_r : q_s;
}

/*
 * A delay part v (x0 or shift) priced again: its probe-cost part q was counted at the runtime's
 * start-up price, and k is the run's final price over it (docs/measurement.md "Which costs").
 */
static inline double sync_reprice(double v, double q, double k)
{
	return v + (k - 1) * q;
}

/*
 * A barrier's releaser delay: the barrier opened at the latest measured arrival m; without
 * measurement it would open at the latest approximated arrival (arrival - delay) a. A measured
 * arrival is taken when the thread enters the real call, after the wrapper's own bookkeeping at
 * arrival (the barrier cannot open before it); an approximated one at the wrapper's entry, with
 * the delay the thread had then (an unmeasured run does no bookkeeping).
 */
static inline int64_t sync_rule_barrier(int64_t latest_m, int64_t latest_a)
{
	return latest_m - latest_a;
}

/*
 * The wrapper's own time after a call that waited and returned at t1: its bookkeeping until
 * t_end (shared counters, the rule above: cache lines another CPU wrote last) and one clock read
 * (the parts of the reads at the wait's start and at t_end that fall outside the measured
 * spans). No calibrated cost covers it (o_sync is half an uncontended lock/unlock pair on a
 * private mutex), so it is measured where it happens and added to the thread's delay after the
 * rule: shift -= own (docs/measurement.md, "What a wrapped call costs").
 */
static inline int64_t sync_rule_own(uint64_t t1, uint64_t t_end, int64_t clock)
{
	return (t_end > t1 ? (int64_t)(t_end - t1) : 0) + clock;
}

/*
 * A thread's own probe pairs in its delay (fixed point, as rt_sync_full_fp), or its own skipped
 * calls (as rt_sync_skip_fp, priced alike), counted in segments: those up to `mark` at the
 * prices they had (o_fold; q_fold the part at the start-up price), those since at `fp` when priced (--insitu: the thread's in-situ price, usable), else at
 * the start-up price. A new price counts from the moment it comes: pairs already counted keep
 * theirs, so that a delay never jumps (docs/measurement.md, "Where it is used").
 */
struct sync_pairs {
	uint64_t o_fold, q_fold, mark, fp;
	int priced;
};

static inline uint64_t sync_pairs_cost(const struct sync_pairs *p, uint64_t pairs,
				       uint64_t start_fp)
{
	return p->o_fold + (pairs - p->mark) * (p->priced ? p->fp : start_fp);
}

/* Of that cost, the part counted at the start-up price (what the end prices again). */
static inline uint64_t sync_pairs_q(const struct sync_pairs *p, uint64_t pairs, uint64_t start_fp)
{
	return p->q_fold + (p->priced ? 0 : (pairs - p->mark) * start_fp);
}

/* From `pairs` on, the pairs cost fp (usable) or the start-up price again (not). */
static inline void sync_pairs_price(struct sync_pairs *p, uint64_t pairs, uint64_t start_fp,
				    int usable, uint64_t fp)
{
	p->o_fold = sync_pairs_cost(p, pairs, start_fp);
	p->q_fold = sync_pairs_q(p, pairs, start_fp);
	p->mark = pairs;
	p->fp = usable ? fp : 0;
	p->priced = usable;
}

#endif
