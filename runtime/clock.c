/* SPDX-License-Identifier: MIT */
/*
 * The timestamp clock (docs/measurement.md §1): rdtsc when the TSC is constant and non-stop,
 * converted to ns against CLOCK_MONOTONIC; CLOCK_MONOTONIC (vDSO) otherwise. The conversion
 * factor is measured over a short spin at start and refined over the whole run at the end.
 */
#include "rt.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int rt_clock_tsc;
static double ticks_per_ns = 1.0;
static uint64_t mark_mono, mark_ticks;

uint64_t rt_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t rt_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Both flags must be present: constant rate and ticking through idle states. */
static int tsc_is_reliable(void)
{
	static char buf[16384];
	ssize_t n;
	int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return strstr(buf, " constant_tsc") && strstr(buf, " nonstop_tsc");
}

/* A (monotonic ns, ticks) pair read as close together as the machine allows. */
static void pair(uint64_t *mono, uint64_t *ticks)
{
	uint64_t best = UINT64_MAX;
	int i;

	for (i = 0; i < 7; i++) {
		uint64_t a = rt_mono_ns(), t = rt_now(), b = rt_mono_ns();

		if (b - a < best) {
			best = b - a;
			*mono = a + (b - a) / 2;
			*ticks = t;
		}
	}
}

void rt_clock_init(void)
{
	const char *force = getenv("SONDE_CLOCK");
	uint64_t m1, t1;

	rt_clock_tsc = tsc_is_reliable() && !(force && strcmp(force, "monotonic") == 0);
	if (!rt_clock_tsc)
		return;
	pair(&mark_mono, &mark_ticks);
	do
		pair(&m1, &t1);
	while (m1 - mark_mono < 5000000);
	ticks_per_ns = (double)(t1 - mark_ticks) / (double)(m1 - mark_mono);
}

/* At the end of a run, a long baseline gives a better ratio than the start-up spin. */
void rt_clock_mark_end(void)
{
	uint64_t m1, t1;

	if (!rt_clock_tsc)
		return;
	pair(&m1, &t1);
	if (m1 - mark_mono > 200000000)
		ticks_per_ns = (double)(t1 - mark_ticks) / (double)(m1 - mark_mono);
}

double rt_ticks_per_ns(void)
{
	return ticks_per_ns;
}

uint64_t rt_ticks_to_ns(uint64_t ticks)
{
	return (uint64_t)((double)ticks / ticks_per_ns);
}
