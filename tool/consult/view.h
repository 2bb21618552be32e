/* SPDX-License-Identifier: MIT */
/* The terminal view of a search: progress as nodes change state, the Search History Graph as
 * a tree, and the explanation of each bottleneck (what, where, when, share, a profile). */
#ifndef SONDE_CONSULT_VIEW_H
#define SONDE_CONSULT_VIEW_H

#include <stdio.h>

#include "engine.h"
#include "trace_source.h"

struct cs_view {
	FILE *out;
	enum cs_state *seen; /* the states shown so far */
	uint32_t nseen;
	int quiet;
};

/* engine->progress: one line per node that changed state in the last step. */
void cs_view_progress(struct cs_engine *e, void *view);
void cs_view_free(struct cs_view *v);
/* The graph as an indented tree (each node under its first parent). */
void cs_view_tree(FILE *out, const struct cs_engine *e);
/* Profile rows of a focus over an interval, from the source (may be NULL: no table). */
typedef uint32_t (*cs_profile_fn)(void *arg, const struct cs_focus *f, uint64_t t0,
				  uint64_t t1, struct ts_row *rows, uint32_t max, double *span);
/* The bottlenecks explained; returns how many. */
uint32_t cs_view_explain(FILE *out, const struct cs_engine *e, uint64_t run_ns,
			 cs_profile_fn profile, void *arg);

/* Live: what the search measured of a module's procedures (consult/live_profile.c). */
struct cs_live_row {
	const char *name;   /* the procedure (the engine's) */
	double cpu_s;       /* CPU time measured, callees' included */
	double measured_s;  /* over this many seconds */
	double calls_per_s; /* entries counted where it had a point, -1: none */
};
typedef uint32_t (*cs_live_profile_fn)(void *arg, const struct cs_engine *e,
				       const struct cs_focus *module, struct cs_live_row *rows,
				       uint32_t max);
uint32_t cs_view_explain_live(FILE *out, const struct cs_engine *e, uint64_t run_ns,
			      cs_live_profile_fn profile, void *arg);

#endif
