#!/bin/sh
# SPDX-License-Identifier: MIT
# Cost of `sonde run --io` per I/O call (a one-byte write to /dev/null, a one-byte read from
# /dev/zero) and of `sonde run --os` interval sampling, side by side with the uninstrumented
# program (docs/benchmarks.md, "I/O and OS counters"). Figures, not pass/fail.
# Needs `make all` first.
#   BUILD=build, BENCH_RUNS=7 rounds, BENCH_CPU=<n>|none pinning (default: the last CPU),
#   BENCH_IO_N=1000000 (calls of each kind), BENCH_OS_N=300000000 (rounds of arithmetic).
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_setup io_cost.sh
$CC -O2 -o "$B/io_cost.base" bench/io_cost.c
"$SONDE" cc -- $CC -O2 -o "$B/io_cost.inst" bench/io_cost.c
exec python3 bench/io_cost.py "$B" "$SONDE" "${BENCH_IO_N:-1000000}" "${BENCH_OS_N:-300000000}"
