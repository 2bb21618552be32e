/* SPDX-License-Identifier: MIT */
/*
 * The W3 search (seed 003 chapters 3, 4, 8 and appendix A; MODELS.md §5): hypotheses (why)
 * refined over foci (where) and phases (when), each refinement a node of the Search History
 * Graph, tested on cumulative averages of the data a source delivers (source.h).
 */
#ifndef SONDE_CONSULT_ENGINE_H
#define SONDE_CONSULT_ENGINE_H

#include <stdint.h>
#include <stdio.h>

#include "hyp.h"
#include "source.h"

enum cs_state {
	CS_UNTESTED,    /* a refinement not tried yet (queued) */
	CS_TESTING,     /* its data is being collected */
	CS_TRUE,
	CS_FALSE,
	CS_DEFERRED,    /* waiting: the cost budget is used up */
	CS_NEVER,       /* never concluded: sufficient observation time passed, or its interval
			 * ended with too little of it observed */
	CS_UNAVAILABLE, /* the source cannot measure a metric of its test at this focus */
	CS_STATE_COUNT
};
const char *cs_state_name(enum cs_state s);

/* How a node was reached from its first parent. */
enum cs_axis { CS_ROOT, CS_WHY, CS_WHERE, CS_WHEN };
const char *cs_axis_name(enum cs_axis a);

#define CS_MAX_TERMS 8   /* metrics of one test */
#define CS_MAX_FLIPS 16  /* transitions kept per node */

struct cs_flip {
	uint64_t t;
	int to_true;
};

struct cs_node {
	uint32_t id;
	uint32_t hyp;
	struct cs_focus focus;
	int phase;           /* index in engine->phases, -1: the whole run */
	enum cs_state state;
	enum cs_axis axis;
	int hier;            /* CS_WHERE: the hierarchy magnified */
	uint32_t *parents, nparents;
	uint32_t *kids, nkids;
	int rank;            /* ordering class: 0 priority, 1 normal, 2 ignored */
	int order;           /* within the class: hint, why, where by hierarchy */
	/* data */
	int term_req[CS_MAX_TERMS]; /* index in engine->reqs per metric of the test, -1 */
	double term_base[CS_MAX_TERMS];
	double observed;     /* seconds of data since collection began */
	double load_obs;     /* sum of load x seconds */
	uint64_t t_start;    /* collection began (ns) */
	int settling;        /* a request of its own is new: its first step is dropped (source.h
				late_start) */
	uint64_t t_end;      /* collection ended (concluded, given up) */
	uint64_t t_decided;  /* first conclusion */
	double value;        /* the test's left side (or share) at the last evaluation */
	double share;        /* the share expression's value at the last evaluation, -1: none */
	double values[CS_MAX_TERMS]; /* each metric's cumulative average then */
	uint64_t samples;    /* samples this node's requests delivered while it used them */
	uint32_t retests;    /* evaluations after its first conclusion (true nodes re-tested) */
	struct cs_flip flips[CS_MAX_FLIPS]; /* the first transitions */
	uint32_t nflips;
	uint32_t transitions; /* all of them */
	int was_true;        /* it was true at some point */
	const char *why;     /* why it stopped: "sufficient observation time", ... */
};

struct cs_phase {
	char *name;
	uint64_t start, end; /* end 0: still open */
	uint32_t root;       /* its TopLevel node */
};

/* One (metric, focus) pair measured, shared by the nodes that read it. */
struct cs_req {
	uint32_t metric; /* index in lib->metrics */
	struct cs_focus focus;
	int src;         /* the source's request id, -1 when not measured now */
	uint32_t users;
	double total;    /* increase since it was requested */
	uint64_t samples; /* samples delivered in all */
	uint64_t retest_samples; /* of them, while only concluded nodes read it (slow) */
	double secs;      /* seconds measured in all (total / secs: its rate while measured) */
	int fresh;        /* the last step's reading came as a sample (source.h: fresh) */
	int current;      /* ... and it is complete (source.h: current) */
	int slow;         /* only true nodes read it (source.h: pace_req) */
	double wait;      /* then the seconds its re-tests can wait, as last told to the source */
	double cost;     /* predicted, CPUs */
	uint64_t made;   /* the engine's launch (engine.c) that asked the source for it */
};

