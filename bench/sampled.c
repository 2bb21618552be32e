/* SPDX-License-Identifier: MIT */
/*
 * sampled — the workload of bench/sampling.sh: CPU-bound work in functions of known weights at
 * different depths, so that a sampler has stacks to walk and shares to estimate:
 *
 *   main ── step ×R ──┬── big        8 units
 *                     ├── medium     4 units
 *                     ├── small      1 unit
 *                     └── descend(20) ... descend ── deep   3 units  (a chain 21 frames deep)
 *
 * Every function is noipa: each call is a real call in every build. Usage: sampled [R]
 * (default 150: about 1 s of CPU here). Prints "checksum=X calls=N", the same at every run.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NOIPA __attribute__((noipa))
#define UNIT 250000ul

NOIPA uint64_t big(uint64_t x);
NOIPA uint64_t medium(uint64_t x);
NOIPA uint64_t small(uint64_t x);
NOIPA uint64_t deep(uint64_t x);
NOIPA uint64_t descend(int level, uint64_t x);
NOIPA uint64_t step(uint64_t x);

static uint64_t calls;

/* A chain of dependent multiply-adds, inlined into each caller: the work is the caller's own. */
static inline __attribute__((always_inline)) uint64_t spin(uint64_t n, uint64_t x)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

uint64_t big(uint64_t x)
{
	calls++;
	return spin(8 * UNIT, x);
}

uint64_t medium(uint64_t x)
{
	calls++;
	return spin(4 * UNIT, x);
}

uint64_t small(uint64_t x)
{
	calls++;
	return spin(UNIT, x);
}

uint64_t deep(uint64_t x)
{
	calls++;
	return spin(3 * UNIT, x);
}

uint64_t descend(int level, uint64_t x)
{
	uint64_t r;

	calls++;
	r = level ? descend(level - 1, x) : deep(x);
	__asm__ volatile("" : "+r"(r)); /* a real call, not a loop: every level has its frame */
	return r + 1;
}

uint64_t step(uint64_t x)
{
	calls++;
	x = big(x);
	x = medium(x);
	x = small(x);
	x = descend(20, x);
	__asm__ volatile("" : "+r"(x)); /* not a tail call: step stays on the stack */
	return x;
}

int main(int argc, char **argv)
{
	unsigned long r, rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 150;
	uint64_t x = 1;

	for (r = 0; r < rounds; r++)
		x = step(x);
	printf("checksum=%llu calls=%llu\n", (unsigned long long)x, (unsigned long long)calls);
	return 0;
}
