/* SPDX-License-Identifier: MIT */
/*
 * Linked into the benchmark's own builds of the planted programs (bench/consult.py): the
 * program's lifetime from its constructors to its destructors, written to the file that
 * BENCH_LIFETIME names ("t0 t1", CLOCK_MONOTONIC seconds). Beside the wall time of the whole
 * command it separates the program's own run from what a tool adds before main (a launch, the
 * runtime's start) and after exit (a last sample, the report). The program is not changed.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static struct timespec lifetime_t0;

static double secs(const struct timespec *t)
{
	return (double)t->tv_sec + (double)t->tv_nsec / 1e9;
}

__attribute__((constructor, no_instrument_function)) static void lifetime_begin(void)
{
	clock_gettime(CLOCK_MONOTONIC, &lifetime_t0);
}

__attribute__((destructor, no_instrument_function)) static void lifetime_end(void)
{
	const char *path = getenv("BENCH_LIFETIME");
	struct timespec t1;
	char buf[96];
	int fd, k;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!path || (fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return;
	k = snprintf(buf, sizeof(buf), "%.9f %.9f\n", secs(&lifetime_t0), secs(&t1));
	if (k > 0 && write(fd, buf, (size_t)k) != k)
		k = 0;
	close(fd);
}
