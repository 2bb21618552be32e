/*
 * Threads: 4 pthreads each call work() exactly 1000 times; main calls it never. The profile has
 * 5 threads (main + 4), each worker's tree is worker -> work (1000 calls), and the merged
 * call-path has one node worker (4 calls) with one child work (4000 calls). An argument makes
 * each work() call also spin that many empty iterations (the same output): a work that holds a
 * visible share of the run, whatever the machine's speed and load.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4
#define CALLS 1000

static unsigned long spins;

unsigned long work(unsigned long x);
void *worker(void *arg);

unsigned long work(unsigned long x)
{
	unsigned long i;

	for (i = 0; i < spins; i++)
		__asm__ volatile("");
	return (x * 2654435761u) % 1000u;
}

void *worker(void *arg)
{
	unsigned long *sum = arg;
	unsigned long i;

	for (i = 0; i < CALLS; i++)
		*sum += work(i);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[NTHREADS];
	unsigned long sums[NTHREADS] = { 0 };
	int i;

	spins = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
	for (i = 0; i < NTHREADS; i++)
		if (pthread_create(&th[i], NULL, worker, &sums[i]) != 0)
			return 1;
	for (i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < NTHREADS; i++)
		printf("thread %d: %lu\n", i, sums[i]);
	return 0;
}
