/* SPDX-License-Identifier: MIT */
/*
 * The post-mortem source's MPI metrics and resources (docs/consult.md, "MPI runs"): the traces
 * of an MPI run's ranks are replayed together on their common clock, their messages and
 * collectives matched (tool/mpi_match.c). A receive's or a collective's call (from its start,
 * the event's time less its `wait`, to the event) is MPI time, not computing, charged to the
 * innermost open call and to its channel: the communicator, and for a receive the sender's
 * world rank (the peer) and the tag. Part of it is waiting:
 *   - a late sender: the receive began before the matching send did (Scalasca's pattern): from
 *     the receive's start to the send's start;
 *   - a wait at a collective: for the member(s) the operation depends on to arrive — all of
 *     them (Barrier, Allreduce, Allgather, Alltoall, Reduce_scatter), the root (Bcast,
 *     Scatter), every member for the root (Gather, Reduce), the lower ranks (Scan, Exscan).
 * A rank's search covers its MPI interval, from its first MPI call's start to its last one's
 * end: MPI_Init and MPI_Finalize, not wrapped in a trace, would otherwise look like computing.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_source_int.h"
#include "util.h"

/* Clocks of two traces disagreeing by more than this are of different machines (as
 * tool/analyze_mpi.c decides). */
#define SAME_CLOCK_NS 2e6

static int same_clock(const struct strc_file *f, const struct strc_file *g)
{
	double wall = (double)g->start_unix_ns - (double)f->start_unix_ns;
	double ticks = (double)g->start_ticks - (double)f->start_ticks;

	return fabs(wall - strc_ticks_to_ns(f, 1) * ticks) <= SAME_CLOCK_NS;
}

static int is_call(const struct strc_event *e)
{
	return e->type == STRC_MPI_RECV || e->type == STRC_MPI_COLL;
}

/* Each trace's MPI interval in ticks (lo = UINT64_MAX: no MPI call). */
static void intervals(struct tsrc *t)
{
	struct ts_mpi *m = t->mpi;
	uint32_t p, i;
	size_t k;

	m->lo = xcalloc(t->nfiles, sizeof(uint64_t));
	m->hi = xcalloc(t->nfiles, sizeof(uint64_t));
	for (p = 0; p < t->nfiles; p++) {
		const struct strc_file *f = t->files[p];
		uint64_t lo = UINT64_MAX, hi = 0;

		for (i = 0; i < f->nthreads; i++)
			for (k = 0; k < f->threads[i].nev; k++) {
				const struct strc_event *e = &f->threads[i].ev[k];
				uint64_t w = is_call(e) ? strc_mpi_of(f, e)->wait : 0;

				if (!is_call(e) && e->type != STRC_MPI_SEND)
					continue;
				lo = e->t - (w < e->t ? w : e->t) < lo ? e->t - (w < e->t ? w : e->t)
								      : lo;
				hi = e->t > hi ? e->t : hi;
			}
		m->lo[p] = lo;
		m->hi[p] = hi;
	}
}

/* From the last rank's first MPI call on: before it, the others wait for a rank still
 * starting (mpirun's launch), which is no trait of the program. */
int ts_mpi_span(const struct tsrc *t, uint64_t *first, uint64_t *last)
{
	uint64_t lo = 0, hi = 0;
	uint32_t p;

	if (!t->mpi || t->nfiles < 2)
		return -1;
	for (p = 0; p < t->nfiles; p++) {
		if (t->mpi->lo[p] == UINT64_MAX)
			continue;
		lo = t->mpi->lo[p] > lo ? t->mpi->lo[p] : lo;
		hi = t->mpi->hi[p] > hi ? t->mpi->hi[p] : hi;
	}
	if (!lo || lo >= hi)
		return -1;
	*first = lo;
	*last = hi;
	return 0;
}

