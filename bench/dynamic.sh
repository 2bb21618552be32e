#!/bin/sh
# SPDX-License-Identifier: MIT
# Dynamic instrumentation (docs/benchmarks.md, "Dynamic instrumentation"): the cost of each
# primitive and of the trampoline on a patched function of a running process, insertion and
# removal latency (one function, 1000), attach time and pause, callheavy under
# `sonde run --dynamic` against compiled-in instrumentation, and the loop after detach.
# Figures, not pass/fail; about 80 s. Needs `make all` (or `make BUILD=dir all`) first:
# bench/dyn_driver links the tool's objects from $BUILD/tool.
#   BUILD=build (build directory), BENCH_RUNS=7 rounds, BENCH_CPU=<n>|none pinning (default:
#   the last CPU), BENCH_DYN_N=2000000 (callheavy's outer loop under sonde run), BENCH_DYN_CALLS
#   (calls per timing of a primitive, default 1000000), BENCH_DYN_INSERT=10 (insertions timed),
#   BENCH_DYN_PARTS=1,2,3,4,5 (which parts), BENCH_SOURCE (what the "source:" line says).
set -eu
cd "$(dirname "$0")/.."
. bench/lib.sh
T=$BUILD/tool
bench_setup dynamic.sh "$T/tool/dyn/install.o"
$CC -O2 -o "$B/callheavy.base" bench/callheavy.c
"$SONDE" cc -- $CC -O2 -o "$B/callheavy.inst" bench/callheavy.c
# the processes that are patched while they run: plain gcc -O2, no instrumentation
$CC -O2 -Ibench -o "$B/dyn_target" bench/dyn_target.c
# 1000 small functions, all called in a loop forever
awk 'BEGIN {
	print "#include <stdio.h>\n#include <sys/prctl.h>\n#define F __attribute__((noipa))";
	for (i = 0; i < 1000; i++)
		printf "F long f%04d(long x) { x = x * %d + %d; x ^= x >> %d; return x; }\n", \
			i, 2 * i + 3, i, i % 13 + 1;
	print "static long (*const tab[])(long) = {";
	for (i = 0; i < 1000; i++)
		printf "f%04d,%s", i, i % 10 == 9 ? "\n" : " ";
	print "};\nint main(void)\n{\n\tlong s = 0;\n\tunsigned i;\n";
	print "\tprctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);";
	print "\tputs(\"ready\");\n\tfflush(stdout);\n\tfor (;;)";
	print "\t\tfor (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)\n\t\t\ts = tab[i](s + i);\n}";
}' > "$B/dyn_many.c"
$CC -O2 -o "$B/dyn_many" "$B/dyn_many.c"
# the driver: the tool's process control, patcher and protocol client, as `sonde` links them
$CC -std=gnu11 -O2 -g -Wall -Wextra -D_GNU_SOURCE -Itool -Iformat -Itool/analysis \
	-o "$B/dyn_driver" bench/dyn_driver.c "$T"/tool/inject/*.o "$T/tool/dyn/client.o" \
	"$T/tool/dyn/install.o" "$T"/tool/patch/x86_64/*.o "$T/tool/symbols.o" \
	"$T/tool/elfinfo.o" "$T/tool/util.o" "$T/format/protocol.o" -ldw -lelf -lZydis -lm -ldl
export BUILD
exec python3 bench/dynamic.py "$B" "$SONDE" "$BUILD"
