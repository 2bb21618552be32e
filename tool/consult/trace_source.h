/* SPDX-License-Identifier: MIT */
/*
 * The post-mortem data source: a trace recorded with `sonde run --trace`, replayed as time
 * histograms (seed 003 chapter 4 did the same with IPS-2 traces). Each thread's calls are
 * rebuilt once; the time between two events goes to the innermost open call (its call-path
 * node), split into sample periods; a request then sums the periods of the nodes its focus
 * matches. Deterministic: the same trace gives the same samples.
 */
#ifndef SONDE_CONSULT_TRACE_SOURCE_H
#define SONDE_CONSULT_TRACE_SOURCE_H

#include "source.h"
#include "trace_read.h"

/* A source over f (kept, not freed) with samples of period_ns; NULL with err set. */
struct cs_source *trace_source_new(const struct strc_file *f, uint64_t period_ns, char *err,
				   size_t cap);
/* A source over the traces of an MPI run's ranks, in rank order (kept, not freed): searched
 * together on one clock, with the ranks, communicators, peers and tags as resources. */
struct cs_source *trace_source_new_run(const struct strc_file *const *files, uint32_t n,
				       uint64_t period_ns, char *err, size_t cap);
void trace_source_free(struct cs_source *s);

/* Figures of the trace for the data-volume comparison. */
struct trace_source_info {
	uint64_t events;        /* event records in the trace */
	uint64_t run_ns;
	uint32_t threads, modules, procedures, call_paths, sync_objects;
	uint32_t ranks, comms, peers, tags; /* of an MPI run searched together; else 0 */
	uint32_t metrics;       /* metrics this source can measure */
	uint64_t period_ns;
};
void trace_source_info(struct cs_source *s, struct trace_source_info *out);

/* A profile table of a focus over [t0, t1) ns (whole sample periods): up to max procedures
 * by time in the focus, each with its seconds and calls (descending); *span: the seconds the
 * periods cover. Returns how many were written. */
struct ts_row {
	const char *module, *name; /* owned by the source */
	double secs;
	uint64_t calls;
};
uint32_t trace_source_profile(struct cs_source *s, const struct cs_focus *f, uint64_t t0,
			      uint64_t t1, struct ts_row *rows, uint32_t max, double *span);

#endif
