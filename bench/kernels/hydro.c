/* SPDX-License-Identifier: MIT */
/*
 * hydro — hydrodynamics fragment (after Livermore kernel 1):
 *   x[k] = q + y[k] * (r * z[k+10] + t * z[k+11])
 * func: one call of hydro() per pass over N points. dense: a region around each strip of STRIP
 * points of the inner loop. See kernels.h.
 */
#define K_NAME "hydro"
#define K_REPS 250000
#include "kernels.h"

#define N 1001
#ifndef STRIP
#define STRIP 16
#endif

static double x[N], y[N], z[N + 11];

static NOIPA void k_init(void)
{
	k_fill(y, N, 0.0, 1.0, 1);
	k_fill(z, N + 11, 0.0, 1.0, 2);
}

static NOIPA void hydro(double q, double r, double t)
{
	long k0, k, k1;

	for (k0 = 0; k0 < N; k0 += STRIP) {
		k1 = k0 + STRIP < N ? k0 + STRIP : N;
		EV_BEGIN("hydro.strip");
		for (k = k0; k < k1; k++)
			x[k] = q + y[k] * (r * z[k + 10] + t * z[k + 11]);
		EV_END("hydro.strip");
	}
}

static NOIPA double k_run(long reps)
{
	double q = 0.5, acc = 0;
	long l;

	for (l = 0; l < reps; l++) {
		hydro(q, 0.25, 0.125);
		q = 0.5 + 1e-3 * x[(l * 7) % N]; /* each pass depends on the one before */
		acc += x[l % N];
	}
	return acc + k_sum(x, N);
}

static NOINST void k_expect(long reps, unsigned long long *calls, unsigned long long *regions)
{
	*calls = (unsigned long long)reps;
	*regions = (unsigned long long)reps * ((N + STRIP - 1) / STRIP);
}

K_MAIN