/* The intervals in ns since the origin, and the seconds of them in each period. */
static void alive(struct tsrc *t)
{
	struct ts_mpi *m = t->mpi;
	uint32_t p, b;

	m->alive = xcalloc(t->nfiles, sizeof(double *));
	for (p = 0; p < t->nfiles; p++) {
		m->lo[p] = m->lo[p] == UINT64_MAX ? 0 : ts_ns_of(t, m->lo[p]);
		m->hi[p] = m->hi[p] == 0 ? t->run_ns : ts_ns_of(t, m->hi[p]);
		m->alive[p] = xcalloc(t->nbuckets, sizeof(double));
		for (b = 0; b < t->nbuckets; b++) {
			uint64_t a = (uint64_t)b * t->period, z = a + t->period;

			a = a > m->lo[p] ? a : m->lo[p];
			z = z < m->hi[p] ? z : m->hi[p];
			m->alive[p][b] = z > a ? (double)(z - a) / 1e9 : 0;
		}
	}
}

static const struct strc_event *ev_of(const struct tsrc *t, const struct mm_ref *r)
{
	return &t->files[r->proc]->threads[r->thr].ev[r->ev];
}

static int cmp_cw(const void *a, const void *b)
{
	const struct ts_cwait *x = a, *y = b;

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->thr != y->thr)
		return x->thr < y->thr ? -1 : 1;
	return x->ev < y->ev ? -1 : x->ev > y->ev;
}

/* When member j of a collective entered it (ticks), and its rank in the communicator. */
static uint64_t entered(const struct tsrc *t, const struct mm_ref *r, int32_t *crank)
{
	const struct strc_file *f = t->files[r->proc];
	const struct strc_event *e = ev_of(t, r);
	const struct strc_comm *c = strc_comm_of(f, e->id);
	uint64_t w = strc_mpi_of(f, e)->wait;

	*crank = c ? c->rank : -1;
	return e->t - (w < e->t ? w : e->t);
}

/* What member i of collective c waited for the members it depends on (ticks). */
static uint64_t coll_wait(const struct tsrc *t, const struct mm_coll *c, uint32_t i)
{
	const struct mm_ref *ev = &t->mpi->mm.coll_ev[c->first];
	int32_t ri, rj, root = strc_mpi_of(t->files[ev[i].proc], ev_of(t, &ev[i]))->peer;
	uint64_t mine = entered(t, &ev[i], &ri), last = mine, in;
	uint64_t w = strc_mpi_of(t->files[ev[i].proc], ev_of(t, &ev[i]))->wait;
	uint32_t j;

	for (j = 0; j < c->n; j++) {
		in = entered(t, &ev[j], &rj);
		switch (c->op) {
		case 2: case 5: case 6: /* Bcast, Scatter(v): the root */
			if (rj != root)
				continue;
			break;
		case 3: case 4: case 9: /* Gather(v), Reduce: the root waits for everyone */
			if (ri != root)
				continue;
			break;
		case 13: case 14: /* Scan, Exscan: the ranks up to this one */
			if (rj > ri)
				continue;
			break;
		default: /* every member */
			break;
		}
		last = in > last ? in : last;
	}
	return last - mine < w ? last - mine : w;
}

static void coll_waits(struct tsrc *t)
{
	struct ts_mpi *m = t->mpi;
	size_t c, cap = 0;
	uint32_t i;

	for (c = 0; c < m->mm.ncolls; c++) {
		const struct mm_coll *k = &m->mm.colls[c];

		if (k->n < m->mm.comms[k->comm].size)
			continue; /* members missing: what they did is not known */
		for (i = 0; i < k->n; i++) {
			uint64_t w = coll_wait(t, k, i);
			const struct mm_ref *r = &m->mm.coll_ev[k->first + i];

			if (!w)
				continue;
			if (m->ncw == cap) {
				cap = cap ? cap * 2 : 64;
				m->cw = xrealloc(m->cw, cap * sizeof(*m->cw));
			}
			m->cw[m->ncw++] = (struct ts_cwait){ r->proc, r->thr, r->ev, w };
		}
	}
	qsort(m->cw, m->ncw, sizeof(*m->cw), cmp_cw);
}

static void names(struct tsrc *t)
{
	struct ts_mpi *m = t->mpi;
	char buf[32];
	uint32_t c;

	m->comm_name = xcalloc(m->mm.ncomms ? m->mm.ncomms : 1, sizeof(char *));
	for (c = 0; c < m->mm.ncomms; c++) {
		snprintf(buf, sizeof(buf), "comm%u", c);
		m->comm_name[c] = xstrdup(m->mm.comms[c].world ? "world" : buf);
	}
}

