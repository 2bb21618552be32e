/* SPDX-License-Identifier: MIT */
/*
 * Parallel overhead compensation across ranks (MODELS §2.4, seed 001; docs/mpi.md).
 *
 * The rank's overhead o is what its calling thread's probes and calibrations cost
 * (libsonde.so), plus the wrappers' calibrated cost per call and the measured time of the delay
 * collectives; its delay x = o - shift. Every point-to-point message carries the sender's x and
 * its approximated send time in a derived struct datatype {2 int64 at the slot, count × dt at
 * buf}: one message, nothing copied. A receive that waited w applies
 *     x_r' = min(x_r + w, x_s)      w' = w + x_r - x_r'
 * (runtime/sync_rule.h, the rule the shared-memory compensation uses too).
 */
#include "mpi_rt.h"
#include "../sync_rule.h"
#include "mpi_rule.h"

#include <time.h>

int64_t mpi_overhead_ns(void)
{
	return (int64_t)(sonde_rt_mpi_overhead_ns() + (double)mpi.calls * mpi.o_call_ns +
			 (double)mpi.pb_calls * mpi.o_pb_ns) +
	       (int64_t)mpi_ns(mpi.extra_ticks);
}

int64_t mpi_delay(void)
{
	/* rules of non-blocking collectives whose exchanges came late: before the delay goes on */
	if (munlikely(mpi_icoll_pending) && mpi_icoll_poll(0))
		mpi.icoll_stale++;
	return mpi_overhead_ns() - mpi.shift_ns;
}

void mpi_pb_fill(struct mpi_pb *pb, uint64_t now)
{
	pb->x = mpi_delay();
	pb->t = mpi.real_base_ns + (int64_t)mpi_ns(now - mpi.real_base_ticks) - pb->x;
	mpi.pb_calls++;
}

/*
 * A status's byte count. Open MPI keeps it in the status itself (_ucount, in its mpi.h), which
 * MPI_Get_count and MPI_Status_set_elements with MPI_BYTE only read and write: reading it
 * directly spares two library calls on the path of every piggybacked message received.
 */
#ifdef OPEN_MPI
static inline uint64_t status_count(const MPI_Status *st)
{
	return (uint64_t)st->_ucount;
}

