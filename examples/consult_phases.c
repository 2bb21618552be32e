/* SPDX-License-Identifier: MIT */
/*
 * A planted bottleneck that changes mid-run, for `sonde consult` (docs/consult.md): in the
 * phase "assemble" the procedure `assemble` takes nearly all the time, in the phase "solve"
 * the procedure `solve`. Over the whole run each is about half; inside its phase each is the
 * bottleneck, and the other is not. Phases are marked with sonde.h (SONDE_PHASE).
 *   sonde cc -- gcc -O1 -g -o consult_phases examples/consult_phases.c
 *   sonde run --trace -o run -- ./consult_phases && sonde consult run
 * An argument scales the work (default 1.0): as many more calls, each as long (a live search
 * sees a procedure's time from its next call on: calls stay short).
 * The calls are many and short, as a real program's phase is: 2,000 of each procedure at 1.0,
 * about 0.3 ms each on the 2026 EPYC. Until 2026-11-22 it made 10 of each, 60 ms each: a
 * 2.4 KB trace at 2, which no search could receive 100x less than (docs/consult.md, "Every
 * byte received": the ratio to a trace depends on the program's call rate).
 */
#include <stdio.h>
#include <stdlib.h>

#include "sonde.h"

static volatile double sink;

/* calls of each procedure at scale 1.0; each spins 375,000,000 / CALLS rounds */
#define CALLS 2000L

/* n rounds of floating-point work; inlined, never instrumented: its time is its caller's (in a
 * trace and live alike). */
static inline __attribute__((always_inline, no_instrument_function)) double spin(long n)
{
	double x = 1.0;
	long i;

	for (i = 0; i < n; i++)
		x = x * 1.0000001 + 1e-9;
	return x;
}

static void assemble(long n)
{
	sink += spin(n);
}

static void solve(long n)
{
	sink += spin(n);
}

static void report(void)
{
	sink += spin(1000);
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	long n = 375000000 / CALLS, calls = (long)(CALLS * (scale > 0 ? scale : 1.0)), i;

	SONDE_PHASE("assemble");
	for (i = 0; i < calls; i++)
		assemble(n);
	SONDE_PHASE("solve");
	for (i = 0; i < calls; i++)
		solve(n);
	SONDE_PHASE(NULL);
	report();
	printf("consult_phases: %.3f\n", sink > 0 ? 1.0 : 0.0);
	return 0;
}
