#!/bin/sh
# SPDX-License-Identifier: MIT
# MPI (docs/benchmarks.md, "MPI"; docs/mpi.md): the latency a message gains under libsonde-mpi.so
# without and with piggybacking (bench/mpi_pingpong.c: two ranks bouncing, and one rank sending
# to itself; the wrapped calls, the library alone and the piggyback's struct type take turns in
# one run), and seed 001's Table 1: the master/worker Monte Carlo pi of bench/mpi_pi.c on 4
# ranks, uninstrumented, instrumented without compensation, with local and with parallel
# compensation (and with --insitu; and with inside() excluded, whose gauge is an unmeasured
# pair's cost in situ). Figures, not pass/fail.
#   BUILD=build, BENCH_RUNS=7 (medians), BENCH_MPI_PI="6 2500000" (chunks, points per chunk),
#   BENCH_MPI_ROUNDS=1000 (ping-pong messages per batch; 200 batches of each of 4 kinds),
#   BENCH_MPI_PER_CALL=6 (Table 1: points per inside() call, fewer for denser probes; 6 since
#   2026-11-23: with this machine's 4-5 ns pairs in situ, 12 left local compensation 13 % off),
#   BENCH_MPI_PARTS=latency,table1 (either alone), BENCH_MPI_PIN=1,1 (Table 1: the master's CPU,
#   the workers' CPU, bench/mpi_pin.sh; none: unpinned), BENCH_MPI_T1_RUNS (Table 1's rounds,
#   default the larger of BENCH_RUNS and 15).
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_setup mpi.sh "$BUILD/lib/libsonde-mpi.so"
command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
	{ echo "mpi.sh: mpicc and mpirun are missing (Debian: libopenmpi-dev openmpi-bin)" >&2; exit 1; }
mpicc -O2 -o "$B/mpi_pingpong" bench/mpi_pingpong.c
# the same flags apart from the probes (sonde cc adds -finstrument-functions -g);
# mpi_pi.inline: inside() inlined, the code generation instrumenting loses (bench/mpi_pi.c)
per_call="-DPER_CALL=${BENCH_MPI_PER_CALL:-6}"
mpicc -O2 -g $per_call -o "$B/mpi_pi.base" bench/mpi_pi.c
mpicc -O2 -g -DINLINE_INSIDE $per_call -o "$B/mpi_pi.inline" bench/mpi_pi.c
"$SONDE" cc -- mpicc -O2 $per_call -o "$B/mpi_pi.inst" bench/mpi_pi.c
# OpenMPI as root, on shared memory only; 4 ranks on 2 CPUs: waiting ranks yield
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
exec python3 bench/mpi.py "$B" "$SONDE" "${BENCH_MPI_ROUNDS:-1000}" ${BENCH_MPI_PI:-6 2500000}
