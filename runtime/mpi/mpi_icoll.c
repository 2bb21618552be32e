/* SPDX-License-Identifier: MIT */
/*
 * Non-blocking collectives (MPI-3: MPI_Ibarrier ... MPI_Ireduce_scatter_block). The initiating
 * call is counted like a blocking collective (calls, its own time, the rank's bytes); its request
 * goes into the request map, so that the Wait or Test that completes it records the trace's
 * MPI_COLL event (op | STRC_COLL_NB) and, with parallel compensation, applies the collective
 * rule there (mpi_rule.h, mpi_rule_icoll).
 *
 * The rule needs, from the members the completion depends on, the latest start and the latest
 * approximated start. Both are known at the initiation, so each initiation starts one small
 * non-blocking collective of its own on the same communicator, right after the program's: the
 * blocking collectives' rule uses one small collective as well, and the order of collectives is
 * the same on every member (each member's wrapper starts the two in turn). Waiting for it at the
 * completion could stall a rank on a member that computes without calling MPI (Open MPI's
 * non-blocking collectives progress only inside MPI calls), so the completion only tests it:
 * when it has not completed yet, the rule is applied at a later Wait or Test (or at MPI_Finalize,
 * which waits for them all), with the values of the call that completed the collective.
 */
#include "mpi_rt.h"
#include "mpi_rule.h"
#include "../../format/trace.h"

#define PENDING 256
#define SPIN_NS 10000 /* how long a completion tests its exchange before deferring it */

/* A delay exchange still in flight after its collective completed. */
struct pending {
	MPI_Request dreq;
	struct mpi_pb *slot;  /* its buffer: after it, the latest start and approximated start */
	int rid;              /* the completing call */
	int apply;            /* 0: only complete it (the program freed the request) */
	int settled;          /* the completing round has finished (w, x_base known) */
	int ruled;            /* that round applied a rule already: x_base is its result */
	uint64_t serial;      /* the completing round */
	uint64_t w_ns;
	int64_t x_r, x_base, rb;
};

static struct pending pend[PENDING];
int mpi_icoll_pending;
static uint64_t round_serial = 1;

/* ---- the rule at completion ---- */

static int64_t candidate(const struct mpi_pb *b, int64_t x_r, uint64_t w, int64_t rb)
{
	return mpi_rule_icoll(x_r, w, rb, b->x, b->t);
}

static void offer(struct mpi_round *r, int64_t x)
{
	mpi.icoll_rules++;
	if (!r->any_coll || x < r->x_coll)
		r->x_coll = x;
	r->any_coll = 1;
}

/* A late delay exchange: the rule of its round, now that its values are here. */
static void apply_late(struct pending *p)
{
	int64_t x = candidate(p->slot, p->x_r, p->w_ns, p->rb), x_new, delta;
	int i;

	mpi.icoll_rules++;
	mpi.icoll_late++;
	x_new = p->ruled && p->x_base < x ? p->x_base : x;
	delta = p->x_base - x_new;
	mpi.shift_ns += delta;
	if (!p->ruled) {
		mpi.waits++;
		mpi.wait_ns += p->w_ns;
		mpi.wait_c_ns += (int64_t)p->w_ns;
	}
	mpi.wait_c_ns += delta;
	mpi.stat[p->rid].comp_delta_ns += delta;
	for (i = 0; i < mpi_icoll_pending; i++) /* the others of its round build on it */
		if (pend[i].serial == p->serial) {
			pend[i].ruled = 1;
			pend[i].x_base = x_new;
		}
}

static void release(int i)
{
	mpi_slot_put(pend[i].slot);
	pend[i] = pend[--mpi_icoll_pending];
}

