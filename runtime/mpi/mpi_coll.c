/* SPDX-License-Identifier: MIT */
/*
 * Collective wrappers. Bytes are those of the rank's own buffers: what it handed in (sent) and
 * what it got out (received). With parallel compensation each collective is followed by a small
 * collective of the delays on the same communicator (mpi_comp.c: the rules), whose time counts
 * as measurement overhead; intercommunicators are measured but not compensated.
 */
#include "mpi_rt.h"
#include "../../format/trace.h"

struct coll {
	int rid;
	uint64_t t0;
	int64_t x_r;
};

static int coll_begin(struct coll *c, int rid)
{
	c->rid = rid;
	c->x_r = 0;
	c->t0 = mpi_now();
	if (!mpi.on)
		return 0;
	if (mpi.comp && !mpi.multiple)
		c->x_r = mpi_delay();
	return 1;
}

enum shape { ALL, SCAN, FROM_ROOT, TO_ROOT };

static void coll_end(struct coll *c, int ret, MPI_Comm comm, enum shape s, int root,
		     uint64_t sent, uint64_t recvd)
{
	uint64_t t1 = mpi_now(), w;
	struct mpi_comm_ent *ce;

	mpi_count(c->rid, c->t0, t1, sent, recvd);
	if (ret != MPI_SUCCESS || mpi.multiple)
		return;
	ce = mpi_comm(comm);
	/* the trace's operations are ours from MPI_Barrier to MPI_Scan, in the same order */
	if (munlikely(mpi.tr_coll != NULL))
		mpi.tr_coll(c->rid - SPROF_MPI_BARRIER + STRC_COLL_BARRIER, ce->tr_id,
			    s >= FROM_ROOT ? root : STRC_NO_ROOT, sent, recvd, c->t0);
	if (!mpi.comp || ce->inter)
		return;
	w = mpi_ns(t1 - c->t0);
	if (s == ALL || s == SCAN)
		mpi_coll_all(c->rid, comm, w, c->x_r, s == SCAN);
	else if (s == FROM_ROOT)
		mpi_coll_from_root(c->rid, comm, root, w, c->x_r);
	else
		mpi_coll_to_root(c->rid, comm, root, w, c->x_r);
}

static int is_root(MPI_Comm comm, int root)
{
	return mpi_comm_rank(comm) == root;
}

MPI_EXPORT int MPI_Barrier(MPI_Comm comm)
{
	struct coll c;
	int on = coll_begin(&c, SPROF_MPI_BARRIER), ret = PMPI_Barrier(comm);

	if (on)
		coll_end(&c, ret, comm, ALL, 0, 0, 0);
	return ret;
}

MPI_EXPORT int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
	struct coll c;
	int on = coll_begin(&c, SPROF_MPI_BCAST), ret = PMPI_Bcast(buf, count, dt, root, comm);
	uint64_t b;

	if (on) {
		b = mpi_bytes(count, dt);
		coll_end(&c, ret, comm, FROM_ROOT, root, is_root(comm, root) ? b : 0,
			 is_root(comm, root) ? 0 : b);
	}
	return ret;
}

MPI_EXPORT int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			  int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
	struct coll c;
	int on = coll_begin(&c, SPROF_MPI_GATHER),
	    ret = PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);

	if (on) {
		int me = is_root(comm, root);

		coll_end(&c, ret, comm, TO_ROOT, root,
			 sbuf == MPI_IN_PLACE ? 0 : mpi_bytes(scount, stype),
			 me ? mpi_bytes(rcount, rtype) * (uint64_t)mpi_comm_size(comm) : 0);
	}
	return ret;
}

MPI_EXPORT int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			   const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
			   MPI_Comm comm)
{
	struct coll c;
	int on = coll_begin(&c, SPROF_MPI_GATHERV),
	    ret = PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);

	if (on) {
		int me = is_root(comm, root);

		coll_end(&c, ret, comm, TO_ROOT, root,
			 sbuf == MPI_IN_PLACE ? 0 : mpi_bytes(scount, stype),
			 me ? mpi_sum_counts(rcounts, mpi_comm_size(comm), rtype) : 0);
	}
	return ret;
}

