#!/bin/sh
# SPDX-License-Identifier: MIT
# Statistical sampling (docs/benchmarks.md, "Sampling"): the cost of sonde run --sample at 1 kHz
# against the program alone, perf record -e cpu-clock -F 1000 and gperftools' CPU profiler on
# bench/sampled.c; and the sampled profile against the measured one of the same run. Figures,
# not pass/fail. Needs `make all` first. gperftools (libgoogle-perftools-dev) is installed with
# apt-get when missing and possible; perf is used when present.
#   BENCH_RUNS=7 rounds, BENCH_CPU=<n>|none pinning (default: the last CPU),
#   BENCH_SAMPLE_R (rounds of bench/sampled.c's work, default 150: about 1 s of CPU).
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_setup sampling.sh
if ! dpkg-query -W -f='${Status}' libgoogle-perftools-dev 2>/dev/null | grep -q "ok installed"; then
	if [ "$(id -u)" -eq 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			libgoogle-perftools-dev >/dev/null 2>&1 ||
			echo "sampling.sh: libgoogle-perftools-dev could not be installed: gperftools skipped" >&2
	else
		echo "sampling.sh: libgoogle-perftools-dev is missing (apt-get install it as root): gperftools skipped" >&2
	fi
fi
$CC -O2 -g -fno-omit-frame-pointer -o "$B/sampled.base" bench/sampled.c
"$SONDE" cc -- $CC -O2 -g -fno-omit-frame-pointer -o "$B/sampled.inst" bench/sampled.c
exec python3 bench/sampling.py "$B" "$SONDE" "${BENCH_SAMPLE_R:-150}"
