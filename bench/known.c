/* SPDX-License-Identifier: MIT */
/*
 * known — a program whose per-function costs are known, for bench/accuracy.sh.
 *
 * Every function's own work is a chain of dependent multiply-adds of a fixed length (no memory
 * traffic, so the cost of one iteration does not depend on what ran before). Costs range from
 * ~10 ns (tiny, called ~50 million times) to ~1 ms (large, called a few dozen times), and
 * most calls are short, so that full instrumentation makes the run several times longer:
 *
 *   main ─┬─ outer ×R ─┬─ inner ×20 ─┬─ tiny ×24
 *         │            │             └─ little ×2
 *         │            └─ small ×2
 *         ├─ medium ×R/4
 *         ├─ rec ×R (recursing REC_DEPTH more levels: REC_DEPTH+1 calls each)
 *         └─ large ×LARGE
 *
 * Every function takes the running value and returns the next, so all calls form one serial
 * dependency chain and the out-of-order core cannot overlap one call with another.
 *
 *   known [R]         the measured run; prints the wall time of main and the exact calls of
 *                     each function
 *   known --iso [ms]  ground truth: each function's *own* work (children switched off through
 *                     its `kids` argument) timed alone in a loop of calls, ~ms per repetition,
 *                     median of 7 repetitions; prints ns per call. Run uninstrumented.
 *
 * The per-function exclusive time the profile should show is then calls × ns per call.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOIPA __attribute__((noipa))

/* Own work per call, in multiply-adds (~1.35 ns each on the reference machine). */
#define K_TINY 6
#define K_LITTLE 20
#define K_REC 20
#define K_INNER 30
#define K_SMALL 300
#define K_OUTER 600
#define K_MEDIUM 4000
#define K_LARGE 800000

#define N_TINY 24   /* per inner */
#define N_LITTLE 2  /* per inner */
#define N_INNER 20  /* per outer */
#define N_SMALL 2   /* per outer */
#define REC_DEPTH 5 /* rec(x, d) recurses d more levels */
#define LARGE 40    /* calls of large, at the end */

static inline __attribute__((always_inline, no_instrument_function)) uint64_t spin(uint64_t x,
										     int k)
{
	int i;

	for (i = 0; i < k; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		__asm__("" : "+r"(x));
	}
	return x;
}

static NOIPA uint64_t tiny(uint64_t x)
{
	return spin(x, K_TINY);
}

static NOIPA uint64_t little(uint64_t x)
{
	return spin(x, K_LITTLE);
}

static NOIPA uint64_t small(uint64_t x)
{
	return spin(x, K_SMALL);
}

static NOIPA uint64_t medium(uint64_t x)
{
	return spin(x, K_MEDIUM);
}

static NOIPA uint64_t large(uint64_t x)
{
	return spin(x, K_LARGE);
}

static NOIPA uint64_t inner(uint64_t x, int kids)
{
	int i;

	x = spin(x, K_INNER);
	if (kids) {
		for (i = 0; i < N_TINY; i++)
			x = tiny(x);
		for (i = 0; i < N_LITTLE; i++)
			x = little(x);
	}
	return x;
}

static NOIPA uint64_t outer(uint64_t x, int kids)
{
	int i;

	x = spin(x, K_OUTER);
	if (kids) {
		for (i = 0; i < N_INNER; i++)
			x = inner(x, 1);
		for (i = 0; i < N_SMALL; i++)
			x = small(x);
	}
	return x;
}

static NOIPA uint64_t rec(uint64_t x, int depth)
{
	x = spin(x, K_REC);
	if (depth > 0)
		x = rec(x, depth - 1);
	return x;
}

static __attribute__((no_instrument_function)) uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- ground truth: each function's own work, alone ---- */

typedef uint64_t (*work_fn)(uint64_t);

/* The bodies as the measured run executes them, children off. Called directly below (the
 * compiler cannot see through noipa functions), so each loop pays one call per iteration,
 * as the measured run does. */
static uint64_t iso_loop(int which, uint64_t x, long n)
{
	long i;

	switch (which) {
	case 0: for (i = 0; i < n; i++) x = tiny(x); break;
	case 1: for (i = 0; i < n; i++) x = little(x); break;
	case 2: for (i = 0; i < n; i++) x = rec(x, 0); break;
	case 3: for (i = 0; i < n; i++) x = inner(x, 0); break;
	case 4: for (i = 0; i < n; i++) x = small(x); break;
	case 5: for (i = 0; i < n; i++) x = outer(x, 0); break;
	case 6: for (i = 0; i < n; i++) x = medium(x); break;
	case 7: for (i = 0; i < n; i++) x = large(x); break;
	}
	return x;
}

static const char *const names[] = { "tiny", "little", "rec", "inner", "small", "outer",
				     "medium", "large" };
#define NFUNCS 8

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int iso(double ms)
{
	uint64_t x = 12345;
	int f, rep;

	for (f = 0; f < NFUNCS; f++) {
		double v[7];
		long n = 1000;
		uint64_t t0, t1;

		/* grow the loop until one repetition takes ~ms */
		for (;;) {
			t0 = now_ns();
			x = iso_loop(f, x, n);
			t1 = now_ns();
			if ((double)(t1 - t0) >= ms * 1e6 || n > (1l << 40))
				break;
			n *= 2;
		}
		for (rep = 0; rep < 7; rep++) {
			t0 = now_ns();
			x = iso_loop(f, x, n);
			t1 = now_ns();
			v[rep] = (double)(t1 - t0) / (double)n;
		}
		qsort(v, 7, sizeof(v[0]), cmp_double);
		printf("iso %s %.4f\n", names[f], v[3]);
	}
	fprintf(stderr, "(checksum %016llx)\n", (unsigned long long)x);
	return 0;
}

/* ---- the measured run ---- */

int main(int argc, char **argv)
{
	uint64_t x = 12345, t0, t1;
	long r, rounds, i;

	if (argc > 1 && strcmp(argv[1], "--iso") == 0)
		return iso(argc > 2 ? atof(argv[2]) : 20.0);
	rounds = argc > 1 ? atol(argv[1]) : 100000;
	t0 = now_ns();
	for (r = 0; r < rounds; r++) {
		x = outer(x, 1);
		if (r % 4 == 0)
			x = medium(x);
		x = rec(x, REC_DEPTH);
	}
	for (i = 0; i < LARGE; i++)
		x = large(x);
	t1 = now_ns();
	printf("checksum=%016llx main_ns=%llu\n", (unsigned long long)x,
	       (unsigned long long)(t1 - t0));
	printf("calls tiny %ld\n", rounds * N_INNER * N_TINY);
	printf("calls little %ld\n", rounds * N_INNER * N_LITTLE);
	printf("calls rec %ld\n", rounds * (REC_DEPTH + 1));
	printf("calls inner %ld\n", rounds * N_INNER);
	printf("calls small %ld\n", rounds * N_SMALL);
	printf("calls outer %ld\n", rounds);
	printf("calls medium %ld\n", (rounds + 3) / 4);
	printf("calls large %d\n", LARGE);
	return 0;
}
