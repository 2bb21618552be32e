/* SPDX-License-Identifier: MIT */
/*
 * The cost of `sonde run --io` per I/O call and of `--os` interval sampling (bench/io_cost.py).
 * Prints key=value pairs: the program's own timing of its loops (CLOCK_MONOTONIC).
 *   io_cost io N        N one-byte writes to /dev/null, then N one-byte reads from /dev/zero:
 *                       write_ns=, read_ns= (per call), calls=2N, checksum=
 *   io_cost paired N    N/1000 blocks of 1000 write() against 1000 syscall(SYS_write), the
 *                       same for read: write_wrap_ns=, read_wrap_ns= (medians of per-call
 *                       differences within the process)
 *   io_cost compute N   N rounds of arithmetic touching no memory: compute_ns= (the loop),
 *                       sampler_ns= (CPU time of sonde's "sonde-os" thread), calls=N, checksum=
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int io(long n)
{
	int out = open("/dev/null", O_WRONLY), in = open("/dev/zero", O_RDONLY);
	unsigned long sum = 0;
	double t0, t1, t2;
	char c = 1;
	long i;

	if (out < 0 || in < 0)
		return 1;
	t0 = now_ns();
	for (i = 0; i < n; i++)
		sum += (unsigned long)write(out, &c, 1);
	t1 = now_ns();
	for (i = 0; i < n; i++)
		sum += (unsigned long)read(in, &c, 1);
	t2 = now_ns();
	printf("write_ns=%.2f read_ns=%.2f calls=%ld checksum=%lu\n", (t1 - t0) / (double)n,
	       (t2 - t1) / (double)n, 2 * n, sum);
	return 0;
}

/* CPU time of the runtime's OS sampler thread ("sonde-os"), from its schedstat; 0 without. */
static unsigned long long sampler_cpu_ns(void)
{
	char path[300], buf[128];
	unsigned long long ns = 0;
	struct dirent *e;
	DIR *d = opendir("/proc/self/task");
	FILE *fp;

	while (d && (e = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if (!(fp = fopen(path, "r")))
			continue;
		buf[0] = 0;
		if (!fgets(buf, sizeof(buf), fp))
			buf[0] = 0;
		fclose(fp);
		if (strncmp(buf, "sonde-os", 8))
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
		if ((fp = fopen(path, "r"))) {
			if (fscanf(fp, "%llu", &ns) != 1)
				ns = 0;
			fclose(fp);
		}
	}
	if (d)
		closedir(d);
	return ns;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * The wrapper's cost inside one process, side by side: blocks of 1000 write() calls (through the
 * PLT: the wrapper when sonde is there) alternate with blocks of 1000 syscall(SYS_write) (no
 * wrapper); the median of the blocks' per-call differences. Noise of a loaded machine falls on
 * both alike. The same for read().
 */
#define PAIR_BLOCK 1000

static double paired_one(int fd, int is_read, long blocks)
{
	double *d = malloc((size_t)blocks * sizeof(*d)), t0, t1, t2, med;
	char c = 1;
	long b, i;

	if (!d)
		return 0;
	for (b = 0; b < blocks; b++) {
		t0 = now_ns();
		for (i = 0; i < PAIR_BLOCK; i++)
			if ((is_read ? read(fd, &c, 1) : write(fd, &c, 1)) != 1)
				abort();
		t1 = now_ns();
		for (i = 0; i < PAIR_BLOCK; i++)
			if (syscall(is_read ? SYS_read : SYS_write, fd, &c, 1) != 1)
				abort();
		t2 = now_ns();
		d[b] = ((t1 - t0) - (t2 - t1)) / PAIR_BLOCK;
	}
	qsort(d, (size_t)blocks, sizeof(*d), cmp_double);
	med = d[blocks / 2];
	free(d);
	return med;
}

static int paired(long n)
{
	int out = open("/dev/null", O_WRONLY), in = open("/dev/zero", O_RDONLY);
	long blocks = n / PAIR_BLOCK > 10 ? n / PAIR_BLOCK : 10;

	if (out < 0 || in < 0)
		return 1;
	printf("write_wrap_ns=%.2f read_wrap_ns=%.2f calls=%ld checksum=0\n",
	       paired_one(out, 0, blocks), paired_one(in, 1, blocks), 4 * blocks * PAIR_BLOCK);
	return 0;
}

static int compute(long n)
{
	unsigned long s = 1;
	double t0 = now_ns();
	long i;

	for (i = 0; i < n; i++)
		s = s * 6364136223846793005ul + 1442695040888963407ul;
	printf("compute_ns=%.0f sampler_ns=%llu calls=%ld checksum=%lu\n", now_ns() - t0,
	       sampler_cpu_ns(), n, s);
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 1000000;

	if (argc > 1 && !strcmp(argv[1], "io"))
		return io(n);
	if (argc > 1 && !strcmp(argv[1], "compute"))
		return compute(n);
	if (argc > 1 && !strcmp(argv[1], "paired"))
		return paired(n);
	fprintf(stderr, "usage: io_cost io|compute|paired N\n");
	return 2;
}
