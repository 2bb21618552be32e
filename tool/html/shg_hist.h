/* SPDX-License-Identifier: MIT */
/* The time histograms of the metric-focus pairs the search measured (shg_hist.c). */
#ifndef SONDE_HTML_SHG_HIST_H
#define SONDE_HTML_SHG_HIST_H

#include <stdio.h>

#include "consult/engine.h"

struct shg_rec;
struct shg_rec *shg_rec_new(void);
void shg_rec_free(struct shg_rec *r);
/* The engine's progress callback (arg: the shg_rec): keeps each step's increases. */
void shg_rec_step(struct cs_engine *e, void *arg);
/* A chart per metric of each bottleneck's test (8 at most). */
void shg_histograms(FILE *out, const struct cs_engine *e, const struct shg_rec *r,
		    uint64_t run_ns, uint64_t period_ns);

#endif
