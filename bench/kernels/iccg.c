/* SPDX-License-Identifier: MIT */
/*
 * iccg — incomplete Cholesky conjugate gradient excerpt (after Livermore kernel 2): a cascade of
 * levels, each half as long as the one before,
 *   x[i] = x[k] - v[k] * x[k-1] - v[k+1] * x[k+1]
 * func: one call of iccg_level() per level (LEVELS per pass). dense: a region around each
 * strip of up to STRIP statements of a level. See kernels.h.
 */
#define K_NAME "iccg"
#define K_REPS 200000
#include "kernels.h"

#define N 1024 /* a power of two: levels of N/2, N/4, ..., 1 statements */
#ifndef STRIP
#define STRIP 16
#endif

static double x[2 * N + 2], v[2 * N + 2];

static NOIPA void k_init(void)
{
	k_fill(x, 2 * N + 2, 0.0, 1.0, 3);
	k_fill(v, 2 * N + 2, 0.0, 0.25, 4);
}

/* One level: statements for k = ipnt+1, ipnt+3, ... < ipntp, writing x[i0+1], x[i0+2], ... */
static NOIPA void iccg_level(long ipnt, long ipntp, long i0)
{
	long k0, k, k1, i = i0;

	for (k0 = ipnt + 1; k0 < ipntp; k0 += 2 * STRIP) {
		k1 = k0 + 2 * STRIP < ipntp ? k0 + 2 * STRIP : ipntp;
		EV_BEGIN("iccg.strip");
		for (k = k0; k < k1; k += 2) {
			i++;
			x[i] = x[k] - v[k] * x[k - 1] - v[k + 1] * x[k + 1];
		}
		EV_END("iccg.strip");
	}
}

static NOIPA double iccg(void)
{
	long ii = N, ipntp = 0, ipnt;

	do {
		ipnt = ipntp;
		ipntp += ii;
		ii /= 2;
		iccg_level(ipnt, ipntp, ipntp - 1);
	} while (ii > 0);
	return x[ipntp - 1];
}

static NOIPA double k_run(long reps)
{
	double acc = 0;
	long l;

	for (l = 0; l < reps; l++) {
		acc += iccg();
		x[0] = 0.5 + 1e-3 * acc / (double)(l + 1); /* each pass depends on the one before */
	}
	return acc + k_sum(x, 2 * N + 2);
}

static NOINST void k_expect(long reps, unsigned long long *calls, unsigned long long *regions)
{
	unsigned long long lv = 0, st = 0;
	long ii = N;

	do {
		long n = ii / 2; /* statements of this level (none in the last, ii = 1) */

		lv++;
		st += (unsigned long long)((n + STRIP - 1) / STRIP);
		ii /= 2;
	} while (ii > 0);
	*calls = (unsigned long long)reps * (1 + lv);
	*regions = (unsigned long long)reps * st;
}

K_MAIN
