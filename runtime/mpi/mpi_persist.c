/* SPDX-License-Identifier: MIT */
/*
 * Persistent requests: MPI_Send_init, Bsend_init, Ssend_init, Rsend_init, Recv_init, and the
 * MPI_Start / MPI_Startall that start them. With parallel compensation the request is made with
 * the struct type {piggyback slot, the program's data} (mpi_comp.c) over a slot of its own, kept
 * as long as the request: each start of a send fills the slot with the sender's delay then; a
 * receive's slot is read when a Wait or Test completes it (mpi_req.c), like a non-blocking
 * receive's. A send counts (messages, bytes, peer, trace event) at each start, a receive at each
 * completion. The request's entry stays in the request map until MPI_Request_free.
 */
#include "mpi_rt.h"

typedef int (*init_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);

static int followed(void)
{
	return mlikely(mpi.on) && !mpi.multiple;
}

/* The request made, with the piggyback's type when compensating; its entry. */
static int make(init_fn fn, int recv, const void *buf, int count, MPI_Datatype dt, int peer, int tag,
		MPI_Comm comm, MPI_Request *req)
{
	struct mpi_pb *slot = NULL;
	struct mpi_req_ent *e;
	MPI_Datatype t = MPI_DATATYPE_NULL;
	int ret;

	if (!followed())
		return fn(buf, count, dt, peer, tag, comm, req);
	if (mpi.comp && (slot = mpi_slot_get()))
		t = mpi_pb_type(buf, count, dt, slot);
	if (t == MPI_DATATYPE_NULL) {
		mpi_slot_put(slot);
		slot = NULL;
	}
	ret = t != MPI_DATATYPE_NULL ? fn(buf, 1, t, peer, tag, comm, req)
				     : fn(buf, count, dt, peer, tag, comm, req);
	if (ret != MPI_SUCCESS) {
		mpi_slot_put(slot);
		return ret;
	}
	e = mpi_req_put(*req, recv, peer, mpi_comm(comm), slot);
	if (e) {
		e->persist = 1;
		e->tag = tag;
		e->bytes = recv ? 0 : mpi_bytes(count, dt);
	}
	return ret;
}

/* The receive's buffer is the program's (writable): init_fn's const is the sends'. */
static int recv_init(const void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
		     MPI_Request *req)
{
	return PMPI_Recv_init((void *)(uintptr_t)buf, count, dt, src, tag, comm, req);
}

MPI_EXPORT int MPI_Send_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
			     MPI_Comm comm, MPI_Request *req)
{
	return make(PMPI_Send_init, 0, buf, count, dt, dest, tag, comm, req);
}

MPI_EXPORT int MPI_Bsend_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
			      MPI_Comm comm, MPI_Request *req)
{
	return make(PMPI_Bsend_init, 0, buf, count, dt, dest, tag, comm, req);
}

MPI_EXPORT int MPI_Ssend_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
			      MPI_Comm comm, MPI_Request *req)
{
	return make(PMPI_Ssend_init, 0, buf, count, dt, dest, tag, comm, req);
}

MPI_EXPORT int MPI_Rsend_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
			      MPI_Comm comm, MPI_Request *req)
{
	return make(PMPI_Rsend_init, 0, buf, count, dt, dest, tag, comm, req);
}

MPI_EXPORT int MPI_Recv_init(void *buf, int count, MPI_Datatype dt, int src, int tag,
			     MPI_Comm comm, MPI_Request *req)
{
	return make(recv_init, 1, buf, count, dt, src, tag, comm, req);
}

/* Before a start: a send's piggyback (its delay now) and its trace event. */
static void starting(struct mpi_req_ent *e, uint64_t t0)
{
	if (e->recv)
		return;
	if (e->pb)
		mpi_pb_fill(e->slot, t0);
	if (munlikely(mpi.tr_send != NULL) && e->src >= 0)
		mpi.tr_send(e->src, e->tag, e->comm->tr_id, e->bytes);
}

/* After a successful start: the request is active; a send counts as posted. */
static uint64_t started(struct mpi_req_ent *e)
{
	e->active = 1;
	if (e->recv || e->src < 0)
		return 0;
	mpi_peer_add(e->comm, e->src, e->tag, SPROF_MPI_SENT, e->bytes);
	return e->bytes;
}

MPI_EXPORT int MPI_Start(MPI_Request *req)
{
	struct mpi_req_ent *e = followed() ? mpi_req_find(*req) : NULL;
	uint64_t t0 = mpi_now(), bytes = 0;
	int ret;

	if (e)
		starting(e, t0);
	ret = PMPI_Start(req);
	if (!mpi.on)
		return ret;
	if (e && ret == MPI_SUCCESS)
		bytes = started(e);
	mpi_count(SPROF_MPI_START, t0, mpi_now(), bytes, 0);
	return ret;
}

#define STARTALL_MAX 4096 /* requests per MPI_Startall that are followed */

MPI_EXPORT int MPI_Startall(int n, MPI_Request reqs[])
{
	static struct mpi_req_ent *ents[STARTALL_MAX];
	uint64_t t0 = mpi_now(), bytes = 0;
	int i, m = followed() && n > 0 ? (n < STARTALL_MAX ? n : STARTALL_MAX) : 0, ret;

	for (i = 0; i < m; i++)
		if ((ents[i] = mpi_req_find(reqs[i])))
			starting(ents[i], t0);
	ret = PMPI_Startall(n, reqs);
	if (!mpi.on)
		return ret;
	for (i = 0; ret == MPI_SUCCESS && i < m; i++)
		if (ents[i])
			bytes += started(ents[i]);
	mpi_count(SPROF_MPI_STARTALL, t0, mpi_now(), bytes, 0);
	return ret;
}
