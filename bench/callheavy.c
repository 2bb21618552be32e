/* SPDX-License-Identifier: MIT */
/*
 * callheavy — the workload of bench/overhead.sh: tens of millions of calls to small
 * functions in a fixed call tree, so that the cost of a probe pair dominates what an
 * instrumented build adds. Every function is `noipa` (no inlining, cloning or interprocedural
 * shortcuts), so each source-level call is a real call in every build and the number of calls
 * is known exactly. Each call's argument depends on the previous call's result, so calls cannot
 * overlap one another in the out-of-order core and the baseline is a plain serial chain:
 *
 *   main ── top ×N ── mid ×4 ──┬── leaf_mul ×1
 *                              └── leaf_mix ×1
 *
 *   calls = 1 (main) + N·(1 + 4·(1 + 2)) = 13·N + 1
 *
 * Usage: callheavy [N]  (default 4000000). Prints the checksum, the exact call count and the
 * wall time of the call loop alone (CLOCK_MONOTONIC), so start-up and shut-down costs of a
 * tool (calibration, writing its data) can be told apart from the per-call cost.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOIPA __attribute__((noipa))
#ifndef LEAF_WORK
#define LEAF_WORK 12 /* multiply-adds per leaf: ~15 ns; the whole run ~0.55 s uninstrumented */
#endif

/* A chain of k dependent multiply-adds: a small piece of work that touches no memory. The
 * empty asm keeps the compiler from folding the loop into a closed form. */
static inline __attribute__((always_inline, no_instrument_function)) uint64_t spin(uint64_t x, int k)
{
	int i;

	for (i = 0; i < k; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		__asm__("" : "+r"(x));
	}
	return x;
}

static NOIPA uint64_t leaf_mul(uint64_t x)
{
	return spin(x, LEAF_WORK) ^ (x >> 29);
}

static NOIPA uint64_t leaf_mix(uint64_t x)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return spin(x, LEAF_WORK);
}

static NOIPA uint64_t mid(uint64_t x)
{
	return leaf_mix(leaf_mul(x) + 1);
}

static NOIPA uint64_t top(uint64_t x)
{
	int k;

	for (k = 0; k < 4; k++)
		x = mid(x + (uint64_t)k);
	return x;
}

static __attribute__((no_instrument_function)) uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 4000000, i, acc = 0, t0, t1;

	t0 = now_ns();
	for (i = 0; i < n; i++)
		acc = top(acc + i);
	t1 = now_ns();
	printf("checksum=%016llx calls=%llu loop_ns=%llu\n", (unsigned long long)acc,
	       (unsigned long long)(13 * n + 1), (unsigned long long)(t1 - t0));
	return 0;
}
