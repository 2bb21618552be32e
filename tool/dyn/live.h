/* SPDX-License-Identifier: MIT */
/*
 * Many requests on one live session, added and removed while the program runs (the live
 * search of `sonde consult`, docs/consult.md; Paradyn's instrumentation that follows the
 * search). A request is a value — a thread counter, a wall or a CPU timer of the runtime, or
 * the process's CPU time — and the actions that make it, at procedures' entries and exits.
 * Requests share points: one entry point per procedure, whose action list is the sum of the
 * requests there (POINT_SET replaces it whole when one comes or goes), with an execution
 * counter of its own (the observed cost). New points are patched in batches, one stop of the
 * world per commit; a point no request uses any more is cleared and its patch taken out.
 *
 * The runtime's indexes are never given to a second request when a stale value could count
 * for it: each request gets fresh timers and flag counters (a call entered before its point
 * changed may still run a stop or a decrement); value counters and metric ids are reused.
 */
#ifndef SONDE_DYN_LIVE_H
#define SONDE_DYN_LIVE_H

#include <stdint.h>

#include "session.h"

/* DYN_LV_SHARED: the thread counter that is var 0 of an earlier request (spec.share[v]), read
 * by this one's predicates (never its value): one set of actions at a point keeps a register
 * that many requests test. Actions at a point run in the order of the requests' ids, so the
 * earlier request's set it before this one's tests read it. */
enum dyn_lvar { DYN_LV_TCOUNTER, DYN_LV_WALL, DYN_LV_CPU, DYN_LV_SHARED };

#define DYN_LREQ_VARS 4
#define DYN_LREQ_ACTS 8

/* One action of a request: on one of its variables, guarded (pred_var >= 0) by one of its
 * thread counters in the calling thread, or (pred_arg >= 0) by an argument (entry only):
 * `OP k` (SPROTO_EQ ... SPROTO_GE). SPROTO_RECORD (entry, no guard) is on no variable: var is
 * the kind of object (sproto_obj_kind), value SPROTO_RECORD_USE or _INIT. SPROTO_TSET_ARG's
 * value is the argument (0-5); SPROTO_START_WALL_IF's is DYN_GUARD(var, op, k): the second
 * guard, one of the request's thread counters OP k (as SPROTO_GUARD, with a var). */
#define DYN_GUARD(var, op, k) SPROTO_GUARD((uint8_t)(var), op, k)
struct dyn_lact {
	uint8_t when; /* SPROTO_AT_ENTRY or SPROTO_AT_EXIT */
	uint8_t prim; /* SPROTO_TSET, SPROTO_TADD, SPROTO_TSUB, SPROTO_START_WALL ... */
	uint8_t var;
	int8_t pred_var;
	int8_t pred_arg;
	uint8_t op;
	int64_t value, k;
};

struct dyn_lpoint {
	uint32_t proc; /* index in the session's procedures */
	uint32_t nact;
	struct dyn_lact act[DYN_LREQ_ACTS];
};

struct dyn_lspec {
	uint32_t nvars;
	uint8_t var[DYN_LREQ_VARS]; /* enum dyn_lvar; var 0 is the value */
	int32_t share[DYN_LREQ_VARS]; /* DYN_LV_SHARED: the request (id) whose var 0 it is */
	int proc_cpu;               /* the value is the process's CPU time (no points, no var) */
	uint32_t tid;               /* the value of this thread only; 0: every thread */
	struct dyn_lpoint *pt;      /* copied */
	uint32_t npt;
};

struct dyn_live;

/* Over a session opened without a plan (dyn_session_plan with metric NULL, attached). */
struct dyn_live *dyn_live_new(struct dyn_session *s);
/* Takes out every patch of its own that is still in (the session must still be attached
 * when the process runs on; dyn_session_finish does it through s->remove). */
void dyn_live_free(struct dyn_live *l);

/* A request: its id (>= 0), measured from the next commit; -1 with err. */
int dyn_live_add(struct dyn_live *l, const struct dyn_lspec *spec, char *err, size_t n);
void dyn_live_remove(struct dyn_live *l, int id);
/* Whether request id (live or pending) is measured by exactly spec's instrumentation: the same
 * points, actions, variables and thread (a second request would count the same thing twice,
 * in a metric of its own on the wire). */
