/* SPDX-License-Identifier: MIT */
/*
 * Trace perturbation analysis: the trace's threads, edges and fork-join phases; the sequential
 * and fork-join models of event times; the total-time approximation (see perturb.h).
 * The event model and the reordering check are in perturb_events.c.
 */
#include "perturb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "mpi_match.h"
#include "util.h"

double pt_ticks_per_ns(const struct strc_file *f)
{
	if (f->has_calib && f->calib.ticks_per_ns > 0)
		return f->calib.ticks_per_ns;
	return f->ticks_per_ns > 0 ? f->ticks_per_ns : 1.0;
}

int pt_costs_of(const struct strc_file *f, double alpha_ns, struct pt_costs *c)
{
	double tpn = pt_ticks_per_ns(f);

	if (alpha_ns <= 0 && !f->has_calib)
		return -1;
	c->alpha = (alpha_ns > 0 ? alpha_ns : f->calib.o_full / 2) * tpn;
	c->skip = f->has_calib ? f->calib.o_skip * tpn : 0;
	c->dt = f->has_calib ? f->calib.dt_ns * tpn : 0;
	return 0;
}

/* Measured time of an event in ticks since t0, as a double (an event is never before t0). */
static inline double tm_of(const struct pt_trace *t, const struct strc_event *e)
{
	return (double)(int64_t)(e->t - t->t0);
}

/* ---- building the trace: threads, edges, phases ---- */

/* A synchronisation event found while scanning the threads. */
struct sync_ev {
	uint64_t key;   /* CREATE: the edge; THREAD_END and JOIN: the pthread_t */
	uint64_t t;
	uint64_t idx;
	uint32_t thr;
	uint32_t peer;  /* the thread created or joined, PT_NONE when unknown */
	uint16_t type;
	uint16_t pad[3];
};

struct sync_list {
	struct sync_ev *v;
	size_t n, cap;
};

static void sync_add(struct sync_list *l, const struct strc_event *e, uint32_t thr, size_t idx)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = (struct sync_ev){ .key = e->arg, .t = e->t, .idx = idx, .thr = thr,
					 .peer = PT_NONE, .type = e->type };
}

#define SYNC_TYPES (1u << STRC_CREATE | 1u << STRC_THREAD_END | 1u << STRC_JOIN | \
		    1u << STRC_SYNC_DONE | 1u << STRC_SYNC_RELEASE)

/* SYNC_RELEASE and SYNC_DONE match by object and sequence number (`sonde run --sync`). */
#define SEQ_BITS 40
static uint64_t lock_key(const struct strc_event *e)
{
	return (uint64_t)e->id << SEQ_BITS | (e->arg & ((UINT64_C(1) << SEQ_BITS) - 1));
}

/* One pass over a thread: its direct perturbation, its probes, the time span, and the
 * events that make edges. */
static void scan_thread(struct pt_trace *t, uint32_t k, struct sync_list *creates,
			struct sync_list *ends, struct sync_list *joins, struct sync_list *locks)
{
	struct pt_thread *th = &t->th[k];
	double dp = 0;
	uint64_t probes = 0;
	size_t i;

	for (i = 0; i < th->nev; i++) {
		const struct strc_event *e = &th->ev[i];

		dp += pt_cost(&t->c, e);
		probes += pt_probes(e);
		if (__builtin_expect(!(SYNC_TYPES >> e->type & 1u), 1))
			continue;
		if (e->type == STRC_CREATE && e->arg)
			sync_add(creates, e, k, i);
		else if (e->type == STRC_THREAD_END)
			sync_add(ends, e, k, i);
		else if (e->type == STRC_JOIN)
			sync_add(joins, e, k, i);
		else {
			sync_add(locks, e, k, i);
			locks->v[locks->n - 1].key = lock_key(e);
		}
	}
	th->dp = dp;
	th->probes = probes;
	if (th->nev && th->ev[0].t < t->t0) /* a thread's times never decrease */
		t->t0 = th->ev[0].t;
	if (th->nev && th->ev[th->nev - 1].t > t->t1)
		t->t1 = th->ev[th->nev - 1].t;
}

