#!/bin/sh
# SPDX-License-Identifier: MIT
# Probe overhead per call of sonde against an ideal probe, gprof and uftrace, on
# bench/callheavy.c (docs/benchmarks.md). Figures, not pass/fail. Needs `make all` first.
#   BENCH_RUNS=7 rounds, BENCH_CPU=<n>|none pinning (default: the last CPU), BENCH_N=4000000.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_setup overhead.sh
$CC -O2 -o "$B/callheavy.base" bench/callheavy.c
"$SONDE" cc -- $CC -O2 -o "$B/callheavy.inst" bench/callheavy.c
$CC -O2 -pg -o "$B/callheavy.pg" bench/callheavy.c
$CC -O2 -fPIC -shared -fvisibility=hidden -o "$B/ideal_probe.so" bench/ideal_probe.c
exec python3 bench/overhead.py "$B" "$SONDE" "${BENCH_N:-4000000}"