/* Whether a pending exchange is over (waiting for it: wait). Not before its round has ended. */
static int over(struct pending *p, int wait)
{
	int flag = 0;

	if (!p->settled)
		return 0;
	if (wait)
		return PMPI_Wait(&p->dreq, MPI_STATUS_IGNORE) == MPI_SUCCESS;
	return PMPI_Test(&p->dreq, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag;
}

int mpi_icoll_poll(int wait)
{
	uint64_t t0 = mpi_now();
	int i = 0, due = 0;

	while (i < mpi_icoll_pending) {
		struct pending *p = &pend[i];

		if (!over(p, wait)) {
			due += p->settled && p->apply;
			i++;
			continue;
		}
		if (p->apply && mpi.comp)
			apply_late(p);
		release(i);
	}
	mpi.extra_ticks += mpi_now() - t0;
	return due;
}

/* The round that completed them has finished: its wait, and the delay it left the rank with. */
void mpi_icoll_settle(int ruled, int64_t x_new, uint64_t w_ns)
{
	int i;

	for (i = 0; i < mpi_icoll_pending; i++)
		if (pend[i].serial == round_serial && !pend[i].settled) {
			pend[i].settled = 1;
			pend[i].ruled = ruled;
			pend[i].x_base = ruled ? x_new : pend[i].x_r;
			pend[i].w_ns = w_ns;
		}
	round_serial++;
}

/* An exchange that has not completed: pending, its rule (apply, with round r's values) later. */
static void defer(MPI_Request dreq, struct mpi_pb *slot, struct mpi_round *r, int apply)
{
	struct pending *p;

	if (mpi_icoll_pending == PENDING) {
		/* full: this one is waited for now (every member has started it) */
		PMPI_Wait(&dreq, MPI_STATUS_IGNORE);
		if (apply && r)
			offer(r, candidate(slot, r->x_r, mpi_ns(mpi_now() - r->t0),
					   mpi_real_at(r->t0)));
		mpi_slot_put(slot);
		return;
	}
	p = &pend[mpi_icoll_pending++];
	*p = (struct pending){ .dreq = dreq, .slot = slot, .apply = apply,
			       .settled = !r, .serial = r ? round_serial : 0,
			       .rid = r ? r->rid : 0, .x_r = r ? r->x_r : 0,
			       .x_base = r ? r->x_r : 0, .rb = r ? mpi_real_at(r->t0) : 0 };
}

static unsigned trace_op(int rid)
{
	unsigned op = (unsigned)(rid - SPROF_MPI_IBARRIER) + STRC_COLL_BARRIER;

	return (op > STRC_COLL_REDUCE_SCATTER ? STRC_COLL_REDUCE_SCATTER : op) | STRC_COLL_NB;
}

void mpi_icoll_complete(struct mpi_round *r, struct mpi_req_ent *e)
{
	int flag = 0;
	uint64_t t;

	if (munlikely(mpi.tr_coll != NULL))
		mpi.tr_coll((int)trace_op(e->coll_rid), e->comm->tr_id,
			    e->coll_shape - 1 >= MPI_SHAPE_FROM_ROOT ? e->src : STRC_NO_ROOT,
			    e->bytes, e->coll_recv, r->t0);
	if (e->dreq == MPI_REQUEST_NULL)
		return;
	/* every member started the exchange with the collective: it is mostly there already, or
	 * within microseconds; a member that computes without calling MPI would stall a wait */
	t = mpi_now();
	do
		PMPI_Test(&e->dreq, &flag, MPI_STATUS_IGNORE);
	while (!flag && mpi_ns(mpi_now() - t) < SPIN_NS);
	mpi.extra_ticks += mpi_now() - t;
	if (!flag) {
		defer(e->dreq, e->slot, r, e->coll_root);
		return;
	}
	if (e->coll_root) /* the round's end caps it again by its whole wait (mpi_req.c) */
		offer(r, candidate(e->slot, r->x_r, mpi_ns(mpi_now() - r->t0), mpi_real_at(r->t0)));
	mpi_slot_put(e->slot);
}

void mpi_icoll_drop(struct mpi_req_ent *e)
{
	if (e->dreq != MPI_REQUEST_NULL)
		defer(e->dreq, e->slot, NULL, 0);
	else
		mpi_slot_put(e->slot);
	e->dreq = MPI_REQUEST_NULL;
	e->slot = NULL;
}

/* ---- the initiations ---- */

struct icoll {
	int rid;
	uint64_t t0;
	int64_t x; /* the delay at the start */
};

static int ic_begin(struct icoll *c, int rid)
{
	c->rid = rid;
	c->x = 0;
	if (munlikely(mpi_icoll_pending) && mpi.on && !mpi.multiple)
		mpi_icoll_poll(0);
	c->t0 = mpi_now();
	if (!mpi.on)
		return 0;
	if (mpi.comp && !mpi.multiple)
		c->x = mpi_delay();
	return 1;
}

/* The delay exchange of the rule (mpi_rule_icoll): this rank's start and approximated start,
 * into a slot (NULL: it could not be started). *applies: this rank applies the rule. */
static struct mpi_pb *exchange(const struct icoll *c, MPI_Comm comm, enum mpi_shape s,
			       int root, MPI_Request *dreq, int *applies)
{
	uint64_t t = mpi_now();
	struct mpi_pb *b = mpi_slot_get();
	int r = MPI_ERR_OTHER, me = s >= MPI_SHAPE_FROM_ROOT ? mpi_comm_rank(comm) : -1;

	b->x = mpi_real_at(c->t0);
	b->t = b->x - c->x;
	*applies = 1;
	if (s == MPI_SHAPE_ALL)
		r = PMPI_Iallreduce(MPI_IN_PLACE, b, 2, MPI_INT64_T, MPI_MAX, comm, dreq);
	else if (s == MPI_SHAPE_SCAN) /* an exclusive scan too: a member's own start is harmless */
		r = PMPI_Iscan(MPI_IN_PLACE, b, 2, MPI_INT64_T, MPI_MAX, comm, dreq);
	else if (s == MPI_SHAPE_FROM_ROOT) {
		*applies = me != root;
		r = PMPI_Ibcast(b, 2, MPI_INT64_T, root, comm, dreq);
	} else if (me == root) { /* TO_ROOT: the others' starts, at the root */
		b->x = b->t = INT64_MIN;
		r = PMPI_Ireduce(MPI_IN_PLACE, b, 2, MPI_INT64_T, MPI_MAX, root, comm, dreq);
	} else {
		*applies = 0;
		r = PMPI_Ireduce(b, NULL, 2, MPI_INT64_T, MPI_MAX, root, comm, dreq);
	}
	if (r != MPI_SUCCESS) {
		*dreq = MPI_REQUEST_NULL;
		mpi_slot_put(b);
		b = NULL;
	}
	mpi.extra_ticks += mpi_now() - t;
	mpi.pb_calls++;
	return b;
}

/* An intercommunicator: no rule. Asked of MPI when the table could not keep the communicator. */
static int inter(MPI_Comm comm, const struct mpi_comm_ent *ce)
{
	int f = 0;

	if (ce != mpi_comm_unknown())
		return ce->inter;
	PMPI_Comm_test_inter(comm, &f);
	return f;
}

static void ic_end(const struct icoll *c, int ret, MPI_Comm comm, MPI_Request *req,
		   enum mpi_shape s, int root, uint64_t sent, uint64_t recvd)
{
	MPI_Request dreq = MPI_REQUEST_NULL;
	struct mpi_pb *slot = NULL;
	struct mpi_comm_ent *ce;
	struct mpi_req_ent *e;
	int applies = 0;

	mpi_count(c->rid, c->t0, mpi_now(), sent, recvd);
	if (ret != MPI_SUCCESS || mpi.multiple)
		return;
	ce = mpi_comm(comm);
	/* every member starts its exchange, whether or not its request map has room: the order
	 * of collectives on the communicator must be the same on all */
	if (mpi.comp && !inter(comm, ce))
		slot = exchange(c, comm, s, root, &dreq, &applies);
	e = mpi_req_put(*req, 0, root, ce, NULL);
	if (!e) { /* not followed: its exchange completes apart, no rule */
		if (slot)
			defer(dreq, slot, NULL, 0);
		return;
	}
	e->coll_rid = (uint16_t)c->rid;
	e->coll_shape = (uint8_t)(s + 1);
	e->coll_root = (uint8_t)applies;
	e->bytes = sent;
	e->coll_recv = recvd;
	e->dreq = dreq;
	e->slot = slot;
}

/* Bytes: those of the rank's own buffers, as for the blocking collectives (mpi_coll.c). */

MPI_EXPORT int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
	struct icoll c;
	int on = ic_begin(&c, SPROF_MPI_IBARRIER), ret = PMPI_Ibarrier(comm, req);

	if (on)
		ic_end(&c, ret, comm, req, MPI_SHAPE_ALL, 0, 0, 0);
	return ret;
}

