/* SPDX-License-Identifier: MIT */
/*
 * Matched probes: MPI_Mprobe, MPI_Improbe, and the MPI_Mrecv / MPI_Imrecv that receive the
 * message they matched. A probe's status counts the program's data only (the piggyback taken
 * off, as MPI_Probe's); the receive takes the message with the struct type {slot, the program's
 * data} (mpi_comp.c), so the sender's delay lands in the slot, never in the program's buffer.
 * MPI_Mrecv names no communicator: the probe's is remembered per message handle (MSGS at once;
 * a message beyond them is received and compensated alike, but counted under the shared entry of
 * communicators that did not fit, docs/mpi.md).
 * A blocking probe's wait goes to the receive, as MPI_Probe's.
 */
#include "mpi_rt.h"

#define MSGS 64

struct msg_ent {
	MPI_Message msg; /* MPI_MESSAGE_NULL: empty */
	struct mpi_comm_ent *comm;
	int src;         /* the source the probe asked for */
};

static struct msg_ent msgs[MSGS];
static int msgs_ready;

static int followed(void)
{
	return mlikely(mpi.on) && !mpi.multiple;
}

static void msg_put(MPI_Message msg, MPI_Comm comm, int src)
{
	int i;

	if (!msgs_ready) {
		for (i = 0; i < MSGS; i++)
			msgs[i].msg = MPI_MESSAGE_NULL;
		msgs_ready = 1;
	}
	if (msg == MPI_MESSAGE_NULL || msg == MPI_MESSAGE_NO_PROC)
		return;
	for (i = 0; i < MSGS; i++)
		if (msgs[i].msg == MPI_MESSAGE_NULL) {
			msgs[i] = (struct msg_ent){ .msg = msg, .comm = mpi_comm(comm), .src = src };
			return;
		}
}

/* The probe's entry of a message, taken out of the table (the shared entry if not there). */
static void msg_take(MPI_Message msg, struct msg_ent *out)
{
	int i;

	*out = (struct msg_ent){ .msg = msg, .comm = mpi_comm_unknown(), .src = MPI_PROC_NULL };
	if (!msgs_ready || msg == MPI_MESSAGE_NULL || msg == MPI_MESSAGE_NO_PROC)
		return;
	for (i = 0; i < MSGS; i++)
		if (msgs[i].msg == msg) {
			*out = msgs[i];
			msgs[i].msg = MPI_MESSAGE_NULL;
			return;
		}
}

/* A matched message carries the piggyback: the status the program sees must not count it. */
static void probed(int rid, uint64_t t0, int ret, int found, MPI_Status *st, MPI_Status *status,
		   MPI_Message msg, MPI_Comm comm, int src)
{
	uint64_t t1 = mpi_now();

	mpi_count(rid, t0, t1, 0, 0);
	if (ret != MPI_SUCCESS || !found || !followed() || st->MPI_SOURCE == MPI_PROC_NULL)
		return;
	msg_put(msg, comm, src);
	if (!mpi.comp)
		return;
	if (st == status)
		mpi_pb_status(st, 1);
	if (rid == SPROF_MPI_MPROBE)
		mpi.probe_wait_ns += mpi_ns(t1 - t0);
}

MPI_EXPORT int MPI_Mprobe(int src, int tag, MPI_Comm comm, MPI_Message *msg, MPI_Status *status)
{
	MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
	uint64_t t0 = mpi_now();
	int ret = PMPI_Mprobe(src, tag, comm, msg, mpi.on ? st : status);

	if (mpi.on)
		probed(SPROF_MPI_MPROBE, t0, ret, 1, st, status, *msg, comm, src);
	return ret;
}

MPI_EXPORT int MPI_Improbe(int src, int tag, MPI_Comm comm, int *flag, MPI_Message *msg,
			   MPI_Status *status)
{
	MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
	uint64_t t0 = mpi_now();
	int ret = PMPI_Improbe(src, tag, comm, flag, msg, mpi.on ? st : status);

	if (mpi.on)
		probed(SPROF_MPI_IMPROBE, t0, ret, ret == MPI_SUCCESS && *flag, st, status, *msg,
		       comm, src);
	return ret;
}

MPI_EXPORT int MPI_Mrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *msg,
			 MPI_Status *status)
{
	MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
	MPI_Datatype t = MPI_DATATYPE_NULL;
	struct msg_ent m;
	struct mpi_pb *pb = &mpi_blocking_slot[PB_SLOT_RECV];
	uint64_t t0 = mpi_now(), t1;
	int64_t x_r = 0;
	int ret;

	msg_take(*msg, &m); /* before the call, which sets *msg to MPI_MESSAGE_NULL */
	if (followed() && mpi.comp) {
		x_r = mpi_delay();
		mpi.pb_calls++;
		t = mpi_pb_type(buf, count, dt, pb);
	}
	ret = t != MPI_DATATYPE_NULL ? PMPI_Mrecv(buf, 1, t, msg, st)
				     : PMPI_Mrecv(buf, count, dt, msg, mpi.on ? st : status);
	if (!mpi.on)
		return ret;
	t1 = mpi_now();
	mpi_count(SPROF_MPI_MRECV, t0, t1, 0, 0);
	if (ret != MPI_SUCCESS || !followed())
		return ret;
	mpi_received(SPROF_MPI_MRECV, m.comm, m.src, st, st == status, t != MPI_DATATYPE_NULL,
		     pb, t0, t1, x_r);
	return ret;
}

MPI_EXPORT int MPI_Imrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *msg,
			  MPI_Request *req)
{
	struct mpi_pb *slot = NULL;
	struct msg_ent m;
	MPI_Datatype t = MPI_DATATYPE_NULL;
	uint64_t t0 = mpi_now();
	int ret;

	msg_take(*msg, &m);
	if (followed() && mpi.comp && (slot = mpi_slot_get()))
		t = mpi_pb_type(buf, count, dt, slot);
	ret = t != MPI_DATATYPE_NULL ? PMPI_Imrecv(buf, 1, t, msg, req)
				     : PMPI_Imrecv(buf, count, dt, msg, req);
	if (!mpi.on)
		return ret;
	if (t == MPI_DATATYPE_NULL) {
		mpi_slot_put(slot);
		slot = NULL;
	}
	if (ret == MPI_SUCCESS && followed())
		mpi_req_put(*req, 1, m.src, m.comm, slot);
	else
		mpi_slot_put(slot);
	mpi_count(SPROF_MPI_IMRECV, t0, mpi_now(), 0, 0);
	return ret;
}
