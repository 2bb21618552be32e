/* SPDX-License-Identifier: MIT */
/*
 * libsonde-mpi.so: the PMPI wrappers (docs/mpi.md). Internal declarations.
 *
 * State is process-wide and updated without atomics: the MPI standard has the program serialize
 * its MPI calls below MPI_THREAD_MULTIPLE. Under MPI_THREAD_MULTIPLE the wrappers only count
 * calls and time, with atomic adds. Tables are mapped at MPI_Init; no malloc, no lock, no stdio
 * on a wrapper's path.
 */
#ifndef SONDE_MPI_RT_H
#define SONDE_MPI_RT_H

#include <mpi.h>
#include <stdint.h>

#include "../../format/profile_mpi.h"
#include "../mpi_link.h"

#define MPI_EXPORT __attribute__((visibility("default")))
#define mlikely(x) __builtin_expect(!!(x), 1)
#define munlikely(x) __builtin_expect(!!(x), 0)

#include "mpi_pbtypes.h"

#define R_CALIB SPROF_MPI_ROUTINES /* scratch statistics of the start-up calibration */

struct mpi_stat {
	uint64_t calls, ticks, max_ticks, bytes_sent, bytes_recv;
	int64_t comp_delta_ns; /* sum over its waits of w' - w */
};

/* A communicator seen by the wrappers. */
struct mpi_comm_ent {
	uintptr_t key;       /* the handle; 0 empty */
	uint32_t id;
	int size, inter;     /* size of the (remote) group; intercommunicator */
	int *world;          /* rank in the (remote) group -> rank in MPI_COMM_WORLD; NULL: identity */
	int64_t last_wild_t; /* latest approximated send time of a wildcard receive so far */
	uint32_t tr_id;      /* its id in the trace (DEF_COMM), --trace only */
};

/* What rides on every message with parallel compensation: the sender's delay, and the
 * approximated send time (CLOCK_REALTIME ns minus the delay) for wildcard reordering. */
struct mpi_pb {
	int64_t x, t;
};
#define PB_BYTES ((int)sizeof(struct mpi_pb))

struct mpi_state {
	int on;          /* between MPI_Init and MPI_Finalize */
	int comp;        /* piggybacking (SONDE_MPI_COMP) */
	int multiple;    /* MPI_THREAD_MULTIPLE: counts only */
	int tsc;
	int rank, size, thread_level, finalized;
	double ticks_per_ns, ns_per_tick;
	struct mpi_stat stat[SPROF_MPI_ROUTINES + 1];
	uint64_t calls, pb_calls;
	double o_call_ns, o_pb_ns;
	uint64_t extra_ticks;             /* time in the delay collectives */
	int64_t shift_ns;                 /* sum of (x_r - x_r') over the rule's applications */
	uint64_t waits, wait_ns;
	int64_t wait_c_ns;
	uint64_t wildcard, reorders;
	uint64_t probe_wait_ns;           /* a blocking probe's wait, added to the next receive */
	/* non-blocking collectives' rules (mpi_icoll.c): applied, of which late (their exchange
	 * came after the completing call), and delays read while a late one was still due */
	uint64_t icoll_rules, icoll_late, icoll_stale;
	uint64_t init_ticks, fin_ticks;
	int64_t o_init_ns, o_fin_ns, x_init_ns, x_fin_ns;
	int64_t real_base_ns;             /* CLOCK_REALTIME at real_base_ticks */
	uint64_t real_base_ticks;
	/* sonde run --trace: libsonde.so's message events (runtime/mpi_trace.h), NULL otherwise */
	uint32_t (*tr_comm)(int, const int, const int *);
	void (*tr_send)(int, int, uint32_t, uint64_t);
	void (*tr_recv)(int, int, uint32_t, uint64_t, uint64_t);
	void (*tr_coll)(int, uint32_t, int, uint64_t, uint64_t, uint64_t);
};

extern struct mpi_state mpi;

