/*
 * A page-fault-heavy phase among computing ones (sonde run --os). Phases of the main thread:
 *   "compute1": about 300 ms of arithmetic, touching no new memory;
 *   "touch":    ROUNDS times: map 16 MiB, write one byte per 4 KiB page (4096 first-touch
 *               faults), unmap — ROUNDS * 4096 minor faults at least; and a worker thread,
 *               started and joined here, that touches 2048 pages of its own;
 *   "compute2": about 300 ms of arithmetic.
 * Prints a checksum of the arithmetic, the same with and without sonde.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>

#include "sonde.h"

#define ROUNDS 24
#define PAGE 4096
#define MAP (16u << 20)
#define WORKER_PAGES 2048

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned long compute(unsigned long s, double seconds)
{
	double end = now_s() + seconds;
	int i;

	while (now_s() < end)
		for (i = 0; i < 100000; i++)
			s = s * 6364136223846793005ul + 1442695040888963407ul;
	return s;
}

static void touch(size_t bytes)
{
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t i;

	if (p == MAP_FAILED)
		return;
	for (i = 0; i < bytes; i += PAGE)
		p[i] = 1;
	munmap(p, bytes);
}

static void *worker(void *arg)
{
	(void)arg;
	touch((size_t)WORKER_PAGES * PAGE);
	return NULL;
}

int main(void)
{
	unsigned long s = 1;
	pthread_t th;
	int r;

	SONDE_PHASE("compute1");
	s = compute(s, 0.3);
	SONDE_PHASE("touch");
	for (r = 0; r < ROUNDS; r++)
		touch(MAP);
	pthread_create(&th, NULL, worker, NULL);
	pthread_join(th, NULL);
	SONDE_PHASE("compute2");
	s = compute(s, 0.3);
	SONDE_PHASE(NULL);
	printf("done %d\n", (int)(s & 1) | 1);
	return 0;
}
