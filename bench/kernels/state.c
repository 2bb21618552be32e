/* SPDX-License-Identifier: MIT */
/*
 * state — equation of state fragment (after Livermore kernel 7):
 *   x[k] = u[k] + r*(z[k] + r*y[k]) + t*(u[k+3] + r*(u[k+2] + r*u[k+1])
 *          + t*(u[k+6] + q*(u[k+5] + q*u[k+4])))
 * func: one call of state() per pass. dense: a region around each strip of STRIP points.
 * See kernels.h.
 */
#define K_NAME "state"
#define K_REPS 65000
#include "kernels.h"

#define N 995
#ifndef STRIP
#define STRIP 6
#endif

static double x[N], y[N], z[N], u[N + 6];

static NOIPA void k_init(void)
{
	k_fill(y, N, 0.0, 1.0, 11);
	k_fill(z, N, 0.0, 1.0, 12);
	k_fill(u, N + 6, 0.0, 1.0, 13);
}

static NOIPA void state(double q, double r, double t)
{
	long k0, k, k1;

	for (k0 = 0; k0 < N; k0 += STRIP) {
		k1 = k0 + STRIP < N ? k0 + STRIP : N;
		EV_BEGIN("state.strip");
		for (k = k0; k < k1; k++)
			x[k] = u[k] + r * (z[k] + r * y[k]) +
			       t * (u[k + 3] + r * (u[k + 2] + r * u[k + 1]) +
				    t * (u[k + 6] + q * (u[k + 5] + q * u[k + 4])));
		EV_END("state.strip");
	}
}

static NOIPA double k_run(long reps)
{
	double q = 0.5, acc = 0;
	long l;

	for (l = 0; l < reps; l++) {
		state(q, 0.25, 0.125);
		q = 0.5 + 1e-3 * x[(l * 13) % N]; /* each pass depends on the one before */
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
