#!/bin/sh
# SPDX-License-Identifier: MIT
# `sonde run --sync` (docs/benchmarks.md, "Synchronization"): the added cost of an uncontended
# mutex and spinlock lock/unlock pair (bench/sync_pair.c: alone, under sonde run without --sync,
# under sonde run --sync), and the shared-memory compensation's error: the parallel-compensated
# time of bench/sync_comp.c's programs against their uninstrumented run. Figures, not pass/fail.
#   BUILD=build, BENCH_RUNS=7 rounds (medians), BENCH_CPU=none: the threads must run in
#   parallel, so the compensation runs are never pinned; BENCH_SYNC_ROUNDS=5000,
#   BENCH_SYNC_WORK=200 (sync_comp.c's arguments: 40-110 ms programs on an idle machine, long
#   enough that scheduling noise is a small part of them and that the run's probe costs come
#   from its in-run calibration batches). BENCH_SYNC_PIN=none,apart: the placements of the
#   workers compared (none: the scheduler's; apart: one CPU each; together: one CPU for both);
#   BENCH_SYNC_COMPARE=LIBSONDE: the in-situ sync runs again, side by side, with that runtime;
#   BENCH_SYNC_RULES=woken,collide: the runtime's mutex wait rules (SONDE_SYNC_RULE) whose sync
#   runs take turns in the same rounds, the first one's the main tables, then the rules side by
#   side (paired verdicts, per-round differences, the collision calibration and cases);
#   BENCH_SYNC_DEFAULTS=0: no runs at sonde's defaults (--sync alone: in situ, the throttle on)
#   beside the --throttle off ones; BENCH_SYNC_PAIR=0: no lock/unlock pair costs;
#   BENCH_SYNC_RUNS: rounds of the compensation
#   programs (default BENCH_RUNS, at least 21), each round one run of every variant in turn:
#   the paired errors (sync against the plain run of the same round) give the median, the
#   interquartile range, the median's 95 % interval and one verdict line per program against
#   the 5 % target, beside the same for the hooks run (the machine's noise).
#   bench/sync_wake.c: what a futex wake-up costs. BENCH_SYNC_SENSITIVITY=0: no runs of
#   sync_comp.disturb (the plain program with two clock reads every 1024 steps: how its elapsed
#   time answers a small disturbance that is not sonde's); BENCH_SYNC_COMP=0: no compensation
#   runs.
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_setup sync.sh
"$SONDE" cc -- $CC -O2 -o "$B/sync_pair" bench/sync_pair.c -lpthread
$CC -O2 -o "$B/sync_comp.base" bench/sync_comp.c -lpthread
$CC -O2 -DSYNC_COMP_DISTURB=1024 -o "$B/sync_comp.disturb" bench/sync_comp.c -lpthread
$CC -O2 -o "$B/sync_wake" bench/sync_wake.c -lpthread
"$SONDE" cc -- $CC -O2 -o "$B/sync_comp.inst" bench/sync_comp.c -lpthread
exec python3 bench/sync.py "$B" "$SONDE" "${BENCH_SYNC_ROUNDS:-5000}" "${BENCH_SYNC_WORK:-200}"