static inline uint64_t mpi_now(void)
{
	uint32_t lo, hi;

	if (munlikely(!mpi.tsc))
		return sonde_rt_mpi_now();
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t mpi_ns(uint64_t ticks)
{
	return (uint64_t)((double)ticks * mpi.ns_per_tick); /* a product: no division per call */
}

/* ---- tables (mpi_table.c) ---- */
int mpi_tables_init(void);
struct mpi_comm_ent *mpi_comm_slow(MPI_Comm comm);
extern struct mpi_comm_ent *mpi_world_ent;
static inline struct mpi_comm_ent *mpi_comm(MPI_Comm comm)
{
	return mlikely(comm == MPI_COMM_WORLD) ? mpi_world_ent : mpi_comm_slow(comm);
}
void mpi_comm_forget(MPI_Comm comm);
/* The shared entry of communicators that cannot be told (the table full, an unknown message). */
struct mpi_comm_ent *mpi_comm_unknown(void);
static inline int mpi_world_rank(const struct mpi_comm_ent *c, int r)
{
	return !c->world || r < 0 || r >= c->size ? r : c->world[r];
}
void mpi_peer_add(const struct mpi_comm_ent *c, int peer, int tag, uint32_t dir, uint64_t bytes);
void mpi_write(struct writer *w);

/* ---- piggybacking and the compensation rule (mpi_comp.c) ---- */
int64_t mpi_delay(void);
int64_t mpi_overhead_ns(void);
/* The piggyback of a send begun at tick now (its approximated send time). */
void mpi_pb_fill(struct mpi_pb *pb, uint64_t now);
/* Bytes of the program's data in a status of a piggybacked receive; fixes its count when the
 * program sees the status (fix), so that MPI_Get_count counts only its own data. */
uint64_t mpi_pb_status(MPI_Status *st, int fix);
uint64_t mpi_status_bytes(const MPI_Status *st);
void mpi_rule(int rid, uint64_t w_ns, int64_t x_r, int64_t x_s);
int64_t mpi_real_at(uint64_t ticks);
int64_t mpi_sender_delay(const struct mpi_pb *pb, int64_t recv_begin);
void mpi_wildcard(struct mpi_comm_ent *c, const struct mpi_pb *pb);
void mpi_clock_base(void); /* CLOCK_REALTIME against the tick clock: approximated send times */
/* Collectives: after the call (docs/mpi.md, "The rules"). */
void mpi_coll_all(int rid, MPI_Comm comm, uint64_t w_ns, int64_t x_r, int scan);
void mpi_coll_from_root(int rid, MPI_Comm comm, int root, uint64_t w_ns, int64_t x_r);
void mpi_coll_to_root(int rid, MPI_Comm comm, int root, uint64_t w_ns, int64_t x_r);

/* ---- statistics ---- */
static inline void mpi_count(int rid, uint64_t t0, uint64_t t1, uint64_t sent, uint64_t recvd)
{
	struct mpi_stat *s = &mpi.stat[rid];
	uint64_t d = t1 - t0;

	if (munlikely(mpi.multiple)) {
		__atomic_fetch_add(&s->calls, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&s->ticks, d, __ATOMIC_RELAXED);
		__atomic_fetch_add(&mpi.calls, 1, __ATOMIC_RELAXED);
		return;
	}
	s->calls++;
	s->ticks += d;
	if (d > s->max_ticks)
		s->max_ticks = d;
	s->bytes_sent += sent;
	s->bytes_recv += recvd;
	mpi.calls++;
}

/* The size of the last type asked about is kept (MPI_Type_free forgets it). */
extern MPI_Datatype mpi_last_dt;
extern int mpi_last_size;

static inline uint64_t mpi_bytes(int count, MPI_Datatype dt)
{
	int sz = 0;

	if (count <= 0 || dt == MPI_DATATYPE_NULL)
		return 0;
	if (mlikely(dt == mpi_last_dt) && !mpi.multiple)
		return (uint64_t)count * (uint64_t)mpi_last_size;
	if (PMPI_Type_size(dt, &sz) != MPI_SUCCESS || sz < 0)
		return 0;
	if (!mpi.multiple) {
		mpi_last_dt = dt;
		mpi_last_size = sz;
	}
	return (uint64_t)count * (uint64_t)sz;
}

/* The rank's number and the size of a communicator (-1 and 0 when MPI says no). */
static inline int mpi_comm_rank(MPI_Comm comm)
{
	int r = -1;

	PMPI_Comm_rank(comm, &r);
	return r;
}

static inline int mpi_comm_size(MPI_Comm comm)
{
	int n = 0;

	PMPI_Comm_size(comm, &n);
	return n;
}

/* The bytes of n counts of type dt (the v-collectives' count arrays; NULL: none). */
static inline uint64_t mpi_sum_counts(const int *counts, int n, MPI_Datatype dt)
{
	uint64_t s = 0;
	int i;

	for (i = 0; counts && i < n; i++)
		s += mpi_bytes(counts[i], dt);
	return s;
}

/* After a receive that completed (mpi_p2p.c; its call from tick t0 to t1): bytes, peer, trace,
 * and the rule with the sender's delay in pb (pb_on). fix: the program sees the status. */
void mpi_received(int rid, struct mpi_comm_ent *c, int src, MPI_Status *st, int fix, int pb_on,
		  const struct mpi_pb *pb, uint64_t t0, uint64_t t1, int64_t x_r);

/* ---- non-blocking requests (mpi_req.c) ---- */
struct mpi_req_ent {
	MPI_Request req;     /* MPI_REQUEST_NULL: empty */
	uint8_t recv, pb, tomb;
	uint8_t persist;     /* a persistent request (MPI_Send_init...): kept until MPI_Request_free */
	uint8_t active;      /* persistent: started and not yet completed */
	uint8_t cancelled;   /* MPI_Cancel was called on it */
	int src;             /* receive: the source asked for (MPI_ANY_SOURCE: wildcard); send: dest */
	int tag;             /* persistent send: its tag */
	uint64_t bytes;      /* persistent send: the program's bytes per start */
	struct mpi_comm_ent *comm;
	struct mpi_pb *slot; /* where the piggyback goes or comes from; NULL without */
	/* a non-blocking collective (mpi_icoll.c): its routine (0: not one), its root (src), the
	 * bytes at its initiation for the trace, and its delay exchange (slot: the exchange's
	 * buffer; MPI_REQUEST_NULL: none) */
	uint8_t coll_shape;  /* enum mpi_shape + 1 */
	uint8_t coll_root;   /* this rank applies the rule at completion */
	uint16_t coll_rid;
	uint64_t coll_recv;  /* bytes received (bytes: sent) */
	MPI_Request dreq;
};
int mpi_req_init(void);
/* The slots of blocking calls: a blocking call's piggyback is done when it returns, and the
 * program serializes its calls (below MPI_THREAD_MULTIPLE, the only case with piggybacking).
 * Fixed addresses, so that sending or receiving the same buffer again meets the same struct type
 * whatever the depth of the stack it is called from. */
enum { PB_SLOT_SEND, PB_SLOT_RECV };
extern struct mpi_pb mpi_blocking_slot[2];
struct mpi_pb *mpi_slot_get(void);
void mpi_slot_put(struct mpi_pb *s);
uint32_t mpi_slots_out(void);
struct mpi_req_ent *mpi_req_put(MPI_Request req, int recv, int src, struct mpi_comm_ent *c,
				struct mpi_pb *slot);
struct mpi_req_ent *mpi_req_find(MPI_Request req);

/* ---- non-blocking collectives (mpi_icoll.c) ---- */
/* The shapes of the collective rules (docs/mpi.md, "Collectives"). */
enum mpi_shape { MPI_SHAPE_ALL, MPI_SHAPE_SCAN, MPI_SHAPE_FROM_ROOT, MPI_SHAPE_TO_ROOT };
/* A round of completions (mpi_req.c): the least sender delay among the receives it completed,
 * the least new delay among the collectives it completed. */
struct mpi_round {
	int rid, any_pb, any_coll;
	int64_t x_s, x_coll, x_r;
	uint64_t t0; /* the completing call's start: the receive's begin, for the rule */
};
/* A non-blocking collective completed in round r (its entry e is released by the caller). */
void mpi_icoll_complete(struct mpi_round *r, struct mpi_req_ent *e);
/* Apply the rules whose delay exchanges have completed since; wait: wait for all of them
 * (MPI_Finalize). */
int mpi_icoll_poll(int wait); /* how many rules are still due */
/* The end of a round that may have deferred some: its wait, and the delay it left (ruled). */
void mpi_icoll_settle(int ruled, int64_t x_new, uint64_t w_ns);
/* The program freed the request of a collective in flight (erroneous in MPI, handled): its
 * delay exchange completes without applying any rule. */
void mpi_icoll_drop(struct mpi_req_ent *e);
void mpi_rule_to(int rid, uint64_t w_ns, int64_t x_r, int64_t x_new);
extern int mpi_icoll_pending;

/* ---- calibration (mpi_init.c) ---- */
int mpi_send_core(int rid, const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		  MPI_Comm comm);

#endif
