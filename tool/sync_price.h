/* SPDX-License-Identifier: MIT */
/*
 * A thread's delay at its end, from its SYNC_COMP record and the file's CALIB costs (MODELS §2.4,
 * docs/measurement.md "Which costs"): a header of its own so that unit tests can check the
 * runtime's rule, its repricing and this together (tests/unit/test_sync.c).
 */
#ifndef SONDE_SYNC_PRICE_H
#define SONDE_SYNC_PRICE_H

#include "profile_read.h"

/*
 * x = x0 + o - shift with o, the thread's overhead, from its counts at the file's costs; x0 and
 * shift come priced at those costs too (the runtime prices their probe-cost parts again when it
 * writes them: runtime/sync_table.c), so every probe pair in x costs the same whichever thread
 * ran it. *o (when not NULL) gets o.
 */
static inline double sync_comp_x(const struct sprof_sync_comp *c, const struct sprof_calib *cal,
				 double *o)
{
	double oh = (double)c->probes * cal->o_full + (double)c->skips * cal->o_skip +
		    (double)c->ops * c->o_sync_ns + (double)c->calib_ns;

	if (o)
		*o = oh;
	return (double)c->x0_ns + oh - (double)c->shift_ns;
}

#endif
