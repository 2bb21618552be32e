/* SPDX-License-Identifier: MIT */
/*
 * inner — inner product (after Livermore kernel 3):  q += z[k] * x[k]
 * A serial chain of additions (no reassociation at -O2). func: one call of dot() per pass.
 * dense: a region around each strip of STRIP terms. See kernels.h.
 */
#define K_NAME "inner"
#define K_REPS 350000
#include "kernels.h"

#define N 1001
#ifndef STRIP
#define STRIP 24
#endif

static double x[N], z[N];

static NOIPA void k_init(void)
{
	k_fill(x, N, -1.0, 2.0, 5);
	k_fill(z, N, 0.0, 1.0, 6);
}

static NOIPA double dot(double q)
{
	long k0, k, k1;

	for (k0 = 0; k0 < N; k0 += STRIP) {
		k1 = k0 + STRIP < N ? k0 + STRIP : N;
		EV_BEGIN("inner.strip");
		for (k = k0; k < k1; k++)
			q += z[k] * x[k];
		EV_END("inner.strip");
	}
	return q;
}

static NOIPA double k_run(long reps)
{
	double q = 0;
	long l;

	for (l = 0; l < reps; l++) {
		q = dot(q * 1e-3);
		x[l % N] += 1e-9 * q; /* each pass depends on the one before */
	}
	return q + k_sum(x, N);
}

static NOINST void k_expect(long reps, unsigned long long *calls, unsigned long long *regions)
{
	*calls = (unsigned long long)reps;
	*regions = (unsigned long long)reps * ((N + STRIP - 1) / STRIP);
}

K_MAIN
