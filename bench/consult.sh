#!/bin/sh
# SPDX-License-Identifier: MIT
# The Performance Consultant post mortem (docs/consult.md, docs/benchmarks.md "Consultant"): for
# each planted program of examples/, the program time until the planted bottleneck was isolated,
# and the data the search used against the trace and full periodic sampling. Figures, not
# pass/fail; about 30 s idle. Needs `make all` first.
# Then the live searches (BENCH_LIVE_RUNS=3 of each; BENCH_LIVE=0 skips them), and the live
# search of an MPI program over 4 ranks (about 35 s a search; BENCH_LIVE_MPI=0 skips it).
#   BUILD=build (build directory), BENCH_RUNS=3 (recordings of each program; medians)
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
[ -x "$BUILD/bin/sonde" ] || { echo "bench/consult.sh: run make first" >&2; exit 1; }
exec python3 bench/consult.py "$BUILD"
