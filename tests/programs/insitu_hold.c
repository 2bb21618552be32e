/*
 * A holder that stops calling its hot leaf (`sonde run --insitu` with a throttle): thread A calls
 * leaf() 20,000 times, too few for its in-situ price, so that its hold on leaf()'s throttle is
 * still taken, then waits until thread B has called leaf() 2,000,000 times. The throttle must
 * not wait for A beyond its bound (runtime/probe.c). Prints the sum, which must not change.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

int leaf(int i);

#define A_CALLS 20000
#define B_CALLS 2000000

static sem_t a_done, b_done;
static long sum_a, sum_b;

int leaf(int i)
{
	return (i * 7) & 15;
}

static void *thread_a(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < A_CALLS; i++)
		sum_a += leaf(i);
	sem_post(&a_done);
	sem_wait(&b_done); /* A stays alive, holding, while B calls leaf() */
	return NULL;
}

static void *thread_b(void *arg)
{
	int i;

	(void)arg;
	sem_wait(&a_done);
	for (i = 0; i < B_CALLS; i++)
		sum_b += leaf(i);
	sem_post(&b_done);
	return NULL;
}

int main(void)
{
	pthread_t a, b;

	sem_init(&a_done, 0, 0);
	sem_init(&b_done, 0, 0);
	pthread_create(&a, NULL, thread_a, NULL);
	pthread_create(&b, NULL, thread_b, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("sum %ld %ld\n", sum_a, sum_b);
	return 0;
}
