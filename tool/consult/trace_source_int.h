/* SPDX-License-Identifier: MIT */
/* Internal to the post-mortem source: trace_source.c (calls, time) and trace_sync.c (locks). */
#ifndef SONDE_CONSULT_TRACE_SOURCE_INT_H
#define SONDE_CONSULT_TRACE_SOURCE_INT_H

#include <stdint.h>

#include "../mdl/cost.h"
#include "trace_source.h"

enum ts_metric { M_CPU, M_CALLS, M_COST, M_THREADS, M_SYNC_WAIT, M_SYNC_TIME, M_SYNC_OPS,
		 M_COUNT };

/* What one call-path node did in one sample period. */
struct ts_entry {
	uint32_t bucket;
	uint32_t calls, events;
	double secs;
};

/* What one call-path node did on one synchronization object in one sample period. */
struct ts_sentry {
	uint32_t bucket, obj;
	uint32_t ops;  /* blocking calls and releases */
	double wait;   /* seconds blocked */
};

struct ts_node {
	uint32_t parent; /* UINT32_MAX: a thread's root */
	uint32_t thread; /* index in threads */
	uint32_t proc;   /* index in procs, UINT32_MAX: the root */
	uint32_t first_kid, next_sib;
	uint32_t first_bucket;
	struct ts_entry *e;
	uint32_t ne, cape;
	struct ts_sentry *se;
	uint32_t nse, capse;
};

/* A synchronization object (DEF_SYNC). */
struct ts_obj {
	uint32_t id, kind;
	char *path;            /* "/SyncObject/mutex/hot_lock" */
	uint32_t first_bucket; /* first event on it */
};

struct ts_proc {
	char *module, *name;
	uint32_t first_bucket; /* when it was first called */
};

struct ts_thread {
	uint32_t tid;
	uint64_t start, end; /* ns since the origin */
	double *alive;       /* seconds alive per bucket */
};

struct ts_req {
	int used;
	enum ts_metric m;
	uint32_t *nodes, nnodes;
	uint32_t *cursor, *scursor;
	uint32_t thread; /* UINT32_MAX: every thread */
	uint32_t obj;    /* sync metrics: one object, UINT32_MAX: any (of kind, when not 0) */
	uint32_t kind;
};

struct ts_phase_ev {
	uint64_t t;
	const char *name; /* NULL: ends the phase */
};

struct tsrc {
	struct cs_source pub;
	const struct strc_file *f;
	uint64_t period, run_ns, origin;
	uint32_t nbuckets, cur; /* the next bucket to deliver */
	double alpha_s;
	struct ts_node *nodes;
	uint32_t nnodes, capnodes;
	struct ts_proc *procs;
	uint32_t nprocs;
	uint32_t *proc_of_func; /* by index in f->funcs */
	struct ts_thread *threads;
	uint32_t nthreads;
	uint64_t *seen_by; /* [b]: call-path nodes and threads first seen before period b */
	double *flush; /* seconds the runtime flushed, per bucket, all threads */
	struct ts_phase_ev *ph;
	uint32_t nph;
	struct ts_req *reqs;
	uint32_t nreqs;
	struct cost_params cost;
	uint64_t events;
	struct ts_obj *objs;   /* sorted by id */
	uint32_t nobjs;
	/* replay state */
	uint32_t th, root; /* the thread replayed, its root node */
	uint64_t last;
	double ticks_per_ns;
	uint32_t wait_obj; /* the object the thread is blocked on, UINT32_MAX: none */
};

/* trace_source.c */
uint32_t ts_bucket_of(const struct tsrc *t, uint64_t ns);

/* trace_sync.c: objects named from DEF_SYNC (symbols, sites), kept in t->objs. */
void ts_sync_objects(struct tsrc *t);
void ts_sync_free(struct tsrc *t);
/* Seconds [a, b) blocked on t->wait_obj, at a node, spread over the periods. */
void ts_sync_wait(struct tsrc *t, uint32_t node, uint64_t a, uint64_t b);
/* A SYNC_WAIT, SYNC_DONE or SYNC_RELEASE at node (after the time before it was given). */
void ts_sync_event(struct tsrc *t, uint32_t node, const struct strc_event *e);
/* The focus's SyncObject part: 0 with *obj (UINT32_MAX: any) and *kind (0: any); -1: none
 * such. */
int ts_sync_focus(const struct tsrc *t, const char *part, uint32_t *obj, uint32_t *kind);
/* Children of a SyncObject part seen before period 'upto' (full paths). */
uint32_t ts_sync_children(const struct tsrc *t, const char *part, uint32_t upto, char ***out);
/* A node's sync entries of period b matching (obj, kind): the request's metric summed. */
double ts_sync_read(const struct tsrc *t, const struct ts_node *n, uint32_t *cursor,
		    uint32_t b, const struct ts_req *r);

#endif


