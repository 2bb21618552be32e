/* SPDX-License-Identifier: MIT */
/*
 * The event-based model (MODELS §3, and §2.4 applied post mortem) and the check for events the
 * approximation reordered across threads. See perturb.h.
 *
 * Events are processed thread by thread, each as far as it can go: a thread stops at a
 * dependent event whose source has not been approximated yet and waits for the source's thread.
 * That order is consistent with happens-before for any edge table (create, join, and later lock
 * and message edges) without a global sort.
 */
#include "perturb.h"

#include <math.h>
#include <stdlib.h>

#include "util.h"

#define NO_EDGE SIZE_MAX

static inline double tm_of(const struct pt_trace *t, const struct strc_event *e)
{
	return (double)(int64_t)(e->t - t->t0);
}

static void list_reorder(struct pt_trace *t, enum pt_reorder_kind kind, uint32_t ta, uint64_t a,
			 uint32_t tb, uint64_t b)
{
	if (t->nlisted < PT_MAX_LISTED)
		t->listed[t->nlisted++] = (struct pt_reorder){ .kind = kind, .thr_a = ta, .a = a,
							       .thr_b = tb, .b = b };
}

/* ---- the event model ---- */

struct ev_state {
	size_t pos;           /* next event to approximate */
	size_t dep;           /* next edge ending on this thread (index in t->edges) */
	size_t blocked;       /* the edge it waits for, NO_EDGE */
	double x;             /* delay of the next event: overhead not yet paid back */
	size_t arrived;       /* an MPI_COLL it reached, its begin approximated (ba), SIZE_MAX */
	uint32_t next_waiter; /* in the list of threads waiting for the same thread */
	uint32_t waiters;     /* first thread waiting for this one, PT_NONE */
};

struct ev_sched {
	struct pt_trace *t;
	struct ev_state *st;
	size_t *edge_end; /* per thread: end of the edges ending on it */
	uint32_t *queue;  /* threads ready to run (circular) */
	uint32_t head, count;
};

static void push(struct ev_sched *s, uint32_t k)
{
	s->queue[(s->head + s->count++) % s->t->nth] = k;
}

static uint32_t pop(struct ev_sched *s)
{
	uint32_t k = s->queue[s->head];

	s->head = (s->head + 1) % s->t->nth;
	s->count--;
	return k;
}

/* A collective's source is ready once its thread has reached it (its begin is known). */
static int source_ready(const struct ev_sched *s, const struct pt_edge *e)
{
	const struct ev_state *r = &s->st[e->src_thr];

	return (e->flags & PT_EDGE_BROKEN) || r->pos > e->src ||
	       (e->kind == PT_EDGE_COLL && r->arrived == e->src);
}

/* Measured: when event i of th, completing a call that ran `wait` ticks, was ready locally:
 * the call's start, or its previous event and that event's probe if later. */
static double call_ready_m(const struct pt_trace *t, const struct pt_thread *th, size_t i,
			   uint64_t wait)
{
	double tm = tm_of(t, &th->ev[i]), begin = (double)wait < tm ? tm - (double)wait : 0;

	if (i == 0)
		return begin;
	return fmax(tm_of(t, &th->ev[i - 1]) + pt_cost(&t->c, &th->ev[i - 1]), fmin(begin, tm));
}

/* What an edge's source offers: its approximated time and its measured "ready" time (after
 * its own probe when the dependent waited for that too); a collective's: its begin. */
static void source_times(const struct pt_trace *t, const struct pt_edge *e, double *ta,
			 double *ready_m)
{
	const struct pt_thread *s = &t->th[e->src_thr];
	const struct strc_event *ev = &s->ev[e->src];

	if (e->kind == PT_EDGE_COLL) {
		*ta = s->ba[e->src];
		*ready_m = call_ready_m(t, s, e->src, e->src_wait);
		return;
	}
	*ta = s->ta[e->src];
	*ready_m = tm_of(t, ev) + (e->flags & PT_EDGE_SOURCE_PROBE ? pt_cost(&t->c, ev) : 0);
}

