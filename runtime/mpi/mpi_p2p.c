/* SPDX-License-Identifier: MIT */
/*
 * Point-to-point wrappers: the blocking and non-blocking sends and receives, Sendrecv(_replace),
 * Probe and Iprobe. Each calls the PMPI routine between two clock reads and returns what it
 * returned; with parallel compensation (mpi.comp) the message goes as one element of the struct
 * type {piggyback, the program's data} (mpi_comp.c).
 */
#include "mpi_rt.h"

typedef int (*send_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
typedef int (*isend_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);

static send_fn const send_fns[] = {
	[SPROF_MPI_SEND] = PMPI_Send, [SPROF_MPI_BSEND] = PMPI_Bsend,
	[SPROF_MPI_SSEND] = PMPI_Ssend, [SPROF_MPI_RSEND] = PMPI_Rsend,
	[R_CALIB] = PMPI_Send,
};
static isend_fn const isend_fns[] = {
	[SPROF_MPI_ISEND] = PMPI_Isend, [SPROF_MPI_IBSEND] = PMPI_Ibsend,
	[SPROF_MPI_ISSEND] = PMPI_Issend, [SPROF_MPI_IRSEND] = PMPI_Irsend,
};

/* --trace (runtime/mpi_trace.h): ranks in the communicator; a send before the call, so that its
 * event precedes the receive's; a receive with the tick time its call began. */
static inline void traced_send(int dest, int tag, MPI_Comm comm, int count, MPI_Datatype dt)
{
	if (munlikely(mpi.tr_send != NULL) && dest >= 0)
		mpi.tr_send(dest, tag, mpi_comm(comm)->tr_id, mpi_bytes(count, dt));
}

static inline void traced_recv(const struct mpi_comm_ent *c, const MPI_Status *st, uint64_t bytes,
			uint64_t began)
{
	if (munlikely(mpi.tr_recv != NULL) && st->MPI_SOURCE >= 0)
		mpi.tr_recv(st->MPI_SOURCE, st->MPI_TAG, c->tr_id, bytes, began);
}

int mpi_send_core(int rid, const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		  MPI_Comm comm)
{
	send_fn fn = send_fns[rid];
	struct mpi_comm_ent *c;
	struct mpi_pb *pb = &mpi_blocking_slot[PB_SLOT_SEND];
	MPI_Datatype t;
	uint64_t t0, bytes;
	int ret;

	if (munlikely(!mpi.on || mpi.multiple)) {
		t0 = mpi_now();
		ret = fn(buf, count, dt, dest, tag, comm);
		if (mpi.on)
			mpi_count(rid, t0, mpi_now(), 0, 0);
		return ret;
	}
	traced_send(dest, tag, comm, count, dt);
	t0 = mpi_now();
	if (mpi.comp) {
		mpi_pb_fill(pb, t0);
		t = mpi_pb_type(buf, count, dt, pb);
		ret = t != MPI_DATATYPE_NULL ? fn(buf, 1, t, dest, tag, comm)
					     : fn(buf, count, dt, dest, tag, comm);
	} else {
		ret = fn(buf, count, dt, dest, tag, comm);
	}
	bytes = mpi_bytes(count, dt);
	mpi_count(rid, t0, mpi_now(), bytes, 0);
	if (ret == MPI_SUCCESS && dest >= 0) {
		c = mpi_comm(comm);
		mpi_peer_add(c, dest, tag, SPROF_MPI_SENT, bytes);
	}
	return ret;
}

MPI_EXPORT int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
			MPI_Comm comm)
{
	return mpi_send_core(SPROF_MPI_SEND, buf, count, dt, dest, tag, comm);
}

MPI_EXPORT int MPI_Bsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
			 MPI_Comm comm)
{
	return mpi_send_core(SPROF_MPI_BSEND, buf, count, dt, dest, tag, comm);
}

MPI_EXPORT int MPI_Ssend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
			 MPI_Comm comm)
{
	return mpi_send_core(SPROF_MPI_SSEND, buf, count, dt, dest, tag, comm);
}

