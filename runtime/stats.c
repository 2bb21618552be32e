/* SPDX-License-Identifier: MIT */
/* The statistics of calibration, apart so that they can be unit-tested. */
#include "rt.h"
#include "insertion_sort.h"

#include <math.h>

RT_INSERTION_SORT(sort, double)

/*
 * Mean and standard deviation of the fastest 90 % of the values (sorted in place). A batch that
 * an interrupt or a preemption hit is slower, never faster, so only the slow tail is dropped.
 */
void rt_trimmed_stats(double *v, int n, double *mean, double *sd)
{
	double s = 0, q = 0;
	int i, keep = n - n / 10;

	*mean = *sd = 0;
	if (n <= 0)
		return;
	sort(v, n);
	for (i = 0; i < keep; i++)
		s += v[i];
	*mean = s / keep;
	for (i = 0; i < keep; i++)
		q += (v[i] - *mean) * (v[i] - *mean);
	*sd = keep > 1 ? sqrt(q / (keep - 1)) : 0;
}
