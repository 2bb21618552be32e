/* SPDX-License-Identifier: MIT */
/*
 * firstsum — first-order recurrence, the first sum (after Livermore kernel 11):
 *   x[k] = x[k-1] + y[k]
 * func: one call of first_sum() per pass. dense: a region around each strip of STRIP steps.
 * See kernels.h.
 */
#define K_NAME "firstsum"
#define K_REPS 300000
#include "kernels.h"

#define N 1001
#ifndef STRIP
#define STRIP 24
#endif

static double x[N], y[N];

static NOIPA void k_init(void)
{
	k_fill(y, N, -0.5, 1.0, 10);
}

static NOIPA void first_sum(double x0)
{
	long k0, k, k1;

	x[0] = x0;
	for (k0 = 1; k0 < N; k0 += STRIP) {
		k1 = k0 + STRIP < N ? k0 + STRIP : N;
		EV_BEGIN("firstsum.strip");
		for (k = k0; k < k1; k++)
			x[k] = x[k - 1] + y[k];
		EV_END("firstsum.strip");
	}
}

static NOIPA double k_run(long reps)
{
	double acc = 0;
	long l;

	for (l = 0; l < reps; l++) {
		first_sum(1e-3 * x[N - 1]); /* each pass depends on the one before */
		acc += x[N / 3];
	}
	return acc + k_sum(x, N);
}

static NOINST void k_expect(long reps, unsigned long long *calls, unsigned long long *regions)
{
	*calls = (unsigned long long)reps;
	*regions = (unsigned long long)reps * ((N - 1 + STRIP - 1) / STRIP);
}

K_MAIN
