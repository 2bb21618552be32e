/* SPDX-License-Identifier: MIT */
/*
 * The in-situ price of a probe pair (`sonde run --insitu`, docs/measurement.md "The probes'
 * price in situ"): the estimator alone, without the runtime, so that unit tests can check it
 * (tests/unit/test_insitu.c). All times in ns.
 *
 * A pair of adjacent windows of the same hot function's calls: N calls measured (A), then as
 * many taken unmeasured (B: each still runs its probes, the skip path). The same code ran in
 * both, so what differs is the probes: one pair costs d = (T_A - T_B) / N more than an
 * unmeasured one in situ (T in thread CPU time), and the unmeasured one o_skip scaled alike
 * (insitu_pair_ns). Pairs during which the thread was preempted are kept (counted); the
 * price is the interquartile mean of the pairs kept (insitu_estimate), used only when it is
 * stable and plausible.
 */
#ifndef SONDE_RT_INSITU_EST_H
#define SONDE_RT_INSITU_EST_H

#include <stdint.h>

#include "../format/profile_insitu.h"
#include "insertion_sort.h"

#define INSITU_MAX_PAIRS 64 /* pairs kept per thread: then it stops measuring */
#define INSITU_MIN_PAIRS 5  /* fewer: the calibrated price */

/*
 * Windows are timed in the thread's CPU time: time the thread spent off its CPU (preempted, or
 * asleep in a wait the program makes) is not in it, so a preemption does not disturb a pair by
 * its length, only by the caches another task left cold (a few microseconds against the ~60 us
 * the probes add to a measured window: the trimmed mean absorbs it). A pair is kept when both
 * windows have a time and made as many wrapped synchronization calls, and of them as many waits
 * (struct insitu_sync: --sync; counters, no system call): a barrier or a contended lock costs
 * microseconds of CPU in the kernel, several nanoseconds a call of a window, and one window in
 * three with one against none left a thread of bench/sync_comp.c's barrier priced 5.7 +- 21 ns
 * where its pairs cost 4. A release that wakes a sleeper costs as much, but it is timed where it
 * happens and kept out of the window (insitu.c, window_ns): in bench/sync_comp.c serial the
 * thread that holds the lock wakes the other nearly every round, and its price was 3 times the
 * CPU time its probes added.
 */
struct insitu_sync {
	uint64_t ops, waits;
};

static inline int insitu_pair_clean(double a_ns, double b_ns, struct insitu_sync a,
				    struct insitu_sync b)
{
	return a_ns > 0 && b_ns > 0 && a.ops == b.ops && a.waits == b.waits;
}

/*
 * One pair's estimate: measured window a_ns, unmeasured b_ns, of n calls each; o_full and o_skip
 * the calibrated prices of a measured and an unmeasured pair. The windows' difference per call
 * d is what a measured pair costs in situ above an unmeasured one; the unmeasured pair's own
 * cost in situ cannot be measured (no call of the function runs without its probes), and the
 * code around the calls slows it as it slows a measured pair: in bench/mpi_pi.c's loop an
 * unmeasured pair costs 1.3 times its o_skip (gauged with the function excluded), a measured one
 * 1.2 times its o_full (docs/benchmarks.md). So the unmeasured pair is priced at o_skip scaled by
 * the measured pairs' ratio d / (o_full - o_skip), as the in-run calibration scales o_skip
 * (writer.c): the pair costs d * o_full / (o_full - o_skip). d + o_skip when the calibration
 * cannot scale (o_full not above o_skip).
 */
static inline double insitu_pair_ns(double a_ns, double b_ns, uint32_t n, double o_full,
				    double o_skip)
{
	double d;

	if (!n)
		return 0;
	d = (a_ns - b_ns) / n;
	return o_full > o_skip && o_skip >= 0 ? d * o_full / (o_full - o_skip) : d + o_skip;
}

RT_INSERTION_SORT(insitu_sort, float)

static inline double insitu_median_sorted(const float *v, uint32_t n)
{
	return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

/*
 * The median of v[0..n) and its robust spread, 1.4826 times the median absolute deviation (the
 * standard deviation for normal noise, untouched by a few wild pairs). tmp holds n floats.
 */
/* v[0..n) sorted into tmp (n > 0). */
static inline void insitu_sorted_copy(const float *v, uint32_t n, float *tmp)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		tmp[i] = v[i];
	insitu_sort(tmp, n);
}

/* The robust spread of v[0..n) about its median med (n > 0); tmp is overwritten. */
static inline double insitu_spread(const float *v, uint32_t n, double med, float *tmp)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		tmp[i] = (float)((double)v[i] > med ? (double)v[i] - med : med - (double)v[i]);
	insitu_sort(tmp, n);
	return 1.4826 * insitu_median_sorted(tmp, n);
}

