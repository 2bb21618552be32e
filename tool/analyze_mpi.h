/* SPDX-License-Identifier: MIT */
/* sonde analyze on an MPI run's traces together (analyze_mpi.c, docs/analysis.md). */
#ifndef SONDE_ANALYZE_MPI_H
#define SONDE_ANALYZE_MPI_H

#include <stdint.h>

/*
 * Analyze the traces among paths[0..n) that are of MPI ranks (a DEF_COMM of MPI_COMM_WORLD)
 * together, setting done[i] for each; α from the first rank's calibration or alpha_ns (> 0).
 * Returns the exit status, or -1 when none is of an MPI rank (nothing printed).
 */
int analyze_mpi(char **paths, uint32_t n, double alpha_ns, char *done);

#endif