MPI_EXPORT int MPI_Rsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
			 MPI_Comm comm)
{
	return mpi_send_core(SPROF_MPI_RSEND, buf, count, dt, dest, tag, comm);
}

/* After a receive that completed (its call from tick t0 to t1): bytes, peer, trace, and the rule
 * with the sender's delay. fix: the program sees the status. */
void mpi_received(int rid, struct mpi_comm_ent *c, int src, MPI_Status *st, int fix,
		     int pb_on, const struct mpi_pb *pb, uint64_t t0, uint64_t t1, int64_t x_r)
{
	uint64_t bytes;

	if (st->MPI_SOURCE == MPI_PROC_NULL)
		return;
	bytes = pb_on ? mpi_pb_status(st, fix) : mpi_status_bytes(st);
	mpi.stat[rid].bytes_recv += bytes;
	mpi_peer_add(c, st->MPI_SOURCE, st->MPI_TAG, SPROF_MPI_RECEIVED, bytes);
	traced_recv(c, st, bytes, t0);
	mpi.wildcard += src == MPI_ANY_SOURCE;
	if (!pb_on)
		return;
	mpi_rule(rid, mpi_ns(t1 - t0) + mpi.probe_wait_ns, x_r,
		 mpi_sender_delay(pb, mpi_real_at(t0) - (int64_t)mpi.probe_wait_ns));
	mpi.probe_wait_ns = 0;
	if (src == MPI_ANY_SOURCE)
		mpi_wildcard(c, pb);
}

MPI_EXPORT int MPI_Recv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
			MPI_Status *status)
{
	MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
	struct mpi_pb *pb = &mpi_blocking_slot[PB_SLOT_RECV];
	MPI_Datatype t = MPI_DATATYPE_NULL;
	uint64_t t0, t1;
	int64_t x_r = 0;
	int ret;

	if (munlikely(!mpi.on || mpi.multiple)) {
		t0 = mpi_now();
		ret = PMPI_Recv(buf, count, dt, src, tag, comm, status);
		if (mpi.on)
			mpi_count(SPROF_MPI_RECV, t0, mpi_now(), 0, 0);
		return ret;
	}
	t0 = mpi_now();
	if (mpi.comp) {
		x_r = mpi_delay();
		mpi.pb_calls++;
		t = mpi_pb_type(buf, count, dt, pb);
	}
	ret = t != MPI_DATATYPE_NULL ? PMPI_Recv(buf, 1, t, src, tag, comm, st)
				     : PMPI_Recv(buf, count, dt, src, tag, comm, st);
	t1 = mpi_now();
	mpi_count(SPROF_MPI_RECV, t0, t1, 0, 0);
	if (ret == MPI_SUCCESS)
		mpi_received(SPROF_MPI_RECV, mpi_comm(comm), src, st, st == status,
			 t != MPI_DATATYPE_NULL, pb, t0, t1, x_r);
	return ret;
}

static int isend_core(int rid, const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		      MPI_Comm comm, MPI_Request *req)
{
	isend_fn fn = isend_fns[rid];
	struct mpi_comm_ent *c;
	struct mpi_pb *slot = NULL;
	MPI_Datatype t = MPI_DATATYPE_NULL;
	uint64_t t0, bytes;
	int ret;

	if (munlikely(!mpi.on || mpi.multiple)) {
		t0 = mpi_now();
		ret = fn(buf, count, dt, dest, tag, comm, req);
		if (mpi.on)
			mpi_count(rid, t0, mpi_now(), 0, 0);
		return ret;
	}
	traced_send(dest, tag, comm, count, dt);
	t0 = mpi_now();
	if (mpi.comp && (slot = mpi_slot_get())) {
		mpi_pb_fill(slot, t0);
		t = mpi_pb_type(buf, count, dt, slot);
	}
	ret = t != MPI_DATATYPE_NULL ? fn(buf, 1, t, dest, tag, comm, req)
				     : fn(buf, count, dt, dest, tag, comm, req);
	bytes = mpi_bytes(count, dt);
	c = mpi_comm(comm);
	if (ret == MPI_SUCCESS && t != MPI_DATATYPE_NULL)
		mpi_req_put(*req, 0, dest, c, slot);
	else
		mpi_slot_put(slot); /* no piggyback left, or nothing in flight */
	mpi_count(rid, t0, mpi_now(), bytes, 0);
	if (ret == MPI_SUCCESS && dest >= 0) {
		mpi_peer_add(c, dest, tag, SPROF_MPI_SENT, bytes);
	}
	return ret;
}

