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
