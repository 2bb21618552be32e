#!/bin/sh
# SPDX-License-Identifier: MIT
# MPI events in traces (docs/benchmarks.md, "MPI events in traces"): ns per MPI_SEND, MPI_RECV
# and MPI_COLL record written by libsonde's API (bench/mpi_trace_cost.c under sonde run --trace),
# against an empty call; bytes per event from the trace. Figures, not pass/fail.
#   BUILD=build, BENCH_MPI_CALLS=200000 (calls per round; 9 rounds, medians),
#   BENCH_CPU (taskset pinning, default the last CPU; none: no pinning).
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${BENCH_MPI_CALLS:-200000}
bench_setup mpi_trace_cost.sh
"$SONDE" cc -- $CC -O2 -o "$B/mpi_trace_cost" bench/mpi_trace_cost.c
CPU=${BENCH_CPU:-$(($(nproc) - 1))}
PIN=""
[ "$CPU" = none ] || PIN="taskset -c $CPU"
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
$PIN "$SONDE" run --trace -o "$D/run" -- "$B/mpi_trace_cost" "$N" | tee "$D/out"
T=$(ls "$D"/run/trace.*.strc)
"$SONDE" trace dump "$T" > "$D/dump"
SENDS=$(grep -c ' MPI_SEND ' "$D/dump" || true)
RECVS=$(grep -c ' MPI_RECV ' "$D/dump" || true)
COLLS=$(grep -c ' MPI_COLL ' "$D/dump" || true)
echo "events in the trace: $SENDS MPI_SEND, $RECVS MPI_RECV, $COLLS MPI_COLL (9 rounds of $N each)"
echo "bytes per event: MPI_SEND 24, MPI_RECV 32, MPI_COLL 40 (docs/format-trace.md); trace $(stat -c %s "$T") bytes"