/* Thread k reached event pos, an MPI_COLL (edges [from, to) end on it): its begin. */
static void arrive(struct ev_sched *s, uint32_t k, size_t from, size_t to)
{
	struct pt_trace *t = s->t;
	struct ev_state *r = &s->st[k];
	size_t j;

	for (j = from; j < to && t->edges[j].kind != PT_EDGE_COLL; j++)
		;
	if (j == to || r->arrived == r->pos)
		return;
	t->th[k].ba[r->pos] = call_ready_m(t, &t->th[k], r->pos, t->edges[j].wait) - r->x;
	r->arrived = r->pos;
}

/*
 * A dependent event (edges [from, to) end on it, their sources approximated). Both sides have a
 * moment they were ready: the thread after its previous event and that event's probe, the
 * source(s) at their event (and probe). The measured time after the later of the two is
 * latency that stays; whatever came before was waiting, which follows the approximation:
 *     t_a(d) = max(ready_local_a, ready_source_a) + (t_m(d) - max(ready_local_m, ready_source_m))
 * A thread's first event has no local side: it starts as delayed as its source.
 */
static void dependent(struct ev_sched *s, uint32_t k, size_t from, size_t to)
{
	struct pt_trace *t = s->t;
	struct pt_thread *th = &t->th[k];
	struct ev_state *r = &s->st[k];
	size_t i = r->pos, j, src = NO_EDGE;
	const struct strc_event *e = &th->ev[i];
	double tm = tm_of(t, e), src_a = -HUGE_VAL, src_m = -HUGE_VAL, a = tm - r->x;
	double call_m = -HUGE_VAL; /* a message's receiving call began then: ready from there */

	for (j = from; j < to; j++) {
		double sa, sm;

		if (t->edges[j].flags & PT_EDGE_BROKEN)
			continue;
		if (t->edges[j].kind == PT_EDGE_MESSAGE || t->edges[j].kind == PT_EDGE_COLL)
			call_m = fmax(call_m, tm - (double)t->edges[j].wait);
		source_times(t, &t->edges[j], &sa, &sm);
		if (sm > src_m)
			src_m = sm;
		if (sa > src_a) {
			src_a = sa;
			src = j;
		}
	}
	if (src != NO_EDGE && i == 0) {
		a = src_a + (tm - src_m);
	} else if (src != NO_EDGE) {
		double loc_m = fmax(tm_of(t, &th->ev[i - 1]) + pt_cost(&t->c, &th->ev[i - 1]),
				    fmin(call_m, tm));
		double loc_a = loc_m - r->x;

		if (a < src_a - t->c.dt) {
			t->dep_before++;
			list_reorder(t, PT_RE_DEPENDENT, t->edges[src].src_thr, t->edges[src].src, k,
				     i);
		}
		if (src_a > loc_a)
			t->waited++;
		a = fmax(loc_a, src_a) + (tm - fmax(loc_m, src_m));
	}
	if (i > 0 && a < th->ta[i - 1]) {
		a = th->ta[i - 1];
		th->simultaneous++;
	}
	th->ta[i] = a;
	r->x = tm - a + pt_cost(&t->c, e);
}

enum { RUN_DONE, RUN_BLOCKED };

