/*
 * Joins in the order that tests the compensation of a late join (runtime/sync_comp.c,
 * tests/integration/t_sync.py): main starts a long thread (200,000 instrumented calls) and a
 * short one (10 calls), joins the long one first, then the short one, which ended long before.
 * The first join gives main the long thread's delay; the second must not pull it down to the
 * short thread's (a thread that ended before the join began was not waited for). Says on stderr
 * which pthread_t is which (the test finds each join's wait in its thread object).
 */
#include <pthread.h>
#include <stdio.h>

__attribute__((noinline)) static unsigned long tick(unsigned long sum, unsigned long i)
{
	return sum + i;
}

/* Each thread sums for itself (a shared sum would be a race). */
static void *run(void *arg)
{
	unsigned long n = (unsigned long)arg, i, sum = 0;

	for (i = 0; i < n; i++)
		sum = tick(sum, i);
	return (void *)sum;
}

int main(void)
{
	pthread_t slow, quick;
	void *a, *b;

	pthread_create(&slow, NULL, run, (void *)200000L);
	pthread_create(&quick, NULL, run, (void *)10L);
	pthread_join(slow, &a);
	pthread_join(quick, &b);
	printf("sums %lu %lu\n", (unsigned long)a, (unsigned long)b);
	fprintf(stderr, "slow %#lx quick %#lx\n", (unsigned long)slow, (unsigned long)quick);
	return 0;
}
