/* SPDX-License-Identifier: MIT */
/*
 * The MPI records of the trace reader (docs/format-trace.md, "MPI events"): DEF_COMM
 * definitions, the payloads of MPI_SEND, MPI_RECV and MPI_COLL events (kept in a side array:
 * an event's arg is its index there), their checks against the communicators, and their words
 * for the tool's writer. Called by trace_read.c only (trace_read_mpi.h).
 */
#include "trace_read_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *strc_coll_name(unsigned op)
{
	static const char *names[STRC_COLL_OPS] = {
		"?", "Barrier", "Bcast", "Gather", "Gatherv", "Scatter", "Scatterv",
		"Allgather", "Allgatherv", "Reduce", "Allreduce", "Alltoall", "Alltoallv",
		"Scan", "Exscan", "Reduce_scatter",
	};

	static const char *inames[STRC_COLL_OPS] = {
		"?", "Ibarrier", "Ibcast", "Igather", "Igatherv", "Iscatter", "Iscatterv",
		"Iallgather", "Iallgatherv", "Ireduce", "Iallreduce", "Ialltoall", "Ialltoallv",
		"Iscan", "Iexscan", "Ireduce_scatter",
	};

	if (!strc_coll_op_valid(op))
		return "?";
	return (op & STRC_COLL_NB ? inames : names)[strc_coll_base(op)];
}

static uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

int strc_mpi_event(struct strc_file *f, struct strc_event *e, const uint8_t *q)
{
	struct strc_mpi m = { 0 };
	uint64_t w1 = ld64(q + 8);

	if (f->nmpi == f->cap_mpi) {
		size_t cap = f->cap_mpi ? f->cap_mpi * 2 : 256;
		struct strc_mpi *p = realloc(f->mpi, cap * sizeof(*p));

		if (!p)
			return -1;
		f->mpi = p;
		f->cap_mpi = cap;
	}
	if (e->type == STRC_MPI_COLL) {
		m.op = (uint32_t)w1;
		m.peer = (int32_t)(w1 >> 32);
		m.bytes = ld64(q + 16);
		m.recvd = ld64(q + 24);
		m.wait = ld64(q + 32);
	} else {
		m.peer = (int32_t)(uint32_t)w1;
		m.tag = (int32_t)(w1 >> 32);
		m.bytes = ld64(q + 16);
		m.wait = e->type == STRC_MPI_RECV ? ld64(q + 24) : 0;
	}
	f->mpi[f->nmpi] = m;
	e->arg = f->nmpi++;
	return 0;
}

/* DEF_COMM: u32 id, u32 size, i32 rank, u32 flags, u32 listed, u32 0, i32 world[listed]. */
int strc_def_comm(struct strc_file *f, const uint8_t *p, size_t len, char *err, size_t errlen)
{
	uint32_t h[6], i;
	struct strc_comm c, *arr;

	if (len < 24)
		goto bad;
	memcpy(h, p, 24);
	c = (struct strc_comm){ .id = h[0], .size = h[1], .rank = (int32_t)h[2], .flags = h[3] };
	if (c.id >= STRC_ID_NONE || !c.size || c.rank < 0 || (uint32_t)c.rank >= c.size ||
	    (c.flags & ~(STRC_COMM_WORLD | STRC_COMM_LISTED)) || h[5] ||
	    h[4] != (c.flags & STRC_COMM_LISTED ? c.size : 0) || h[4] > STRC_COMM_MAX_LISTED ||
	    len - 24 < (size_t)h[4] * 4 || len - 24 - (size_t)h[4] * 4 >= 8)
		goto bad;
	if (h[4]) {
		c.world = malloc((size_t)h[4] * 4);
		if (!c.world)
			goto oom;
		memcpy(c.world, p + 24, (size_t)h[4] * 4);
		for (i = 0; i < h[4]; i++)
			if (c.world[i] < 0 ||
			    (c.flags & STRC_COMM_WORLD && c.world[i] != (int32_t)i)) {
				free(c.world);
				goto bad;
			}
	}
	for (i = 0; i < f->ncomms; i++)
		if (f->comms[i].id == c.id) {
			int same = f->comms[i].size == c.size && f->comms[i].rank == c.rank &&
				   f->comms[i].flags == c.flags &&
				   (!h[4] || !memcmp(f->comms[i].world, c.world, (size_t)h[4] * 4));

			free(c.world);
			if (same)
				return 0;
			snprintf(err, errlen, "communicator %u is defined twice, differently", c.id);
			return -1;
		}
	arr = realloc(f->comms, (f->ncomms + 1) * sizeof(*arr));
	if (!arr) {
		free(c.world);
		goto oom;
	}
	f->comms = arr;
	f->comms[f->ncomms++] = c;
	return 0;
bad:
	snprintf(err, errlen, "DEF_COMM record is malformed");
	return -1;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

static int by_id(const void *a, const void *b)
{
	const struct strc_comm *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

void strc_mpi_finish(struct strc_file *f)
{
	if (f->ncomms > 1)
		qsort(f->comms, f->ncomms, sizeof(*f->comms), by_id);
}

const struct strc_comm *strc_comm_of(const struct strc_file *f, uint32_t id)
{
	uint32_t lo = 0, hi = f->ncomms;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (f->comms[mid].id == id)
			return &f->comms[mid];
		if (f->comms[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int strc_mpi_check(const struct strc_file *f, const struct strc_event *e, char *why,
		   size_t whylen)
{
	const struct strc_comm *c = strc_comm_of(f, e->id);
	const struct strc_mpi *m = &f->mpi[e->arg];

	if (!c)
		snprintf(why, whylen, "names communicator %u, defined nowhere", e->id);
	else if (e->type == STRC_MPI_COLL && !strc_coll_op_valid(m->op))
		snprintf(why, whylen, "has an unknown collective operation %u", m->op);
	else if (e->type == STRC_MPI_COLL && (m->peer < STRC_NO_ROOT || m->peer >= (int64_t)c->size))
		snprintf(why, whylen, "has root %d, not in communicator %u of %u ranks", m->peer,
			 c->id, c->size);
	else if (e->type != STRC_MPI_COLL && (m->peer < 0 || m->peer >= (int64_t)c->size))
		snprintf(why, whylen, "names rank %d, not in communicator %u of %u ranks", m->peer,
			 c->id, c->size);
	else if (e->type != STRC_MPI_COLL && m->tag < 0)
		snprintf(why, whylen, "has a negative tag %d", m->tag);
	else
		return 0;
	return -1;
}

unsigned strc_mpi_words(const struct strc_file *f, const struct strc_event *e, uint64_t *w)
{
	const struct strc_mpi *m = &f->mpi[e->arg];

	if (e->type == STRC_MPI_COLL) {
		w[0] = m->op | (uint64_t)(uint32_t)m->peer << 32;
		w[1] = m->bytes;
		w[2] = m->recvd;
		w[3] = m->wait;
		return 4;
	}
	w[0] = (uint32_t)m->peer | (uint64_t)(uint32_t)m->tag << 32;
	w[1] = m->bytes;
	w[2] = m->wait;
	return e->type == STRC_MPI_RECV ? 3 : 2;
}

void strc_mpi_free(struct strc_file *f)
{
	uint32_t i;

	for (i = 0; i < f->ncomms; i++)
		free(f->comms[i].world);
	free(f->comms);
	free(f->mpi);
}