static int by_key_time(const void *a, const void *b)
{
	const struct sync_ev *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->thr < y->thr ? -1 : x->thr > y->thr;
}

static int by_time(const void *a, const void *b)
{
	const struct sync_ev *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->thr != y->thr)
		return x->thr < y->thr ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int by_dst(const void *a, const void *b)
{
	const struct pt_edge *x = a, *y = b;

	if (x->dst_thr != y->dst_thr)
		return x->dst_thr < y->dst_thr ? -1 : 1;
	if (x->dst != y->dst)
		return x->dst < y->dst ? -1 : 1;
	return x->src_thr < y->src_thr ? -1 : x->src_thr > y->src_thr;
}

/* The last entry of l (sorted by key, time) with this key and a time <= t, or NULL. */
static struct sync_ev *latest_before(struct sync_list *l, uint64_t key, uint64_t t)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) { /* first entry after (key, t) */
		size_t mid = lo + (hi - lo) / 2;
		const struct sync_ev *m = &l->v[mid];

		if (m->key < key || (m->key == key && m->t <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && l->v[lo - 1].key == key ? &l->v[lo - 1] : NULL;
}

static void edge_add(struct pt_trace *t, size_t *cap, const struct sync_ev *src, uint32_t dst_thr,
		     uint64_t dst, enum pt_edge_kind kind)
{
	if (t->nedges == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		t->edges = xrealloc(t->edges, *cap * sizeof(*t->edges));
	}
	t->edges[t->nedges++] = (struct pt_edge){ .src_thr = src->thr, .src = src->idx,
						  .dst_thr = dst_thr, .dst = dst,
						  .kind = (uint16_t)kind,
						  .flags = kind == PT_EDGE_JOIN ? PT_EDGE_SOURCE_PROBE : 0 };
}

/* Where a created thread's stream begins: its THREAD_BEGIN (the first event, normally). */
static uint64_t begin_index(const struct pt_thread *th)
{
	size_t i;

	for (i = 0; i < th->nev && i < 4; i++)
		if (th->ev[i].type == STRC_THREAD_BEGIN)
			return i;
	return 0;
}

/* CREATE(e) -> THREAD_BEGIN of the thread whose create edge is e; f's threads are t's from k0. */
static void create_edges(struct pt_trace *t, const struct strc_file *f, uint32_t k0,
			 struct sync_list *creates, size_t *cap)
{
	uint32_t k;

	if (creates->n > 1)
		qsort(creates->v, creates->n, sizeof(*creates->v), by_key_time);
	for (k = k0; k < k0 + f->nthreads; k++) {
		struct sync_ev *c;

		if (!f->threads[k - k0].edge || !t->th[k].nev)
			continue;
		c = latest_before(creates, f->threads[k - k0].edge, UINT64_MAX);
		if (!c || c->thr == k)
			continue;
		c->peer = k;
		edge_add(t, cap, c, k, begin_index(&t->th[k]), PT_EDGE_CREATE);
	}
}

/* THREAD_END(p) -> JOIN(p): a JOIN matches the latest THREAD_END of its pthread_t before it
 * (pthread_t values are reused). */
static void join_edges(struct pt_trace *t, struct sync_list *ends, struct sync_list *joins,
		       size_t *cap)
{
	size_t i;

	if (ends->n > 1)
		qsort(ends->v, ends->n, sizeof(*ends->v), by_key_time);
	for (i = 0; i < joins->n; i++) {
		struct sync_ev *j = &joins->v[i];
		const struct sync_ev *e = latest_before(ends, j->key, j->t);

		if (!e || e->thr == j->thr)
			continue;
		j->peer = e->thr;
		edge_add(t, cap, e, j->thr, j->idx, PT_EDGE_JOIN);
	}
}

/*
 * SYNC_RELEASE(o, s) -> SYNC_DONE(o, s): a call that blocked got through after the release it
 * names (an unlock, a post, a signal); a barrier's DONE of generation s follows every arrival
 * (RELEASE) of that generation. Releases on the waiting thread itself make no edge; at most
 * MAX_LOCK_SOURCES per DONE (a barrier of more threads keeps the latest arrivals).
 */
#define MAX_LOCK_SOURCES 64
static void lock_edges(struct pt_trace *t, struct sync_list *locks, size_t *cap)
{
	size_t i, j, lo = 0;

	if (locks->n > 1)
		qsort(locks->v, locks->n, sizeof(*locks->v), by_key_time);
	for (i = 0; i < locks->n; i++) {
		const struct sync_ev *d = &locks->v[i];
		unsigned n = 0;

		if (i == 0 || locks->v[i - 1].key != d->key)
			lo = i;
		if (d->type != STRC_SYNC_DONE)
			continue;
		for (j = i; j-- > lo && n < MAX_LOCK_SOURCES;)
			if (locks->v[j].type == STRC_SYNC_RELEASE && locks->v[j].thr != d->thr) {
				edge_add(t, cap, &locks->v[j], d->thr, d->idx, PT_EDGE_LOCK);
				n++;
			}
	}
}

/* Index of the main thread's first event at or after time tt. */
static uint64_t main_index_at(const struct pt_trace *t, uint64_t tt)
{
	const struct pt_thread *m = &t->th[t->main];
	size_t lo = 0, hi = m->nev;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->ev[mid].t < tt)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct pt_phase *phase_open(struct pt_trace *t, const struct sync_ev *s, uint32_t *cap)
{
	struct pt_phase *p;

	if (t->nphases == *cap) {
		*cap = *cap ? 2 * *cap : 8;
		t->phases = xrealloc(t->phases, *cap * sizeof(*t->phases));
	}
	p = &t->phases[t->nphases++];
	*p = (struct pt_phase){ .open = s->idx, .close = t->th[t->main].nev,
				.main_end = t->th[t->main].nev, .first = PT_NONE, .crit = PT_NONE };
	return p;
}

static void phase_join_thread(struct pt_trace *t, struct pt_phase *p, uint32_t k)
{
	t->th[k].phase = (uint32_t)(p - t->phases);
	t->th[k].next_in_phase = p->first;
	p->first = k;
	p->nthreads++;
}

/*
 * Fork-join phases, from the CREATEs and JOINs in time order: a CREATE on the main thread
 * while no phase is open opens one; a thread created by a member of the open phase (the main
 * thread included) joins it; the JOIN of its last unjoined thread closes it. Threads created
 * outside any phase by other threads are free: approximated on their own.
 */
static void find_phases(struct pt_trace *t, struct sync_list *creates, struct sync_list *joins)
{
	struct sync_list all = { 0 };
	struct pt_phase *p = NULL;
	uint32_t cap = 0, open_threads = 0;
	size_t i;

	for (i = 0; i < creates->n + joins->n; i++) {
		const struct sync_ev *s = i < creates->n ? &creates->v[i] : &joins->v[i - creates->n];

		if (s->peer == PT_NONE || s->peer == t->main)
			continue;
		if (all.n == all.cap) {
			all.cap = all.cap ? 2 * all.cap : 64;
			all.v = xrealloc(all.v, all.cap * sizeof(*all.v));
		}
		all.v[all.n++] = *s;
	}
	if (all.n > 1)
		qsort(all.v, all.n, sizeof(*all.v), by_time);
	for (i = 0; i < all.n; i++) {
		const struct sync_ev *s = &all.v[i];
		uint32_t cur = p ? (uint32_t)(p - t->phases) : PT_NONE;

		if (s->type == STRC_CREATE) {
			if (!p && s->thr == t->main)
				p = phase_open(t, s, &cap);
			else if (!p || (s->thr != t->main && t->th[s->thr].phase != cur))
				continue;
			phase_join_thread(t, p, s->peer);
			open_threads++;
		} else if (p) {
			if (s->thr == t->main && s->idx < p->main_end)
				p->main_end = s->idx;
			if (t->th[s->peer].phase != cur || --open_threads)
				continue;
			p->close = s->thr == t->main ? s->idx : main_index_at(t, s->t);
			if (p->main_end > p->close)
				p->main_end = p->close;
			p->closed = 1;
			p = NULL;
		}
	}
	free(all.v);
}

/* The edges within one process, whose threads are t's from k0; its phases if asked. */
static void proc_edges(struct pt_trace *t, const struct strc_file *f, uint32_t k0, size_t *cap,
		       int phases)
{
	struct sync_list creates = { 0 }, ends = { 0 }, joins = { 0 }, locks = { 0 };
	uint32_t k;

	for (k = k0; k < k0 + f->nthreads; k++)
		scan_thread(t, k, &creates, &ends, &joins, &locks);
	create_edges(t, f, k0, &creates, cap);
	join_edges(t, &ends, &joins, cap);
	lock_edges(t, &locks, cap);
	if (phases)
		find_phases(t, &creates, &joins);
	free(locks.v);
	free(creates.v);
	free(ends.v);
	free(joins.v);
}

static void build_edges_and_phases(struct pt_trace *t, const struct strc_file *f)
{
	size_t cap = 0;

	t->t0 = UINT64_MAX;
	proc_edges(t, f, 0, &cap, 1);
	if (t->nedges)
		qsort(t->edges, t->nedges, sizeof(*t->edges), by_dst);
}

/*
 * One block for every thread's approximated times. A large one is mapped with transparent huge
 * pages when the system offers them: the first write to each 4 KiB page would otherwise cost
 * the analysis about as much as computing the times written there.
 */
static double *alloc_times(struct pt_trace *t)
{
	size_t bytes = t->nevents * sizeof(double), huge = (size_t)2 << 20;
	void *p;

	if (bytes < 2 * huge)
		return xmalloc(bytes);
	bytes = (bytes + huge - 1) & ~(huge - 1);
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return xmalloc(t->nevents * sizeof(double));
	madvise(p, bytes, MADV_HUGEPAGE);
	t->ta_mapped = bytes;
	return p;
}

/* f's threads as t's from k0. */
static void add_threads(struct pt_trace *t, const struct strc_file *f, uint32_t k0, uint32_t proc)
{
	uint32_t k;

	for (k = 0; k < f->nthreads; k++) {
		struct pt_thread *th = &t->th[k0 + k];

		th->ev = f->threads[k].ev;
		th->nev = f->threads[k].nev;
		th->index = f->threads[k].index;
		th->phase = PT_NONE;
		th->next_in_phase = PT_NONE;
		th->proc = proc;
		t->nevents += f->threads[k].nev;
	}
}

/* The approximated times of every thread, once the threads are known. -1: no event. */
static int add_times(struct pt_trace *t)
{
	double *ta;
	uint32_t k;

	if (!t->nevents) {
		pt_free(t);
		return -1;
	}
	ta = alloc_times(t);
	for (k = 0; k < t->nth; k++) {
		t->th[k].ta = ta;
		ta += t->th[k].nev;
	}
	return 0;
}

int pt_init(struct pt_trace *t, const struct strc_file *f, const struct pt_costs *c)
{
	*t = (struct pt_trace){ .c = *c, .nth = f->nthreads, .main = 0 };
	t->th = xcalloc(f->nthreads ? f->nthreads : 1, sizeof(*t->th));
	add_threads(t, f, 0, 0);
	if (add_times(t))
		return -1;
	build_edges_and_phases(t, f);
	return 0;
}

uint32_t pt_thread_of(const struct pt_trace *t, uint32_t proc, uint32_t thr)
{
	return t->first_thread ? t->first_thread[proc] + thr : thr;
}

/* MPI_SEND -> MPI_RECV of every matched message: the send's probe runs before the message
 * leaves; the receiving call was ready `wait` before its MPI_RECV. */
static void message_edges(struct pt_trace *t, const struct strc_file *const *f,
			  const struct mm_run *mm, size_t *cap)
{
	size_t i;

	for (i = 0; i < mm->nmsgs; i++) {
		const struct mm_msg *m = &mm->msgs[i];
		const struct strc_file *rf = f[m->recv.proc];
		const struct strc_event *r = &rf->threads[m->recv.thr].ev[m->recv.ev];
		struct sync_ev src = { .thr = pt_thread_of(t, m->send.proc, m->send.thr),
				       .idx = m->send.ev };

		edge_add(t, cap, &src, pt_thread_of(t, m->recv.proc, m->recv.thr), m->recv.ev,
			 PT_EDGE_MESSAGE);
		t->edges[t->nedges - 1].flags = PT_EDGE_SOURCE_PROBE;
		t->edges[t->nedges - 1].wait = strc_mpi_of(rf, r)->wait;
	}
}

/* Whether member j's begin must precede member i's end in a collective of this operation,
 * ranks in the communicator, root its root. */
static int coll_depends(unsigned op, int32_t i, int32_t j, int32_t root)
{
	switch (op) {
	case STRC_COLL_BCAST:
	case STRC_COLL_SCATTER:
	case STRC_COLL_SCATTERV:
		return j == root;
	case STRC_COLL_GATHER:
	case STRC_COLL_GATHERV:
	case STRC_COLL_REDUCE:
		return i == root;
	case STRC_COLL_SCAN:
	case STRC_COLL_EXSCAN:
		return j < i;
	default: /* everyone's result needs everyone's part */
		return 1;
	}
}

#define MAX_COLL_SOURCES 64

/* A member of a collective: its event and its rank in the communicator. */
static void coll_member(const struct strc_file *const *f, const struct mm_ref *x,
			const struct strc_event **e, int32_t *rank)
{
	const struct strc_file *g = f[x->proc];

	*e = &g->threads[x->thr].ev[x->ev];
	*rank = strc_comm_of(g, (*e)->id)->rank;
}

/* For every collective, an edge from each member's MPI_COLL to each member whose end depends on
 * its begin (at most MAX_COLL_SOURCES per member: bigger all-to-all collectives make none). */
static void coll_edges(struct pt_trace *t, const struct strc_file *const *f,
		       const struct mm_run *mm, size_t *cap)
{
	size_t c, i, j;

	for (c = 0; c < mm->ncolls; c++) {
		const struct mm_coll *k = &mm->colls[c];
		const struct mm_ref *m = &mm->coll_ev[k->first];
		const struct strc_event *e0;
		int32_t r0, root;

		coll_member(f, &m[0], &e0, &r0);
		root = strc_mpi_of(f[m[0].proc], e0)->peer;
		for (i = 0; i < k->n; i++) {
			const struct strc_event *ei, *ej;
			int32_t ri, rj;
			unsigned n = 0;

			coll_member(f, &m[i], &ei, &ri);
			for (j = 0; j < k->n; j++) {
				coll_member(f, &m[j], &ej, &rj);
				n += j != i && coll_depends(k->op, ri, rj, root);
			}
			if (n > MAX_COLL_SOURCES)
				continue;
			for (j = 0; j < k->n; j++) {
				struct sync_ev src = { .thr = pt_thread_of(t, m[j].proc, m[j].thr),
						       .idx = m[j].ev };

				coll_member(f, &m[j], &ej, &rj);
				if (j == i || !coll_depends(k->op, ri, rj, root))
					continue;
				edge_add(t, cap, &src, pt_thread_of(t, m[i].proc, m[i].thr),
					 m[i].ev, PT_EDGE_COLL);
				t->edges[t->nedges - 1].wait = strc_mpi_of(f[m[i].proc], ei)->wait;
				t->edges[t->nedges - 1].src_wait = strc_mpi_of(f[m[j].proc], ej)->wait;
			}
		}
	}
}

/* The begins of the collectives: one block beside the times. */
static void add_begins(struct pt_trace *t)
{
	double *ba;
	uint32_t k;

	ba = t->ba_block = xcalloc(t->nevents, sizeof(*ba));
	for (k = 0; k < t->nth; k++) {
		t->th[k].ba = ba;
		ba += t->th[k].nev;
	}
}

int pt_init_run(struct pt_trace *t, const struct strc_file *const *f, uint32_t nf,
		const struct mm_run *mm, const struct pt_costs *c)
{
	uint32_t p, nth = 0;
	size_t cap = 0;

	*t = (struct pt_trace){ .c = *c, .main = 0, .nprocs = nf };
	t->first_thread = xmalloc((nf + 1) * sizeof(*t->first_thread));
	for (p = 0; p < nf; p++) {
		t->first_thread[p] = nth;
		nth += f[p]->nthreads;
	}
	t->first_thread[nf] = nth;
	t->nth = nth;
	t->th = xcalloc(nth ? nth : 1, sizeof(*t->th));
	for (p = 0; p < nf; p++)
		add_threads(t, f[p], t->first_thread[p], p);
	if (add_times(t))
		return -1;
	t->t0 = UINT64_MAX;
	for (p = 0; p < nf; p++)
		proc_edges(t, f[p], t->first_thread[p], &cap, 0);
	message_edges(t, f, mm, &cap);
	if (mm->ncolls) {
		coll_edges(t, f, mm, &cap);
		add_begins(t);
	}
	if (t->nedges)
		qsort(t->edges, t->nedges, sizeof(*t->edges), by_dst);
	return 0;
}

void pt_free(struct pt_trace *t)
{
	if (t->ta_mapped)
		munmap(t->th[0].ta, t->ta_mapped);
	else if (t->th && t->nth)
		free(t->th[0].ta);
	free(t->th);
	free(t->edges);
	free(t->phases);
	free(t->first_thread);
	free(t->ba_block);
	*t = (struct pt_trace){ 0 };
}

/* ---- event-time models ---- */

/* See perturb.h. Kept short: this loop is where the models spend their time. */
double pt_chain(const struct pt_trace *t, struct pt_thread *th, size_t from, size_t to, double x)
{
	const struct strc_event *ev = th->ev;
	double *ta = th->ta;
	double prev = from ? ta[from - 1] : -HUGE_VAL;
	uint64_t simultaneous = 0;
	size_t i;

	for (i = from; i < to; i++) {
		double a = tm_of(t, &ev[i]) - x;

		if (a < prev) {
			a = prev;
			simultaneous++;
		}
		ta[i] = prev = a;
		x += pt_cost(&t->c, &ev[i]);
	}
	th->simultaneous += simultaneous;
	return x;
}

void pt_reset(struct pt_trace *t, enum pt_model m)
{
	uint32_t k;

	for (k = 0; k < t->nth; k++)
		t->th[k].simultaneous = 0;
	t->model = m;
	t->waited = t->dep_before = t->broken = 0;
	t->reorders = t->ties = 0;
	t->nlisted = 0;
}

void pt_sequential(struct pt_trace *t)
{
	uint32_t k;

	pt_reset(t, PT_SEQUENTIAL);
	for (k = 0; k < t->nth; k++)
		pt_chain(t, &t->th[k], 0, t->th[k].nev, 0);
}

/* The delay an event passes on as a time basis: t_m - t_a. */
static double basis_delay(const struct pt_trace *t, const struct pt_thread *th, size_t i)
{
	return tm_of(t, &th->ev[i]) - th->ta[i];
}

/* Approximated time of thread th's last event at or before time tt, or -inf; its index in *at. */
static double last_before(const struct pt_thread *th, uint64_t tt, size_t *at)
{
	size_t lo = 0, hi = th->nev;

	while (lo < hi) { /* the first event after tt */
		size_t mid = lo + (hi - lo) / 2;

		if (th->ev[mid].t <= tt)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -HUGE_VAL;
	*at = lo - 1;
	return th->ta[lo - 1];
}

/*
 * The critical path at time tc: among the phase's concurrent events measured up to tc, the
 * one with the greatest approximated time; its delay is the basis of the sequential event at
 * tc. The main thread's own work in the phase counts; its waiting part does not.
 */
static double phase_basis(const struct pt_trace *t, const struct pt_phase *p, uint64_t tc,
			  double fallback)
{
	const struct pt_thread *m = &t->th[t->main];
	double best = -HUGE_VAL, x = fallback;
	uint32_t k;
	size_t at = 0;

	if (p->main_end > p->open + 1) {
		best = m->ta[p->main_end - 1];
		x = basis_delay(t, m, p->main_end - 1);
	}
	for (k = p->first; k != PT_NONE; k = t->th[k].next_in_phase) {
		double a = last_before(&t->th[k], tc, &at);

		if (a > best) {
			best = a;
			x = basis_delay(t, &t->th[k], at);
		}
	}
	return x;
}

/*
 * The main thread from its first JOIN in the phase to the phase's end: it waits for the other
 * threads, so it has left the concurrent part. Each JOIN (and the event closing the phase) is a
 * first sequential event after concurrent ones and takes its basis from the critical path up
 * to it; the events between chain on it. Returns the delay after the last.
 */
static double main_waits(struct pt_trace *t, const struct pt_phase *p, size_t end, double x)
{
	struct pt_thread *m = &t->th[t->main];
	size_t j;

	for (j = p->main_end; j < end; j++) {
		if (m->ev[j].type == STRC_JOIN || j == p->close)
			x = phase_basis(t, p, m->ev[j].t, x);
		x = pt_chain(t, m, j, j + 1, x);
	}
	return x;
}

/*
 * Seed 000 §IV-C2, with the cost of each event in place of a constant α: sequential events
 * (the main thread outside phases) chain on the main thread; the first concurrent event of a
 * thread takes the phase's opening event as its basis and later ones subtract the thread's own
 * costs since; the first sequential event after concurrent ones takes its basis from the
 * critical path (for pthreads: each JOIN of the main thread, see main_waits).
 */
void pt_forkjoin(struct pt_trace *t)
{
	struct pt_thread *m = &t->th[t->main];
	double x = 0;
	size_t i = 0;
	uint32_t p, k;

	pt_reset(t, PT_FORKJOIN);
	for (k = 0; k < t->nth; k++)
		if (k != t->main && t->th[k].phase == PT_NONE)
			pt_chain(t, &t->th[k], 0, t->th[k].nev, 0);
	for (p = 0; p < t->nphases; p++) {
		const struct pt_phase *ph = &t->phases[p];
		size_t end = ph->closed ? ph->close + 1 : m->nev;
		double xb;

		pt_chain(t, m, i, ph->open + 1, x);
		xb = basis_delay(t, m, ph->open);
		for (k = ph->first; k != PT_NONE; k = t->th[k].next_in_phase)
			pt_chain(t, &t->th[k], 0, t->th[k].nev, xb);
		x = pt_chain(t, m, ph->open + 1, ph->main_end,
			     xb + pt_cost(&t->c, &m->ev[ph->open]));
		x = main_waits(t, ph, end, x);
		i = end;
	}
	pt_chain(t, m, i, m->nev, x);
}

void pt_run(struct pt_trace *t, enum pt_model m)
{
	if (m == PT_SEQUENTIAL)
		pt_sequential(t);
	else if (m == PT_FORKJOIN)
		pt_forkjoin(t);
	else
		pt_events(t);
}

/* ---- the approximated trace ---- */

void pt_approx_file(const struct pt_trace *t, const struct strc_file *f, struct strc_file *out)
{
	uint32_t k;

	*out = *f;
	out->features |= STRC_F_APPROX;
	out->threads = xcalloc(f->nthreads, sizeof(*out->threads));
	for (k = 0; k < f->nthreads; k++) {
		const struct pt_thread *th = &t->th[k];
		struct strc_thread *ot = &out->threads[k];
		size_t i, n = 0;

		*ot = f->threads[k];
		ot->ev = xmalloc((th->nev + 1) * sizeof(*ot->ev));
		ot->flushes = ot->flush_ticks = 0;
		for (i = 0; i < th->nev; i++) {
			if (th->ev[i].type == STRC_FLUSH)
				continue;
			ot->ev[n] = th->ev[i];
			ot->ev[n++].t = t->t0 + (uint64_t)llround(fmax(th->ta[i], 0));
		}
		ot->nev = n;
	}
}

void pt_approx_free(struct strc_file *out)
{
	uint32_t k;

	for (k = 0; k < out->nthreads; k++)
		free(out->threads[k].ev);
	free(out->threads);
	out->threads = NULL;
	out->nthreads = 0;
}

/* ---- total execution time ---- */

static double cost_range(const struct pt_trace *t, const struct pt_thread *th, size_t from,
			 size_t to, uint64_t *probes)
{
	double dp = 0;
	size_t i;

	for (i = from; i < to; i++) {
		dp += pt_cost(&t->c, &th->ev[i]);
		*probes += pt_probes(&th->ev[i]);
	}
	return dp;
}

/*
 * The critical thread of a phase for the total-time model (seed 000 §IV-B2): the thread whose
 * measured time in the phase (from the opening event to its last event) is the longest once its
 * own direct perturbation is removed. The main thread takes part with its own work in the phase,
 * up to its first JOIN (after the opening CREATE, whose cost delays it; a JOIN's time is the
 * joined thread's). Returns the main thread's DP inside the whole phase (its probes in
 * *n_main), which the sequential part must not count.
 */
static double phase_critical(struct pt_trace *t, struct pt_phase *p, uint64_t *n_main)
{
	const struct pt_thread *m = &t->th[t->main];
	double t_open = tm_of(t, &m->ev[p->open]), best = -HUGE_VAL, dp_main = 0;
	uint32_t k;

	if (p->main_end > p->open + 1) {
		uint64_t n_own = 0;
		double own = cost_range(t, m, p->open + 1, p->main_end, &n_own);

		best = tm_of(t, &m->ev[p->main_end - 1]) - t_open -
		       pt_cost(&t->c, &m->ev[p->open]) - own;
		p->crit = PT_NONE;
		p->dp_crit = own;
		p->n_crit = n_own;
	}
	*n_main = 0;
	dp_main = cost_range(t, m, p->open + 1, p->close, n_main);
	for (k = p->first; k != PT_NONE; k = t->th[k].next_in_phase) {
		const struct pt_thread *th = &t->th[k];
		double len;

		if (!th->nev)
			continue;
		len = tm_of(t, &th->ev[th->nev - 1]) - t_open - th->dp;
		if (len > best) {
			best = len;
			p->crit = k;
			p->dp_crit = th->dp;
			p->n_crit = th->probes;
		}
	}
	return dp_main;
}

static double approx_end(const struct pt_trace *t)
{
	double lo = HUGE_VAL, hi = -HUGE_VAL;
	uint32_t k;

	for (k = 0; k < t->nth; k++) {
		const struct pt_thread *th = &t->th[k];

		if (!th->nev)
			continue;
		if (th->ta[0] < lo)
			lo = th->ta[0];
		if (th->ta[th->nev - 1] > hi)
			hi = th->ta[th->nev - 1];
	}
	return hi > lo ? hi - lo : 0;
}

void pt_totals(struct pt_trace *t, struct pt_totals *o)
{
	const struct pt_thread *m = &t->th[t->main];
	uint64_t n_in = 0;
	double dp_in = 0;
	uint32_t p;

	*o = (struct pt_totals){ .t_m = (double)(t->t1 - t->t0), .dp_seq = m->dp,
				 .n_seq = m->probes };
	for (p = 0; p < t->nphases; p++) {
		struct pt_phase *ph = &t->phases[p];
		uint64_t n = 0;

		dp_in += phase_critical(t, ph, &n);
		n_in += n;
		o->dp_c += ph->dp_crit;
		o->n_max += ph->n_crit;
	}
	o->dp_s = m->dp - dp_in;
	o->n_s = m->probes - n_in;
	o->t_a_seq = o->t_m - o->dp_seq;
	o->t_a_fj = o->t_m - o->dp_s - o->dp_c;
	o->end = approx_end(t);
}

struct pt_errors pt_errors(double t_m, double t_a, double t)
{
	struct pt_errors e = { .ae = t_m - t };

	if (t > 0) {
		e.re = e.ae / t;
		e.rae = (t_a - t) / t;
	}
	return e;
}
