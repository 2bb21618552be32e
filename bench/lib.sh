# SPDX-License-Identifier: MIT
# Sourced by bench/*.sh, from the top of the tree: where the build is, the compiler, and a check
# that sonde is built. BUILD=build (make's build directory), CC=gcc.
BUILD=${BUILD:-build}
B=$BUILD/bench
SONDE=$BUILD/bin/sonde
CC=${CC:-gcc}

# bench_setup NAME [FILE...]: sonde, libsonde.so and each FILE exist, else a one-line error;
# makes $B.
bench_setup() {
	bench_name=$1
	shift
	for f in "$SONDE" "$BUILD/lib/libsonde.so" "$@"; do
		[ -e "$f" ] || { echo "$bench_name: run 'make BUILD=$BUILD all' first" >&2; exit 1; }
	done
	mkdir -p "$B"
}
