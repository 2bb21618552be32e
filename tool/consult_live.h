/* SPDX-License-Identifier: MIT */
/* Between sonde consult's two files: the options, and what the live search shares with the
 * post-mortem one (cmd_consult.c, cmd_consult_live.c). */
#ifndef SONDE_CONSULT_LIVE_CMD_H
#define SONDE_CONSULT_LIVE_CMD_H

#include "consult/engine.h"
#include "consult/hyp.h"

struct co_opts {
	const char *path, *json, *dot, *file, *trigger, *dir;
	char **argv; /* live: the program to start (after --) */
	const char **thresholds;
	uint32_t nthresholds;
	uint32_t pid;
	double period_ms;
	double seconds; /* live: --for */
	int quiet;
	struct cs_params par;
};

/* The built-in hypotheses, --file's, --threshold's; NULL after saying why. */
struct hyp_lib *consult_hypotheses(const struct co_opts *o);
/* The graph as DOT into path (and SVG beside it when Graphviz is there); 0, or 1. */
int consult_write_dot(const char *path, const struct cs_engine *e, const char *title);
/* sonde consult PID, sonde consult -- PROGRAM: the exit status. */
int consult_live(const struct co_opts *o, const struct hyp_lib *lib);

#endif