/* Run thread k as far as it goes: local events in one loop, dependents one by one. */
static int run_thread(struct ev_sched *s, uint32_t k)
{
	struct pt_trace *t = s->t;
	struct pt_thread *th = &t->th[k];
	struct ev_state *r = &s->st[k];
	size_t end = s->edge_end[k];

	for (;;) {
		size_t stop = th->nev, j;

		while (r->dep < end && t->edges[r->dep].dst < r->pos)
			r->dep++; /* a second edge into an event already done */
		if (r->dep < end && t->edges[r->dep].dst < stop)
			stop = t->edges[r->dep].dst;
		if (r->pos < stop) {
			r->x = pt_chain(t, th, r->pos, stop, r->x);
			r->pos = stop;
		}
		if (r->pos >= th->nev)
			return RUN_DONE;
		for (j = r->dep; j < end && t->edges[j].dst == r->pos; j++)
			;
		arrive(s, k, r->dep, j);
		for (j = r->dep; j < end && t->edges[j].dst == r->pos; j++)
			if (!source_ready(s, &t->edges[j])) {
				r->blocked = j;
				return RUN_BLOCKED;
			}
		dependent(s, k, r->dep, j);
		r->dep = j;
		r->pos++;
	}
}

static void wait_on(struct ev_sched *s, uint32_t k)
{
	uint32_t src = s->t->edges[s->st[k].blocked].src_thr;

	s->st[k].next_waiter = s->st[src].waiters;
	s->st[src].waiters = k;
}

/* Thread k moved on: the threads waiting for it whose source is now done can run. */
static void release(struct ev_sched *s, uint32_t k)
{
	uint32_t *link = &s->st[k].waiters;

	while (*link != PT_NONE) {
		uint32_t w = *link;
		struct ev_state *r = &s->st[w];

		if (source_ready(s, &s->t->edges[r->blocked])) {
			*link = r->next_waiter;
			r->blocked = NO_EDGE;
			push(s, w);
		} else {
			link = &r->next_waiter;
		}
	}
}

/*
 * Every thread left waits for another: the edges make a cycle (a damaged trace, or clocks
 * that disagree). Drop the edge of the waiting event measured earliest and go on.
 */
static void break_cycle(struct ev_sched *s)
{
	uint32_t k, pick = PT_NONE, *link;

	for (k = 0; k < s->t->nth; k++) {
		const struct ev_state *r = &s->st[k];

		if (r->blocked == NO_EDGE)
			continue;
		if (pick == PT_NONE ||
		    s->t->th[k].ev[r->pos].t < s->t->th[pick].ev[s->st[pick].pos].t)
			pick = k;
	}
	if (pick == PT_NONE)
		return;
	s->t->edges[s->st[pick].blocked].flags |= PT_EDGE_BROKEN;
	s->t->broken++;
	link = &s->st[s->t->edges[s->st[pick].blocked].src_thr].waiters;
	while (*link != pick)
		link = &s->st[*link].next_waiter;
	*link = s->st[pick].next_waiter;
	s->st[pick].blocked = NO_EDGE;
	push(s, pick);
}

static void sched_init(struct ev_sched *s, struct pt_trace *t)
{
	size_t e = 0;
	uint32_t k;

	s->t = t;
	s->st = xcalloc(t->nth, sizeof(*s->st));
	s->edge_end = xcalloc(t->nth, sizeof(*s->edge_end));
	s->queue = xcalloc(t->nth, sizeof(*s->queue));
	s->head = s->count = 0;
	for (k = 0; k < t->nth; k++) {
		s->st[k] = (struct ev_state){ .dep = e, .blocked = NO_EDGE, .waiters = PT_NONE,
					      .next_waiter = PT_NONE, .arrived = SIZE_MAX };
		while (e < t->nedges && t->edges[e].dst_thr == k)
			e++;
		s->edge_end[k] = e;
	}
}

void pt_events(struct pt_trace *t)
{
	struct ev_sched s;
	uint32_t k, left = 0;
	size_t e;

	pt_reset(t, PT_EVENTS);
	for (e = 0; e < t->nedges; e++)
		t->edges[e].flags &= (uint16_t)~PT_EDGE_BROKEN;
	sched_init(&s, t);
	for (k = 0; k < t->nth; k++)
		if (t->th[k].nev) {
			push(&s, k);
			left++;
		}
	while (left) {
		while (s.count) {
			k = pop(&s);
			if (run_thread(&s, k) == RUN_DONE)
				left--;
			else
				wait_on(&s, k);
			release(&s, k);
		}
		if (left)
			break_cycle(&s);
	}
	free(s.st);
	free(s.edge_end);
	free(s.queue);
}

