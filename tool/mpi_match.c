/* SPDX-License-Identifier: MIT */
/*
 * Matching the MPI events of a run's traces: see mpi_match.h. Everything is sorted once: the
 * message events by (communicator, source, destination, tag, send before receive, time), so the
 * sends and the receives of one channel sit side by side in order and pair up one to one; the
 * collectives by (communicator, number, trace).
 */
#include "mpi_match.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int mm_any(const struct strc_file *const *f, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (f[i]->ncomms)
			return 1;
	return 0;
}

uint32_t mm_comm_index(const struct mm_run *run, uint32_t p, uint32_t comm_id)
{
	const struct strc_file *f = run->f[p];
	const struct strc_comm *c = strc_comm_of(f, comm_id);

	return c ? run->comm_of[run->comm_base[p] + (uint32_t)(c - f->comms)] : MM_NONE;
}

int32_t mm_world_of(const struct mm_run *run, uint32_t c, int32_t rank)
{
	const struct mm_comm *m = &run->comms[c];

	if (rank < 0 || (uint32_t)rank >= m->size)
		return -1;
	return m->world ? rank : m->members ? m->members[rank] : -1;
}

/* ---- communicators ---- */

static int same_members(const struct strc_comm *a, const struct strc_comm *b)
{
	return a->size == b->size && !memcmp(a->world, b->world, (size_t)a->size * 4);
}

/* The run's entry for communicator i of trace p (its members listed), added when new. */
static uint32_t comm_entry(struct mm_run *run, const struct strc_file *f, uint32_t i,
			   uint32_t *cap)
{
	const struct strc_comm *c = &f->comms[i];
	uint32_t j, ordinal = 0;

	for (j = 0; j < i; j++) /* dups of the same members, in the order they were made */
		ordinal += f->comms[j].world && same_members(&f->comms[j], c);
	for (j = 0; j < run->ncomms; j++) {
		const struct mm_comm *m = &run->comms[j];

		if (!m->world && m->size == c->size && m->ordinal == ordinal &&
		    !memcmp(m->members, c->world, (size_t)c->size * 4))
			return j;
	}
	if (run->ncomms == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		run->comms = xrealloc(run->comms, *cap * sizeof(*run->comms));
	}
	run->comms[run->ncomms] = (struct mm_comm){ .size = c->size, .ordinal = ordinal,
						    .members = c->world };
	return run->ncomms++;
}

/* World ranks and the run's communicators. */
static int find_comms(struct mm_run *run, char *err, size_t errlen)
{
	uint32_t p, i, total = 0, cap = 0, world = MM_NONE;

	for (p = 0; p < run->nf; p++) {
		run->comm_base[p] = total;
		total += run->f[p]->ncomms;
	}
	run->comm_of = xmalloc((total ? total : 1) * sizeof(*run->comm_of));
	for (p = 0; p < run->nf; p++) {
		const struct strc_file *f = run->f[p];

		run->rank[p] = -1;
		for (i = 0; i < f->ncomms; i++) {
			const struct strc_comm *c = &f->comms[i];
			uint32_t *slot = &run->comm_of[run->comm_base[p] + i];

			if (!(c->flags & STRC_COMM_WORLD)) {
				*slot = c->world ? comm_entry(run, f, i, &cap) : MM_NONE;
				continue;
			}
			if (world == MM_NONE) {
				if (run->ncomms == cap) {
					cap = cap ? cap * 2 : 16;
					run->comms = xrealloc(run->comms, cap * sizeof(*run->comms));
				}
				world = run->ncomms++;
				run->comms[world] = (struct mm_comm){ .size = c->size, .world = 1 };
			} else if (run->comms[world].size != c->size) {
				snprintf(err, errlen, "the traces are of MPI runs of %u and %u ranks",
					 run->comms[world].size, c->size);
				return -1;
			}
			*slot = world;
			run->rank[p] = c->rank;
		}
	}
	for (p = 0; p < run->nf; p++)
		for (i = 0; i < p; i++)
			if (run->rank[p] >= 0 && run->rank[p] == run->rank[i]) {
				snprintf(err, errlen, "two traces (pids %u and %u) are of MPI rank %d",
					 run->f[i]->pid, run->f[p]->pid, run->rank[p]);
				return -1;
			}
	for (p = 0; p < run->nf; p++)
		run->nranks += run->rank[p] >= 0;
	return 0;
}

/* ---- messages ---- */

struct item {
	uint32_t comm;
	int32_t src, dst, tag;
	uint32_t is_recv;
	uint32_t pad;
	uint64_t t;
	uint64_t bytes;
	struct mm_ref ref;
};

#define CMP(a, b) if ((a) != (b)) return (a) < (b) ? -1 : 1

