#!/bin/sh
# SPDX-License-Identifier: MIT
# `sonde watch` at a sync object and at a file (docs/benchmarks.md, "Dynamic sync objects and
# files"): ns added per uncontended lock/unlock pair of the focused mutex and of another one,
# and per pwrite to the focused file and to another, with sync_ops at /SyncObject/mutex/hot_lock,
# lock_hold there, io_ops and io_bytes at /Files/... — against the program alone (bench/
# dyn_objects.c times inside the program, fastest of 7 batches). Figures, not pass/fail.
#   BUILD=build, BENCH_RUNS=7 rounds (medians), BENCH_CPU (pinning), BENCH_OBJ_N=200000 pairs.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_setup dyn_objects.sh
$CC -O2 -g -o "$B/dyn_objects" bench/dyn_objects.c -lpthread
exec python3 bench/dyn_objects.py "$B" "$SONDE" "${BENCH_OBJ_N:-200000}"
