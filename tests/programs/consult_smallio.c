/* SPDX-License-Identifier: MIT */
/*
 * Too many small I/O operations, for the live search (sonde consult -- PROGRAM, io_bytes): for
 * about SECONDS (argv[1], default 2) of wall time, log_small writes 16 bytes at a time to
 * /dev/null, and compute does a little arithmetic between batches. The search should find
 * IOBottleneck -> TooManySmallIOOps (many calls, 16 bytes each) at log_small.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void __attribute__((noinline)) log_small(int fd, long n)
{
	static const char line[16] = "sixteen bytes..\n";
	long i;

	for (i = 0; i < n; i++)
		if (write(fd, line, sizeof(line)) != (ssize_t)sizeof(line))
			exit(2);
}

static void __attribute__((noinline)) compute(long n)
{
	double x = 1.0;
	long i;

	for (i = 0; i < n; i++)
		x = x * 1.0000001 + 1e-9;
	sink += x;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0, end = now_s() + seconds;
	long batches = 0;
	int fd = open("/dev/null", O_WRONLY);

	if (fd < 0)
		return 1;
	while (now_s() < end) {
		log_small(fd, 2000);
		compute(20000);
		batches++;
	}
	close(fd);
	printf("consult_smallio: %d\n", batches > 0);
	return 0;
}