int ts_mpi_init(struct tsrc *t, char *err, size_t cap)
{
	uint32_t i;

	if (!mm_any(t->files, t->nfiles))
		return 0;
	for (i = 1; i < t->nfiles; i++)
		if (!same_clock(t->files[0], t->files[i])) {
			snprintf(err, cap, "the ranks' traces are of different clocks (several "
				 "machines?): search them one by one with --pid");
			return -1;
		}
	t->mpi = xcalloc(1, sizeof(*t->mpi));
	if (mm_match(&t->mpi->mm, t->files, t->nfiles, err, cap) != 0)
		return -1;
	t->mpi->matched = t->nfiles > 1;
	intervals(t);
	return 0;
}

void ts_mpi_layout(struct tsrc *t)
{
	if (!t->mpi)
		return;
	alive(t);
	if (t->mpi->matched)
		coll_waits(t);
	names(t);
}

void ts_mpi_free(struct tsrc *t)
{
	struct ts_mpi *m = t->mpi;
	uint32_t i;

	if (!m)
		return;
	for (i = 0; m->alive && i < t->nfiles; i++)
		free(m->alive[i]);
	for (i = 0; m->comm_name && i < m->mm.ncomms; i++)
		free(m->comm_name[i]);
	free(m->comm_name);
	free(m->alive);
	free(m->lo);
	free(m->hi);
	free(m->cw);
	mm_free(&m->mm);
	free(m);
	t->mpi = NULL;
}

int32_t ts_mpi_rank(const struct tsrc *t, uint32_t i)
{
	return t->mpi && i < t->mpi->mm.nf ? t->mpi->mm.rank[i] : -1;
}

/* ---- the replay: a receive's or a collective's call ---- */

static struct ts_mentry *mentry(struct tsrc *t, uint32_t node, uint32_t bucket,
				const struct ts_mentry *key)
{
	struct ts_node *n = &t->nodes[node];
	uint32_t i;

	/* entries of one period are together at the end: look back through them */
	for (i = n->nme; i > 0 && n->me[i - 1].bucket == bucket; i--) {
		const struct ts_mentry *x = &n->me[i - 1];

		if (x->comm == key->comm && x->peer == key->peer && x->tag == key->tag &&
		    x->coll == key->coll)
			return &n->me[i - 1];
	}
	if (n->nme == n->capme) {
		n->capme = n->capme ? n->capme * 2 : 4;
		n->me = xrealloc(n->me, n->capme * sizeof(*n->me));
	}
	n->me[n->nme] = *key;
	n->me[n->nme].bucket = bucket;
	return &n->me[n->nme++];
}

/* Seconds [a, b) in the call, of which [a0, late_end) waiting, spread over the periods. */
static void mspread(struct tsrc *t, uint32_t node, const struct ts_mentry *key, uint64_t a,
		    uint64_t b, uint64_t late_end)
{
	a = a > t->clip_lo ? a : t->clip_lo;
	b = b < t->clip_hi ? b : t->clip_hi;
	while (a < b) {
		uint32_t k = ts_bucket_of(t, a);
		uint64_t end = (uint64_t)(k + 1) * t->period;
		uint64_t upto = b < end || k == t->nbuckets - 1 ? b : end;
		uint64_t late = late_end > a ? (late_end < upto ? late_end : upto) - a : 0;
		struct ts_mentry *x = mentry(t, node, k, key);

		x->secs += (double)(upto - a) / 1e9;
		x->late += (double)late / 1e9;
		a = upto;
	}
}

static uint64_t late_sender(const struct tsrc *t, uint32_t thr, size_t ev, uint64_t start,
			    uint64_t end)
{
	size_t i = mm_msg_of(&t->mpi->mm, 1, t->fi, thr, ev);
	uint64_t s;

	if (i == SIZE_MAX)
		return 0;
	s = ev_of(t, &t->mpi->mm.msgs[i].send)->t;
	return s > start ? (s < end ? s : end) - start : 0;
}

static uint64_t coll_waited(const struct tsrc *t, uint32_t thr, size_t ev)
{
	const struct ts_cwait key = { t->fi, thr, ev, 0 };
	const struct ts_cwait *w = bsearch(&key, t->mpi->cw, t->mpi->ncw, sizeof(key), cmp_cw);

	return w ? w->ticks : 0;
}

