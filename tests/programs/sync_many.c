/*
 * More mutexes than the --sync table holds (65536 slots): 70000 heap mutexes, each locked and
 * unlocked once, and one of them 10 times more. The objects that find no slot are counted in
 * the overflow entry, so the counts over all mutexes stay exact (70010 acquisitions).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N 70000

int main(void)
{
	pthread_mutex_t *m = calloc(N, sizeof(*m));
	long i;

	if (!m)
		return 1;
	for (i = 0; i < N; i++) {
		pthread_mutex_init(&m[i], NULL);
		pthread_mutex_lock(&m[i]);
		pthread_mutex_unlock(&m[i]);
	}
	for (i = 0; i < 10; i++) {
		pthread_mutex_lock(&m[N / 2]);
		pthread_mutex_unlock(&m[N / 2]);
	}
	printf("%d mutexes\n", N);
	free(m);
	return 0;
}
