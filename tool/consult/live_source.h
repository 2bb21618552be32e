/* SPDX-License-Identifier: MIT */
/*
 * The live data source of `sonde consult -- PROGRAM` and `sonde consult PID` (docs/consult.md):
 * each (metric, focus) the search asks for becomes a request of dynamic instrumentation
 * (tool/dyn/live.h) inserted into the running process, its samples read each period, and
 * taken out again when the search cancels it. Whole-program readings need no instrumentation:
 * the process's CPU time (the runtime's), thread CPU times and page faults (/proc), threads
 * alive, the observed cost of the instrumentation itself.
 */
#ifndef SONDE_CONSULT_LIVE_SOURCE_H
#define SONDE_CONSULT_LIVE_SOURCE_H

#include <signal.h>

#include "../dyn/live.h"
#include "source.h"

/* While the search is settled (only true nodes re-tested) samples come every LIVE_RETEST
 * periods, or more as the re-tests can wait longer (engine.h: CS_RETEST_FRACTION): 2, 4, 8
 * times that, up to LIVE_SETTLED_MAX periods (a new phase, or the end of --for, is seen within
 * a bucket). */
#define LIVE_RETEST 5
#define LIVE_SETTLED_MAX 40
/* The points' execution counters are sent every LIVE_POINT_EVERY buckets (when they changed)
 * while no request reads the observed cost: the call rates of the cost model need no more. */
#define LIVE_POINT_EVERY 20

struct live_source_opts {
	double seconds;              /* stop after this long (0: until the process ends) */
	volatile sig_atomic_t *stop; /* set (Ctrl-C): the next step is the last */
};

/* Over a session opened without a plan; NULL with err. */
struct cs_source *live_source_new(struct dyn_session *s, const struct live_source_opts *o,
				  char *err, size_t cap);
void live_source_free(struct cs_source *src);

struct live_source_info {
	uint64_t run_ns;                      /* searched so far */
	uint32_t threads, modules, procedures; /* seen */
	uint32_t metrics;                     /* the metrics it can measure */
	uint64_t period_ns;
	uint32_t requests, requests_max;      /* instrumentation requests made, at once at most */
	struct dyn_live_stats dyn;            /* points, batches, samples and bytes received */
	double observed_ns;                   /* the instrumentation's cost so far */
	double control_cpu_ns;                /* the runtime's control thread's CPU time */
	uint64_t full_calls;                  /* calls of the executable's procedures, counted
					       * where they were instrumented (rates x time) */
	int ended;                            /* the process ended during the search */
	uint32_t ranks;                       /* MPI ranks searched together (live_mpi.c), 0 */
	uint64_t pair_samples;                /* of the ranks: the samples as each pair had
					       * them, one reading of several pairs counted again
					       * (the count before 2026-11-22 11:00); 0 */
	char error[256];                      /* why the search stopped early, "" */
};
void live_source_info(struct cs_source *src, struct live_source_info *out);
/* Which data a request reads: two requests with the same id read the same entries (a
 * (metric, focus) of dynamic instrumentation shared); -1: none. */
int live_source_data_id(struct cs_source *src, int req);
/* Whether the process was seen receiving on a channel that agrees with the focus's
 * Communicator, Peer and Tag parts (1 when it has none): live_chan.c. */
int live_source_chan_used(struct cs_source *src, const struct cs_focus *f);
/* Entries per second of the procedure MODULE/PROC counted where it had a point; -1: none. */
double live_source_call_rate(struct cs_source *src, const char *module, const char *proc);

#endif