MPI_EXPORT int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
			  MPI_Request *req)
{
	struct icoll c;
	int on = ic_begin(&c, SPROF_MPI_IBCAST),
	    ret = PMPI_Ibcast(buf, count, dt, root, comm, req);

	if (on) {
		uint64_t b = mpi_bytes(count, dt);
		int me = mpi_comm_rank(comm) == root;

		ic_end(&c, ret, comm, req, MPI_SHAPE_FROM_ROOT, root, me ? b : 0, me ? 0 : b);
	}
	return ret;
}

MPI_EXPORT int MPI_Igather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			   int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,
			   MPI_Request *req)
{
	struct icoll c;
	int on = ic_begin(&c, SPROF_MPI_IGATHER),
	    ret = PMPI_Igather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req);

	if (on) {
		int me = mpi_comm_rank(comm) == root;

		ic_end(&c, ret, comm, req, MPI_SHAPE_TO_ROOT, root,
		       sbuf == MPI_IN_PLACE ? 0 : mpi_bytes(scount, stype),
		       me ? mpi_bytes(rcount, rtype) * (uint64_t)mpi_comm_size(comm) : 0);
	}
	return ret;
}

MPI_EXPORT int MPI_Igatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			    const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
			    MPI_Comm comm, MPI_Request *req)
{
	struct icoll c;
	int on = ic_begin(&c, SPROF_MPI_IGATHERV),
	    ret = PMPI_Igatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm,
				req);

	if (on) {
		int me = mpi_comm_rank(comm) == root;

		ic_end(&c, ret, comm, req, MPI_SHAPE_TO_ROOT, root,
		       sbuf == MPI_IN_PLACE ? 0 : mpi_bytes(scount, stype),
		       me ? mpi_sum_counts(rcounts, mpi_comm_size(comm), rtype) : 0);
	}
	return ret;
}