static int by_channel(const void *x, const void *y)
{
	const struct item *a = x, *b = y;

	CMP(a->comm, b->comm);
	CMP(a->src, b->src);
	CMP(a->dst, b->dst);
	CMP(a->tag, b->tag);
	CMP(a->is_recv, b->is_recv);
	CMP(a->t, b->t);
	CMP(a->ref.proc, b->ref.proc);
	CMP(a->ref.thr, b->ref.thr);
	CMP(a->ref.ev, b->ref.ev);
	return 0;
}

static int by_send(const void *x, const void *y)
{
	const struct mm_msg *a = x, *b = y;

	CMP(a->send.proc, b->send.proc);
	CMP(a->send.thr, b->send.thr);
	CMP(a->send.ev, b->send.ev);
	return 0;
}

/* The message events of trace p with their channel; those of unknown channels are unmatched. */
static void collect(struct mm_run *run, uint32_t p, struct item **v, size_t *n, size_t *cap)
{
	const struct strc_file *f = run->f[p];
	uint32_t k;
	size_t i;

	for (k = 0; k < f->nthreads; k++)
		for (i = 0; i < f->threads[k].nev; i++) {
			const struct strc_event *e = &f->threads[k].ev[i];
			const struct strc_mpi *m;
			struct item it;
			uint32_t c;
			int32_t peer;

			if (e->type != STRC_MPI_SEND && e->type != STRC_MPI_RECV)
				continue;
			m = strc_mpi_of(f, e);
			it = (struct item){ .is_recv = e->type == STRC_MPI_RECV, .t = e->t,
					    .bytes = m->bytes, .tag = m->tag, .ref = { p, k, i } };
			run->sends += !it.is_recv;
			run->recvs += it.is_recv;
			c = mm_comm_index(run, p, e->id);
			peer = c == MM_NONE ? -1 : mm_world_of(run, c, m->peer);
			if (peer < 0 || run->rank[p] < 0) {
				run->unmatched_sends += !it.is_recv;
				run->unmatched_recvs += it.is_recv;
				continue;
			}
			it.comm = c;
			it.src = it.is_recv ? peer : run->rank[p];
			it.dst = it.is_recv ? run->rank[p] : peer;
			if (*n == *cap) {
				*cap = *cap ? *cap * 2 : 256;
				*v = xrealloc(*v, *cap * sizeof(**v));
			}
			(*v)[(*n)++] = it;
		}
}

static int same_channel(const struct item *a, const struct item *b)
{
	return a->comm == b->comm && a->src == b->src && a->dst == b->dst && a->tag == b->tag;
}

/* One channel's sends [s, r) and receives [r, end): the n-th of each pair up. */
static void pair(struct mm_run *run, const struct item *v, size_t s, size_t r, size_t end,
		 size_t *cap)
{
	size_t i, n = r - s < end - r ? r - s : end - r;

	for (i = 0; i < n; i++) {
		if (run->nmsgs == *cap) {
			*cap = *cap ? *cap * 2 : 256;
			run->msgs = xrealloc(run->msgs, *cap * sizeof(*run->msgs));
		}
		run->msgs[run->nmsgs++] = (struct mm_msg){ .send = v[s + i].ref,
							   .recv = v[r + i].ref,
							   .bytes = v[r + i].bytes,
							   .comm = v[r + i].comm,
							   .tag = v[r + i].tag };
	}
	run->unmatched_sends += (r - s) - n;
	run->unmatched_recvs += (end - r) - n;
}

static int ref_cmp(const struct mm_ref *a, const struct mm_ref *b)
{
	CMP(a->proc, b->proc);
	CMP(a->thr, b->thr);
	CMP(a->ev, b->ev);
	return 0;
}

static int by_recv(const void *x, const void *y, void *arg)
{
	const struct mm_msg *m = arg;

	return ref_cmp(&m[*(const size_t *)x].recv, &m[*(const size_t *)y].recv);
}