static inline void insitu_median(const float *v, uint32_t n, float *tmp, double *med,
				 double *spread)
{
	*med = *spread = 0;
	if (!n)
		return;
	insitu_sorted_copy(v, n, tmp);
	*med = insitu_median_sorted(tmp, n);
	*spread = insitu_spread(v, n, *med, tmp);
}

/*
 * The thread's estimate from its n pairs: the interquartile mean (the mean of the middle half,
 * n/4 pairs dropped at each end), with the spread of insitu_median. Not the median: a window of
 * W calls holds the program's other periodic work (a barrier or a condition wait once per round
 * of P calls) once more or once less than its neighbour as the boundaries fall, so the pairs
 * gather in two modes, +e and -e about the price (e: that work's CPU time over W; the B window
 * has it as often as the A window on average). The median then falls on the edge of whichever
 * mode has a pair more: in bench/sync_comp.c barrier (P = 600, W = 1024), modes at +-2.3 ns about
 * a price of 0.2, medians of -0.10 to -0.14 ns in four of four runs, interquartile means
 * +0.07 to +0.24. Trimmed, the mean keeps the median's indifference to the few pairs a
 * preemption or a page fault throws far out. tmp holds n floats.
 */
static inline void insitu_estimate(const float *v, uint32_t n, float *tmp, double *est,
				   double *spread)
{
	uint32_t i, cut = n / 4;
	double sum = 0;

	*est = *spread = 0;
	if (!n)
		return;
	insitu_sorted_copy(v, n, tmp);
	for (i = cut; i < n - cut; i++)
		sum += (double)tmp[i];
	*est = sum / (double)(n - 2 * cut);
	*spread = insitu_spread(v, n, insitu_median_sorted(tmp, n), tmp);
}

/*
 * Whether the estimate est of n pairs is used (SPROF_INSITU_USED) or the calibrated price o_full
 * is kept. Its standard error is taken as the median's, 1.2533 spread / sqrt(n) (the
 * interquartile mean's is about the same for normal noise). Fewer than INSITU_MIN_PAIRS pairs
 * are unstable. An estimate above four calibrated pairs, or below 0 by more than twice its
 * standard error and by more than a tenth of o_full (the unmeasured windows clearly the dearer:
 * their work differed), is implausible; between that and 0 the probes cost nothing measurable
 * in situ: used, at 0 (insitu_used_price; before the tenth, a worker of bench/sync_comp.c lock
 * priced -0.8 +- 0.2 ns against 18.6 fell back to the calibration, 18.6 ns a pair). Otherwise
 * it is used when it is precise, a standard error within 5 % of the larger of it and o_full, or
 * when the pairs tell it from the calibrated price, o_full more than two standard errors away;
 * else (unstable) the pairs cannot tell the two apart, and the calibration stands.
 * Before, a value at or below o_skip was implausible: right while the estimate was d + o_skip
 * (d <= 0), not once o_skip is scaled with d (insitu_pair_ns), when it refused every pair that
 * costs in situ less than about a tenth of its calibration (a probe that overlaps with the
 * program's own work: bench/sync_comp.c's step on this session's machine, 0.3 ns against 18.9);
 * and the standard error had to be within 5 % of the estimate itself, which no precision meets
 * near 0, nor the noisy pairs of threads that sleep and wake every round (pinned apart under
 * load: 1.0-1.7 ns), though 0.3 +- 1.7 ns tells well enough that a pair does not cost 18.9. In
 * both cases the thread fell back to the calibrated price.
 */
static inline int insitu_judge(uint32_t n, double est, double spread, double o_full)
{
	double se = 1.2533 * spread / __builtin_sqrt((double)(n ? n : 1));
	double off = est > o_full ? est - o_full : o_full - est;

	if (n < INSITU_MIN_PAIRS)
		return SPROF_INSITU_UNSTABLE;
	if (!(est >= -2 * se || est >= -0.1 * o_full) || !(est <= 4 * o_full))
		return SPROF_INSITU_IMPLAUSIBLE;
	if (se <= 0.05 * (est > o_full ? est : o_full) || off > 2 * se)
		return SPROF_INSITU_USED;
	return SPROF_INSITU_UNSTABLE;
}

/* The price of a used estimate, and the one an INSITU record carries for any status: a probe
 * pair costs nothing less than nothing (the reader refuses a negative price). */
static inline double insitu_used_price(double est)
{
	return est > 0 ? est : 0;
}

#endif
