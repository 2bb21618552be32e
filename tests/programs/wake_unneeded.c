/*
 * A wake-up that only the measurement causes (runtime/sync_wrap.c, mutex_wake): main takes a
 * mutex and starts a waiter, which works 5 ms (uninstrumented) before it asks for the mutex.
 * "probes": main holds the mutex for 600,000 calls of an empty function (about 12 ms measured,
 * nearly nothing without the probes), so the waiter sleeps, and main's unlock wakes it; without
 * measurement main would have released long before the waiter came. "work": main holds it for
 * 12 ms of uninstrumented work instead, and the waiter sleeps in both runs. Prints the count.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long count;

__attribute__((no_instrument_function)) static void spin_us(long us)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

__attribute__((noinline)) void empty(void);
__attribute__((noinline)) void empty(void)
{
	__asm__ volatile("" ::: "memory");
}

static void *waiter(void *arg)
{
	(void)arg;
	spin_us(5000);
	pthread_mutex_lock(&m);
	count++;
	pthread_mutex_unlock(&m);
	return NULL;
}

int main(int argc, char **argv)
{
	int probes = argc > 1 && !strcmp(argv[1], "probes");
	pthread_t t;
	long i;

	pthread_mutex_lock(&m);
	pthread_create(&t, NULL, waiter, NULL);
	if (probes)
		for (i = 0; i < 600000; i++)
			empty();
	else
		spin_us(12000);
	pthread_mutex_unlock(&m);
	pthread_join(t, NULL);
	printf("count %ld\n", count);
	return 0;
}