void ts_mpi_call(struct tsrc *t, uint32_t node, uint32_t thr, const struct strc_event *e)
{
	const struct strc_mpi *p = strc_mpi_of(t->f, e);
	size_t ev = (size_t)(e - t->f->threads[thr].ev);
	uint64_t start = e->t - (p->wait < e->t ? p->wait : e->t), late = 0, a, b;
	struct ts_mentry key = { .comm = mm_comm_index(&t->mpi->mm, t->fi, e->id), .peer = -1,
				 .tag = -1, .coll = e->type == STRC_MPI_COLL };

	ts_advance(t, node, start); /* computing until the call began */
	if (!key.coll) {
		key.peer = key.comm == MM_NONE ? -1 : mm_world_of(&t->mpi->mm, key.comm, p->peer);
		key.tag = p->tag;
		if (t->mpi->matched)
			late = late_sender(t, thr, ev, start, e->t);
	} else if (t->mpi->matched) {
		late = coll_waited(t, thr, ev);
	}
	a = ts_ns_of(t, start);
	b = ts_ns_of(t, e->t);
	mspread(t, node, &key, a > t->last ? a : t->last, b, ts_ns_of(t, start + late));
	t->last = b > t->last ? b : t->last;
}

/* ---- foci ---- */

static int int_after(const char *part, const char *prefix, int32_t *out)
{
	size_t k = strlen(prefix);
	char *end;
	long v;

	if (strncmp(part, prefix, k) || !part[k])
		return -1;
	v = strtol(part + k, &end, 10);
	if (*end || v < 0 || v > INT32_MAX)
		return -1;
	*out = (int32_t)v;
	return 0;
}

int ts_mpi_focus(const struct tsrc *t, const struct cs_focus *f, struct ts_mfocus *out)
{
	const char *pr = f->part[H_PROCESS], *co = f->part[H_COMM];
	int32_t rank;
	uint32_t i;

	*out = (struct ts_mfocus){ UINT32_MAX, UINT32_MAX, -1, -1 };
	if (!pr && !co && !f->part[H_PEER] && !f->part[H_TAG])
		return 0;
	if (!t->mpi)
		return -1;
	if (pr) {
		if (int_after(pr, "/Process/rank", &rank))
			return -1;
		for (i = 0; i < t->nfiles && ts_mpi_rank(t, i) != rank; i++)
			;
		if (i == t->nfiles)
			return -1;
		out->rank = i;
	}
	if (co) {
		if (strncmp(co, "/Communicator/", 14))
			return -1;
		for (i = 0; i < t->mpi->mm.ncomms && strcmp(t->mpi->comm_name[i], co + 14); i++)
			;
		if (i == t->mpi->mm.ncomms)
			return -1;
		out->comm = i;
	}
	if (f->part[H_PEER] && int_after(f->part[H_PEER], "/Peer/rank", &out->peer))
		return -1;
	if (f->part[H_TAG] && int_after(f->part[H_TAG], "/Tag/", &out->tag))
		return -1;
	return 0;
}

static int matches(const struct ts_mfocus *mf, const struct ts_mentry *x)
{
	if (mf->comm != UINT32_MAX && x->comm != mf->comm)
		return 0;
	if (mf->peer >= 0 && (x->coll || x->peer != mf->peer))
		return 0;
	return mf->tag < 0 || (!x->coll && x->tag == mf->tag);
}