static inline void status_set_count(MPI_Status *st, uint64_t n)
{
	st->_ucount = (size_t)n;
}
#else
static inline uint64_t status_count(const MPI_Status *st)
{
	int n = 0;

	if (PMPI_Get_count(st, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED || n < 0)
		return 0;
	return (uint64_t)n;
}

static inline void status_set_count(MPI_Status *st, uint64_t n)
{
	PMPI_Status_set_elements(st, MPI_BYTE, (int)n);
}
#endif

uint64_t mpi_status_bytes(const MPI_Status *st)
{
	return st->MPI_SOURCE == MPI_PROC_NULL ? 0 : status_count(st);
}

/* The program asks MPI_Get_count with its own type: the status must not count the piggyback. */
uint64_t mpi_pb_status(MPI_Status *st, int fix)
{
	uint64_t n = mpi_status_bytes(st);

	if (n < (uint64_t)PB_BYTES)
		return n;
	if (fix)
		status_set_count(st, n - PB_BYTES);
	return n - PB_BYTES;
}

/* A tick time on the clock of the approximated send times (CLOCK_REALTIME, ns). */
int64_t mpi_real_at(uint64_t ticks)
{
	return mpi.real_base_ns + (int64_t)mpi_ns(ticks - mpi.real_base_ticks);
}

/* The delay of the message's sender as the rule sees it, for a receive begun then (mpi_rule.h). */
int64_t mpi_sender_delay(const struct mpi_pb *pb, int64_t recv_begin)
{
	return mpi_rule_sender(pb->x, pb->t, recv_begin);
}

void mpi_rule(int rid, uint64_t w_ns, int64_t x_r, int64_t x_s)
{
	int64_t w_c;

	mpi_rule_to(rid, w_ns, x_r, sync_rule_wait(x_r, w_ns, x_s, &w_c));
}

/* A wait of w_ns that a rule found should leave the rank with delay x_new. */
void mpi_rule_to(int rid, uint64_t w_ns, int64_t x_r, int64_t x_new)
{
	int64_t w_c = (int64_t)w_ns + x_r - x_new;

	mpi.shift_ns += x_r - x_new;
	mpi.waits++;
	mpi.wait_ns += w_ns;
	mpi.wait_c_ns += w_c;
	mpi.stat[rid].comp_delta_ns += w_c - (int64_t)w_ns;
}

/* A wildcard receive: was it received before one that, without measurement, was sent later? */
void mpi_wildcard(struct mpi_comm_ent *c, const struct mpi_pb *pb)
{
	if (pb->t < c->last_wild_t)
		mpi.reorders++;
	else
		c->last_wild_t = pb->t;
}

/* A delay collective's own time is overhead of the measurement. */
static void extra_done(uint64_t t0)
{
	mpi.extra_ticks += mpi_now() - t0;
}

/* Barrier, Allreduce, Allgather(v), Alltoall(v), Scan: mpi_rule.h, one reduction of
 * (x + w, w) with MPI_MIN over the communicator (a prefix reduction for Scan). */
void mpi_coll_all(int rid, MPI_Comm comm, uint64_t w_ns, int64_t x_r, int scan)
{
	int64_t in[2] = { x_r + (int64_t)w_ns, (int64_t)w_ns }, out[2], x_new, w_c;
	uint64_t t0 = mpi_now();
	int r = scan ? PMPI_Scan(in, out, 2, MPI_INT64_T, MPI_MIN, comm)
		     : PMPI_Allreduce(in, out, 2, MPI_INT64_T, MPI_MIN, comm);

	extra_done(t0);
	mpi.pb_calls++;
	if (r != MPI_SUCCESS)
		return;
	x_new = mpi_rule_collective(out[0], out[1], x_r, w_ns);
	w_c = (int64_t)w_ns + x_r - x_new;
	mpi.shift_ns += x_r - x_new;
	mpi.waits++;
	mpi.wait_ns += w_ns;
	mpi.wait_c_ns += w_c;
	mpi.stat[rid].comp_delta_ns += w_c - (int64_t)w_ns;
}

/* Bcast, Scatter(v): one message from the root, whose delay at its call comes along. */
void mpi_coll_from_root(int rid, MPI_Comm comm, int root, uint64_t w_ns, int64_t x_r)
{
	int64_t x_s = x_r;
	uint64_t t0 = mpi_now();
	int r = PMPI_Bcast(&x_s, 1, MPI_INT64_T, root, comm);

	extra_done(t0);
	mpi.pb_calls++;
	if (r == MPI_SUCCESS && mpi_comm_rank(comm) != root)
		mpi_rule(rid, w_ns, x_r, x_s);
}

/* Gather(v), Reduce: the root cannot finish before the least delayed contribution (seed 001). */
void mpi_coll_to_root(int rid, MPI_Comm comm, int root, uint64_t w_ns, int64_t x_r)
{
	int me = mpi_comm_rank(comm), size = 0;
	int64_t in = me == root ? INT64_MAX : x_r, out = INT64_MAX;
	uint64_t t0 = mpi_now();
	int r = PMPI_Reduce(&in, &out, 1, MPI_INT64_T, MPI_MIN, root, comm);

	extra_done(t0);
	mpi.pb_calls++;
	PMPI_Comm_size(comm, &size);
	if (r == MPI_SUCCESS && me == root && size > 1)
		mpi_rule(rid, w_ns, x_r, out);
}

void mpi_clock_base(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	mpi.real_base_ticks = mpi_now();
	mpi.real_base_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
