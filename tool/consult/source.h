/* SPDX-License-Identifier: MIT */
/*
 * What the search engine reads its data from (ARCHITECTURE.md: one interface, two sources): a
 * source measures (metric, focus) pairs on request and advances time one sample at a time.
 * The post-mortem source replays a trace as time histograms (trace_source.c); a live source
 * would drive dynamic instrumentation (tool/dyn/session.c) through the same calls.
 *
 * A focus names one node in each resource hierarchy (hyp.h: enum cs_hier): part[h] is a path
 * like "/Code/app.c/solve" or "/Threads/1234", NULL for the hierarchy's root (everything).
 * Values are increases over a sample: time metrics in seconds, counts as counts.
 */
#ifndef SONDE_CONSULT_SOURCE_H
#define SONDE_CONSULT_SOURCE_H

#include <stdint.h>

#include "hyp.h"

struct cs_focus {
	char *part[H_COUNT];
};

#define CS_MAX_PHASE_EVENTS 16
/* A cost (CPUs) at or above this: the source has no room for the instrumentation now (a point
 * full of other requests' actions); such a request never starts, not even the one that
 * always starts when nothing is under test (it would read nothing but zeros). */
#define CS_COST_NO_ROOM 1e3

/* One sample period: [t0, t1) in ns since the run began. */
struct cs_step {
	uint64_t t0, t1;
	double load; /* the fraction of [t0, t1) the program could run (load compensation), 0..1 */
	/* phase boundaries inside the period, in time order: a name starts a phase (ending the
	 * one before), NULL ends the current one */
	uint32_t nphase;
	struct {
		uint64_t t;
		const char *name;
	} phase[CS_MAX_PHASE_EVENTS];
	int last; /* the run ended at t1: no more steps */
};

struct cs_source;
struct cs_source_ops {
	/* 1 when the source can measure this metric at this focus, 0 otherwise. */
	int (*supports)(struct cs_source *s, const char *metric, const struct cs_focus *f);
	/* The children of f along hierarchy h known now (full paths; the caller frees each and
	 * the array); 0 when none. */
	uint32_t (*children)(struct cs_source *s, const struct cs_focus *f, int h, char ***out);
	/* Start measuring: a request id >= 0, or -1. Values count from the next step (of a
	 * source that sets late_start, from within it: below). */
	int (*request)(struct cs_source *s, const char *metric, const struct cs_focus *f);
	void (*cancel)(struct cs_source *s, int req);
	/* Predicted cost of measuring the pair, in CPUs (the cost model, tool/mdl/cost.h). */
	double (*cost)(struct cs_source *s, const char *metric, const struct cs_focus *f);
	/* The largest value per second the metric can reach at the focus (INFINITY: none). */
	double (*max_rate)(struct cs_source *s, const char *metric, const struct cs_focus *f);
	/* The next sample period: 0, or -1 when the run has ended (no step then). */
	int (*step)(struct cs_source *s, struct cs_step *st);
	/* A request's increase over the last step. */
	double (*read)(struct cs_source *s, int req);
	/* When the run will end, in ns, if the source knows (post mortem); else 0. */
	uint64_t (*run_end)(struct cs_source *s);
	/* When the phase starting at t will end, if known; else 0. */
	uint64_t (*phase_end)(struct cs_source *s, uint64_t start);
	/* A number that changes whenever new resources appear (children may have grown). */
	uint64_t (*generation)(struct cs_source *s);
	/* Bytes of one sample as the source delivers it (data volume figures). */
	double sample_bytes;
	/* Optional (NULL), last so that the sources written before them need not name them: */
	/* Whether the last step's reading of a request came as a sample (a value that did not
	 * change is not sent live: it counts in no data volume); NULL: always. */
	int (*fresh)(struct cs_source *s, int req);
	/* The search is settled (every node measured is a true one being re-tested, nothing
	 * under test or waiting: settled > 0, the seconds the engine can wait between two
	 * re-tests) or not (0): a source may sample less often while it is. Either way `wait`:
	 * the seconds before the engine needs its next step (engine.c next_need: a node under
	 * test that could conclude sooner than that cannot); a source may make its next step
	 * that long (or less; INFINITY: no node needs one). NULL: ignored. */
	void (*pace)(struct cs_source *s, double settled, double wait);
	/* Only true nodes being re-tested read the request (slow > 0: the seconds their re-tests
	 * can wait, engine.h CS_RETEST_FRACTION) or not (0): a source may deliver its increase in
	 * lumps every few steps while it is slow; NULL: ignored. */
	void (*pace_req)(struct cs_source *s, int req, double slow);
	/* Whether the last step's reading of a request is complete (0: a lump is still to come,
	 * the nodes that read it wait for it to be evaluated); NULL: always. */
	int (*current)(struct cs_source *s, int req);
};

struct cs_source {
	const struct cs_source_ops *ops;
	void *impl;
	/* Requests made after a step are in place only from some moment within the next one
	 * (live: the instrumentation is committed when that step begins, after the engine's own
	 * time, and a loaded machine can make that most of the step): the engine drops that
	 * step for the nodes reading a new request, and their data begins after it. */
	int late_start;
};

/* Focus helpers. */
void cs_focus_copy(struct cs_focus *dst, const struct cs_focus *src);
void cs_focus_free(struct cs_focus *f);
int cs_focus_equal(const struct cs_focus *a, const struct cs_focus *b);
/* "/" for the whole program, else the parts that are not roots joined by ','. */
void cs_focus_str(char *buf, size_t cap, const struct cs_focus *f);
/* Parse such a string (parts in any order); 0, or -1 when a part names no hierarchy. */
int cs_focus_parse(struct cs_focus *f, const char *s);

#endif
