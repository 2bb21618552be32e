/* SPDX-License-Identifier: MIT */
/*
 * Matching the MPI events of a run's traces (one trace per rank; docs/format-trace.md, "MPI
 * events"): each trace's world rank from its MPI_COMM_WORLD definition, communicators known
 * across processes by their members and the order of their definitions, and every receive paired
 * with its send by MPI's non-overtaking rule: the n-th message from world rank s to world rank r
 * on a communicator with tag t is the n-th one r received from s there with tag t (wildcard
 * receives record the actual source and tag, so they pair exactly too). The k-th collective on a
 * communicator is the same operation in every member.
 */
#ifndef SONDE_MPI_MATCH_H
#define SONDE_MPI_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include "trace_read.h"

#define MM_NONE UINT32_MAX

/* An event of one of the traces: trace, thread (index in its threads array), event index. */
struct mm_ref {
	uint32_t proc, thr;
	size_t ev;
};

struct mm_msg {
	struct mm_ref send, recv;
	uint64_t bytes; /* the receive's */
	uint32_t comm;  /* index in mm_run.comms */
	int32_t tag;
};

/* A collective: the same operation in every member of its communicator. */
struct mm_coll {
	uint32_t comm, op;
	uint64_t seq;   /* its number among the collectives of its communicator, from 0 */
	size_t first;   /* its members' events: mm_run.coll_ev[first .. first + n) */
	uint32_t n;
};

/* A communicator of the run: the same in every member process. */
struct mm_comm {
	uint32_t size, ordinal; /* ordinal: among communicators of the same members (dups) */
	int world;              /* MPI_COMM_WORLD */
	const int32_t *members; /* world ranks (borrowed from a trace), NULL for the world */
};

struct mm_run {
	const struct strc_file *const *f;
	uint32_t nf;
	int32_t *rank;            /* per trace: its world rank, -1 (no MPI_COMM_WORLD definition) */
	uint32_t *comm_of;        /* per trace, by DEF_COMM index: index in comms, MM_NONE */
	uint32_t *comm_base;      /* per trace: its first entry in comm_of */
	struct mm_comm *comms;
	uint32_t ncomms;
	struct mm_msg *msgs;      /* sorted by the send (proc, thr, ev) */
	size_t nmsgs;
	size_t *by_recv;          /* indices in msgs sorted by the receive */
	uint64_t sends, recvs;    /* message events seen */
	uint64_t unmatched_sends, unmatched_recvs; /* no partner in the run (or a comm not known) */
	struct mm_coll *colls;
	size_t ncolls;
	struct mm_ref *coll_ev;
	uint64_t coll_events, coll_incomplete; /* collective events; collectives missing members */
	uint32_t nranks;          /* traces with a world rank */
};

/* Match the MPI events of n traces. 0, or -1 with a reason in err (two traces of one rank,
 * ranks of different world sizes). */
int mm_match(struct mm_run *run, const struct strc_file *const *f, uint32_t n, char *err,
	     size_t errlen);
void mm_free(struct mm_run *run);
/* The run's communicator of an MPI event of trace p, or MM_NONE. */
uint32_t mm_comm_index(const struct mm_run *run, uint32_t p, uint32_t comm_id);
/* The world rank of rank `rank` of communicator c, -1 when not known. */
int32_t mm_world_of(const struct mm_run *run, uint32_t c, int32_t rank);
/* The message whose send (or receive) is event ev of thread thr of trace proc, or SIZE_MAX. */
size_t mm_msg_of(const struct mm_run *run, int recv, uint32_t proc, uint32_t thr, size_t ev);
/* Whether any of the traces holds an MPI definition. */
int mm_any(const struct strc_file *const *f, uint32_t n);

#endif
