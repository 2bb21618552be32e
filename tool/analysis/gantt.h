/* SPDX-License-Identifier: MIT */
/*
 * A Gantt chart of a trace as a self-contained SVG (no scripts, no fonts, no links): per thread a
 * pair of lanes, measured above and approximated below, with a bar per function or region
 * activation (nesting depth as rows, the top few levels), a colour per function and a legend,
 * a time axis in ms, and the create and join edges as lines (seed 000, Figs. 13-17).
 */
#ifndef SONDE_GANTT_H
#define SONDE_GANTT_H

#include <stdio.h>

#include "perturb.h"
#include "trace_read.h"

struct gantt_opts {
	int depth;         /* call levels drawn per lane (1-16) */
	int width;         /* px */
	const char *title; /* shown at the top; may be NULL */
	int max_rects;     /* bars drawn at most (0: a default for a file of its own) */
};

/*
 * Draw trace f, approximated in t (the last model run), to out. names: by index in f->funcs
 * (NULL entries, or names NULL: "f<id>"). 0, or -1 when writing failed.
 */
int gantt_write(FILE *out, const struct strc_file *f, const struct pt_trace *t,
		const char *const *names, const struct gantt_opts *o);

#endif