MPI_EXPORT int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
			 MPI_Comm comm, MPI_Request *req)
{
	return isend_core(SPROF_MPI_ISEND, buf, count, dt, dest, tag, comm, req);
}

MPI_EXPORT int MPI_Ibsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
			  MPI_Comm comm, MPI_Request *req)
{
	return isend_core(SPROF_MPI_IBSEND, buf, count, dt, dest, tag, comm, req);
}

MPI_EXPORT int MPI_Issend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
			  MPI_Comm comm, MPI_Request *req)
{
	return isend_core(SPROF_MPI_ISSEND, buf, count, dt, dest, tag, comm, req);
}

MPI_EXPORT int MPI_Irsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
			  MPI_Comm comm, MPI_Request *req)
{
	return isend_core(SPROF_MPI_IRSEND, buf, count, dt, dest, tag, comm, req);
}

MPI_EXPORT int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
			 MPI_Request *req)
{
	struct mpi_pb *slot = NULL;
	MPI_Datatype t = MPI_DATATYPE_NULL;
	uint64_t t0;
	int ret;

	if (munlikely(!mpi.on || mpi.multiple)) {
		t0 = mpi_now();
		ret = PMPI_Irecv(buf, count, dt, src, tag, comm, req);
		if (mpi.on)
			mpi_count(SPROF_MPI_IRECV, t0, mpi_now(), 0, 0);
		return ret;
	}
	t0 = mpi_now();
	if (mpi.comp && (slot = mpi_slot_get()))
		t = mpi_pb_type(buf, count, dt, slot);
	ret = t != MPI_DATATYPE_NULL ? PMPI_Irecv(buf, 1, t, src, tag, comm, req)
				     : PMPI_Irecv(buf, count, dt, src, tag, comm, req);
	if (t == MPI_DATATYPE_NULL) {
		mpi_slot_put(slot); /* no piggyback comes: the slot goes back */
		slot = NULL;
	}
	if (ret == MPI_SUCCESS)
		mpi_req_put(*req, 1, src, mpi_comm(comm), slot);
	else
		mpi_slot_put(slot);
	mpi_count(SPROF_MPI_IRECV, t0, mpi_now(), 0, 0);
	return ret;
}

MPI_EXPORT int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
			    void *rbuf, int rcount, MPI_Datatype rtype, int src, int rtag,
			    MPI_Comm comm, MPI_Status *status)
{
	MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
	struct mpi_pb *spb = &mpi_blocking_slot[PB_SLOT_SEND], *rpb = &mpi_blocking_slot[PB_SLOT_RECV];
	MPI_Datatype ts = MPI_DATATYPE_NULL, tr = MPI_DATATYPE_NULL;
	struct mpi_comm_ent *c;
	uint64_t t0, t1, bytes;
	int64_t x_r = 0;
	int ret, pb_on;

	if (munlikely(!mpi.on || mpi.multiple)) {
		t0 = mpi_now();
		ret = PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag,
				    comm, status);
		if (mpi.on)
			mpi_count(SPROF_MPI_SENDRECV, t0, mpi_now(), 0, 0);
		return ret;
	}
	traced_send(dest, stag, comm, scount, stype);
	t0 = mpi_now();
	if (mpi.comp) {
		x_r = mpi_delay();
		mpi_pb_fill(spb, t0);
		ts = mpi_pb_type(sbuf, scount, stype, spb);
		/* the table replaces its least recently used entry: never ts, looked up just now */
		tr = ts != MPI_DATATYPE_NULL ? mpi_pb_type(rbuf, rcount, rtype, rpb)
					     : MPI_DATATYPE_NULL;
	}
	pb_on = tr != MPI_DATATYPE_NULL;
	ret = pb_on ? PMPI_Sendrecv(sbuf, 1, ts, dest, stag, rbuf, 1, tr, src, rtag, comm, st)
		    : PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag,
				    comm, st);
	t1 = mpi_now();
	bytes = mpi_bytes(scount, stype);
	mpi_count(SPROF_MPI_SENDRECV, t0, t1, bytes, 0);
	if (ret != MPI_SUCCESS)
		return ret;
	c = mpi_comm(comm);
	if (dest >= 0) {
		mpi_peer_add(c, dest, stag, SPROF_MPI_SENT, bytes);
	}
	mpi_received(SPROF_MPI_SENDRECV, c, src, st, st == status, pb_on, rpb, t0, t1, x_r);
	return ret;
}

