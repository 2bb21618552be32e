# Benchmarks (docs/benchmarks.md): figures, not pass/fail; about 4.5 minutes in all, and 3 to 5
# more for the two trace benchmarks.
# Each script prints a table and a last line of figures. Tuning: BENCH_RUNS=7 (rounds; figures
# are medians), BENCH_CPU=1|none (taskset pinning, default the last CPU), BENCH_N (outer loop of
# bench/callheavy.c, default 4000000), BENCH_R (rounds of bench/known.c, default 100000);
# traces: BENCH_TRACE_N (callheavy for trace_cost.sh, default 2000000), BENCH_TRACE_RUNS
# (rounds of trace_accuracy.sh, default 5), BENCH_KERNELS (a subset of bench/kernels/);
# dynamic instrumentation (about 1.5 more minutes): BENCH_DYN_N (callheavy under sonde run
# --dynamic, default 2000000), BENCH_DYN_CALLS (calls per timing of a primitive, 1000000),
# BENCH_DYN_INSERT (insertions timed, 10), BENCH_DYN_PARTS (e.g. 1,2; default all five).
.PHONY: bench bench-trace-cost bench-trace-accuracy bench-dynamic bench-sync bench-io bench-sampling bench-consult \
	bench-dyn-objects bench-mpi-trace bench-mpi

# One recipe, so that no two of them run at once under make -j.
bench: all $(DYN_BENCH)
	BUILD=$(BUILD) ./bench/overhead.sh
	BUILD=$(BUILD) ./bench/accuracy.sh
	BUILD=$(BUILD) ./bench/trace_cost.sh
	BUILD=$(BUILD) ./bench/trace_accuracy.sh
	BUILD=$(BUILD) ./bench/dynamic.sh
	BUILD=$(BUILD) ./bench/dyn_objects.sh
	BUILD=$(BUILD) ./bench/sync.sh
	BUILD=$(BUILD) ./bench/io_cost.sh
	BUILD=$(BUILD) ./bench/sampling.sh
	BUILD=$(BUILD) ./bench/consult.sh
	BUILD=$(BUILD) ./bench/mpi_trace_cost.sh
	BUILD=$(BUILD) ./bench/mpi.sh

# Traces (docs/benchmarks.md, "Traces"): ns and bytes per event, analysis throughput; the
# accuracy of `sonde analyze` on bench/kernels/.
bench-trace-cost: all
	BUILD=$(BUILD) ./bench/trace_cost.sh

bench-trace-accuracy: all
	BUILD=$(BUILD) ./bench/trace_accuracy.sh

# Dynamic instrumentation (docs/benchmarks.md, "Dynamic instrumentation"): primitives and the
# trampoline on a patched function, insertion, attach, sonde run --dynamic against compiled-in
# hooks, after detach; tests/unit/dyn_bench's figures beside them.
bench-dynamic: all $(DYN_BENCH)
	BUILD=$(BUILD) ./bench/dynamic.sh

# sonde watch at a sync object or a file (docs/benchmarks.md, "Dynamic sync objects and files"):
# ns added per lock/unlock pair and per write, of the focused object and of another one.
bench-dyn-objects: all
	BUILD=$(BUILD) ./bench/dyn_objects.sh

# Synchronization (docs/benchmarks.md, "Synchronization"): added ns per uncontended lock/unlock
# pair with --sync, and the shared-memory compensation's error against uninstrumented runs.
bench-sync: all
	BUILD=$(BUILD) ./bench/sync.sh

# I/O and OS counters (docs/benchmarks.md, "I/O and OS counters"): ns added per I/O call by
# sonde run --io (and by the wrappers without it), the cost of --os interval sampling.
bench-io: all
	BUILD=$(BUILD) ./bench/io_cost.sh

# Statistical sampling (docs/benchmarks.md, "Sampling"; about 1.5 minutes): sonde run --sample at
# 1 kHz against the program alone, perf record and gperftools; sampled against measured shares.
# BENCH_SAMPLE_R (work of bench/sampled.c, default 150: about 1 s of CPU per run).
bench-sampling: all
	BUILD=$(BUILD) ./bench/sampling.sh

# The Performance Consultant post mortem (docs/benchmarks.md, "Consultant"): time to isolate
# each planted bottleneck of examples/, data used against the trace and full sampling.
bench-consult: all
	BUILD=$(BUILD) ./bench/consult.sh

# MPI events in traces (docs/benchmarks.md, "MPI events in traces"): ns per MPI_SEND, MPI_RECV
# and MPI_COLL record through libsonde's API, bytes per event.
bench-mpi-trace: all
	BUILD=$(BUILD) ./bench/mpi_trace_cost.sh

# MPI (docs/benchmarks.md, "MPI"; about 1.5 minutes): ns added per message by libsonde-mpi.so
# without and with piggybacking; seed 001's Table 1 on bench/mpi_pi.c (4 ranks).
bench-mpi: all
	BUILD=$(BUILD) ./bench/mpi.sh
