/* SPDX-License-Identifier: MIT */
/*
 * MPI events in the trace (mpi_trace.h, docs/format-trace.md): MPI_SEND, MPI_RECV, MPI_COLL
 * records naming a communicator of a DEF_COMM record. Exported for libsonde-mpi.so. Sends and
 * receives carry no sequence number: the tool pairs them by MPI's non-overtaking rule (the n-th
 * message from s to r on a communicator with a tag is the n-th received there with that tag).
 */
#include "rt.h"
#include "mpi_trace.h"

#include <errno.h>

static _Atomic uint32_t next_comm;

/* The calling thread's trace state, or NULL when it cannot record now. */
static struct rt_thread *tracer(void)
{
	if (!rt_trace_on || rt_busy)
		return NULL;
	return rt_self ? rt_self : rt_thread_attach();
}

RT_EXPORT int rt_mpi_trace_on(void)
{
	return rt_trace_on;
}

RT_EXPORT uint64_t rt_mpi_trace_clock(void)
{
	return rt_now();
}

/* DEF_COMM: u32 id, u32 size, i32 rank, u32 flags, u32 listed, u32 0, i32 world[listed]. */
RT_EXPORT uint32_t rt_mpi_trace_comm(int rank, int size, const int *world)
{
	uint32_t rec[6 + STRC_COMM_MAX_LISTED];
	struct rt_thread *t;
	uint32_t id, listed = 0, i;
	int saved = errno;

	if (size <= 0 || rank < 0 || rank >= size || !(t = tracer()))
		return STRC_ID_NONE;
	id = atomic_fetch_add(&next_comm, 1);
	if (id >= STRC_ID_NONE)
		return STRC_ID_NONE;
	rec[0] = id;
	rec[1] = (uint32_t)size;
	rec[2] = (uint32_t)rank;
	rec[3] = world ? 0 : STRC_COMM_WORLD;
	if (world && size <= STRC_COMM_MAX_LISTED) {
		for (i = 0; i < (uint32_t)size; i++) {
			if (world[i] < 0)
				break;
			rec[6 + i] = (uint32_t)world[i];
		}
		if (i == (uint32_t)size) {
			listed = i;
			rec[3] |= STRC_COMM_LISTED;
		}
	}
	rec[4] = listed;
	rec[5] = 0;
	rt_trace_long(t, STRC_DEF_COMM, rec, 24 + listed * 4);
	errno = saved;
	return id;
}

static void message(unsigned type, int peer, int tag, uint32_t comm, uint64_t bytes,
		    uint64_t began)
{
	struct rt_thread *t = tracer();
	uint64_t w[3], now;
	int saved = errno; /* a buffer hand-off makes a system call */

	if (!t || comm >= STRC_ID_NONE || peer < 0 || tag < 0)
		return;
	now = rt_now();
	w[0] = (uint32_t)peer | (uint64_t)(uint32_t)tag << 32;
	w[1] = bytes;
	w[2] = now > began ? now - began : 0;
	rt_trace_record_at(t, type, comm, w, type == STRC_MPI_RECV ? 3 : 2, now);
	errno = saved;
}

RT_EXPORT void rt_mpi_trace_send(int peer, int tag, uint32_t comm, uint64_t bytes)
{
	message(STRC_MPI_SEND, peer, tag, comm, bytes, 0);
}

RT_EXPORT void rt_mpi_trace_recv(int peer, int tag, uint32_t comm, uint64_t bytes,
				 uint64_t began)
{
	message(STRC_MPI_RECV, peer, tag, comm, bytes, began);
}

RT_EXPORT void rt_mpi_trace_coll(int op, uint32_t comm, int root, uint64_t sent, uint64_t recvd,
				 uint64_t began)
{
	struct rt_thread *t = tracer();
	uint64_t w[4], now;
	int saved = errno;

	if (!t || comm >= STRC_ID_NONE || !strc_coll_op_valid((uint32_t)op) || root < STRC_NO_ROOT)
		return;
	now = rt_now();
	w[0] = (uint32_t)op | (uint64_t)(uint32_t)root << 32;
	w[1] = sent;
	w[2] = recvd;
	w[3] = now > began ? now - began : 0;
	rt_trace_record_at(t, STRC_MPI_COLL, comm, w, 4, now);
	errno = saved;
}
