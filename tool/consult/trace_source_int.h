/* SPDX-License-Identifier: MIT */
/* Internal to the post-mortem source: trace_source.c (calls, time), trace_sync.c (locks) and
 * trace_mpi.c (the ranks of an MPI run, their messages and collectives). */
#ifndef SONDE_CONSULT_TRACE_SOURCE_INT_H
#define SONDE_CONSULT_TRACE_SOURCE_INT_H

#include <stdint.h>

#include "../mdl/cost.h"
#include "../mpi_match.h"
#include "trace_source.h"

enum ts_metric { M_CPU, M_CALLS, M_COST, M_THREADS, M_SYNC_WAIT, M_SYNC_TIME, M_SYNC_OPS,
		 /* MPI (trace_mpi.c) */
		 M_MPI_TIME, M_MPI_P2P, M_MPI_COLL, M_LATE_SENDER, M_COLL_WAIT, M_RANKS,
		 M_CPU_MAX, M_CPU_MEAN, M_COUNT };

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

/* What one call-path node spent in MPI calls on one channel in one sample period. */
struct ts_mentry {
	uint32_t bucket, comm; /* comm: index in the run's communicators (mm_run.comms) */
	int32_t peer, tag;     /* a receive: the sender's world rank, the tag; a collective: -1 */
	uint32_t coll;         /* 1: a collective, 0: a receive */
	double secs;           /* seconds in the calls (receives, collectives) */
	double late;           /* of which waiting for a late sender, or for a collective's last
				* member */
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
	struct ts_mentry *me;
	uint32_t nme, capme;
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
	uint32_t rank; /* index of its trace in tsrc.files */
	int lib;       /* an MPI library's thread: no call, no MPI event (not a program thread) */
	uint64_t start, end; /* ns since the origin */
	double *alive;       /* seconds alive per bucket */
};

/* The MPI parts of a focus: a rank (index in files), a communicator, a peer, a tag; any when
 * UINT32_MAX or -1. */
struct ts_mfocus {
	uint32_t rank, comm;
	int32_t peer, tag;
};

/* An MPI run's matching and what the search derives from it (trace_mpi.c). */
struct ts_cwait {
	uint32_t proc, thr;
	size_t ev;
	uint64_t ticks; /* waited in the collective for the member(s) it depends on */
};

struct ts_mpi {
	struct mm_run mm;
	int matched;           /* more than one rank: late senders and collective waits known */
	uint64_t *lo, *hi;     /* per trace: its MPI interval (ns since the origin once laid
				* out), from its first MPI call's start to its last one's end */
	double **alive;        /* per trace: seconds of its MPI interval in each period */
	struct ts_cwait *cw;   /* sorted by (proc, thr, ev) */
	size_t ncw;
	char **comm_name;      /* per run communicator: "world", "comm2" */
};

struct ts_req {
	int used;
	enum ts_metric m;
	uint32_t *nodes, nnodes;
	uint32_t *cursor, *scursor;
	uint32_t thread; /* UINT32_MAX: every thread */
	uint32_t obj;    /* sync metrics: one object, UINT32_MAX: any (of kind, when not 0) */
	uint32_t kind;
	struct ts_mfocus mf; /* MPI parts of the focus */
	uint32_t *mcursor;
	double *acc, max; /* cpu_time_rank_max: each rank's cpu since the request, their max */
};

struct ts_phase_ev {
	uint64_t t;
	const char *name; /* NULL: ends the phase */
};

struct tsrc {
	struct cs_source pub;
	const struct strc_file *f;           /* the trace replayed (the only one, or files[fi]) */
	const struct strc_file *const *files; /* one, or an MPI run's ranks in rank order */
	uint32_t nfiles, fi;
	const struct strc_file **own_files;  /* trace_source_new's array of one */
	uint32_t **pof;                      /* per trace: proc_of_func */
	struct ts_mpi *mpi;                  /* NULL: no MPI events */
	uint64_t clip_lo, clip_hi;           /* the replayed rank's MPI interval (0, UINT64_MAX) */
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
	uint32_t thl;      /* its index in t->f */
	uint64_t last;
	double ticks_per_ns;
	uint32_t wait_obj; /* the object the thread is blocked on, UINT32_MAX: none */
};

/* trace_source.c */
uint32_t ts_bucket_of(const struct tsrc *t, uint64_t ns);
uint64_t ts_ns_of(const struct tsrc *t, uint64_t ticks);
/* The time since the thread's last event, up to ticks, to node (as trace_source.c does). */
void ts_advance(struct tsrc *t, uint32_t node, uint64_t ticks);

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

/* trace_mpi.c. Match the traces' MPI events (t->mpi stays NULL when there is none): 0, or -1
 * with err. Then, of several ranks, the span searched: from the last rank's first MPI call's
 * start to the last MPI call's end, in ticks (-1: none, *first and *last unchanged); with the
 * origin and periods set, ts_mpi_layout. */
int ts_mpi_init(struct tsrc *t, char *err, size_t cap);
int ts_mpi_span(const struct tsrc *t, uint64_t *first, uint64_t *last);
void ts_mpi_layout(struct tsrc *t);
void ts_mpi_free(struct tsrc *t);
/* An MPI_RECV or MPI_COLL of thread thr (index in t->f) at node: its call's time. */
void ts_mpi_call(struct tsrc *t, uint32_t node, uint32_t thr, const struct strc_event *e);
/* The focus's Process, Communicator, Peer and Tag parts: 0, or -1 when one names nothing. */
int ts_mpi_focus(const struct tsrc *t, const struct cs_focus *f, struct ts_mfocus *out);
/* Children along H_PROCESS, H_COMM, H_PEER or H_TAG seen before period t->cur. */
uint32_t ts_mpi_children(const struct tsrc *t, const struct cs_focus *f, int h,
			 const uint32_t *nodes, uint32_t nnodes, char ***out);
/* A node's MPI entries of period b matching the request's focus: its metric summed. */
double ts_mpi_read(const struct ts_node *n, uint32_t *cursor, uint32_t b, const struct ts_req *r);
/* The world rank of trace i. */
int32_t ts_mpi_rank(const struct tsrc *t, uint32_t i);
/* The MPI figures of trace_source_info. */
void ts_mpi_info(const struct tsrc *t, struct trace_source_info *out);

#endif


