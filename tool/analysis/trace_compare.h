/* SPDX-License-Identifier: MIT */
/*
 * Accuracy without a reference (seed 000 §VII, Tables V-IX): the same program traced with nested
 * instrumentation subsets (full ⊃ partial), both approximated with one model; the events they
 * have in common are matched and their times compared. An event of the partial trace matches
 * the event of the full trace on the same thread index, of the same type, for the same function
 * (by module path and address in the module: ids differ between runs) or region/name, with the
 * same occurrence number among those on that thread.
 */
#ifndef SONDE_TRACE_COMPARE_H
#define SONDE_TRACE_COMPARE_H

#include <stdint.h>

#include "perturb.h"
#include "trace_read.h"

/* One thread's comparison (times in ns, counted from each process's first event). */
struct tc_row {
	uint32_t thread;          /* thread index in both files */
	uint64_t ref_events;      /* comparable events of the full (reference) trace */
	uint64_t an_events;       /* ... of the partial (analyzed) trace */
	uint64_t matched;         /* partial events with a counterpart */
	double ref_time, an_time; /* the thread's last event */
	double total, mean;       /* sum and mean of |t_full - t_partial| over matched events */
	double percent;           /* mean as a percentage of an_time */
};

struct tc_table {
	struct tc_row *rows; /* one per thread index of the partial trace */
	uint32_t nrows;
	struct tc_row all;   /* every thread: times are the processes' run times */
};

struct tc_result {
	struct tc_table approx;   /* approximated times (the last model run on each trace) */
	struct tc_table measured; /* measured times, for how much the model closed the gap */
	uint64_t unmatched;       /* comparable partial events with no counterpart */
	uint32_t ref_only_threads;
};

/*
 * Compare partial (pf, part) against full (ff, full); both traces approximated already.
 * Fills out; free with tc_free.
 */
void tc_compare(const struct strc_file *ff, const struct pt_trace *full,
		const struct strc_file *pf, const struct pt_trace *part, struct tc_result *out);
void tc_free(struct tc_result *r);

/* The event types that are compared: what the program did (not runtime bookkeeping). */
int tc_slot(unsigned type);
#define TC_SLOTS 10

#endif