size_t mm_msg_of(const struct mm_run *run, int recv, uint32_t proc, uint32_t thr, size_t ev)
{
	struct mm_ref key = { proc, thr, ev };
	size_t lo = 0, hi = run->nmsgs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2, i = recv ? run->by_recv[mid] : mid;
		int c = ref_cmp(recv ? &run->msgs[i].recv : &run->msgs[i].send, &key);

		if (!c)
			return i;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

static void match_messages(struct mm_run *run)
{
	struct item *v = NULL;
	size_t n = 0, cap = 0, i, j, mcap = 0;
	uint32_t p;

	for (p = 0; p < run->nf; p++)
		collect(run, p, &v, &n, &cap);
	if (n > 1)
		qsort(v, n, sizeof(*v), by_channel);
	for (i = 0; i < n; i = j) {
		size_t r = i;

		for (j = i; j < n && same_channel(&v[i], &v[j]); j++)
			if (!v[j].is_recv)
				r = j + 1;
		pair(run, v, i, r, j, &mcap);
	}
	free(v);
	if (run->nmsgs > 1)
		qsort(run->msgs, run->nmsgs, sizeof(*run->msgs), by_send);
	run->by_recv = xmalloc((run->nmsgs ? run->nmsgs : 1) * sizeof(*run->by_recv));
	for (i = 0; i < run->nmsgs; i++)
		run->by_recv[i] = i;
	if (run->nmsgs > 1)
		qsort_r(run->by_recv, run->nmsgs, sizeof(*run->by_recv), by_recv, run->msgs);
}

/* ---- collectives ---- */

struct citem {
	uint32_t comm, op;
	uint64_t seq, t;
	struct mm_ref ref;
};

static int by_time_ref(const void *x, const void *y)
{
	const struct citem *a = x, *b = y;

	CMP(a->t, b->t);
	CMP(a->ref.thr, b->ref.thr);
	CMP(a->ref.ev, b->ref.ev);
	return 0;
}

static int by_coll(const void *x, const void *y)
{
	const struct citem *a = x, *b = y;

	CMP(a->comm, b->comm);
	CMP(a->seq, b->seq);
	CMP(a->ref.proc, b->ref.proc);
	return 0;
}

/* Trace p's collectives on known communicators, numbered per communicator in time order. */
static size_t collect_colls(struct mm_run *run, uint32_t p, struct citem **v, size_t n,
			    size_t *cap)
{
	const struct strc_file *f = run->f[p];
	uint64_t *next = xcalloc(run->ncomms ? run->ncomms : 1, sizeof(*next));
	size_t i, from = n;
	uint32_t k;

	for (k = 0; k < f->nthreads; k++)
		for (i = 0; i < f->threads[k].nev; i++) {
			const struct strc_event *e = &f->threads[k].ev[i];
			uint32_t c;

			/* a non-blocking one is recorded at its completion, whose order among the
			 * communicator's collectives may differ from member to member: not matched */
			if (e->type != STRC_MPI_COLL || (strc_mpi_of(f, e)->op & STRC_COLL_NB))
				continue;
			run->coll_events++;
			c = mm_comm_index(run, p, e->id);
			if (c == MM_NONE || run->rank[p] < 0) {
				run->coll_incomplete++;
				continue;
			}
			if (n == *cap) {
				*cap = *cap ? *cap * 2 : 256;
				*v = xrealloc(*v, *cap * sizeof(**v));
			}
			(*v)[n++] = (struct citem){ .comm = c, .op = strc_mpi_of(f, e)->op,
						    .t = e->t, .ref = { p, k, i } };
		}
	if (n - from > 1)
		qsort(*v + from, n - from, sizeof(**v), by_time_ref);
	for (i = from; i < n; i++)
		(*v)[i].seq = next[(*v)[i].comm]++;
	free(next);
	return n;
}

static void match_colls(struct mm_run *run)
{
	struct citem *v = NULL;
	size_t n = 0, cap = 0, i, j, ccap = 0;
	uint32_t p;

	for (p = 0; p < run->nf; p++)
		n = collect_colls(run, p, &v, n, &cap);
	if (n > 1)
		qsort(v, n, sizeof(*v), by_coll);
	run->coll_ev = xmalloc((n ? n : 1) * sizeof(*run->coll_ev));
	for (i = 0; i < n; i++)
		run->coll_ev[i] = v[i].ref;
	for (i = 0; i < n; i = j) {
		for (j = i; j < n && v[j].comm == v[i].comm && v[j].seq == v[i].seq; j++)
			;
		if (run->ncolls == ccap) {
			ccap = ccap ? ccap * 2 : 64;
			run->colls = xrealloc(run->colls, ccap * sizeof(*run->colls));
		}
		run->colls[run->ncolls++] = (struct mm_coll){ .comm = v[i].comm, .op = v[i].op,
							      .seq = v[i].seq, .first = i,
							      .n = (uint32_t)(j - i) };
		if (j - i != run->comms[v[i].comm].size)
			run->coll_incomplete += j - i;
	}
	free(v);
}

int mm_match(struct mm_run *run, const struct strc_file *const *f, uint32_t n, char *err,
	     size_t errlen)
{
	*run = (struct mm_run){ .f = f, .nf = n };
	run->rank = xcalloc(n ? n : 1, sizeof(*run->rank));
	run->comm_base = xcalloc(n ? n : 1, sizeof(*run->comm_base));
	if (find_comms(run, err, errlen)) {
		mm_free(run);
		return -1;
	}
	match_messages(run);
	match_colls(run);
	return 0;
}

void mm_free(struct mm_run *run)
{
	free(run->rank);
	free(run->comm_of);
	free(run->comm_base);
	free(run->comms);
	free(run->msgs);
	free(run->by_recv);
	free(run->colls);
	free(run->coll_ev);
	*run = (struct mm_run){ 0 };
}
