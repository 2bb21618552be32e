/* SPDX-License-Identifier: MIT */
/*
 * Perturbation analysis of an event trace (docs/analysis.md; MODELS.md §2.2, §2.4, §3; seed 000
 * §IV-B, §IV-C): every event's probe cost is known (α per event record, COUNT and FLUSH by their
 * argument), and the models move each event to where it would have happened without the probes.
 *
 *   sequential  per thread: t_a(e_i) = t_m(e_i) - sum_{j<i} cost(e_j)
 *   fork-join   the main thread is the sequential part; a concurrent phase (a CREATE on it, up to
 *               the JOIN that closes the last thread created in the phase) takes its time basis
 *               from the opening event, and the first event after the phase from the concurrent
 *               event with the greatest approximated time (the critical path)
 *   events     happens-before edges (create -> thread begin, thread end -> join; the edge table
 *               takes lock and message edges as well): a local event moves earlier by the local
 *               overhead since its predecessor, a dependent event happens at the later of its
 *               local approximation and its source's (MODELS §2.4 done post mortem)
 *
 * Pure arithmetic on the reader's arrays: no I/O, no allocation per event. Times are ticks of
 * the trace's clock; approximated times are doubles counted from t0, the process's first event.
 */
#ifndef SONDE_PERTURB_H
#define SONDE_PERTURB_H

#include <stddef.h>
#include <stdint.h>

#include "trace_read.h"

#define PT_NONE UINT32_MAX
#define PT_MAX_LISTED 8 /* reorderings kept for the report (all are counted) */

enum pt_model { PT_SEQUENTIAL, PT_FORKJOIN, PT_EVENTS };

/* Probe costs in ticks. */
struct pt_costs {
	double alpha; /* one event record: o_full / 2 */
	double skip;  /* one call recorded only in a COUNT record: o_skip */
	double dt;    /* the clock's resolution: events closer than this are simultaneous */
};

/* Event types whose record costs one α: everything the runtime records as it happens. */
#define PT_ALPHA_TYPES                                                                            \
	(1u << STRC_ENTER | 1u << STRC_EXIT | 1u << STRC_REGION_BEGIN | 1u << STRC_REGION_END |   \
	 1u << STRC_PHASE | 1u << STRC_USER | 1u << STRC_THREAD_BEGIN | 1u << STRC_THREAD_END |   \
	 1u << STRC_CREATE | 1u << STRC_JOIN | 1u << STRC_SYNC_WAIT | 1u << STRC_SYNC_DONE |       \
	 1u << STRC_SYNC_RELEASE | 1u << STRC_MPI_SEND | 1u << STRC_MPI_RECV | 1u << STRC_MPI_COLL)

/*
 * The direct perturbation one event stands for, in ticks. A COUNT of n calls ran n cheap probes
 * (o_skip each); a FLUSH took exactly its recorded duration; DROPPED events ran their probes
 * without a record (α each). TIME, UNWIND, END and PROC_END are bookkeeping of other probes.
 */
static inline double pt_cost(const struct pt_costs *c, const struct strc_event *e)
{
	unsigned type = e->type & 31u;

	if (PT_ALPHA_TYPES >> type & 1u)
		return c->alpha;
	switch (type) {
	case STRC_COUNT:
		return (double)e->arg * c->skip;
	case STRC_FLUSH:
		return (double)e->arg;
	case STRC_DROPPED:
		return (double)e->arg * c->alpha;
	default:
		return 0;
	}
}

/* Probes run for one event: 1 per record, n for a COUNT or DROPPED of n, 0 for the rest. */
static inline uint64_t pt_probes(const struct strc_event *e)
{
	unsigned type = e->type & 31u;

	if (PT_ALPHA_TYPES >> type & 1u)
		return 1;
	return type == STRC_COUNT || type == STRC_DROPPED ? e->arg : 0;
}

/* A happens-before edge: the dependent event cannot precede its source. */
/* PT_EDGE_COLL: a member of an MPI collective cannot leave it before another member (or the
 * root) entered it: the source side is the source's *begin* (its event minus its wait), ready as
 * soon as the source's thread reached that event (pt_thread.ba holds its approximated begin). */
