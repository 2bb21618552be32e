/*
 * One hot mutex among many: four threads take `hot_lock` often and hold it, and each of eight
 * cold locks (an array, a static, a heap mutex) a few times. main holds hot_lock until every
 * worker has said it is about to take it, and 50 ms more, so the workers wait for it. `sonde report` must rank
 * hot_lock first by wait time and name it (tests/integration/t_sync.py has the exact counts).
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define THREADS 4
#define HOT 2000
#define COLD 10

pthread_mutex_t hot_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t cold_locks[8] = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
				  PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
				  PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
				  PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER };
static pthread_mutex_t quiet_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t *heap_lock;
static sem_t ready;
static volatile unsigned long counter, cold_sum;

static void work(int n)
{
	volatile int i;

	for (i = 0; i < n; i++)
		;
}

static void *worker(void *arg)
{
	int id = (int)(long)arg, i, k;

	sem_post(&ready);
	for (i = 0; i < HOT; i++) {
		pthread_mutex_lock(&hot_lock);
		counter++;
		work(2000);
		pthread_mutex_unlock(&hot_lock);
		work(200);
	}
	for (i = 0; i < COLD; i++)
		for (k = 0; k < 8; k++) {
			pthread_mutex_lock(&cold_locks[k]);
			cold_sum += (unsigned long)(k + id);
			pthread_mutex_unlock(&cold_locks[k]);
		}
	pthread_mutex_lock(&quiet_lock);
	pthread_mutex_unlock(&quiet_lock);
	pthread_mutex_lock(heap_lock);
	pthread_mutex_unlock(heap_lock);
	return NULL;
}

int main(void)
{
	struct timespec nap = { 0, 50 * 1000 * 1000 };
	pthread_t th[THREADS];
	long i;

	heap_lock = malloc(sizeof(*heap_lock));
	pthread_mutex_init(heap_lock, NULL);
	sem_init(&ready, 0, 0);
	pthread_mutex_lock(&hot_lock);
	for (i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (i = 0; i < THREADS; i++)
		while (sem_wait(&ready) != 0)
			;
	nanosleep(&nap, NULL);
	pthread_mutex_unlock(&hot_lock);
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	printf("counter %lu cold %lu\n", counter, cold_sum);
	pthread_mutex_destroy(heap_lock);
	free(heap_lock);
	return 0;
}
