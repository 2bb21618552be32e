/*
 * Waits on a condition variable, a semaphore and an rwlock that inherit a releaser's known
 * delay (runtime/sync_wrap.c, tests/integration/t_sync.py): three pairs of threads, one pair
 * after the other. In each, a waiter with almost no probes of its own waits while a releaser
 * makes a known number of instrumented calls, so that the waiter's delay after the wait must be
 * the releaser's at the release that ended it:
 *   cond    the releaser makes 60,000 calls, signals with the mutex held, makes 60,000 more
 *           and works 20 ms without probes, still holding it, and unlocks: the waiter needs the
 *           unlock too, so it inherits the delay of 120,000 calls (the signal's, 60,000, would
 *           be half of it). The 20 ms keep the unlock after the signal in approximated time
 *           too, however the probes' price moves under load (otherwise the signal, with its
 *           delay and the time to the unlock, is the later release, rightly)
 *   sem     the releaser makes 30,000 calls, works 20 ms without probes and posts
 *   rwlock  the releaser takes the write lock, makes 90,000 calls, works 20 ms without probes
 *           and unlocks; the waiter wants the read lock
 * (the 20 ms without probes: the release stays after the waiter's arrival in approximated time
 * even when the probes' calibrated price is well above their cost in situ, as under load)
 * Every releaser then makes no more calls, so its final delay is the one it released with. A
 * waiter that was not waiting yet when its releaser released (a loaded machine can start it that
 * late) is said on stderr ("late"): the test then runs the program again, as it does when a
 * waiter began its wait too late for it to come before the release in approximated time too.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static sem_t s;
static int flag, cond_waiting;
static atomic_int sem_waiting, rw_held, rw_waiting;
static unsigned long sums[3];

__attribute__((noinline)) static unsigned long tick(unsigned long sum, unsigned long i)
{
	return sum + i;
}

static unsigned long calls(unsigned long n)
{
	unsigned long i, sum = 0;

	for (i = 0; i < n; i++)
		sum = tick(sum, i);
	return sum;
}

/* Not instrumented: work without probes. */
__attribute__((no_instrument_function)) static void spin_ms(long ms)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

static void *cond_releaser(void *arg)
{
	(void)arg;
	sums[0] = calls(60000);
	pthread_mutex_lock(&m);
	if (!cond_waiting)
		fprintf(stderr, "cond waiter late\n");
	flag = 1;
	pthread_cond_signal(&c);
	sums[0] += calls(60000);
	spin_ms(20);
	pthread_mutex_unlock(&m);
	return NULL;
}

static void *cond_waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m);
	cond_waiting = 1;
	while (!flag)
		pthread_cond_wait(&c, &m);
	pthread_mutex_unlock(&m);
	return NULL;
}

static void *sem_releaser(void *arg)
{
	(void)arg;
	sums[1] = calls(30000);
	spin_ms(20);
	if (!atomic_load(&sem_waiting))
		fprintf(stderr, "sem waiter late\n");
	sem_post(&s);
	return NULL;
}

static void *sem_waiter(void *arg)
{
	(void)arg;
	atomic_store(&sem_waiting, 1);
	sem_wait(&s);
	return NULL;
}

static void *rw_releaser(void *arg)
{
	(void)arg;
	pthread_rwlock_wrlock(&rw);
	atomic_store(&rw_held, 1);
	sums[2] = calls(90000);
	spin_ms(20);
	if (!atomic_load(&rw_waiting))
		fprintf(stderr, "rwlock waiter late\n");
	pthread_rwlock_unlock(&rw);
	return NULL;
}

/* Sleeps (a spinning waiter would be descheduled at the end of its slice and call late) until
 * the releaser holds the lock; one that finds it not held yet is said late. */
static void *rw_waiter(void *arg)
{
	struct timespec ms = { 0, 1000000 };
	int i;

	(void)arg;
	for (i = 0; i < 50 && !atomic_load(&rw_held); i++)
		nanosleep(&ms, NULL);
	if (!atomic_load(&rw_held))
		fprintf(stderr, "rwlock releaser late\n");
	atomic_store(&rw_waiting, 1);
	pthread_rwlock_rdlock(&rw);
	pthread_rwlock_unlock(&rw);
	return NULL;
}

/* The waiter first: it is waiting long before its releaser's calls are done. */
static void pair(void *(*waiter)(void *), void *(*releaser)(void *))
{
	pthread_t a, b;

	pthread_create(&a, NULL, waiter, NULL);
	pthread_create(&b, NULL, releaser, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
}

int main(void)
{
	sem_init(&s, 0, 0);
	pair(cond_waiter, cond_releaser);
	pair(sem_waiter, sem_releaser);
	pair(rw_waiter, rw_releaser);
	printf("sums %lu %lu %lu\n", sums[0], sums[1], sums[2]);
	return 0;
}
