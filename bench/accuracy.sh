#!/bin/sh
# SPDX-License-Identifier: MIT
# Accuracy of the compensated profile (T_a, per-function excl_c) on bench/known.c against an
# uninstrumented truth (docs/benchmarks.md). Figures, not pass/fail. Needs `make all` first.
#   BENCH_RUNS=7 rounds, BENCH_CPU=<n>|none pinning (default: the last CPU), BENCH_R=100000.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_setup accuracy.sh
$CC -O2 -o "$B/known.base" bench/known.c
"$SONDE" cc -- $CC -O2 -o "$B/known.inst" bench/known.c
exec python3 bench/accuracy.py "$B" "$SONDE" "${BENCH_R:-100000}"