int dyn_live_spec_is(const struct dyn_live *l, int id, const struct dyn_lspec *sp);
/* Patch the new points (one stop), set every changed point, enable and disable the metrics
 * (one BATCH), take out the patches no request uses. 0, or -1 with err (the process ended, or
 * refused). */
int dyn_live_commit(struct dyn_live *l, char *err, size_t n);
/* The same, its requests sent as a quiet BATCH (protocol version 10: no OK) unless points are
 * to be unpatched (their clearing is waited for first): for a commit followed at once by a
 * BUCKET, whose answer a refusal comes before. */
int dyn_live_commit_quiet(struct dyn_live *l, char *err, size_t n);
/* Send the requests held (the session holds them: dyn_session_hold) and wait for their
 * answer; dyn_live_commit does it. 0, or -1 with err. */
int dyn_live_flush(struct dyn_live *l, char *err, size_t n);
/* A request's increase since the last take (ns for timers, a count for counters). */
int64_t dyn_live_take(struct dyn_live *l, int id);
/* Whether the last take saw a sample of the request (a value that did not change is not sent:
 * every metric is enabled "changes only", docs/protocol.md). */
int dyn_live_fresh(const struct dyn_live *l, int id);
/* Have the request's value sent every N buckets only (changed or not: its increase comes in
 * lumps), or (N = 1) each bucket when it changed. 0, or -1 with err. */
int dyn_live_pace(struct dyn_live *l, int id, uint32_t every, char *err, size_t n);
/* The points' execution counters (observed cost, call rates) sent every N buckets, and then
 * only when they changed (1: each bucket they changed): while no one reads the observed cost
 * bucket by bucket, the rates need no more (dyn_live_rate: up to the last one received). */
int dyn_live_points_pace(struct dyn_live *l, uint32_t every, char *err, size_t n);
/* Its pace now: N (1 when not live). */
uint32_t dyn_live_every(const struct dyn_live *l, int id);
/* Whether the request's points could all be patched (0: some point was refused). */
int dyn_live_complete(const struct dyn_live *l, int id);

/* Whether the request's actions fit on its points beside those of the requests there now (a
 * point has room for SPROTO_MAX_ACTIONS, one its execution counter). */
int dyn_live_room(const struct dyn_live *l, const struct dyn_lspec *spec);
/* Executions per second of the procedure's entry so far (-1: not measured yet). */
double dyn_live_rate(const struct dyn_live *l, uint32_t proc);
/* Predicted cost of a request, ns per second: its actions and, where the procedure has no
 * point yet, a trampoline, at the observed rate of each procedure (a static one before). */
double dyn_live_predict(const struct dyn_live *l, const struct dyn_lspec *spec);
/* Observed cost so far, ns: executions counted at the points × what one costs (calibrated in
 * the process); only procedures with keep[proc] set when keep is not NULL. */
double dyn_live_observed_ns(const struct dyn_live *l, const uint8_t *keep);

/* The sonde.h phase markers seen (runtime counters SPROTO_COUNTER_PHASE_*): how many so far,
 * the last one's name address in the process and its time (CLOCK_MONOTONIC ns). */
void dyn_live_phase(const struct dyn_live *l, uint64_t *count, uint64_t *name, uint64_t *t_ns);
/* The runtime's control thread (0 until the first sample). */
uint32_t dyn_live_ctl_tid(const struct dyn_live *l);
enum dyn_lentry { DYN_LE_OWN = 1, DYN_LE_REQ, DYN_LE_POINT };
/* Points patched now, patched in all, stops of the world; SAMPLE messages received, their
 * entries, every byte of them (headers included), the entries' bytes, and the entries by
 * what they were: the runtime's own counters, the requests', the points' execution counters. */
struct dyn_live_stats {
	uint32_t points_now, points_max, points_total, refused, batches, removals;
	uint64_t samples, entries, bytes, entry_bytes;
	uint64_t by_kind[4]; /* entries of enum dyn_lentry ([0]: of a metric disabled since) */
	uint64_t received;   /* every byte received on the connection: the replies to every
			      * request (HELLO's to the last OK) and the samples */
	struct ctl_traffic sent, got; /* by message type (requests sent, messages received) */
	double pause_ms;
	struct dyn_catchup_stats catchup; /* calls running when their requests began */
};
void dyn_live_stats(const struct dyn_live *l, struct dyn_live_stats *out);

#endif
