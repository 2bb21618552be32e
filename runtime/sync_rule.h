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

#endif