MPI_EXPORT int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			   int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
	struct coll c;
	int on = coll_begin(&c, SPROF_MPI_SCATTER),
	    ret = PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);

	if (on) {
		int me = is_root(comm, root);

		coll_end(&c, ret, comm, FROM_ROOT, root,
			 me ? mpi_bytes(scount, stype) * (uint64_t)mpi_comm_size(comm) : 0,
			 rbuf == MPI_IN_PLACE ? 0 : mpi_bytes(rcount, rtype));
	}
	return ret;
}

MPI_EXPORT int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[],
			    MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
			    int root, MPI_Comm comm)
{
	struct coll c;
	int on = coll_begin(&c, SPROF_MPI_SCATTERV),
	    ret = PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);

	if (on) {
		int me = is_root(comm, root);

		coll_end(&c, ret, comm, FROM_ROOT, root,
			 me ? mpi_sum_counts(scounts, mpi_comm_size(comm), stype) : 0,
			 rbuf == MPI_IN_PLACE ? 0 : mpi_bytes(rcount, rtype));
	}
	return ret;
}

MPI_EXPORT int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			     int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
	struct coll c;
	int on = coll_begin(&c, SPROF_MPI_ALLGATHER),
	    ret = PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);

	if (on)
		coll_end(&c, ret, comm, ALL, 0, sbuf == MPI_IN_PLACE ? 0 : mpi_bytes(scount, stype),
			 mpi_bytes(rcount, rtype) * (uint64_t)mpi_comm_size(comm));
	return ret;
}

MPI_EXPORT int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			      const int rcounts[], const int displs[], MPI_Datatype rtype,
			      MPI_Comm comm)
{
	struct coll c;
	int on = coll_begin(&c, SPROF_MPI_ALLGATHERV),
	    ret = PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);

	if (on)
		coll_end(&c, ret, comm, ALL, 0, sbuf == MPI_IN_PLACE ? 0 : mpi_bytes(scount, stype),
			 mpi_sum_counts(rcounts, mpi_comm_size(comm), rtype));
	return ret;
}

MPI_EXPORT int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
			  int root, MPI_Comm comm)
{
	struct coll c;
	int on = coll_begin(&c, SPROF_MPI_REDUCE),
	    ret = PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm);

	if (on) {
		uint64_t b = mpi_bytes(count, dt);

		coll_end(&c, ret, comm, TO_ROOT, root, b, is_root(comm, root) ? b : 0);
	}
	return ret;
}

MPI_EXPORT int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
			     MPI_Comm comm)
{
	struct coll c;
	int on = coll_begin(&c, SPROF_MPI_ALLREDUCE),
	    ret = PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm);

	if (on)
		coll_end(&c, ret, comm, ALL, 0, mpi_bytes(count, dt), mpi_bytes(count, dt));
	return ret;
}

MPI_EXPORT int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			    int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
	struct coll c;
	int on = coll_begin(&c, SPROF_MPI_ALLTOALL),
	    ret = PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);

	if (on) {
		uint64_t n = (uint64_t)mpi_comm_size(comm);

		coll_end(&c, ret, comm, ALL, 0,
			 sbuf == MPI_IN_PLACE ? 0 : mpi_bytes(scount, stype) * n,
			 mpi_bytes(rcount, rtype) * n);
	}
	return ret;
}

MPI_EXPORT int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[],
			     MPI_Datatype stype, void *rbuf, const int rcounts[],
			     const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
	struct coll c;
	int on = coll_begin(&c, SPROF_MPI_ALLTOALLV),
	    ret = PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype,
				 comm);

	if (on) {
		int n = mpi_comm_size(comm);

		coll_end(&c, ret, comm, ALL, 0,
			 sbuf == MPI_IN_PLACE ? 0 : mpi_sum_counts(scounts, n, stype),
			 mpi_sum_counts(rcounts, n, rtype));
	}
	return ret;
}

MPI_EXPORT int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
			MPI_Comm comm)
{
	struct coll c;
	int on = coll_begin(&c, SPROF_MPI_SCAN), ret = PMPI_Scan(sbuf, rbuf, count, dt, op, comm);

	if (on)
		coll_end(&c, ret, comm, SCAN, 0, mpi_bytes(count, dt), mpi_bytes(count, dt));
	return ret;
}