MPI_EXPORT int MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			    int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,
			    MPI_Request *req)
{
	struct icoll c;
	int on = ic_begin(&c, SPROF_MPI_ISCATTER),
	    ret = PMPI_Iscatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req);

	if (on) {
		int me = mpi_comm_rank(comm) == root;

		ic_end(&c, ret, comm, req, MPI_SHAPE_FROM_ROOT, root,
		       me ? mpi_bytes(scount, stype) * (uint64_t)mpi_comm_size(comm) : 0,
		       rbuf == MPI_IN_PLACE ? 0 : mpi_bytes(rcount, rtype));
	}
	return ret;
}

MPI_EXPORT int MPI_Iscatterv(const void *sbuf, const int scounts[], const int displs[],
			     MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
			     int root, MPI_Comm comm, MPI_Request *req)
{
	struct icoll c;
	int on = ic_begin(&c, SPROF_MPI_ISCATTERV),
	    ret = PMPI_Iscatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm,
				 req);

	if (on) {
		int me = mpi_comm_rank(comm) == root;

		ic_end(&c, ret, comm, req, MPI_SHAPE_FROM_ROOT, root,
		       me ? mpi_sum_counts(scounts, mpi_comm_size(comm), stype) : 0,
		       rbuf == MPI_IN_PLACE ? 0 : mpi_bytes(rcount, rtype));
	}
	return ret;
}

MPI_EXPORT int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			      int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
	struct icoll c;
	int on = ic_begin(&c, SPROF_MPI_IALLGATHER),
	    ret = PMPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);

	if (on)
		ic_end(&c, ret, comm, req, MPI_SHAPE_ALL, 0,
		       sbuf == MPI_IN_PLACE ? 0 : mpi_bytes(scount, stype),
		       mpi_bytes(rcount, rtype) * (uint64_t)mpi_comm_size(comm));
	return ret;
}

MPI_EXPORT int MPI_Iallgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			       const int rcounts[], const int displs[], MPI_Datatype rtype,
			       MPI_Comm comm, MPI_Request *req)
{
	struct icoll c;
	int on = ic_begin(&c, SPROF_MPI_IALLGATHERV),
	    ret = PMPI_Iallgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req);

	if (on)
		ic_end(&c, ret, comm, req, MPI_SHAPE_ALL, 0,
		       sbuf == MPI_IN_PLACE ? 0 : mpi_bytes(scount, stype),
		       mpi_sum_counts(rcounts, mpi_comm_size(comm), rtype));
	return ret;
}

MPI_EXPORT int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
			   int root, MPI_Comm comm, MPI_Request *req)
{
	struct icoll c;
	int on = ic_begin(&c, SPROF_MPI_IREDUCE),
	    ret = PMPI_Ireduce(sbuf, rbuf, count, dt, op, root, comm, req);

	if (on) {
		uint64_t b = mpi_bytes(count, dt);

		ic_end(&c, ret, comm, req, MPI_SHAPE_TO_ROOT, root, b,
		       mpi_comm_rank(comm) == root ? b : 0);
	}
	return ret;
}

