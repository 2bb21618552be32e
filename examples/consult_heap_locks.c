/* SPDX-License-Identifier: MIT */
/*
 * One hot mutex among many, all on the heap, for the live `sonde consult` (docs/consult.md):
 * as consult_locks.c, but the mutexes are malloc'ed and initialised by pthread_mutex_init, so no
 * variable of the program names them; only the runtime sees them (the RECORD primitive,
 * docs/dynamic.md "Heap sync objects"). Four threads update a shared total under the hot mutex,
 * computing while they hold it; each also takes its own quiet mutex (computing a little under
 * it, as consult_locks.c) and, in turn, one of eight more, held for no time. The consultant should find
 * ExcessiveSyncWaitingTime at /SyncObject/mutex/ADDR of the hot mutex (its address is printed
 * first: "hot mutex 0x...").
 *   gcc -O1 -g -o consult_heap_locks examples/consult_heap_locks.c -lpthread
 *   sonde consult -- ./consult_heap_locks
 * An argument scales the work (default 1.0).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define QUIET (THREADS + 8)

struct account {
	pthread_mutex_t lock;
	double total;
};

static struct account *hot, *quiet[QUIET];
static long rounds = 400;

static inline __attribute__((always_inline)) double spin(long n)
{
	double x = 1.0;
	long i;

	for (i = 0; i < n; i++)
		x = x * 1.0000001 + 1e-9;
	return x;
}

static struct account *new_account(void)
{
	struct account *a = calloc(1, sizeof(*a));

	if (!a) {
		perror("calloc");
		exit(1);
	}
	pthread_mutex_init(&a->lock, NULL);
	return a;
}

static void update_shared(void)
{
	pthread_mutex_lock(&hot->lock);
	hot->total += spin(200000);
	pthread_mutex_unlock(&hot->lock);
}

static void update_own(int k)
{
	pthread_mutex_lock(&quiet[k]->lock);
	quiet[k]->total += 0 * spin(20000);
	pthread_mutex_unlock(&quiet[k]->lock);
}

/* One of the eight other quiet mutexes, held for no time. */
static void touch(int k)
{
	pthread_mutex_lock(&quiet[k]->lock);
	quiet[k]->total += 1;
	pthread_mutex_unlock(&quiet[k]->lock);
}

static void *worker(void *arg)
{
	int k = (int)(long)arg;
	long i;

	for (i = 0; i < rounds; i++) {
		update_own(k);
		touch(THREADS + (int)((i + k) % (QUIET - THREADS))); /* rarely contended */
		update_shared();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	long k;
	int i;

	rounds = (long)(rounds * (scale > 0 ? scale : 1.0));
	hot = new_account();
	for (i = 0; i < QUIET; i++)
		quiet[i] = new_account();
	printf("hot mutex %p\n", (void *)&hot->lock);
	fflush(stdout);
	for (k = 0; k < THREADS; k++)
		pthread_create(&t[k], NULL, worker, (void *)k);
	for (k = 0; k < THREADS; k++)
		pthread_join(t[k], NULL);
	printf("consult_heap_locks: %d\n", hot->total > 0);
	return 0;
}
