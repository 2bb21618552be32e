/* SPDX-License-Identifier: MIT */
/* The validating reader of the MPI records (profile_mpi.h, docs/format-profile.md): MPI_CALL,
 * MPI_PEER and MPI_COMP; called by profile_read.c for those record types. */
#include "profile_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_call(struct sprof_file *f, struct sprof_buf *b, char *err, size_t errlen)
{
	struct sprof_mpi_call *c;
	uint32_t i;

	f->mpi_calls = sprof_grow(f->mpi_calls, &f->nmpi_calls, sizeof(*c));
	if (!f->mpi_calls)
		return snprintf(err, errlen, "too many MPI_CALL records"), -1;
	c = &f->mpi_calls[f->nmpi_calls - 1];
	c->routine = sprof_get_u32(b);
	sprof_get_u32(b);
	c->calls = sprof_get_u64(b);
	c->ns = sprof_get_u64(b);
	c->max_ns = sprof_get_u64(b);
	c->bytes_sent = sprof_get_u64(b);
	c->bytes_recv = sprof_get_u64(b);
	c->comp_ns = (int64_t)sprof_get_u64(b);
	if (b->error)
		return 0; /* the caller reports the size */
	if (c->routine >= SPROF_MPI_ROUTINES)
		return snprintf(err, errlen, "MPI_CALL record of unknown routine %u", c->routine), -1;
	for (i = 0; i + 1 < f->nmpi_calls; i++)
		if (f->mpi_calls[i].routine == c->routine)
			return snprintf(err, errlen, "two MPI_CALL records for routine %u",
					c->routine), -1;
	if (c->max_ns > c->ns || (c->calls == 0 && c->ns))
		return snprintf(err, errlen, "MPI_CALL record with impossible times"), -1;
	return 0;
}

static int read_peer(struct sprof_file *f, struct sprof_buf *b, char *err, size_t errlen)
{
	struct sprof_mpi_peer *p;

	f->mpi_peers = sprof_grow(f->mpi_peers, &f->nmpi_peers, sizeof(*p));
	if (!f->mpi_peers)
		return snprintf(err, errlen, "too many MPI_PEER records"), -1;
	p = &f->mpi_peers[f->nmpi_peers - 1];
	p->comm = sprof_get_u32(b);
	p->dir = sprof_get_u32(b);
	p->peer = (int32_t)sprof_get_u32(b);
	p->tag = (int32_t)sprof_get_u32(b);
	p->flags = sprof_get_u32(b);
	sprof_get_u32(b);
	p->messages = sprof_get_u64(b);
	p->bytes = sprof_get_u64(b);
	if (b->error)
		return 0;
	if (p->dir > SPROF_MPI_RECEIVED)
		return snprintf(err, errlen, "MPI_PEER record of unknown direction %u", p->dir), -1;
	if (p->flags & ~SPROF_MPI_PEER_OVERFLOW)
		return snprintf(err, errlen, "MPI_PEER record with unknown flags 0x%x", p->flags), -1;
	if (p->peer < (p->flags & SPROF_MPI_PEER_OVERFLOW ? -1 : 0))
		return snprintf(err, errlen, "MPI_PEER record with peer %d", p->peer), -1;
	return 0;
}

static int read_comp(struct sprof_file *f, struct sprof_buf *b, char *err, size_t errlen)
{
	struct sprof_mpi_comp *c;

	if (f->mpi_comp)
		return snprintf(err, errlen, "a second MPI_COMP record"), -1;
	c = f->mpi_comp = calloc(1, sizeof(*c));
	if (!c)
		return snprintf(err, errlen, "out of memory"), -1;
	c->rank = sprof_get_u32(b);
	c->size = sprof_get_u32(b);
	c->flags = sprof_get_u32(b);
	c->thread_level = sprof_get_u32(b);
	c->init_ns = sprof_get_u64(b);
	c->fin_ns = sprof_get_u64(b);
	c->calls = sprof_get_u64(b);
	c->pb_calls = sprof_get_u64(b);
	c->o_call_ns = sprof_get_f64(b);
	c->o_pb_ns = sprof_get_f64(b);
	c->o_init_ns = (int64_t)sprof_get_u64(b);
	c->o_fin_ns = (int64_t)sprof_get_u64(b);
	c->x_init_ns = (int64_t)sprof_get_u64(b);
	c->x_fin_ns = (int64_t)sprof_get_u64(b);
	c->extra_ns = sprof_get_u64(b);
	c->waits = sprof_get_u64(b);
	c->wait_ns = sprof_get_u64(b);
	c->wait_c_ns = (int64_t)sprof_get_u64(b);
	c->wildcard = sprof_get_u64(b);
	c->reorders = sprof_get_u64(b);
	if (b->error)
		return 0;
	if (c->size == 0 || c->rank >= c->size)
		return snprintf(err, errlen, "MPI_COMP record with rank %u of %u", c->rank, c->size),
		       -1;
	if (c->flags & ~(SPROF_MPI_PIGGYBACK | SPROF_MPI_FINALIZED | SPROF_MPI_MULTIPLE))
		return snprintf(err, errlen, "MPI_COMP record with unknown flags 0x%x", c->flags), -1;
	if (c->fin_ns < c->init_ns || c->pb_calls > c->calls || c->reorders > c->wildcard ||
	    c->o_fin_ns < c->o_init_ns || !(c->o_call_ns >= 0) || !(c->o_pb_ns >= 0))
		return snprintf(err, errlen, "MPI_COMP record with impossible values"), -1;
	return 0;
}

int sprof_read_mpi(struct sprof_file *f, uint32_t type, struct sprof_buf *b, char *err,
		   size_t errlen)
{
	if (type == SPROF_REC_MPI_CALL)
		return read_call(f, b, err, errlen);
	if (type == SPROF_REC_MPI_PEER)
		return read_peer(f, b, err, errlen);
	return read_comp(f, b, err, errlen);
}

void sprof_free_mpi(struct sprof_file *f)
{
	free(f->mpi_calls);
	free(f->mpi_peers);
	free(f->mpi_comp);
}
