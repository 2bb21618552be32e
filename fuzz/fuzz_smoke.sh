#!/bin/sh
# A short fuzz run of the trace reader for `make check`, reported in TAP like the cmocka tests.
# Usage: fuzz_smoke.sh FUZZER [SECONDS]   (FUZZER: build/fuzz/fuzz_trace, from fuzz/fuzz.mk)
# Starts from a copy of fuzz/corpus; a crashing input is kept next to FUZZER (crash-*).
bin=$1
secs=${2:-10}
corpus=$(dirname "$0")/corpus

echo "1..1"
if [ ! -x "$bin" ]; then
	echo "ok 1 - trace reader # skipped: clang with libFuzzer not installed"
	exit 0
fi
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
cp "$corpus"/* "$work"/ 2>/dev/null
if "$bin" -max_total_time="$secs" -max_len=16384 -timeout=10 -print_final_stats=1 \
	-artifact_prefix="$(dirname "$bin")/" "$work" >"$work/log" 2>&1; then
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
	echo "ok 1 - trace reader: ${runs:-?} inputs in $secs s, no crash, no leak"
else
	echo "not ok 1 - trace reader"
	grep -E 'ERROR|SUMMARY|Test unit written|runtime error' "$work/log" | head -n 5 |
		sed 's/^/# /'
	exit 1
fi
