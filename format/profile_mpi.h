/* SPDX-License-Identifier: MIT */
/*
 * The MPI records of the profile file (libsonde-mpi.so, docs/mpi.md): MPI_CALL (15), one per MPI
 * routine used; MPI_PEER (16), messages and bytes per communicator, peer, tag and direction;
 * MPI_COMP (17), the rank and its local and parallel compensation. Spec: docs/format-profile.md.
 * Shared by the MPI runtime's writer (runtime/mpi/) and the tool's reader (profile_read_mpi.c).
 */
#ifndef SONDE_FORMAT_PROFILE_MPI_H
#define SONDE_FORMAT_PROFILE_MPI_H

#include <stdint.h>

#include "profile.h"

/* The routines, in the order of the names below; ids are stable (new ones go at the end). */
enum sprof_mpi_routine {
	SPROF_MPI_INIT, SPROF_MPI_INIT_THREAD, SPROF_MPI_FINALIZE,
	SPROF_MPI_SEND, SPROF_MPI_BSEND, SPROF_MPI_SSEND, SPROF_MPI_RSEND,
	SPROF_MPI_ISEND, SPROF_MPI_IBSEND, SPROF_MPI_ISSEND, SPROF_MPI_IRSEND,
	SPROF_MPI_RECV, SPROF_MPI_IRECV, SPROF_MPI_SENDRECV, SPROF_MPI_SENDRECV_REPLACE,
	SPROF_MPI_PROBE, SPROF_MPI_IPROBE,
	SPROF_MPI_WAIT, SPROF_MPI_WAITALL, SPROF_MPI_WAITANY, SPROF_MPI_WAITSOME,
	SPROF_MPI_TEST, SPROF_MPI_TESTALL, SPROF_MPI_TESTANY, SPROF_MPI_TESTSOME,
	SPROF_MPI_BARRIER, SPROF_MPI_BCAST, SPROF_MPI_GATHER, SPROF_MPI_GATHERV,
	SPROF_MPI_SCATTER, SPROF_MPI_SCATTERV, SPROF_MPI_ALLGATHER, SPROF_MPI_ALLGATHERV,
	SPROF_MPI_REDUCE, SPROF_MPI_ALLREDUCE, SPROF_MPI_ALLTOALL, SPROF_MPI_ALLTOALLV,
	SPROF_MPI_SCAN,
	SPROF_MPI_START, SPROF_MPI_STARTALL, SPROF_MPI_MPROBE, SPROF_MPI_IMPROBE, SPROF_MPI_MRECV,
	SPROF_MPI_IMRECV,
	/* 44-59: the non-blocking collectives (MPI-3), in the order of the blocking ones */
	SPROF_MPI_IBARRIER, SPROF_MPI_IBCAST, SPROF_MPI_IGATHER, SPROF_MPI_IGATHERV,
	SPROF_MPI_ISCATTER, SPROF_MPI_ISCATTERV, SPROF_MPI_IALLGATHER, SPROF_MPI_IALLGATHERV,
	SPROF_MPI_IREDUCE, SPROF_MPI_IALLREDUCE, SPROF_MPI_IALLTOALL, SPROF_MPI_IALLTOALLV,
	SPROF_MPI_ISCAN, SPROF_MPI_IEXSCAN, SPROF_MPI_IREDUCE_SCATTER,
	SPROF_MPI_IREDUCE_SCATTER_BLOCK,
	SPROF_MPI_ROUTINES
};

#define SPROF_MPI_NAMES                                                                        \
	"MPI_Init", "MPI_Init_thread", "MPI_Finalize", "MPI_Send", "MPI_Bsend", "MPI_Ssend",    \
	"MPI_Rsend", "MPI_Isend", "MPI_Ibsend", "MPI_Issend", "MPI_Irsend", "MPI_Recv",          \
	"MPI_Irecv", "MPI_Sendrecv", "MPI_Sendrecv_replace", "MPI_Probe", "MPI_Iprobe",         \
	"MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Test", "MPI_Testall",    \
	"MPI_Testany", "MPI_Testsome", "MPI_Barrier", "MPI_Bcast", "MPI_Gather", "MPI_Gatherv", \
	"MPI_Scatter", "MPI_Scatterv", "MPI_Allgather", "MPI_Allgatherv", "MPI_Reduce",         \
	"MPI_Allreduce", "MPI_Alltoall", "MPI_Alltoallv", "MPI_Scan", "MPI_Start",              \
	"MPI_Startall", "MPI_Mprobe", "MPI_Improbe", "MPI_Mrecv", "MPI_Imrecv", "MPI_Ibarrier", \
	"MPI_Ibcast", "MPI_Igather", "MPI_Igatherv", "MPI_Iscatter", "MPI_Iscatterv",           \
	"MPI_Iallgather", "MPI_Iallgatherv", "MPI_Ireduce", "MPI_Iallreduce", "MPI_Ialltoall",  \
	"MPI_Ialltoallv", "MPI_Iscan", "MPI_Iexscan", "MPI_Ireduce_scatter",                     \
	"MPI_Ireduce_scatter_block"

#define SPROF_MPI_CALL_SIZE 56
#define SPROF_MPI_PEER_SIZE 40
#define SPROF_MPI_COMP_SIZE 144

