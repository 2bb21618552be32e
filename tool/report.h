/* SPDX-License-Identifier: MIT */
/* Output of `sonde report`: text tables and tree, JSON, CSV, and the difference of two runs. */
#ifndef SONDE_REPORT_H
#define SONDE_REPORT_H

#include <stdio.h>

#include "model.h"

enum report_sort { SORT_EXCL, SORT_INCL, SORT_CALLS };

struct report_opts {
	enum report_sort sort;
	int limit;     /* rows of the flat table; 0 = all */
	int depth;     /* levels of the call-path tree; 0 = all */
	int flat, tree; /* which parts of the text report */
	int sync_only;  /* --sync: only the synchronization sections (report_sync.c) */
	int mpi_only;   /* --mpi: only the MPI sections (report_mpi.c) */
};

/* Function indices of m, sorted by the chosen key (largest first). Caller frees. */
uint32_t *report_order(const struct model *m, enum report_sort sort);

void report_text(FILE *out, const struct model *m, const struct report_opts *o);
void report_json(FILE *out, const struct model *m, const struct report_opts *o);
void report_csv(FILE *out, const struct model *m, const struct report_opts *o);

/* The synchronization sections (report_sync.c); nothing when the run had no --sync. */
void report_sync_text(FILE *out, const struct model *m, int limit);
void report_sync_json(FILE *out, const struct model *m);
void report_sync_csv(FILE *out, const struct model *m);

/* The MPI sections (report_mpi.c); nothing when the run had no MPI. */
void report_mpi_text(FILE *out, const struct model *m, int limit);
void report_mpi_json(FILE *out, const struct model *m);

enum diff_format { DIFF_TEXT, DIFF_JSON, DIFF_CSV };
void report_diff(FILE *out, const struct model *a, const struct model *b, enum diff_format fmt,
		 int limit);

/* The sampled parts (report_sample.c; sonde run --sample): nothing when the run has no samples. */
void report_sample_text(FILE *out, const struct model *m, const struct report_opts *o);
void report_sample_json(FILE *out, const struct model *m);
int report_folded(FILE *out, const struct model *m); /* 0, or -1 after an error line */
/* The measured call paths as folded stacks (report_folded.c): weights are each path's
 * compensated exclusive time in us, or with by_calls its calls. 0, or -1 after an error line. */
int report_folded_measured(FILE *out, const struct model *m, int by_calls);

/* "12.345 ms" style, chosen for the magnitude. */
const char *fmt_time(char *buf, size_t cap, double ns);
void json_str(FILE *out, const char *s);

#endif
