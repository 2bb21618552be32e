/*
 * The clock* and *join_np calls of glibc (pthread_mutex_clocklock, pthread_rwlock_clockrdlock
 * and clockwrlock, pthread_cond_clockwait, sem_clockwait, pthread_tryjoin_np, timedjoin_np,
 * clockjoin_np) and the deadlines glibc rejects, with exact operation counts
 * (tests/integration/t_sync.py) and every return value and errno printed, so that the output
 * with and without sonde must be the same:
 *  - each clocked lock or wait taken free (0), timed out against a holder (ETIMEDOUT), and given
 *    a bad clock or nanoseconds out of range (EINVAL: for an rwlock or a semaphore even when it
 *    is free, which a wrapper that tries first would get wrong; for a free mutex 0),
 *  - a clocked condition wait woken by a signal, one cancelled (its cleanup handler runs),
 *  - joins: tryjoin of a running thread (EBUSY), timedjoin and clockjoin timing out, then the
 *    same thread joined by clockjoin; a tryjoin of an ended thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t clk_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t clk_rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t cv_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t clk_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t cancel_cond = PTHREAD_COND_INITIALIZER;
static sem_t clk_sem, go_sem, release_sem;
static int ready;

static const char *err(int r)
{
	return r == 0 ? "0" : r == ETIMEDOUT ? "ETIMEDOUT" : r == EINVAL ? "EINVAL" :
	       r == EBUSY ? "EBUSY" : strerror(r);
}

static struct timespec in_ms(clockid_t clk, long ms)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	ts.tv_nsec += ms * 1000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	return ts;
}

static const struct timespec bad_ns = { 0, 1000000000 };

/* Holds clk_mutex and clk_rwlock (for writing) until released. */
static void *holder(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&clk_mutex);
	pthread_rwlock_wrlock(&clk_rwlock);
	sem_post(&go_sem);
	while (sem_wait(&release_sem) != 0)
		;
	pthread_rwlock_unlock(&clk_rwlock);
	pthread_mutex_unlock(&clk_mutex);
	return NULL;
}

static void mutexes_and_rwlocks(void)
{
	struct timespec ts;
	pthread_t th;

	ts = in_ms(CLOCK_MONOTONIC, 20);
	printf("mutex clocklock free: %s\n", err(pthread_mutex_clocklock(&clk_mutex,
									  CLOCK_MONOTONIC, &ts)));
	pthread_mutex_unlock(&clk_mutex);
	printf("mutex clocklock bad clock: %s\n",
	       err(pthread_mutex_clocklock(&clk_mutex, CLOCK_PROCESS_CPUTIME_ID, &ts)));
	printf("mutex clocklock free, bad ns: %s\n",
	       err(pthread_mutex_clocklock(&clk_mutex, CLOCK_REALTIME, &bad_ns)));
	pthread_mutex_unlock(&clk_mutex);
	ts = in_ms(CLOCK_REALTIME, 20);
	printf("rwlock clockrdlock free: %s\n", err(pthread_rwlock_clockrdlock(&clk_rwlock,
									      CLOCK_REALTIME, &ts)));
	pthread_rwlock_unlock(&clk_rwlock);
	printf("rwlock clockwrlock free: %s\n", err(pthread_rwlock_clockwrlock(&clk_rwlock,
									      CLOCK_REALTIME, &ts)));
	pthread_rwlock_unlock(&clk_rwlock);
	printf("rwlock clockrdlock free, bad ns: %s\n",
	       err(pthread_rwlock_clockrdlock(&clk_rwlock, CLOCK_MONOTONIC, &bad_ns)));
	printf("rwlock clockwrlock free, bad clock: %s\n",
	       err(pthread_rwlock_clockwrlock(&clk_rwlock, CLOCK_THREAD_CPUTIME_ID, &ts)));
	printf("rwlock timedrdlock free, bad ns: %s\n",
	       err(pthread_rwlock_timedrdlock(&clk_rwlock, &bad_ns)));
	printf("rwlock timedwrlock free, bad ns: %s\n",
	       err(pthread_rwlock_timedwrlock(&clk_rwlock, &bad_ns)));

	sem_init(&go_sem, 0, 0);
	sem_init(&release_sem, 0, 0);
	pthread_create(&th, NULL, holder, NULL);
	while (sem_wait(&go_sem) != 0)
		;
	ts = in_ms(CLOCK_MONOTONIC, 20);
	printf("mutex clocklock held: %s\n", err(pthread_mutex_clocklock(&clk_mutex,
									  CLOCK_MONOTONIC, &ts)));
	ts = in_ms(CLOCK_MONOTONIC, 20);
	printf("rwlock clockrdlock held: %s\n", err(pthread_rwlock_clockrdlock(&clk_rwlock,
									      CLOCK_MONOTONIC, &ts)));
	ts = in_ms(CLOCK_MONOTONIC, 20);
	printf("rwlock clockwrlock held: %s\n", err(pthread_rwlock_clockwrlock(&clk_rwlock,
									      CLOCK_MONOTONIC, &ts)));
	sem_post(&release_sem);
	pthread_join(th, NULL);
}

static void *signaller(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cv_lock);
	ready = 1;
	pthread_cond_signal(&clk_cond);
	pthread_mutex_unlock(&cv_lock);
	return NULL;
}

static void unlock_cleanup(void *m)
{
	pthread_mutex_unlock(m);
	printf("cleanup handler ran\n");
}