enum pt_edge_kind { PT_EDGE_CREATE, PT_EDGE_JOIN, PT_EDGE_LOCK, PT_EDGE_MESSAGE, PT_EDGE_COLL,
		    PT_EDGE_KINDS };
#define PT_EDGE_BROKEN 0x1u       /* ignored by the event model: it closed a cycle */
#define PT_EDGE_SOURCE_PROBE 0x2u /* the source's own probe ran before the dependent could go
				   * on (a THREAD_END is recorded before the thread exits; a CREATE
				   * after the new thread started; an MPI_SEND before the message
				   * leaves) */

struct pt_edge {
	uint32_t src_thr, dst_thr; /* indices in pt_trace.th */
	uint64_t src, dst;         /* event indices in those threads */
	uint16_t kind, flags;
	uint32_t pad;
	uint64_t wait;             /* messages, collectives: ticks the call ran before the
				    * dependent (its MPI_RECV's or MPI_COLL's wait): the thread was
				    * ready from then on */
	uint64_t src_wait;         /* collectives: the source's wait (its begin) */
};

struct pt_thread {
	const struct strc_event *ev; /* the measured events (borrowed from the file) */
	size_t nev;
	double *ta;            /* approximated times, ticks since t0 (the last model run) */
	double *ba;            /* pt_init_run with collectives: per event, the approximated
				* begin of an MPI_COLL (set when the model reaches it); NULL */
	double dp;             /* direct perturbation: the cost of all its events, ticks */
	uint64_t probes;       /* probes it ran (pt_probes summed) */
	uint64_t simultaneous; /* events the model would have put before their predecessor: they
				* keep its time (the measured gap was below the removed cost) */
	uint32_t index;        /* the thread's index in the file */
	uint32_t phase;        /* fork-join phase it was created in, PT_NONE: main or free */
	uint32_t next_in_phase;
	uint32_t proc;         /* the trace it belongs to (pt_init_run), 0 */
};

/* A concurrent phase: from the CREATE that opened it (on the main thread) to the JOIN that
 * joined the last thread created in it. */
struct pt_phase {
	uint64_t open;        /* event index of the opening CREATE on the main thread */
	uint64_t close;       /* index of the main thread's first event at or after the closing
			       * JOIN (the JOIN itself when main joined); main's nev: still open */
	uint64_t main_end;    /* the main thread's own work in the phase: events (open, main_end),
			       * up to its first JOIN in it (after that it waits for the others) */
	uint32_t closed;      /* a JOIN closed it */
	uint32_t first;       /* first thread created in it (then next_in_phase), PT_NONE */
	uint32_t nthreads;
	uint32_t crit;        /* total-time model: the longest thread once its own DP is removed
			       * (PT_NONE: the main thread's part of the phase) */
	double dp_crit;       /* its direct perturbation in the phase, ticks */
	uint64_t n_crit;      /* its probes in the phase */
};

/* Reorderings: a measured before b (by more than dt), approximated after it (by more than dt);
 * or a dependent b whose local approximation fell before its source a. */
enum pt_reorder_kind { PT_RE_PAIR, PT_RE_DEPENDENT };
struct pt_reorder {
	uint32_t kind;
	uint32_t thr_a, thr_b;
	uint32_t pad;
	uint64_t a, b;
};

struct pt_trace {
	struct pt_costs c;
	uint64_t t0, t1;        /* ticks: the process's first and last event */
	uint64_t nevents;
	struct pt_thread *th;   /* in the file's order; th[main] is the sequential thread */
	uint32_t nth, main;
	struct pt_edge *edges;  /* sorted by (dst_thr, dst) */
	size_t nedges;
	struct pt_phase *phases;
	uint32_t nphases;
	uint32_t *first_thread; /* pt_init_run: per trace, its first thread in th (nprocs + 1) */
	double *ba_block;       /* the begins of every thread (th[k].ba point into it) */
	uint32_t nprocs;
	size_t ta_mapped;       /* bytes mapped for the times (0: malloc'd) */
	enum pt_model model;    /* the last model run */
	/* found by the event model */
	uint64_t waited;        /* dependents whose time came from their source */
	uint64_t dep_before;    /* dependents whose local approximation fell before their source */
	uint64_t broken;        /* edges ignored because they closed a cycle */
	/* found by pt_reorders */
	uint64_t reorders;      /* pairs across threads in reverse order (events counted once) */
	uint64_t ties;          /* pairs across threads reversed by no more than dt */
	struct pt_reorder listed[PT_MAX_LISTED];
	uint32_t nlisted;
};

