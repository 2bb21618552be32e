/*
 * Joins in the order that tests the compensation of a late join (runtime/sync_comp.c,
 * tests/integration/t_sync.py): main starts a long thread (200,000 instrumented calls) and a
 * short one (10 calls), joins the long one first, then the short one, which ended long before.
 * The first join gives main the long thread's delay; the second must not pull it down to the
 * short thread's (a thread that ended before the join began was not waited for).
 */
#include <pthread.h>
#include <stdio.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void tick(unsigned long i)
{
	sink += i;
}

static void *run(void *arg)
{
	long n = (long)arg, i;

	for (i = 0; i < n; i++)
		tick((unsigned long)i);
	return NULL;
}

int main(void)
{
	pthread_t slow, quick;

	pthread_create(&slow, NULL, run, (void *)200000L);
	pthread_create(&quick, NULL, run, (void *)10L);
	pthread_join(slow, NULL);
	pthread_join(quick, NULL);
	printf("sink %lu\n", sink);
	return 0;
}
