/* SPDX-License-Identifier: MIT */
/*
 * predict — integrate and difference predictors (after Livermore kernels 9 and 10): for each of
 * N particles, NSUB sub-steps of a weighted sum of its 13 predictor terms, then a chain of
 * differences that shifts new values through its terms. func: each particle is a call of
 * particle() (N per pass), the natural unit of work. dense: a region around the same work
 * (both statements, the integration and the difference chain): the same events at the same
 * places, function events in one trace and region events in the other. See kernels.h.
 */
#define K_NAME "predict"
#define K_REPS 95000
#include "kernels.h"

#define N 101
#define NP 14  /* terms per particle */
#define NSUB 3 /* sub-steps per call */

static double px[N][NP], cx[N][NP];

static NOIPA void k_init(void)
{
	k_fill(&px[0][0], N * NP, 0.0, 1.0, 19);
	k_fill(&cx[0][0], N * NP, 0.0, 1.0, 20);
}

static NOIPA void particle(long i, double c0)
{
	const double dm22 = 0.22, dm23 = 0.23, dm24 = 0.24, dm25 = 0.25, dm26 = 0.26, dm27 = 0.27,
		     dm28 = 0.28;
	double ar, br, cr;
	int s;

	EV_BEGIN("predict.particle");
	for (s = 0; s < NSUB; s++) {
		px[i][0] = dm28 * px[i][12] + dm27 * px[i][11] + dm26 * px[i][10] +
			   dm25 * px[i][9] + dm24 * px[i][8] + dm23 * px[i][7] + dm22 * px[i][6] +
			   c0 * (px[i][4] + px[i][5]) + px[i][2];
		ar = cx[i][4] + 1e-3 * px[i][0];
		br = ar - px[i][4];
		px[i][4] = ar;
		cr = br - px[i][5];
		px[i][5] = br;
		ar = cr - px[i][6];
		px[i][6] = cr;
		br = ar - px[i][7];
		px[i][7] = ar;
		cr = br - px[i][8];
		px[i][8] = br;
		ar = cr - px[i][9];
		px[i][9] = cr;
		br = ar - px[i][10];
		px[i][10] = ar;
		cr = br - px[i][11];
		px[i][11] = br;
		px[i][13] = cr - px[i][12];
		px[i][12] = cr;
		c0 *= 0.5;
	}
	EV_END("predict.particle");
}

static NOIPA double k_run(long reps)
{
	double acc = 0;
	long l, i;

	for (l = 0; l < reps; l++) {
		for (i = 0; i < N; i++)
			particle(i, 0.1);
		acc += px[l % N][0];
	}
	return acc + k_sum(&px[0][0], N * NP);
}

static NOINST void k_expect(long reps, unsigned long long *calls, unsigned long long *regions)
{
	*calls = (unsigned long long)reps * N;
	*regions = (unsigned long long)reps * N;
}

K_MAIN
