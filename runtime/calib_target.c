/* SPDX-License-Identifier: MIT */
/*
 * Stand-ins for the program's functions during calibration, compiled (alone in the runtime)
 * with -finstrument-functions: an instrumented call costs what its probes cost *and* what
 * instrumenting the function adds to its own code (saved registers, a stack frame), so the
 * calibration measures calls of real instrumented functions, not bare calls of the probes.
 */
#include "rt.h"

void rt_calib_measured(void);
void rt_calib_excluded(void);
void rt_calib_plain(void) __attribute__((no_instrument_function));
double rt_calib_chain(double x);
double rt_calib_chain_plain(double x) __attribute__((no_instrument_function));

__attribute__((noinline)) void rt_calib_measured(void)
{
	__asm__ volatile("");
}

__attribute__((noinline)) void rt_calib_excluded(void)
{
	__asm__ volatile("");
}

/* The same empty function without probes: the baseline subtracted from the other two. */
__attribute__((noinline, no_instrument_function)) void rt_calib_plain(void)
{
	__asm__ volatile("");
}

/*
 * Latency-bound work, instrumented and not: RT_CALIB_CHAIN_STEPS dependent multiply-adds, each
 * call's result the next call's argument (calibrate.c), so that the probes' own instructions,
 * which do not depend on the chain, can run while it waits. Their difference is what a pair
 * still costs next to such work.
 */
__attribute__((noinline)) double rt_calib_chain(double x)
{
	int i;

	for (i = 0; i < RT_CALIB_CHAIN_STEPS; i++)
		x = x * 1.0000001 + 1e-9;
	return x;
}

__attribute__((noinline, no_instrument_function)) double rt_calib_chain_plain(double x)
{
	int i;

	for (i = 0; i < RT_CALIB_CHAIN_STEPS; i++)
		x = x * 1.0000001 + 1e-9;
	return x;
}