static void add_value(int64_t **vals, uint32_t *n, int64_t v)
{
	uint32_t i;

	for (i = 0; i < *n; i++)
		if ((*vals)[i] == v)
			return;
	*vals = xrealloc(*vals, (*n + 1) * sizeof(int64_t));
	(*vals)[(*n)++] = v;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The values of hierarchy h among a node's entries seen so far that match the focus. */
static void node_values(const struct tsrc *t, const struct ts_node *n, int h,
			const struct ts_mfocus *mf, int msg_part, int64_t **vals, uint32_t *nv)
{
	uint32_t k;

	if (h == H_PROCESS && !msg_part) {
		if (n->first_bucket < t->cur)
			add_value(vals, nv, ts_mpi_rank(t, t->threads[n->thread].rank));
		return;
	}
	for (k = 0; k < n->nme && n->me[k].bucket < t->cur; k++) {
		const struct ts_mentry *x = &n->me[k];

		if (!matches(mf, x) || x->secs <= 0)
			continue;
		if (h == H_PROCESS)
			add_value(vals, nv, ts_mpi_rank(t, t->threads[n->thread].rank));
		else if (h == H_COMM && x->comm != MM_NONE)
			add_value(vals, nv, x->comm);
		else if (h == H_PEER && !x->coll && x->peer >= 0)
			add_value(vals, nv, x->peer);
		else if (h == H_TAG && !x->coll)
			add_value(vals, nv, x->tag);
	}
}

uint32_t ts_mpi_children(const struct tsrc *t, const struct cs_focus *f, int h,
			 const uint32_t *nodes, uint32_t nnodes, char ***out)
{
	struct ts_mfocus mf;
	int64_t *vals = NULL;
	uint32_t nv = 0, i;
	char buf[64];
	int msg_part = f->part[H_COMM] || f->part[H_PEER] || f->part[H_TAG];

	*out = NULL;
	if ((h == H_PROCESS && t->nfiles < 2) || ts_mpi_focus(t, f, &mf) != 0)
		return 0;
	for (i = 0; i < nnodes; i++)
		node_values(t, &t->nodes[nodes[i]], h, &mf, msg_part, &vals, &nv);
	qsort(vals, nv, sizeof(int64_t), cmp_i64);
	*out = nv ? xcalloc(nv, sizeof(char *)) : NULL;
	for (i = 0; i < nv; i++) {
		if (h == H_PROCESS)
			snprintf(buf, sizeof(buf), "/Process/rank%lld", (long long)vals[i]);
		else if (h == H_COMM)
			snprintf(buf, sizeof(buf), "/Communicator/%s",
				 t->mpi->comm_name[vals[i]]);
		else if (h == H_PEER)
			snprintf(buf, sizeof(buf), "/Peer/rank%lld", (long long)vals[i]);
		else
			snprintf(buf, sizeof(buf), "/Tag/%lld", (long long)vals[i]);
		(*out)[i] = xstrdup(buf);
	}
	free(vals);
	return nv;
}

double ts_mpi_read(const struct ts_node *n, uint32_t *cursor, uint32_t b, const struct ts_req *r)
{
	double v = 0;

	while (*cursor < n->nme && n->me[*cursor].bucket < b)
		(*cursor)++;
	for (; *cursor < n->nme && n->me[*cursor].bucket == b; (*cursor)++) {
		const struct ts_mentry *x = &n->me[*cursor];

		if (!matches(&r->mf, x))
			continue;
		switch (r->m) {
		case M_MPI_TIME:
			v += x->secs;
			break;
		case M_MPI_P2P:
			v += x->coll ? 0 : x->secs;
			break;
		case M_MPI_COLL:
			v += x->coll ? x->secs : 0;
			break;
		case M_LATE_SENDER:
			v += x->coll ? 0 : x->late;
			break;
		case M_COLL_WAIT:
			v += x->coll ? x->late : 0;
			break;
		default:
			break;
		}
	}
	return v;
}

void ts_mpi_info(const struct tsrc *t, struct trace_source_info *out)
{
	int64_t *peers = NULL, *tags = NULL;
	uint32_t np = 0, ntags = 0, i, k;

	if (!t->mpi)
		return;
	for (i = 0; i < t->nnodes; i++)
		for (k = 0; k < t->nodes[i].nme; k++)
			if (!t->nodes[i].me[k].coll) {
				add_value(&peers, &np, t->nodes[i].me[k].peer);
				add_value(&tags, &ntags, t->nodes[i].me[k].tag);
			}
	free(peers);
	free(tags);
	out->ranks = t->nfiles > 1 ? t->nfiles : 0;
	out->comms = t->mpi->mm.ncomms;
	out->peers = np;
	out->tags = ntags;
	out->metrics += 3 + (t->mpi->matched ? 2 : 0) + (t->nfiles > 1 ? 3 : 0);
}
