/* SPDX-License-Identifier: MIT */
/*
 * A program whose instrumentation is its bottleneck, for `sonde consult` (docs/consult.md):
 * `step` does almost nothing and is called hundreds of thousands of times from `churn`, so the
 * probes recording its calls cost more than its work (seed 003 §4.3, LocusRoute). The
 * consultant should find InstrumentationOverhead at /Code/consult_probes.c/step.
 *   sonde cc -- gcc -O1 -g -o consult_probes examples/consult_probes.c
 *   sonde run --trace -o run -- ./consult_probes && sonde consult run
 * An argument scales the number of calls (default 1.0).
 */
#include <stdio.h>
#include <stdlib.h>

static volatile long sink;

__attribute__((noinline)) static long step(long i)
{
	return i & 3;
}

static void churn(long n)
{
	long i;

	for (i = 0; i < n; i++)
		sink += step(i);
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;

	churn((long)(1500000 * (scale > 0 ? scale : 1.0)));
	printf("consult_probes: %ld\n", sink > 0 ? 1L : 0L);
	return 0;
}
