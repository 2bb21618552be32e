/*
 * A thread still running when the process exits: spinner() calls spin() every millisecond
 * forever; main waits until it has made at least 5 calls, calls finish() once and returns 0.
 * The profile must still be written, with 2 threads and main's counts exact.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

int spin(int i);
void *spinner(void *arg);
int finish(void);

static atomic_int spins;

int spin(int i)
{
	return i + 1;
}

void *spinner(void *arg)
{
	struct timespec ms = { 0, 1000000 };

	(void)arg;
	for (;;) {
		atomic_fetch_add(&spins, spin(0));
		nanosleep(&ms, NULL);
	}
	return NULL;
}

int finish(void)
{
	return 0;
}

int main(void)
{
	struct timespec ms = { 0, 1000000 };
	pthread_t th;
	int i;

	if (pthread_create(&th, NULL, spinner, NULL) != 0)
		return 1;
	for (i = 0; i < 20000 && atomic_load(&spins) < 5; i++)
		nanosleep(&ms, NULL);
	printf("spins >= 5: %d\n", atomic_load(&spins) >= 5);
	return finish();
}
