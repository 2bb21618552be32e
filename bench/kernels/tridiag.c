/* SPDX-License-Identifier: MIT */
/*
 * tridiag — tri-diagonal elimination, below the diagonal (after Livermore kernel 5):
 *   x[i] = z[i] * (y[i] - x[i-1])
 * A serial recurrence. func: each strip of STRIP steps is a call of tri_strip(); dense: a region
 * around the same strips. The two traces have the same events at the same places, function
 * events in one and region events in the other. See kernels.h.
 */
#define K_NAME "tridiag"
#define K_REPS 100000
#include "kernels.h"

#define N 1001
#ifndef STRIP
#define STRIP 8
#endif

static double x[N], y[N], z[N];

static NOIPA void k_init(void)
{
	k_fill(x, N, 0.0, 1.0, 7);
	k_fill(y, N, 0.0, 1.0, 8);
	k_fill(z, N, 0.0, 0.9, 9);
}

static NOIPA double tri_strip(double prev, long i0, long i1)
{
	long i;

	EV_BEGIN("tridiag.strip");
	for (i = i0; i < i1; i++)
		prev = x[i] = z[i] * (y[i] - prev);
	EV_END("tridiag.strip");
	return prev;
}

static NOIPA void tridiag(void)
{
	double prev = x[0];
	long i0;

	for (i0 = 1; i0 < N; i0 += STRIP)
		prev = tri_strip(prev, i0, i0 + STRIP < N ? i0 + STRIP : N);
}

static NOIPA double k_run(long reps)
{
	double acc = 0;
	long l;

	for (l = 0; l < reps; l++) {
		tridiag();
		x[0] = x[N - 1]; /* each pass depends on the one before */
		acc += x[N / 2];
	}
	return acc + k_sum(x, N);
}

static NOINST void k_expect(long reps, unsigned long long *calls, unsigned long long *regions)
{
	*calls = (unsigned long long)reps * (1 + (N - 1 + STRIP - 1) / STRIP);
	*regions = (unsigned long long)reps * ((N - 1 + STRIP - 1) / STRIP);
}

K_MAIN
