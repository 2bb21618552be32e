# Benchmarks (docs/benchmarks.md): figures, not pass/fail; about 4.5 minutes in all.
# Each script prints a table and a last line of figures. Tuning: BENCH_RUNS=7 (rounds; figures
# are medians), BENCH_CPU=1|none (taskset pinning, default the last CPU), BENCH_N (outer loop of
# bench/callheavy.c, default 4000000), BENCH_R (rounds of bench/known.c, default 100000).
.PHONY: bench

# One recipe, so that the two never run at once under make -j.
bench: all
	./bench/overhead.sh
	./bench/accuracy.sh