struct cs_params {
	double min_obs;      /* s: minimum observation time before concluding true (0.25) */
	double suff_obs;     /* s: sufficient observation time: give up after it (1.0) */
	double min_fraction; /* of the interval observed before concluding (0.20) */
	double hyst;         /* hysteresis (appendix A; 0.9) */
	double budget;       /* predicted perturbation, CPUs, the batches may use (0.10) */
	int load_comp;       /* thresholds scaled by the load factor (1) */
	/* ignore and priority: a hypothesis name or a focus prefix ("/Code/libc.so.6") */
	const char **ignore, **priority;
	uint32_t nignore, npriority;
};
void cs_params_default(struct cs_params *p);

/* Progress and data volume. */
struct cs_stats {
	uint64_t steps, samples, requests;
	/* where the samples went: of pairs only concluded nodes read (re-tests), and in the steps
	 * while the search was settled (nothing under test or waiting) */
	uint64_t retest_samples, settled_samples, settled_steps;
	double settled_s;    /* the re-test interval asked for while settled (0: not settled) */
	uint64_t t_now;
	double cost_now, cost_max;
	uint32_t foci_used;  /* distinct (metric, focus) pairs measured */
};

struct cs_engine {
	const struct hyp_lib *lib;
	struct cs_params par;
	struct cs_source *src;
	struct cs_node *nodes;
	uint32_t nnodes, capnodes;
	struct cs_req *reqs;
	uint32_t nreqs;
	struct cs_phase *phases;
	uint32_t nphases;
	int cur_phase;       /* -1: none open */
	uint64_t now;        /* ns: the end of the last step */
	int done;
	uint64_t generation; /* the source's, when the true nodes were last magnified */
	uint64_t launches;   /* launch() calls: when each request was made (cs_req.made) */
	struct cs_stats st;
	/* called after each step (a terminal view); may be NULL */
	void (*progress)(struct cs_engine *e, void *arg);
	void *progress_arg;
};

/* A true node is re-tested at least every CS_RETEST_FRACTION of the time it has been observed
 * (its cumulative average can move by no more than that share of itself in between): the
 * re-tests of a long run grow sparse as the time histograms' buckets grow wide (MODELS.md §4),
 * and a turn to false is seen within that share of the node's time. */
#define CS_RETEST_FRACTION 0.25

struct cs_engine *cs_engine_new(const struct hyp_lib *lib, const struct cs_params *par,
				struct cs_source *src);
void cs_engine_free(struct cs_engine *e);
/* One sample period: 1, or 0 when the run has ended (every node then concluded). */
int cs_engine_step(struct cs_engine *e);
/* Steps until the end. */
void cs_engine_run(struct cs_engine *e);

/* A node's interval: [start, end) with end 0 when still open. */
void cs_node_interval(const struct cs_engine *e, const struct cs_node *n, uint64_t *start,
		      uint64_t *end);
/* A bottleneck: a node that was true and none of whose refinements ever was. */
int cs_node_is_bottleneck(const struct cs_engine *e, const struct cs_node *n);

/* The Search History Graph (shg_out.c): JSON members "phases", "nodes", "bottlenecks"
 * (docs/consult.md), without the enclosing braces; Graphviz DOT. */
void cs_write_json_members(FILE *out, const struct cs_engine *e);
void cs_write_dot(FILE *out, const struct cs_engine *e, const char *title);
/* "whole run" or "phase NAME". */
const char *cs_node_when(const struct cs_engine *e, const struct cs_node *n);

#endif
