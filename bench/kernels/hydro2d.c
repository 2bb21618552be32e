/* SPDX-License-Identifier: MIT */
/*
 * hydro2d — 2-D explicit hydrodynamics fragment (after Livermore kernel 18): on a KN x JN grid,
 * three sweeps per time step: the fluxes za, zb; the velocities zu, zv; the positions zr, zz.
 * func: one call per sweep and row (flux_row, velocity_row, position_row: 3 x (KN-2) calls per
 * step). dense: a region around each statement's loop over a strip of STRIP columns of a row
 * (statement level: 6 statements). The state is put back to its start every RESET steps, so the
 * values stay bounded however many steps run. See kernels.h.
 */
#define K_NAME "hydro2d"
#define K_REPS 60000
#include "kernels.h"

#include <string.h>

#define KN 7   /* rows 0..6; rows 1..5 are updated */
#define JN 101 /* columns 0..100; columns 1..99 are updated */
#ifndef STRIP
#define STRIP 20
#endif
#define RESET 64

static double za[KN][JN + 1], zb[KN][JN + 1], zp[KN][JN + 1], zq[KN][JN + 1], zr[KN][JN + 1],
	zm[KN][JN + 1], zu[KN][JN + 1], zv[KN][JN + 1], zz[KN][JN + 1];
static double zr0[KN][JN + 1], zz0[KN][JN + 1];

static NOIPA void k_init(void)
{
	k_fill(&zp[0][0], KN * (JN + 1), 0.0, 1.0, 14);
	k_fill(&zq[0][0], KN * (JN + 1), 0.0, 1.0, 15);
	k_fill(&zr[0][0], KN * (JN + 1), 1.0, 1.0, 16);
	k_fill(&zm[0][0], KN * (JN + 1), 1.0, 1.0, 17);
	k_fill(&zz[0][0], KN * (JN + 1), 0.0, 1.0, 18);
	memcpy(zr0, zr, sizeof zr);
	memcpy(zz0, zz, sizeof zz);
}

#define STRIPS(j0, j1)                                                                             \
	for (j0 = 1; j0 < JN - 1; j0 += STRIP)                                                     \
		if ((j1 = j0 + STRIP < JN - 1 ? j0 + STRIP : JN - 1), 1)

static NOIPA void flux_row(long k)
{
	long j0, j1, j;

	STRIPS(j0, j1)
	{
		EV_BEGIN("hydro2d.za");
		for (j = j0; j < j1; j++)
			za[k][j] = (zp[k + 1][j - 1] + zq[k + 1][j - 1] - zp[k][j - 1] - zq[k][j - 1]) *
				   (zr[k][j] + zr[k][j - 1]) / (zm[k][j - 1] + zm[k + 1][j - 1]);
		EV_END("hydro2d.za");
		EV_BEGIN("hydro2d.zb");
		for (j = j0; j < j1; j++)
			zb[k][j] = (zp[k][j - 1] + zq[k][j - 1] - zp[k][j] - zq[k][j]) *
				   (zr[k][j] + zr[k - 1][j]) / (zm[k][j] + zm[k][j - 1]);
		EV_END("hydro2d.zb");
	}
}

static NOIPA void velocity_row(long k, double s)
{
	long j0, j1, j;

	STRIPS(j0, j1)
	{
		EV_BEGIN("hydro2d.zu");
		for (j = j0; j < j1; j++)
			zu[k][j] += s * (za[k][j] * (zz[k][j] - zz[k][j + 1]) -
					 za[k][j - 1] * (zz[k][j] - zz[k][j - 1]) -
					 zb[k][j] * (zz[k][j] - zz[k - 1][j]) +
					 zb[k + 1][j] * (zz[k][j] - zz[k + 1][j]));
		EV_END("hydro2d.zu");
		EV_BEGIN("hydro2d.zv");
		for (j = j0; j < j1; j++)
			zv[k][j] += s * (za[k][j] * (zr[k][j] - zr[k][j + 1]) -
					 za[k][j - 1] * (zr[k][j] - zr[k][j - 1]) -
					 zb[k][j] * (zr[k][j] - zr[k - 1][j]) +
					 zb[k + 1][j] * (zr[k][j] - zr[k + 1][j]));
		EV_END("hydro2d.zv");
	}
}

static NOIPA void position_row(long k, double t)
{
	long j0, j1, j;

	STRIPS(j0, j1)
	{
		EV_BEGIN("hydro2d.zr");
		for (j = j0; j < j1; j++)
			zr[k][j] = zr[k][j] + t * zu[k][j];
		EV_END("hydro2d.zr");
		EV_BEGIN("hydro2d.zz");
		for (j = j0; j < j1; j++)
			zz[k][j] = zz[k][j] + t * zv[k][j];
		EV_END("hydro2d.zz");
	}
}

static NOINST void reset(void)
{
	memcpy(zr, zr0, sizeof zr);
	memcpy(zz, zz0, sizeof zz);
	memset(zu, 0, sizeof zu);
	memset(zv, 0, sizeof zv);
}

static NOIPA double k_run(long reps)
{
	double acc = 0;
	long l, k;

	for (l = 0; l < reps; l++) {
		if (l % RESET == 0) {
			acc += zr[3][50] + zz[3][50];
			reset();
		}
		for (k = 1; k < KN - 1; k++)
			flux_row(k);
		for (k = 1; k < KN - 1; k++)
			velocity_row(k, 0.0041);
		for (k = 1; k < KN - 1; k++)
			position_row(k, 0.0037);
	}
	return acc + k_sum(&zr[0][0], KN * (JN + 1)) + k_sum(&zz[0][0], KN * (JN + 1));
}

static NOINST void k_expect(long reps, unsigned long long *calls, unsigned long long *regions)
{
	unsigned long long strips = (JN - 2 + STRIP - 1) / STRIP;

	*calls = (unsigned long long)reps * 3 * (KN - 2);
	*regions = (unsigned long long)reps * 3 * (KN - 2) * strips * 2;
}

K_MAIN