/* MPI_PEER directions and flags */
#define SPROF_MPI_SENT 0
#define SPROF_MPI_RECEIVED 1
#define SPROF_MPI_PEER_OVERFLOW 0x1u /* the table was full: every pair not in it */

/* MPI_COMP flags */
#define SPROF_MPI_PIGGYBACK 0x1u  /* parallel compensation: delays rode on every message */
#define SPROF_MPI_FINALIZED 0x2u  /* MPI_Finalize was reached (else fin_ns is the run's end) */
#define SPROF_MPI_MULTIPLE 0x4u   /* MPI_THREAD_MULTIPLE: counts only, no peers, no compensation */

/* One routine on one rank. */
struct sprof_mpi_call {
	uint32_t routine;      /* enum sprof_mpi_routine */
	uint64_t calls;
	uint64_t ns, max_ns;   /* time in the routine (measured), and its longest call */
	uint64_t bytes_sent, bytes_recv;
	int64_t comp_ns;       /* ns after parallel compensation: ns + sum over its waits of w' - w */
};

/* Messages one rank sent to, or received from, one peer on one communicator with one tag. */
struct sprof_mpi_peer {
	uint32_t comm;         /* communicator id: 0 MPI_COMM_WORLD, 1 MPI_COMM_SELF, then by first use */
	uint32_t dir;          /* SPROF_MPI_SENT or SPROF_MPI_RECEIVED */
	int32_t peer;          /* the peer's rank in MPI_COMM_WORLD (-1: overflow entry) */
	int32_t tag;
	uint32_t flags;
	uint64_t messages, bytes; /* bytes of the program's data (the piggyback not counted) */
};

/* The rank and its compensation (MODELS §2.4), times in ns since the process's measurement began. */
struct sprof_mpi_comp {
	uint32_t rank, size;   /* in MPI_COMM_WORLD */
	uint32_t flags;        /* SPROF_MPI_* */
	uint32_t thread_level; /* provided by MPI_Init_thread (MPI_THREAD_SINGLE = 0 ...) */
	uint64_t init_ns, fin_ns; /* end of MPI_Init, start of MPI_Finalize */
	uint64_t calls;        /* wrapped MPI calls */
	uint64_t pb_calls;     /* of which carried or received a piggyback, or ran a delay collective */
	double o_call_ns, o_pb_ns; /* calibrated cost of a wrapper, and what piggybacking adds */
	int64_t o_init_ns, o_fin_ns; /* accumulated measurement overhead at init_ns and fin_ns */
	int64_t x_init_ns, x_fin_ns; /* delay at init_ns and fin_ns */
	uint64_t extra_ns;     /* time in the delay collectives (part of the overhead) */
	uint64_t waits;        /* receives and collectives that applied the rule */
	uint64_t wait_ns;      /* their measured time */
	int64_t wait_c_ns;     /* their approximated time */
	uint64_t wildcard;     /* receives completed with MPI_ANY_SOURCE */
	uint64_t reorders;     /* of which were received out of their approximated send order */
};

/* The encoders (the MPI runtime's writer; the unit tests build files with them). */
static inline void sprof_put_mpi_call(struct sprof_buf *b, const struct sprof_mpi_call *c)
{
	sprof_put_u32(b, c->routine);
	sprof_put_u32(b, 0);
	sprof_put_u64(b, c->calls);
	sprof_put_u64(b, c->ns);
	sprof_put_u64(b, c->max_ns);
	sprof_put_u64(b, c->bytes_sent);
	sprof_put_u64(b, c->bytes_recv);
	sprof_put_u64(b, (uint64_t)c->comp_ns);
}

static inline void sprof_put_mpi_peer(struct sprof_buf *b, const struct sprof_mpi_peer *p)
{
	sprof_put_u32(b, p->comm);
	sprof_put_u32(b, p->dir);
	sprof_put_u32(b, (uint32_t)p->peer);
	sprof_put_u32(b, (uint32_t)p->tag);
	sprof_put_u32(b, p->flags);
	sprof_put_u32(b, 0);
	sprof_put_u64(b, p->messages);
	sprof_put_u64(b, p->bytes);
}

static inline void sprof_put_mpi_comp(struct sprof_buf *b, const struct sprof_mpi_comp *c)
{
	sprof_put_u32(b, c->rank);
	sprof_put_u32(b, c->size);
	sprof_put_u32(b, c->flags);
	sprof_put_u32(b, c->thread_level);
	sprof_put_u64(b, c->init_ns);
	sprof_put_u64(b, c->fin_ns);
	sprof_put_u64(b, c->calls);
	sprof_put_u64(b, c->pb_calls);
	sprof_put_f64(b, c->o_call_ns);
	sprof_put_f64(b, c->o_pb_ns);
	sprof_put_u64(b, (uint64_t)c->o_init_ns);
	sprof_put_u64(b, (uint64_t)c->o_fin_ns);
	sprof_put_u64(b, (uint64_t)c->x_init_ns);
	sprof_put_u64(b, (uint64_t)c->x_fin_ns);
	sprof_put_u64(b, c->extra_ns);
	sprof_put_u64(b, c->waits);
	sprof_put_u64(b, c->wait_ns);
	sprof_put_u64(b, (uint64_t)c->wait_c_ns);
	sprof_put_u64(b, c->wildcard);
	sprof_put_u64(b, c->reorders);
}

#endif
