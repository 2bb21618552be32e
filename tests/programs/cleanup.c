/*
 * pthread_exit and pthread_cancel through instrumented functions, in C built with -fexceptions
 * (docs/dynamic.md, "Exceptions and unwinding"): the cleanup handlers pushed by the frames
 * beyond the hooked returns must run, in order. Each of THREADS threads (argv[1], default 4)
 * runs holder() -> inner() -> quit(), which calls pthread_exit; holder and inner each push a
 * cleanup handler. Then as many threads run holder_cancel() -> waiter(), which waits on a
 * condition variable (a cancellation point) until main cancels it. Output: the handlers run, in
 * the order they ran (per thread), and the joins' results.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 16

void quit(int n);
void inner(int n);
void *holder(void *arg);
void waiter(int n);
void *holder_cancel(void *arg);
void note(void *arg);

static char order[MAX_THREADS][8];
static int started;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER, up = PTHREAD_COND_INITIALIZER;
static volatile int opaque = 1;

static void unlock(void *m)
{
	pthread_mutex_unlock(m);
}

/* A cleanup handler: appends its letter to its thread's record. */
__attribute__((noinline)) void note(void *arg)
{
	const char *what = arg;
	char *o = order[what[1] - '0'];

	o[strlen(o)] = what[0];
}

__attribute__((noinline)) void quit(int n)
{
	if (opaque)
		pthread_exit((void *)(long)(n + 100));
}

__attribute__((noinline)) void inner(int n)
{
	char tag[2] = { 'i', (char)('0' + n) };

	pthread_cleanup_push(note, tag);
	quit(n);
	pthread_cleanup_pop(0);
}

__attribute__((noinline)) void *holder(void *arg)
{
	int n = (int)(long)arg;
	char tag[2] = { 'h', (char)('0' + n) };

	pthread_cleanup_push(note, tag);
	inner(n);
	pthread_cleanup_pop(0);
	return NULL;
}

__attribute__((noinline)) void waiter(int n)
{
	char tag[2] = { 'w', (char)('0' + n) };

	pthread_cleanup_push(note, tag);
	pthread_mutex_lock(&mu);
	started++;
	pthread_cond_signal(&up);
	pthread_cleanup_push(unlock, &mu);
	for (;;)
		pthread_cond_wait(&never, &mu);
	pthread_cleanup_pop(1);
	pthread_cleanup_pop(0);
}

__attribute__((noinline)) void *holder_cancel(void *arg)
{
	int n = (int)(long)arg;
	char tag[2] = { 'c', (char)('0' + n) };

	pthread_cleanup_push(note, tag);
	waiter(n);
	pthread_cleanup_pop(0);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4, i;
	pthread_t th[MAX_THREADS];
	void *ret;

	if (threads < 1 || 2 * threads > MAX_THREADS)
		return 2;
	for (i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, holder, (void *)(long)i) != 0)
			return 3;
	for (i = 0; i < threads; i++) {
		pthread_join(th[i], &ret);
		printf("thread %d: exit %ld, cleanups %s\n", i, (long)ret, order[i]);
	}
	for (i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, holder_cancel, (void *)(long)(threads + i)) != 0)
			return 3;
	pthread_mutex_lock(&mu);
	while (started < threads)
		pthread_cond_wait(&up, &mu);
	pthread_mutex_unlock(&mu);
	for (i = 0; i < threads; i++) {
		pthread_cancel(th[i]);
		pthread_join(th[i], &ret);
		printf("thread %d: %s, cleanups %s\n", threads + i,
		       ret == PTHREAD_CANCELED ? "canceled" : "not canceled", order[threads + i]);
	}
	return 0;
}
