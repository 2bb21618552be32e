/* SPDX-License-Identifier: MIT */
/*
 * Statistical samples of a run (SAMPLES records, sonde run --sample) in the model: every stack
 * mapped to the model's functions (function, file, line: the same resources as the measured
 * profile, so both can be compared), a sampled call tree and per-function counts.
 *
 * Counts are in timer periods (1/HZ of CPU time each): the kernel checks CPU-time timers at its
 * tick, so one signal may stand for several periods (its overrun). The statistical error of a
 * share uses the number of signals, the independent observations.
 */
#ifndef SONDE_SAMPLE_MODEL_H
#define SONDE_SAMPLE_MODEL_H

#include <stdint.h>

#include "model.h"

struct ms_func {
	uint64_t self, total;        /* periods with the function innermost / anywhere on the stack */
	uint64_t self_signals;       /* signals with the function innermost */
};

struct ms_node {
	uint32_t func, parent, first_child, next_sibling; /* func M_NONE for the root */
	uint64_t self, total;        /* periods */
};

/* A source line where samples fell (the interrupted instruction's, from the line table). */
struct ms_line {
	char *file;
	int line;
	uint32_t func;               /* the model function it lies in */
	uint64_t self;               /* periods */
};

struct ms_thread {
	uint32_t pid, index, tid, ended;
	uint64_t cpu_ns, signals, periods, dropped, truncated;
};

struct m_samples {
	uint32_t hz;
	uint64_t period_ns;
	uint64_t signals, periods, dropped, truncated; /* over the threads selected */
	uint64_t stored_periods;     /* periods of the stacks in the table (not dropped) */
	struct ms_func *funcs;       /* by model function index; nfuncs of them */
	uint32_t nfuncs;
	struct ms_node *nodes;       /* nodes[0] is the root */
	uint32_t nnodes, cap_nodes;
	struct ms_thread *threads;
	uint32_t nthreads;
	struct ms_line *lines;
	uint32_t nlines, cap_lines;
	uint32_t *line_hash;         /* open addressing over lines; cap_hash slots */
	uint32_t cap_hash;
};

struct sprof_file;
struct symtab;

/* Add a file's samples (if any) to m->samples; threads filtered by flt. */
void sample_merge(struct model *m, const struct sprof_file *f, struct symtab *st,
		  const struct model_filter *flt);
void sample_free(struct m_samples *s);

/* The binomial standard error of a share p estimated from n independent samples. */
double sample_stderr(double p, uint64_t n);

/* The measured times the sampled shares are compared with (ns): of CPU time when the run
 * measured it (--cpu), else compensated wall time; the total, and a function's parts. */
double sample_measured_total(const struct model *m);
double sample_measured_incl(const struct model *m, const struct m_func *f);
double sample_measured_excl(const struct model *m, const struct m_func *f);

#endif
