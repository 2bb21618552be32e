#!/bin/sh
# SPDX-License-Identifier: MIT
# Cost of event tracing (`sonde run --trace`) per event on bench/callheavy.c, side by side with
# the uninstrumented build, an ideal probe and `uftrace record`; bytes per event, write
# bandwidth, analysis throughput (docs/benchmarks.md, "Traces"). Figures, not pass/fail.
# Needs `make all` (or `make BUILD=dir all`) first.
#   BUILD=build (build directory), BENCH_RUNS=7 rounds, BENCH_CPU=<n>|none pinning (default:
#   the last CPU), BENCH_TRACE_N=2000000 (callheavy's outer loop: 26 M calls, 52 M events).
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_setup trace_cost.sh
$CC -O2 -o "$B/callheavy.base" bench/callheavy.c
"$SONDE" cc -- $CC -O2 -o "$B/callheavy.inst" bench/callheavy.c
$CC -O2 -fPIC -shared -fvisibility=hidden -o "$B/ideal_probe.so" bench/ideal_probe.c
$CC -O2 -Wall -o "$B/strc_count" bench/strc_count.c
export BUILD
exec python3 bench/trace_cost.py "$B" "$SONDE" "${BENCH_TRACE_N:-2000000}"