MPI_EXPORT int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
			      MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
	struct icoll c;
	int on = ic_begin(&c, SPROF_MPI_IALLREDUCE),
	    ret = PMPI_Iallreduce(sbuf, rbuf, count, dt, op, comm, req);

	if (on)
		ic_end(&c, ret, comm, req, MPI_SHAPE_ALL, 0, mpi_bytes(count, dt),
		       mpi_bytes(count, dt));
	return ret;
}

MPI_EXPORT int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
			     int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
	struct icoll c;
	int on = ic_begin(&c, SPROF_MPI_IALLTOALL),
	    ret = PMPI_Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);

	if (on) {
		uint64_t n = (uint64_t)mpi_comm_size(comm);

		ic_end(&c, ret, comm, req, MPI_SHAPE_ALL, 0,
		       sbuf == MPI_IN_PLACE ? 0 : mpi_bytes(scount, stype) * n,
		       mpi_bytes(rcount, rtype) * n);
	}
	return ret;
}

MPI_EXPORT int MPI_Ialltoallv(const void *sbuf, const int scounts[], const int sdispls[],
			      MPI_Datatype stype, void *rbuf, const int rcounts[],
			      const int rdispls[], MPI_Datatype rtype, MPI_Comm comm,
			      MPI_Request *req)
{
	struct icoll c;
	int on = ic_begin(&c, SPROF_MPI_IALLTOALLV),
	    ret = PMPI_Ialltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype,
				  comm, req);

	if (on) {
		int n = mpi_comm_size(comm);

		ic_end(&c, ret, comm, req, MPI_SHAPE_ALL, 0,
		       sbuf == MPI_IN_PLACE ? 0 : mpi_sum_counts(scounts, n, stype),
		       mpi_sum_counts(rcounts, n, rtype));
	}
	return ret;
}

static int scan(int rid, const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
		MPI_Comm comm, MPI_Request *req)
{
	struct icoll c;
	int on = ic_begin(&c, rid),
	    ret = rid == SPROF_MPI_ISCAN ? PMPI_Iscan(sbuf, rbuf, count, dt, op, comm, req)
					 : PMPI_Iexscan(sbuf, rbuf, count, dt, op, comm, req);

	if (on)
		ic_end(&c, ret, comm, req, MPI_SHAPE_SCAN, 0,
		       sbuf == MPI_IN_PLACE ? 0 : mpi_bytes(count, dt), mpi_bytes(count, dt));
	return ret;
}

MPI_EXPORT int MPI_Iscan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
			 MPI_Comm comm, MPI_Request *req)
{
	return scan(SPROF_MPI_ISCAN, sbuf, rbuf, count, dt, op, comm, req);
}

MPI_EXPORT int MPI_Iexscan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
			   MPI_Comm comm, MPI_Request *req)
{
	return scan(SPROF_MPI_IEXSCAN, sbuf, rbuf, count, dt, op, comm, req);
}

/* Reduce_scatter: the rank hands in the whole vector and gets its own part back. */
MPI_EXPORT int MPI_Ireduce_scatter(const void *sbuf, void *rbuf, const int rcounts[],
				   MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
	struct icoll c;
	int on = ic_begin(&c, SPROF_MPI_IREDUCE_SCATTER),
	    ret = PMPI_Ireduce_scatter(sbuf, rbuf, rcounts, dt, op, comm, req);

	if (on) {
		int me = mpi_comm_rank(comm);

		ic_end(&c, ret, comm, req, MPI_SHAPE_ALL, 0,
		       mpi_sum_counts(rcounts, mpi_comm_size(comm), dt),
		       rcounts && me >= 0 ? mpi_bytes(rcounts[me], dt) : 0);
	}
	return ret;
}

MPI_EXPORT int MPI_Ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
					 MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
					 MPI_Request *req)
{
	struct icoll c;
	int on = ic_begin(&c, SPROF_MPI_IREDUCE_SCATTER_BLOCK),
	    ret = PMPI_Ireduce_scatter_block(sbuf, rbuf, rcount, dt, op, comm, req);

	if (on) {
		uint64_t b = mpi_bytes(rcount, dt);

		ic_end(&c, ret, comm, req, MPI_SHAPE_ALL, 0, b * (uint64_t)mpi_comm_size(comm), b);
	}
	return ret;
}