/* ---- reorderings across threads ---- */

/*
 * Event e of thread k is reordered when an event of another thread, measured more than dt
 * before it, is approximated more than dt after it; by less, it is a tie. A thread's
 * approximated times never decrease, so of each other thread only the last event measured more
 * than dt before e matters ("matured" for e), and of those only the latest. Each reordered
 * event is counted once, against that one. FLUSH events take no part: their time was the
 * runtime's.
 *
 * One walk in measured order: a lead cursor, and a lag cursor trailing it by more than dt that
 * hands each event over as it matures. The threads of the events between the two wait in a
 * ring. The inner loops avoid unpredictable branches: threads interleave at random in a real
 * trace, and a mispredicted branch per event would cost more than the rest of the work.
 */

/* Reorderings offered for the list: the first ones (a branch taken at random in the loops would
 * cost more than the rest of the work), each pair of threads listed once. */
#define LIST_TRIES 256

/* List a reordering, the first of each pair of threads only. */
static void list_pair(struct pt_trace *t, uint32_t j, size_t at, uint32_t k, size_t i)
{
	uint32_t n;

	for (n = 0; n < t->nlisted; n++)
		if (t->listed[n].kind == PT_RE_PAIR && t->listed[n].thr_a == j &&
		    t->listed[n].thr_b == k)
			return;
	list_reorder(t, PT_RE_PAIR, j, at, k, i);
}

/* Count event i of thread k against R, the latest matured time on another thread. */
static inline int judge(struct pt_trace *t, uint32_t k, size_t i, double r)
{
	double gap = r - t->th[k].ta[i];
	int reordered = gap > t->c.dt;

	if (t->th[k].ev[i].type == STRC_FLUSH)
		return 0;
	t->reorders += (uint64_t)reordered;
	t->ties += (uint64_t)((gap > 0) & !reordered);
	return reordered;
}

struct walk {
	struct pt_trace *t;
	size_t *pos, *lag;  /* per thread: next event of the lead, and of the lag */
	uint32_t *ring;     /* threads of the events the lead passed and the lag did not */
	size_t cap, head, n; /* cap: a power of 2 */
	uint64_t dt;        /* differences are whole ticks: > dt iff > floor(dt) */
};

static void walk_init(struct walk *w, struct pt_trace *t)
{
	*w = (struct walk){ .t = t, .cap = 1024, .dt = (uint64_t)t->c.dt };
	w->pos = xcalloc(t->nth, sizeof(*w->pos));
	w->lag = xcalloc(t->nth, sizeof(*w->lag));
	w->ring = xmalloc(w->cap * sizeof(*w->ring));
}

static void walk_free(struct walk *w)
{
	free(w->pos);
	free(w->lag);
	free(w->ring);
}

static void ring_grow(struct walk *w)
{
	uint32_t *v = xmalloc(2 * w->cap * sizeof(*v));
	size_t j;

	for (j = 0; j < w->n; j++)
		v[j] = w->ring[(w->head + j) & (w->cap - 1)];
	free(w->ring);
	w->ring = v;
	w->head = 0;
	w->cap *= 2;
}

static inline void ring_push(struct walk *w, uint32_t k)
{
	if (__builtin_expect(w->n == w->cap, 0)) /* more events within dt than ever before */
		ring_grow(w);
	w->ring[(w->head + w->n++) & (w->cap - 1)] = k;
}

/* The thread of the next event measured more than dt before te (its index: lag - 1), or
 * PT_NONE. */
static inline uint32_t ripe(struct walk *w, uint64_t te)
{
	uint32_t k;

	if (!w->n)
		return PT_NONE;
	k = w->ring[w->head];
	if (te - w->t->th[k].ev[w->lag[k]].t <= w->dt)
		return PT_NONE;
	w->lag[k]++;
	w->head = (w->head + 1) & (w->cap - 1);
	w->n--;
	return k;
}