/*
 * Prepare f for analysis with costs c: thread table, the edges (CREATE -> THREAD_BEGIN,
 * THREAD_END -> the first later JOIN of that pthread_t) and the fork-join phases. The trace
 * keeps pointers into f. 0, or -1 when f holds no event.
 */
int pt_init(struct pt_trace *t, const struct strc_file *f, const struct pt_costs *c);
void pt_free(struct pt_trace *t);

/*
 * The traces of one MPI run analyzed together (event model only): the threads of every trace,
 * each trace's own edges, and a message edge MPI_SEND -> MPI_RECV for every message matched
 * (mm: mpi_match.h; pairs of (trace, thread, event) in f). Times of different traces must be of
 * one clock (one machine). 0, or -1 when there is no event.
 */
struct mm_run;
int pt_init_run(struct pt_trace *t, const struct strc_file *const *f, uint32_t nf,
		const struct mm_run *mm, const struct pt_costs *c);
/* Index in t->th of thread `thr` of trace `proc` (pt_init_run). */
uint32_t pt_thread_of(const struct pt_trace *t, uint32_t proc, uint32_t thr);

/* Costs from the trace's CALIB record (α = o_full/2, o_skip, dt), or α given in ns (> 0). */
int pt_costs_of(const struct strc_file *f, double alpha_ns, struct pt_costs *c);
/* Ticks per ns of the trace's clock (CALIB, else the header's estimate). */
double pt_ticks_per_ns(const struct strc_file *f);

/* Fill every thread's ta with one model. */
void pt_sequential(struct pt_trace *t);
void pt_forkjoin(struct pt_trace *t);
void pt_events(struct pt_trace *t);
void pt_run(struct pt_trace *t, enum pt_model m);

/*
 * The local rule shared by the models: events [from, to) of th, with x the delay of the first
 * (the overhead not yet paid back): t_a = t_m - x, and each event's cost adds to x for the
 * next. An event the subtraction would put before its predecessor keeps the predecessor's time
 * (counted in th->simultaneous): the measured gap was smaller than the cost removed, the clock
 * could not separate them. Returns the delay after the last event.
 */
double pt_chain(const struct pt_trace *t, struct pt_thread *th, size_t from, size_t to, double x);
/* Clear the counters a model fills, before it runs. */
void pt_reset(struct pt_trace *t, enum pt_model m);

/* Count (and list the first few) pairs of events of different threads whose approximated
 * order reverses their measured order by more than dt; closer ones are ties. */
void pt_reorders(struct pt_trace *t);

/*
 * The approximated trace of the last model run, for strc_write_file: out shares everything with
 * f but its threads, whose events carry the approximated times (rounded to ticks, from t0) and
 * leave out FLUSH events (their time was the runtime's, and is gone from the times); feature
 * STRC_F_APPROX is set. Free with pt_approx_free.
 */
void pt_approx_file(const struct pt_trace *t, const struct strc_file *f, struct strc_file *out);
void pt_approx_free(struct strc_file *out);

/* Total execution time (MODELS §2.2), ticks. */
struct pt_totals {
	double t_m;               /* the process's first to last event */
	double dp_seq;            /* sequential model: the main thread's events */
	uint64_t n_seq;
	double dp_s, dp_c;        /* fork-join: sequential part, sum over phases of the critical
				   * thread's DP */
	uint64_t n_s, n_max;
	double t_a_seq, t_a_fj;
	double end;               /* the last approximated event of the last model run */
};
void pt_totals(struct pt_trace *t, struct pt_totals *out);

/* AE = T_m - T, RE = AE/T, RAE = (T_a - T)/T. */
struct pt_errors {
	double ae, re, rae;
};
struct pt_errors pt_errors(double t_m, double t_a, double t_uninstrumented);

#endif
