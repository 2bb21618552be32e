/*
 * Two hot functions in a known CPU ratio, for sampling: hot_a runs three times the iterations of
 * hot_b with the same loop (solve calls both, ROUNDS times). Each one's thread CPU time is
 * measured around its calls and printed on stderr ("cpu hot_a NS hot_b NS"), so a test can
 * compare the sampled shares with what the program itself saw; stdout is "sum N", the same at
 * every run. Built with frame pointers, its sampled stacks are main;solve;hot_a and
 * main;solve;hot_b. The argument scales the work (default 80: about 1 s of CPU here).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned long cpu_a, cpu_b;

static unsigned long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (unsigned long)ts.tv_sec * 1000000000ul + (unsigned long)ts.tv_nsec;
}

static inline __attribute__((always_inline)) unsigned long spin(unsigned long n, unsigned long x)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

__attribute__((noinline)) unsigned long hot_a(unsigned long n, unsigned long x);
__attribute__((noinline)) unsigned long hot_b(unsigned long n, unsigned long x);
__attribute__((noinline)) unsigned long solve(unsigned long n, unsigned long x);

unsigned long hot_a(unsigned long n, unsigned long x)
{
	return spin(3 * n, x);
}

unsigned long hot_b(unsigned long n, unsigned long x)
{
	return spin(n, x);
}

unsigned long solve(unsigned long n, unsigned long x)
{
	unsigned long t0 = cpu_ns(), t1;

	x = hot_a(n, x);
	t1 = cpu_ns();
	cpu_a += t1 - t0;
	x = hot_b(n, x);
	cpu_b += cpu_ns() - t1;
	return x;
}

int main(int argc, char **argv)
{
	unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 80, r, x = 1;

	for (r = 0; r < rounds; r++)
		x = solve(2000000, x);
	printf("sum %lu\n", x);
	fprintf(stderr, "cpu hot_a %lu hot_b %lu\n", cpu_a, cpu_b);
	return 0;
}