MPI_EXPORT int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int stag,
				    int src, int rtag, MPI_Comm comm, MPI_Status *status)
{
	MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
	struct mpi_pb *pb = &mpi_blocking_slot[PB_SLOT_SEND]; /* sent, then overwritten by the received one */
	MPI_Datatype t = MPI_DATATYPE_NULL;
	struct mpi_comm_ent *c;
	uint64_t t0, t1, bytes;
	int64_t x_r = 0;
	int ret;

	if (munlikely(!mpi.on || mpi.multiple)) {
		t0 = mpi_now();
		ret = PMPI_Sendrecv_replace(buf, count, dt, dest, stag, src, rtag, comm, status);
		if (mpi.on)
			mpi_count(SPROF_MPI_SENDRECV_REPLACE, t0, mpi_now(), 0, 0);
		return ret;
	}
	traced_send(dest, stag, comm, count, dt);
	t0 = mpi_now();
	if (mpi.comp) {
		x_r = mpi_delay();
		mpi_pb_fill(pb, t0);
		t = mpi_pb_type(buf, count, dt, pb);
	}
	ret = t != MPI_DATATYPE_NULL
		      ? PMPI_Sendrecv_replace(buf, 1, t, dest, stag, src, rtag, comm, st)
		      : PMPI_Sendrecv_replace(buf, count, dt, dest, stag, src, rtag, comm, st);
	t1 = mpi_now();
	bytes = mpi_bytes(count, dt);
	mpi_count(SPROF_MPI_SENDRECV_REPLACE, t0, t1, bytes, 0);
	if (ret != MPI_SUCCESS)
		return ret;
	c = mpi_comm(comm);
	if (dest >= 0) {
		mpi_peer_add(c, dest, stag, SPROF_MPI_SENT, bytes);
	}
	mpi_received(SPROF_MPI_SENDRECV_REPLACE, c, src, st, st == status, t != MPI_DATATYPE_NULL,
		 pb, t0, t1, x_r);
	return ret;
}

/* A probed message carries the piggyback: the status must not count it. Its wait is the next
 * receive's (the delay comes with the message, not with the probe). */
MPI_EXPORT int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *status)
{
	MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
	uint64_t t0 = mpi_now(), t1;
	int ret = PMPI_Probe(src, tag, comm, mpi.on ? st : status);

	if (!mpi.on)
		return ret;
	t1 = mpi_now();
	mpi_count(SPROF_MPI_PROBE, t0, t1, 0, 0);
	if (ret == MPI_SUCCESS && mpi.comp && !mpi.multiple && st->MPI_SOURCE != MPI_PROC_NULL) {
		mpi_pb_status(st, st == status);
		mpi.probe_wait_ns += mpi_ns(t1 - t0);
	}
	return ret;
}

MPI_EXPORT int MPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
	MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
	uint64_t t0 = mpi_now();
	int ret = PMPI_Iprobe(src, tag, comm, flag, mpi.on ? st : status);

	if (!mpi.on)
		return ret;
	mpi_count(SPROF_MPI_IPROBE, t0, mpi_now(), 0, 0);
	if (ret == MPI_SUCCESS && *flag && mpi.comp && !mpi.multiple &&
	    st->MPI_SOURCE != MPI_PROC_NULL && st == status)
		mpi_pb_status(st, 1);
	return ret;
}
