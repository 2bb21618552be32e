/* SPDX-License-Identifier: MIT */
/*
 * gcc -O2 (-fipa-ra) keeps the caller's values in call-clobbered registers across calls to a
 * function it knows leaves them alone: an exit hook that changed any register would break this
 * loop (test: sonde run --dynamic; the output and the call counts must be exact).
 */
#include <stdio.h>

__attribute__((noinline)) static long leaf(long x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) static long twice(long x)
{
	return leaf(x) + leaf(x + 1);
}

__attribute__((noinline)) static long loop(long n)
{
	long s = 0, i;

	for (i = 0; i < n; i++)
		s += (twice(i) ^ i) + (i & 7);
	return s;
}

int main(void)
{
	printf("%ld\n", loop(100000));
	return 0;
}
