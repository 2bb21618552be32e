/* SPDX-License-Identifier: MIT */
/*
 * dyn_target — the processes bench/dynamic.sh instruments while they run (docs/benchmarks.md,
 * "Dynamic instrumentation"). Built with gcc -O2 and no instrumentation of any kind. Timed work
 * is done on request, in lockstep with the driver (bench/dyn_driver.c), so that the process can
 * be patched, set up and unpatched between two timings:
 *
 *   dyn_target prim    stdin "N REPS": REPS times, N calls of work() then N calls of ref()
 *                      (alternating which goes first); prints the fastest of each:
 *                      "work_ns=.. ref_ns=.. calls=N sum=..". work and ref are the same code at
 *                      the same alignment: work is the one patched, ref the baseline.
 *   dyn_target csprim  stdin "N REPS": the same with cs_work_loop(N) and cs_ref_loop(N), two
 *                      twin loops that each call cs_callee() N times (a direct call): the call
 *                      site in cs_work_loop is the one patched.
 *   dyn_target heavy   stdin "N": bench/callheavy.c's loop with N outer iterations (its own
 *                      output line: checksum, calls, loop_ns).
 *   dyn_target spin    calls work() forever (a busy process to attach to).
 *
 * A line "q" (or end of input) ends prim and heavy. Every mode first says "ready".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

/* callheavy's functions and its loop, as callheavy_main */
int callheavy_main(int argc, char **argv);
long work(long x);
long ref(long x);
#define main callheavy_main
#include "callheavy.c"
#undef main

#define FN __attribute__((noipa, aligned(64)))

FN long work(long x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

FN long ref(long x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

FN long cs_callee(long x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

FN long cs_work_loop(long n)
{
	long i, s = 0;

	for (i = 0; i < n; i++)
		s += cs_callee(s + i);
	return s;
}

FN long cs_ref_loop(long n)
{
	long i, s = 0;

	for (i = 0; i < n; i++)
		s += cs_callee(s + i);
	return s;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t loop(long (*f)(long), long n, long *sum)
{
	uint64_t t0 = mono_ns();
	long i, s = 0;

	for (i = 0; i < n; i++)
		s += f(i);
	t0 = mono_ns() - t0;
	*sum += s;
	return t0;
}

static int prim(void)
{
	long (*volatile w)(long) = work, (*volatile r)(long) = ref;
	char line[128];
	long n, reps, k, sum;

	while (fgets(line, sizeof(line), stdin) && line[0] != 'q') {
		uint64_t bw = UINT64_MAX, br = UINT64_MAX, t;

		if (sscanf(line, "%ld %ld", &n, &reps) != 2 || n <= 0 || reps <= 0)
			return 2;
		sum = 0;
		for (k = 0; k < reps; k++) {
			if (k & 1) {
				t = loop(r, n, &sum);
				br = t < br ? t : br;
				t = loop(w, n, &sum);
				bw = t < bw ? t : bw;
			} else {
				t = loop(w, n, &sum);
				bw = t < bw ? t : bw;
				t = loop(r, n, &sum);
				br = t < br ? t : br;
			}
		}
		printf("work_ns=%llu ref_ns=%llu calls=%ld sum=%ld\n", (unsigned long long)bw,
		       (unsigned long long)br, n, sum);
		fflush(stdout);
	}
	return 0;
}

static uint64_t time_loop(long (*f)(long), long n, long *sum)
{
	uint64_t t0 = mono_ns();

	*sum += f(n);
	return mono_ns() - t0;
}

static int csprim(void)
{
	long (*volatile w)(long) = cs_work_loop, (*volatile r)(long) = cs_ref_loop;
	char line[128];
	long n, reps, k, sum;

	while (fgets(line, sizeof(line), stdin) && line[0] != 'q') {
		uint64_t bw = UINT64_MAX, br = UINT64_MAX;

		if (sscanf(line, "%ld %ld", &n, &reps) != 2 || n <= 0 || reps <= 0)
			return 2;
		sum = 0;
		for (k = 0; k < reps; k++) { /* alternating which goes first */
			uint64_t a = time_loop(k & 1 ? r : w, n, &sum);
			uint64_t b = time_loop(k & 1 ? w : r, n, &sum);
			uint64_t tw = k & 1 ? b : a, tr = k & 1 ? a : b;

			bw = tw < bw ? tw : bw;
			br = tr < br ? tr : br;
		}
		printf("work_ns=%llu ref_ns=%llu calls=%ld sum=%ld\n", (unsigned long long)bw,
		       (unsigned long long)br, n, sum);
		fflush(stdout);
	}
	return 0;
}

static int heavy(void)
{
	char line[128], arg[32], name[] = "callheavy";
	long n;

	while (fgets(line, sizeof(line), stdin) && line[0] != 'q') {
		char *av[] = { name, arg, NULL };

		if (sscanf(line, "%ld", &n) != 1 || n <= 0)
			return 2;
		snprintf(arg, sizeof(arg), "%ld", n);
		callheavy_main(2, av);
		fflush(stdout);
	}
	return 0;
}

static int spin_forever(void)
{
	long (*volatile w)(long) = work;
	long s = 0, i;

	for (i = 0;; i++)
		s = w(s + i);
	return (int)s;
}

int main(int argc, char **argv)
{
	/* the driver attaches as our parent; `sonde attach` as a sibling, where Yama asks this */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	printf("ready\n");
	fflush(stdout);
	if (argc > 1 && strcmp(argv[1], "prim") == 0)
		return prim();
	if (argc > 1 && strcmp(argv[1], "csprim") == 0)
		return csprim();
	if (argc > 1 && strcmp(argv[1], "heavy") == 0)
		return heavy();
	if (argc > 1 && strcmp(argv[1], "spin") == 0)
		return spin_forever();
	fprintf(stderr, "usage: dyn_target prim|csprim|heavy|spin\n");
	return 2;
}
