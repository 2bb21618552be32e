#!/bin/sh
# SPDX-License-Identifier: MIT
# Starts one rank of bench/mpi.py's Table 1 on a CPU of its own kind (docs/benchmarks.md, "MPI"):
# rank 0, the master, on CPU $1; every worker on CPU $2 (one computes at a time, the others wait
# for their turn). bench/mpi.py's default puts all four on one CPU (1 1): the waiting ranks
# yield it to the computing one, and the other CPU takes the rest of the machine. Then runs the
# rest of the command line.
#   mpirun --bind-to none -np 4 bench/mpi_pin.sh MASTER_CPU WORKER_CPU PROGRAM ARGS...
set -eu
master=$1 workers=$2
shift 2
if [ "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" = 0 ]; then cpu=$master; else cpu=$workers; fi
exec taskset -c "$cpu" "$@"