#define FEW_THREADS 16 /* up to this many: a scan of their next events and latest times */

/*
 * Few threads: the next event by a scan of packed keys ((t - t0) << 4 | thread), which also
 * gives the second, so a thread's run of events ahead of all others goes in one loop; the
 * latest matured time per thread in an array (times only grow, so the maximum over the other
 * threads is kept up to date with one comparison as events mature, once computed: only when
 * the latest matured time of any thread is ahead of the event). Everything the loop touches is
 * local, so the compiler keeps it in registers and on the stack.
 */
struct few {
	const struct strc_event *ev[FEW_THREADS];
	const double *ta[FEW_THREADS];
	size_t nev[FEW_THREADS], pos[FEW_THREADS], lag[FEW_THREADS], mi[FEW_THREADS];
	uint64_t key[FEW_THREADS];
	double m[FEW_THREADS];
};

static void few_init(struct few *f, const struct pt_trace *t)
{
	uint32_t k;

	for (k = 0; k < t->nth; k++) {
		f->ev[k] = t->th[k].ev;
		f->ta[k] = t->th[k].ta;
		f->nev[k] = t->th[k].nev;
		f->pos[k] = f->lag[k] = f->mi[k] = 0;
		f->key[k] = f->nev[k] ? (f->ev[k][0].t - t->t0) << 4 | k : UINT64_MAX;
		f->m[k] = -HUGE_VAL;
	}
}

static void reorders_few(struct pt_trace *t, struct walk *w)
{
	struct few f;
	const uint64_t t0 = t->t0, dt = w->dt;
	const double dtd = t->c.dt;
	uint64_t reorders = 0, ties = 0;
	uint32_t k, j, n = t->nth;
	int tries = LIST_TRIES;
	double mall = -HUGE_VAL; /* the latest matured time of any thread */

	few_init(&f, t);
	for (;;) {
		uint64_t best = UINT64_MAX, next = UINT64_MAX, lim;
		const struct strc_event *ev;
		const double *ta;
		size_t i, nev;
		double r = -HUGE_VAL;
		int have_r = 0;

		for (j = 0; j < n; j++) { /* conditional moves, no branch */
			uint64_t v = f.key[j], hi = v > best ? v : best;

			next = hi < next ? hi : next;
			best = v < best ? v : best;
		}
		if (best == UINT64_MAX)
			break;
		k = (uint32_t)(best & 15);
		ev = f.ev[k];
		ta = f.ta[k];
		nev = f.nev[k];
		i = f.pos[k];
		lim = next;
		do {
			uint64_t te = ev[i].t;
			double gap;

			__builtin_prefetch(&ev[i + 8]);
			__builtin_prefetch(&ta[i + 8]);
			while (w->n) { /* the lag: events now more than dt in the past */
				uint32_t g = w->ring[w->head];
				size_t li = f.lag[g];

				if (te - f.ev[g][li].t <= dt)
					break;
				f.lag[g] = li + 1;
				w->head = (w->head + 1) & (w->cap - 1);
				w->n--;
				if (f.ev[g][li].type != STRC_FLUSH) {
					f.m[g] = f.ta[g][li];
					f.mi[g] = li;
					r = g != k && f.m[g] > r ? f.m[g] : r;
					mall = f.m[g] > mall ? f.m[g] : mall;
				}
			}
			/* the maximum over the other threads only when it could matter: until then
			 * r holds what matured during the run, no more than the true maximum */
			if (mall > ta[i] && !have_r) {
				for (j = 0; j < n; j++)
					r = j != k && f.m[j] > r ? f.m[j] : r;
				have_r = 1;
			}
			gap = ev[i].type == STRC_FLUSH ? 0 : r - ta[i];
			reorders += gap > dtd;
			ties += (gap > 0) & (gap <= dtd);
			if ((gap > dtd) & (tries > 0) && tries--)
				for (j = 0; j < n; j++)
					if (j != k && f.m[j] == r) {
						list_pair(t, j, f.mi[j], k, i);
						break;
					}
			ring_push(w, k);
			i++;
			f.key[k] = i < nev ? (ev[i].t - t0) << 4 | k : UINT64_MAX;
		} while (f.key[k] < lim);
		f.pos[k] = i;
	}
	t->reorders += reorders;
	t->ties += ties;
}

