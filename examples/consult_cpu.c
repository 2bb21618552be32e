/* SPDX-License-Identifier: MIT */
/*
 * A planted bottleneck for `sonde consult` (docs/consult.md): one CPU-hot procedure.
 * `hot_loop` does about 95 % of the work; `prepare` and `check` 2 % each, and `tiny` is
 * called 40 000 times. The consultant should find CPUBound at
 * /Code/consult_cpu.c/hot_loop over the whole run, and nothing else.
 *   sonde cc -- gcc -O1 -g -o consult_cpu examples/consult_cpu.c
 *   sonde run --trace -o run -- ./consult_cpu && sonde consult run
 * An argument scales the work (default 1.0): as many more rounds, each as long (a live search
 * sees a procedure's time from its next call on: rounds stay short).
 */
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

/* n rounds of a short dependent floating-point chain. Inlined, never instrumented: its time is
 * its caller's own time, in a trace and live (sonde consult -- PROGRAM) alike. */
static inline __attribute__((always_inline, no_instrument_function)) double spin(long n)
{
	double x = 1.0;
	long i;

	for (i = 0; i < n; i++)
		x = x * 1.0000001 + 1e-9;
	return x;
}

static double tiny(long i)
{
	return (double)(i & 7);
}

static void prepare(long n)
{
	long i;

	for (i = 0; i < 1000; i++)
		sink += tiny(i);
	sink += spin(n / 50);
}

static void hot_loop(long n)
{
	sink += spin(n);
}

static void check(long n)
{
	long i;

	for (i = 0; i < 1000; i++)
		sink += tiny(i);
	sink += spin(n / 50);
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	/* about 1.2 s on a 2.6 GHz EPYC: a search with the default observation times reaches
	 * hot_loop (three levels of 0.25 s) well before the end */
	long n = 750000000, rounds = (long)(20 * (scale > 0 ? scale : 1.0)), round;

	/* many short rounds: prepare and check never run long enough at a stretch to look hot
	 * in a short observation window, even when the machine is loaded */
	for (round = 0; round < rounds; round++) {
		prepare(n / 20);
		hot_loop(n / 20);
		check(n / 20);
	}
	printf("consult_cpu: %.3f\n", sink > 0 ? 1.0 : 0.0);
	return 0;
}
