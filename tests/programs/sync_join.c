/*
 * Joins in the order that tests the compensation of a late join (runtime/sync_comp.c,
 * tests/integration/t_sync.py): main starts a long thread (15 ms of uninstrumented work, then
 * 200,000 instrumented calls) and a short one (10 calls), joins the long one first, then the
 * short one, which ended long before. The first join gives main the long thread's delay; the
 * second must not pull it down to the short thread's (a thread that ended before the join began was not waited for). Says on stderr
 * which pthread_t is which (the test finds each join's wait in its thread object), and how long
 * before main's second join the short thread ended: on a loaded machine it may start late, and
 * then the rule rightly gives main a smaller delay (it would have waited for it unmeasured).
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

struct work {
	unsigned long n, spin_ns, sum, end_ns;
};

__attribute__((noinline)) static unsigned long tick(unsigned long sum, unsigned long i)
{
	return sum + i;
}

/* Not instrumented: the long thread's first 15 ms are work without probes. */
__attribute__((no_instrument_function)) static unsigned long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long)ts.tv_sec * 1000000000ul + (unsigned long)ts.tv_nsec;
}

/* Each thread sums for itself (a shared sum would be a race). */
static void *run(void *arg)
{
	struct work *w = arg;
	unsigned long i, sum = 0, until = now_ns() + w->spin_ns;

	while (now_ns() < until) /* uninstrumented work first: main's first join outlasts the */
		;                /* long thread's delay by far, so the short one has ended by then */
	for (i = 0; i < w->n; i++)
		sum = tick(sum, i);
	w->sum = sum;
	w->end_ns = now_ns();
	return NULL;
}

int main(void)
{
	pthread_t slow, quick;
	struct work a = { 200000, 15000000, 0, 0 }, b = { 10, 0, 0, 0 };
	unsigned long second;

	pthread_create(&slow, NULL, run, &a);
	pthread_create(&quick, NULL, run, &b);
	pthread_join(slow, NULL);
	second = now_ns();
	pthread_join(quick, NULL);
	printf("sums %lu %lu\n", a.sum, b.sum);
	fprintf(stderr, "slow %#lx quick %#lx\n", (unsigned long)slow, (unsigned long)quick);
	fprintf(stderr, "quick ended %ld ns before the second join\n", (long)(second - b.end_ns));
	return 0;
}
