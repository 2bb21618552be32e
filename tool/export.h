/* SPDX-License-Identifier: MIT */
/*
 * `sonde export`: the traces of a run in the formats of other tools (docs/export.md). The
 * command (cmd_export.c) reads and names what the writers (export_chrome.c, export_otf2.c) need.
 */
#ifndef SONDE_EXPORT_H
#define SONDE_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "mpi_match.h"
#include "trace_read.h"

#define EX_NONE UINT32_MAX

/* One process's trace, with names for its functions. */
struct ex_proc {
	struct strc_file *f;
	const char **names;  /* by index in f->funcs: function name from symbols, or the user's */
	const char **files;  /* by index in f->funcs: source file path, "" when unknown */
	int *lines;          /* by index in f->funcs: line of the definition, 0 when unknown */
	uint64_t *end_t;     /* by index in f->threads: ticks of its THREAD_END, 0 if none */
	uint8_t *joined;     /* by index in f->threads: a JOIN names its end */
	uint32_t parent;     /* index in procs of the process that forked it, or EX_NONE */
};

struct ex_input {
	char *rundir;        /* where default outputs go */
	struct ex_proc *procs;
	uint32_t nprocs;
	uint64_t base;       /* ticks: the earliest event; time 0 of the exports */
	uint64_t last;       /* ticks: the latest event */
	struct mm_run *mpi;  /* the MPI events matched across the traces, NULL: no MPI rank */
	const struct strc_file **files; /* procs[i].f, for mpi */
};

/* The process of MPI world rank r (ex_input.mpi), EX_NONE. */
uint32_t ex_rank_proc(const struct ex_input *in, int32_t r);

/* What follows the last '/' of a path. */
const char *ex_base_name(const char *path);
/* Index in f->funcs of an id, or EX_NONE. */
uint32_t ex_func(const struct ex_proc *p, uint32_t id);
const char *ex_name(const struct ex_proc *p, uint32_t id);
/* Ns since in->base of a time of p's clock (fractional). */
double ex_ns(const struct ex_input *in, const struct ex_proc *p, uint64_t t);
/* Index in f->threads of the thread a CREATE's edge made, or EX_NONE. */
uint32_t ex_created(const struct ex_proc *p, uint64_t edge);
/* Index in f->threads of the thread a JOIN at time t waited for, or EX_NONE: the latest
 * THREAD_END of that pthread_t before t. */
uint32_t ex_joined(const struct ex_proc *p, uint64_t self, uint64_t t);

/* 0, or -1 after printing one "sonde: ..." line. */
int export_chrome(const struct ex_input *in, FILE *out);
int export_otf2(const struct ex_input *in, const char *dir);

#endif
