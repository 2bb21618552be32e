/* SPDX-License-Identifier: MIT */
/*
 * Livermore-loop style kernels for bench/trace_accuracy.sh (docs/benchmarks.md, "Traces"),
 * written for sonde after the loops of McMahon's Livermore Fortran Kernels. Each kernel is a
 * small function called many times; each file builds three ways from the same source:
 *
 *   base   gcc -O2                               no events
 *   func   sonde cc -- gcc -O2                   an ENTER and an EXIT per call of every kernel
 *   (= -finstrument-functions -g)                function (per-row or per-element work split
 *                                                into small functions where that is natural)
 *   dense  gcc -O2 -DDENSE -Iinclude             SONDE_REGION_BEGIN/END (include/sonde.h)
 *                                                around inner-loop bodies or statements: many
 *                                                more events, the run several times longer
 *
 * All three are built with -falign-loops=64: without it, where a hot loop happens to fall
 * relative to a 64-byte line differs between builds, and that alone made firstsum 25 % to 70 %
 * slower in its -finstrument-functions build with the hooks present but empty — a change no
 * model of probe costs can remove.
 *
 * Every kernel function is `noipa` (no inlining or cloning: the number of calls is what the
 * source says) and the harness below is `no_instrument_function`, so the events are known
 * exactly; the program prints them (calls= for func, regions= for dense) and a checksum of its
 * results, which must be the same in all three builds.
 *
 * Each kernel file defines K_NAME, K_REPS (default repetitions), and
 *   static void k_init(void);                       fill the arrays (noipa)
 *   static double k_run(long reps);                 the timed work, returns a checksum (noipa)
 *   static NOINST void k_expect(long reps, unsigned long long *calls, unsigned long long *regions);
 * then says K_MAIN. The program prints
 *   kernel=NAME reps=R checksum=C main_ns=T calls=N regions=M
 * T being the wall time (CLOCK_MONOTONIC) of the whole work: k_init and k_run, inside one
 * instrumented function `k_work` (func) or one region "work" (dense), so that the trace's first
 * and last events bracket what T measures.
 */
#ifndef BENCH_KERNELS_H
#define BENCH_KERNELS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sonde.h"

#define NOIPA __attribute__((noipa))
#define NOINST __attribute__((no_instrument_function))

#ifdef DENSE
#define EV_BEGIN(name) SONDE_REGION_BEGIN(name)
#define EV_END(name) SONDE_REGION_END(name)
#else
#define EV_BEGIN(name) ((void)0)
#define EV_END(name) ((void)0)
#endif

static NOINST inline uint64_t k_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static NOINST inline double k_sum(const double *a, long n)
{
	double s = 0;
	long i;

	for (i = 0; i < n; i++)
		s += a[i];
	return s;
}

/* A deterministic fill in [lo, lo + span): the same in every build. */
static NOINST inline void k_fill(double *a, long n, double lo, double span, uint64_t seed)
{
	long i;

	for (i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		a[i] = lo + span * (double)(seed >> 11) * (1.0 / 9007199254740992.0);
	}
}

static void k_init(void);
static double k_run(long reps);
static void k_expect(long reps, unsigned long long *calls, unsigned long long *regions);

/* calls: k_work, k_init, k_run (+ the kernel's); regions: "work" (+ the kernel's) */
#define K_MAIN                                                                                     \
	static NOIPA double k_work(long reps)                                                      \
	{                                                                                          \
		double c;                                                                          \
		EV_BEGIN("work");                                                                  \
		k_init();                                                                          \
		c = k_run(reps);                                                                   \
		EV_END("work");                                                                    \
		return c;                                                                          \
	}                                                                                          \
	NOINST int main(int argc, char **argv)                                                     \
	{                                                                                          \
		long reps = argc > 1 ? atol(argv[1]) : K_REPS;                                     \
		unsigned long long calls = 0, regions = 0;                                         \
		uint64_t t0, t1;                                                                   \
		double c;                                                                          \
		t0 = k_now_ns();                                                                   \
		c = k_work(reps);                                                                  \
		t1 = k_now_ns();                                                                   \
		k_expect(reps, &calls, &regions);                                                  \
		printf("kernel=%s reps=%ld checksum=%.17g main_ns=%llu calls=%llu regions=%llu\n", \
		       K_NAME, reps, c, (unsigned long long)(t1 - t0), calls + 3, regions + 1);    \
		return 0;                                                                          \
	}

#endif
