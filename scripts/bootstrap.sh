#!/bin/sh
# Install the Debian packages sonde needs to build, test and benchmark, if any is missing.
# Quiet and quick when everything is there already. Used by `make demo` and `make check`.
set -e
need="gcc g++ make pkg-config libelf-dev libdw-dev libcmocka-dev python3 binutils libotf2-trace-dev libzydis-dev libopenmpi-dev openmpi-bin"
# (libopenmpi-dev: mpi.h and libmpi for libsonde-mpi.so, the PMPI wrappers; openmpi-bin: mpicc
# and mpirun for the MPI tests and benchmark)
# peers for `make bench`, otf2-print for the OTF2 export's tests (optional: skipped when missing)
optional="uftrace otf2-tools clang libclang-rt-dev libgoogle-perftools-dev graphviz chromium"
# (clang and its libFuzzer runtime: `make fuzz` and the short fuzz run of `make check`;
# gperftools' CPU profiler: a peer of sonde run --sample in bench/sampling.sh;
# graphviz: `dot` draws the SVG of `sonde consult --dot`;
# chromium: the test that opens `sonde report --html`'s page in a headless browser)

missing=""
for p in $need $optional; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
		echo "sonde: these Debian packages are missing:$missing" >&2
		echo "sonde: install them as root: apt-get install$missing" >&2
		exit 1
	fi
fi
echo "sonde: installing Debian packages:$missing"
export DEBIAN_FRONTEND=noninteractive
${SUDO:-} apt-get update -qq
# required ones must install; optional ones may be unavailable
${SUDO:-} apt-get install -y -qq --no-install-recommends $(for p in $missing; do
	case " $need " in *" $p "*) echo "$p" ;; esac; done) >/dev/null
for p in $optional; do
	case "$missing" in *"$p"*) ${SUDO:-} apt-get install -y -qq --no-install-recommends "$p" >/dev/null ||
		echo "sonde: optional package $p is not available; the benchmarks and tests that use it will skip it" ;; esac
done
