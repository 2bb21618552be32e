/*
 * A target for `sonde watch` on shared-library functions and call sites: THREADS worker threads
 * (argv[1], default 4) wait for lines on stdin; for each line every worker calls caller(K)
 * once (argv[2], default 1000), which makes exactly 2K calls: K to wlib_step() in
 * libwatch_lib.so (through the PLT) and K to helper() here; then locker() locks and unlocks
 * its mutex LOCKS times (argv[3], default 10) with pthread_mutex_lock. The main thread waits
 * for all of them and acknowledges the line with "done N" on stderr. Per line: wlib_step and helper calls
 * THREADS × K, calls made by caller THREADS × 2K, pthread_mutex_lock calls THREADS × LOCKS.
 * At stdin EOF it prints each thread's checksum: the output depends only on the input.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_THREADS 16

uint64_t wlib_step(uint64_t x, uint64_t i);

static pthread_barrier_t go, done;
static pthread_mutex_t locks[MAX_THREADS];
static int nthreads, nlocks, quit;
static long per_line;
static uint64_t seed, sums[MAX_THREADS];

__attribute__((noinline, noclone)) uint64_t helper(uint64_t h)
{
	__asm__ volatile("" : "+r"(h));
	return h * 31 + 7;
}

__attribute__((noinline, noclone)) uint64_t caller(uint64_t x, long k)
{
	uint64_t h = x;
	long i;

	for (i = 0; i < k; i++) {
		h += wlib_step(h, (uint64_t)i);
		h ^= helper(h);
	}
	return h;
}

/* The thread's lock, taken and released LOCKS times. */
__attribute__((noinline, noclone)) uint64_t locker(int me, uint64_t s)
{
	int i;

	for (i = 0; i < nlocks; i++) {
		pthread_mutex_lock(&locks[me]);
		s += (uint64_t)i;
		pthread_mutex_unlock(&locks[me]);
	}
	return s;
}

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg;

	for (;;) {
		pthread_barrier_wait(&go);
		if (quit)
			return NULL;
		sums[me] = sums[me] * 31 + caller(seed + (uint64_t)me, per_line);
		sums[me] = locker(me, sums[me]);
		pthread_barrier_wait(&done);
	}
}

static uint64_t hash_line(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

int main(int argc, char **argv)
{
	pthread_t th[MAX_THREADS];
	char line[4096];
	long lines = 0;
	int i;

	nthreads = argc > 1 ? atoi(argv[1]) : 4;
	per_line = argc > 2 ? atol(argv[2]) : 1000;
	nlocks = argc > 3 ? atoi(argv[3]) : 10;
	if (nthreads < 1 || nthreads > MAX_THREADS || per_line < 0 || nlocks < 0)
		return 2;
	pthread_barrier_init(&go, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&done, NULL, (unsigned)nthreads + 1);
	for (i = 0; i < nthreads; i++) {
		pthread_mutex_init(&locks[i], NULL);
		if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) != 0)
			return 1;
	}
	fprintf(stderr, "ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		seed = hash_line(line);
		pthread_barrier_wait(&go);
		pthread_barrier_wait(&done);
		fprintf(stderr, "done %ld\n", ++lines);
	}
	quit = 1;
	pthread_barrier_wait(&go);
	for (i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		printf("thread %d: %016llx\n", i, (unsigned long long)sums[i]);
	}
	printf("lines %ld, wlib_step calls %ld\n", lines, lines * nthreads * per_line);
	return 0;
}
