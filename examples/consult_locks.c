/* SPDX-License-Identifier: MIT */
/*
 * One hot mutex among many, for `sonde consult` (docs/consult.md): four threads update a
 * shared total under `hot_lock`, computing while they hold it, so three of them wait most of the
 * time; each also uses its own lock of `quiet_locks`, which no one else takes. The consultant
 * should find ExcessiveSyncWaitingTime at /SyncObject/mutex/hot_lock and at the procedure that
 * waits, `update_shared`.
 *   sonde cc -- gcc -O1 -g -o consult_locks examples/consult_locks.c -lpthread
 *   sonde run --trace --sync -o run -- ./consult_locks && sonde consult run
 * An argument scales the work (default 1.0).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4

static pthread_mutex_t hot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t quiet_locks[THREADS] = {
	PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
	PTHREAD_MUTEX_INITIALIZER,
};
static double total;
static long rounds = 400;

/* n rounds of floating-point work; inlined, never instrumented: its time is its caller's (in a
 * trace and live alike). */
static inline __attribute__((always_inline, no_instrument_function)) double spin(long n)
{
	double x = 1.0;
	long i;

	for (i = 0; i < n; i++)
		x = x * 1.0000001 + 1e-9;
	return x;
}

static void update_shared(void)
{
	pthread_mutex_lock(&hot_lock);
	total += spin(200000);
	pthread_mutex_unlock(&hot_lock);
}

static void update_own(int k)
{
	pthread_mutex_lock(&quiet_locks[k]);
	total += 0 * spin(20000);
	pthread_mutex_unlock(&quiet_locks[k]);
}

static void *worker(void *arg)
{
	int k = (int)(long)arg;
	long i;

	for (i = 0; i < rounds; i++) {
		update_own(k);
		update_shared();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	long k;

	rounds = (long)(rounds * (scale > 0 ? scale : 1.0));
	for (k = 0; k < THREADS; k++)
		pthread_create(&t[k], NULL, worker, (void *)k);
	for (k = 0; k < THREADS; k++)
		pthread_join(t[k], NULL);
	printf("consult_locks: %d\n", total > 0);
	return 0;
}
