/* SPDX-License-Identifier: MIT */
/*
 * The "why" axis of the W3 search (seed 003 §3.2, MODELS.md §5): a DAG of hypotheses, each with
 * a test, a boolean over metrics and thresholds, written in sonde's description language (the
 * family of the MDL: same lexer, docs/consult.md) and loaded from share/sonde/hypotheses.hyp.
 */
#ifndef SONDE_HYP_H
#define SONDE_HYP_H

#include <stddef.h>
#include <stdint.h>

#include "../mdl/mdl.h"

/* The resource hierarchies of the "where" axis, in the order the search magnifies them.
 * Process, Communicator, Peer and Tag: the ranks of an MPI run and its messages (docs/mpi.md). */
enum cs_hier { H_CODE, H_SYNC, H_FILES, H_MACHINE, H_PROCESS, H_COMM, H_PEER, H_TAG, H_THREADS,
	       H_COUNT };
/* "Code", "SyncObject", "Files", "Machine", "Process", "Communicator", "Peer", "Tag",
 * "Threads" */
const char *cs_hier_name(int h);
int cs_hier_of(const char *name);  /* -1 when unknown */

enum hx_op {
	HX_NUM, HX_METRIC, HX_THRESHOLD,       /* leaves */
	HX_ADD, HX_SUB, HX_MUL, HX_DIV, HX_NEG, /* numbers */
	HX_LT, HX_LE, HX_GT, HX_GE,             /* comparisons: booleans */
	HX_AND, HX_OR, HX_NOT
};

struct hx_expr {
	enum hx_op op;
	double num;     /* HX_NUM */
	uint32_t ref;   /* HX_METRIC: index in lib->metrics; HX_THRESHOLD: in lib->thresholds */
	struct hx_expr *a, *b;
	struct mdl_loc loc;
};

struct hyp_threshold {
	char *name;
	double value;
	int fixed;  /* not scaled by the load factor (a size, not a share of time or a rate) */
	char *text; /* what it means, may be NULL */
	struct mdl_loc loc;
};

struct hypothesis {
	char *name, *title, *explain;
	struct mdl_loc loc;
	uint32_t *parents, nparents;   /* indexes in lib->hyps, defined before this one */
	uint32_t *children, nchildren; /* filled as later hypotheses name this one */
	struct hx_expr *test;          /* NULL: always true (the root, TopLevel) */
	struct hx_expr *share;         /* the bottleneck's share of run time; NULL: none */
	uint32_t *metrics, nmetrics;   /* metrics the test and share read */
	int hint;                      /* hierarchy to magnify first, -1: none */
};

struct hyp_lib {
	struct hyp_threshold *thresholds;
	struct hypothesis *hyps;
	char **metrics; /* every metric name a test reads */
	uint32_t nthresholds, nhyps, nmetrics;
	char **files;
	uint32_t nfiles;
	char err[512]; /* the last error: "file:line:column: message" */
};

struct hyp_lib *hyp_lib_new(void);
void hyp_lib_free(struct hyp_lib *lib);
/* Add a file's definitions (a threshold already defined gets the new value): 0, or -1 with
 * lib->err set. A failed load may leave part of the file's definitions. */
int hyp_load_file(struct hyp_lib *lib, const char *path);
int hyp_load_string(struct hyp_lib *lib, const char *name, const char *text);
/* The built-in file: $SONDE_HYPOTHESES, else ../share/sonde/hypotheses.hyp next to sonde. */
int hyp_builtin_path(char *out, size_t cap);
/* "NAME=VALUE": 0, or -1 with lib->err set (unknown threshold, bad number). */
int hyp_set_threshold(struct hyp_lib *lib, const char *assignment);

int hyp_find(const struct hyp_lib *lib, const char *name);
int hyp_find_threshold(const struct hyp_lib *lib, const char *name);
/* An expression as text, as it was written (parenthesised where needed). */
void hx_print(char *buf, size_t cap, const struct hyp_lib *lib, const struct hx_expr *e);

#endif
