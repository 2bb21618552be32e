/* SPDX-License-Identifier: MIT */
/* The ranks of an MPI program for the live search (cmd_consult_mpi.c). */
#ifndef SONDE_CONSULT_MPI_CMD_H
#define SONDE_CONSULT_MPI_CMD_H

#include <stdint.h>
#include <sys/types.h>

struct consult_rank {
	pid_t pid;
	int32_t rank; /* in MPI_COMM_WORLD */
};

/* Whether a program name (or a process's command name) is an MPI launcher: mpirun, mpiexec... */
int consult_mpi_launcher(const char *name);
int consult_mpi_pid_is_launcher(pid_t pid);
/* A rank of an MPI program (its environment names its world rank, an MPI library mapped): 0
 * with its rank, else -1. */
int consult_mpi_rank(pid_t pid, int32_t *rank);
/* Start the launcher as a plain child (its ranks are attached, not started held): its pid, or
 * -1 after an error. */
pid_t consult_mpi_start(char *const argv[]);
/* Wait for the ranks of the launcher root (child: root is our child) to appear with their
 * libraries mapped, every rank with an MPI library: 0 with *out (by rank; the caller frees),
 * or -1 after a one-line error. */
int consult_mpi_find(pid_t root, int child, struct consult_rank **out, uint32_t *nout);

#endif