/* Many threads: the next event from a heap of the threads' next events; of the matured
 * events, the latest times of the two threads that have the latest. */
struct head {
	uint64_t t;
	uint32_t k;
	uint32_t pad;
};

static int before(const struct head *a, const struct head *b)
{
	return a->t < b->t || (a->t == b->t && a->k < b->k);
}

static void sift_down(struct head *heap, uint32_t n, uint32_t i)
{
	struct head h = heap[i];

	for (;;) {
		uint32_t l = 2 * i + 1, c = l;

		if (l >= n)
			break;
		if (l + 1 < n && before(&heap[l + 1], &heap[l]))
			c = l + 1;
		if (!before(&heap[c], &h))
			break;
		heap[i] = heap[c];
		i = c;
	}
	heap[i] = h;
}

struct top2 {
	uint32_t thr[2];
	uint64_t idx[2];
	double v[2];
};

static void top_update(struct top2 *p, uint32_t k, uint64_t i, double v)
{
	if (k == p->thr[0]) {
		p->idx[0] = i;
		p->v[0] = v; /* a thread's times never decrease */
	} else if (v > p->v[0]) {
		p->thr[1] = p->thr[0];
		p->idx[1] = p->idx[0];
		p->v[1] = p->v[0];
		p->thr[0] = k;
		p->idx[0] = i;
		p->v[0] = v;
	} else if (v > p->v[1]) {
		p->thr[1] = k;
		p->idx[1] = i;
		p->v[1] = v;
	}
}

static void reorders_many(struct pt_trace *t, struct walk *w)
{
	struct top2 top = { { PT_NONE, PT_NONE }, { 0, 0 }, { -HUGE_VAL, -HUGE_VAL } };
	struct head *heap = xcalloc(t->nth, sizeof(*heap));
	uint32_t k, j, n = 0;
	int tries = LIST_TRIES;

	for (k = 0; k < t->nth; k++)
		if (t->th[k].nev)
			heap[n++] = (struct head){ .t = t->th[k].ev[0].t, .k = k };
	for (k = n / 2; k-- > 0;)
		sift_down(heap, n, k);
	while (n) {
		const struct pt_thread *th;
		size_t i;
		uint32_t o;

		k = heap[0].k;
		th = &t->th[k];
		i = w->pos[k]++;
		while ((j = ripe(w, th->ev[i].t)) != PT_NONE)
			if (t->th[j].ev[w->lag[j] - 1].type != STRC_FLUSH)
				top_update(&top, j, w->lag[j] - 1, t->th[j].ta[w->lag[j] - 1]);
		o = top.thr[0] != k ? 0 : 1;
		if (judge(t, k, i, top.v[o]) & (tries > 0) && tries--)
			list_pair(t, top.thr[o], top.idx[o], k, i);
		ring_push(w, k);
		if (i + 1 < th->nev)
			heap[0].t = th->ev[i + 1].t;
		else
			heap[0] = heap[--n];
		if (n)
			sift_down(heap, n, 0);
	}
	free(heap);
}

void pt_reorders(struct pt_trace *t)
{
	struct walk w;

	t->reorders = t->ties = 0;
	if (t->nth < 2)
		return;
	walk_init(&w, t);
	if (t->nth <= FEW_THREADS)
		reorders_few(t, &w);
	else
		reorders_many(t, &w);
	walk_free(&w);
}
