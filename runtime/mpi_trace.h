/* SPDX-License-Identifier: MIT */
/*
 * MPI events of `sonde run --trace` (docs/format-trace.md, "MPI events"), written by libsonde.so
 * for the MPI wrapper library (libsonde-mpi.so), which calls these around the PMPI calls. Each
 * is a no-op returning at once when tracing is off; all are async-signal-safe, allocate
 * nothing, and leave errno as it was.
 *
 * Ranks are ranks in the communicator the program used; peer and tag are the actual ones (a
 * receive's status, never MPI_ANY_SOURCE or MPI_ANY_TAG); MPI_PROC_NULL partners record
 * nothing. `began` is the trace clock (rt_mpi_trace_clock) when the call that completed the
 * operation began: MPI_Recv, MPI_Sendrecv, the Wait or Test that completed a non-blocking
 * receive, the collective.
 */
#ifndef SONDE_RT_MPI_TRACE_H
#define SONDE_RT_MPI_TRACE_H

#include <stdint.h>

/* 1 when `--trace` is on (the wrappers may skip their bookkeeping otherwise). */
int rt_mpi_trace_on(void);
/* The trace clock, for `began`. */
uint64_t rt_mpi_trace_clock(void);

/*
 * Define a communicator when the program gets it (MPI_Init: MPI_COMM_WORLD, with world NULL;
 * MPI_Comm_split, _dup, _create...: every member calls it when the call returns): this
 * process's rank and the size, and world[i], the MPI_COMM_WORLD rank of member i (NULL for
 * MPI_COMM_WORLD itself). Returns the id the events name (0xfffff: not traced). The tool tells
 * communicators with the same members apart by the order of their definitions, so define them in
 * the order the program created them, from the thread that created them.
 */
uint32_t rt_mpi_trace_comm(int rank, int size, const int *world);

/* A message was sent (MPI_Send and its modes, MPI_Isend..., MPI_Sendrecv's send): recorded
 * when the call begins, before the message can leave. */
void rt_mpi_trace_send(int peer, int tag, uint32_t comm, uint64_t bytes);
/* A message was received (the call or the Wait/Test completing it returned): recorded then. */
void rt_mpi_trace_recv(int peer, int tag, uint32_t comm, uint64_t bytes, uint64_t began);
/* A collective operation (op: enum strc_coll_op of format/trace.h) returned; root -1 when it has
 * none; bytes this process sent and received. */
void rt_mpi_trace_coll(int op, uint32_t comm, int root, uint64_t sent, uint64_t recvd,
		       uint64_t began);

#endif