static void *cancel_victim(void *arg)
{
	struct timespec ts = in_ms(CLOCK_MONOTONIC, 60000);

	(void)arg;
	pthread_mutex_lock(&cv_lock);
	pthread_cleanup_push(unlock_cleanup, &cv_lock);
	sem_post(&go_sem);
	for (;;)
		pthread_cond_clockwait(&cancel_cond, &cv_lock, CLOCK_MONOTONIC, &ts);
	pthread_cleanup_pop(1);
	return NULL;
}

static void conditions(void)
{
	struct timespec ts;
	pthread_t th;
	void *ret;
	int r = 0;

	pthread_mutex_lock(&cv_lock);
	ts = in_ms(CLOCK_MONOTONIC, 20);
	printf("cond clockwait: %s\n", err(pthread_cond_clockwait(&clk_cond, &cv_lock,
								    CLOCK_MONOTONIC, &ts)));
	printf("cond clockwait bad clock: %s\n",
	       err(pthread_cond_clockwait(&clk_cond, &cv_lock, CLOCK_PROCESS_CPUTIME_ID, &ts)));
	pthread_create(&th, NULL, signaller, NULL);
	ts = in_ms(CLOCK_MONOTONIC, 60000);
	while (!ready && r == 0)
		r = pthread_cond_clockwait(&clk_cond, &cv_lock, CLOCK_MONOTONIC, &ts);
	pthread_mutex_unlock(&cv_lock);
	pthread_join(th, NULL);
	printf("cond clockwait signalled: %s\n", err(r));

	pthread_create(&th, NULL, cancel_victim, NULL);
	while (sem_wait(&go_sem) != 0)
		;
	pthread_mutex_lock(&cv_lock); /* the victim is in pthread_cond_clockwait now */
	pthread_mutex_unlock(&cv_lock);
	pthread_cancel(th);
	pthread_join(th, &ret);
	printf("victim %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
}

static void *poster(void *arg)
{
	(void)arg;
	sem_post(&clk_sem);
	return NULL;
}

static void semaphores(void)
{
	struct timespec ts = in_ms(CLOCK_MONOTONIC, 20);
	pthread_t th;
	int r;

	sem_init(&clk_sem, 0, 1);
	errno = 0;
	r = sem_clockwait(&clk_sem, CLOCK_MONOTONIC, &bad_ns);
	printf("sem clockwait full, bad ns: %d %s\n", r, err(errno));
	errno = 0;
	r = sem_timedwait(&clk_sem, &bad_ns);
	printf("sem timedwait full, bad ns: %d %s\n", r, err(errno));
	errno = 0;
	r = sem_clockwait(&clk_sem, CLOCK_PROCESS_CPUTIME_ID, &ts);
	printf("sem clockwait full, bad clock: %d %s\n", r, err(errno));
	errno = 1234;
	r = sem_clockwait(&clk_sem, CLOCK_MONOTONIC, &ts);
	printf("sem clockwait full: %d errno kept %d\n", r, errno);
	errno = 0;
	ts = in_ms(CLOCK_MONOTONIC, 20);
	r = sem_clockwait(&clk_sem, CLOCK_MONOTONIC, &ts);
	printf("sem clockwait empty: %d %s\n", r, err(errno));
	pthread_create(&th, NULL, poster, NULL);
	ts = in_ms(CLOCK_REALTIME, 60000);
	while ((r = sem_clockwait(&clk_sem, CLOCK_REALTIME, &ts)) != 0 && errno == EINTR)
		;
	printf("sem clockwait posted: %d\n", r);
	pthread_join(th, NULL);
}

static void *sleeper(void *arg)
{
	(void)arg;
	while (sem_wait(&release_sem) != 0)
		;
	return (void *)42L;
}

static void *quick(void *arg)
{
	return arg;
}

static void joins(void)
{
	struct timespec ts;
	pthread_t th;
	void *ret = NULL;
	int r;

	pthread_create(&th, NULL, sleeper, NULL);
	printf("tryjoin running: %s\n", err(pthread_tryjoin_np(th, &ret)));
	ts = in_ms(CLOCK_REALTIME, 20);
	printf("timedjoin running: %s\n", err(pthread_timedjoin_np(th, &ret, &ts)));
	ts = in_ms(CLOCK_MONOTONIC, 20);
	printf("clockjoin running: %s\n", err(pthread_clockjoin_np(th, &ret, CLOCK_MONOTONIC,
								     &ts)));
	sem_post(&release_sem);
	ts = in_ms(CLOCK_MONOTONIC, 60000);
	r = pthread_clockjoin_np(th, &ret, CLOCK_MONOTONIC, &ts);
	printf("clockjoin: %s %ld\n", err(r), (long)ret);

	pthread_create(&th, NULL, quick, (void *)7L);
	while ((r = pthread_tryjoin_np(th, &ret)) == EBUSY)
		sched_yield();
	printf("tryjoin ended: %s %ld\n", err(r), (long)ret);
	pthread_create(&th, NULL, quick, (void *)8L);
	ts = in_ms(CLOCK_REALTIME, 60000);
	r = pthread_timedjoin_np(th, &ret, &ts);
	printf("timedjoin: %s %ld\n", err(r), (long)ret);
}

int main(void)
{
	mutexes_and_rwlocks();
	conditions();
	semaphores();
	joins();
	return 0;
}
