#!/bin/sh
# SPDX-License-Identifier: MIT
# Accuracy of the perturbation analysis of traces (`sonde analyze`: T_a against the
# uninstrumented run) on the Livermore-style kernels of bench/kernels/, traced at function
# level and with dense manual events (docs/benchmarks.md, "Traces"). Figures, not pass/fail.
# Needs `make all` (or `make BUILD=dir all`) first.
#   BUILD=build (build directory), BENCH_TRACE_RUNS=5 rounds, BENCH_CPU=<n>|none pinning
#   (default: the last CPU), BENCH_KERNELS="hydro iccg ..." (a subset; default all).
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_setup trace_accuracy.sh
B=$BUILD/bench/kernels
mkdir -p "$B"
KERNELS=${BENCH_KERNELS:-$(cd bench/kernels && ls *.c | sed 's/\.c$//' | tr '\n' ' ')}
for k in $KERNELS; do
	$CC -O2 -g -falign-loops=64 -Iinclude -o "$B/$k.base" "bench/kernels/$k.c"
	"$SONDE" cc -- $CC -O2 -falign-loops=64 -o "$B/$k.func" "bench/kernels/$k.c"
	$CC -O2 -g -falign-loops=64 -Iinclude -DDENSE -o "$B/$k.dense" "bench/kernels/$k.c"
done
$CC -O2 -Wall -o "$BUILD/bench/strc_count" bench/strc_count.c
export BUILD
exec python3 bench/trace_accuracy.py "$B" "$SONDE" "$BUILD/bench/strc_count" $KERNELS
