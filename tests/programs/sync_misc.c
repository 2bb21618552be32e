/*
 * Every kind of synchronization object the --sync wrappers handle, with exact operation counts
 * (tests/integration/t_sync.py) and return values and errno printed, so that the output with
 * and without sonde must be the same:
 *  - an imbalanced barrier (3 threads x 5 rounds; thread 2 works 20x longer each round),
 *  - a producer/consumer pair on a condition variable (100 items through a one-slot queue),
 *  - semaphores (50 posts, 50 waits, one trywait on an empty one: EAGAIN),
 *  - timed calls that time out (mutex, rwlock, condition variable, semaphore: ETIMEDOUT),
 *  - trylocks of held locks (mutex, spinlock, rwlock: EBUSY),
 *  - a thread cancelled while blocked in pthread_cond_wait (its cleanup handler runs),
 *  - read and write locks of an rwlock.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define ROUNDS 5
#define ITEMS 100
#define SEMS 50

static pthread_barrier_t phase_barrier;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static int queue_full, queue_item;
static sem_t items_sem, empty_sem;
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static pthread_mutex_t cancel_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never_cond = PTHREAD_COND_INITIALIZER;
static sem_t held_sem, go_sem;
static volatile unsigned long sink;

static void work(long n)
{
	long i;

	for (i = 0; i < n; i++)
		sink += (unsigned long)i;
}

static void *barrier_worker(void *arg)
{
	long id = (long)arg;
	int r, serial = 0;

	for (r = 0; r < ROUNDS; r++) {
		work(id == 2 ? 2000000 : 100000);
		serial += pthread_barrier_wait(&phase_barrier) == PTHREAD_BARRIER_SERIAL_THREAD;
	}
	return (void *)(long)serial;
}

static void *producer(void *arg)
{
	int i;

	(void)arg;
	for (i = 1; i <= ITEMS; i++) {
		pthread_mutex_lock(&queue_lock);
		while (queue_full)
			pthread_cond_wait(&not_full, &queue_lock);
		queue_item = i;
		queue_full = 1;
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&queue_lock);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	long sum = 0;
	int i;

	(void)arg;
	for (i = 0; i < ITEMS; i++) {
		pthread_mutex_lock(&queue_lock);
		while (!queue_full)
			pthread_cond_wait(&not_empty, &queue_lock);
		sum += queue_item;
		queue_full = 0;
		pthread_cond_signal(&not_full);
		pthread_mutex_unlock(&queue_lock);
	}
	return (void *)sum;
}

static void *sem_poster(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < SEMS; i++)
		sem_post(&items_sem);
	return NULL;
}

/* Holds held_lock, a read lock of table_lock, the spinlock and held_sem's only unit until told. */
static void *holder(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&held_lock);
	pthread_rwlock_rdlock(&table_lock);
	pthread_spin_lock(&spin);
	sem_post(&go_sem);
	while (sem_wait(&held_sem) != 0)
		;
	pthread_spin_unlock(&spin);
	pthread_rwlock_unlock(&table_lock);
	pthread_mutex_unlock(&held_lock);
	return NULL;
}

static void unlock_cleanup(void *m)
{
	pthread_mutex_unlock(m);
	printf("cleanup handler ran\n");
}

static void *cancel_victim(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cancel_lock);
	pthread_cleanup_push(unlock_cleanup, &cancel_lock);
	sem_post(&go_sem);
	for (;;)
		pthread_cond_wait(&never_cond, &cancel_lock);
	pthread_cleanup_pop(1);
	return NULL;
}

static struct timespec soon(long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ms * 1000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	return ts;
}

static void barriers(void)
{
	pthread_t th[3];
	long i, serial = 0;
	void *ret;

	pthread_barrier_init(&phase_barrier, NULL, 3);
	for (i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, barrier_worker, (void *)i);
	for (i = 0; i < 3; i++) {
		pthread_join(th[i], &ret);
		serial += (long)ret;
	}
	printf("barrier: %ld serial returns\n", serial);
	pthread_barrier_destroy(&phase_barrier);
}

static void producer_consumer(void)
{
	pthread_t p, c;
	void *sum;

	pthread_create(&c, NULL, consumer, NULL);
	pthread_create(&p, NULL, producer, NULL);
	pthread_join(p, NULL);
	pthread_join(c, &sum);
	printf("consumer sum %ld\n", (long)sum);
}

static void semaphores(void)
{
	pthread_t th;
	int i, got = 0, r;

	sem_init(&items_sem, 0, 0);
	sem_init(&empty_sem, 0, 0);
	pthread_create(&th, NULL, sem_poster, NULL);
	for (i = 0; i < SEMS; i++)
		got += sem_wait(&items_sem) == 0;
	pthread_join(th, NULL);
	errno = 0;
	r = sem_trywait(&empty_sem);
	printf("sem: %d waits, trywait %d errno %s\n", got, r, errno == EAGAIN ? "EAGAIN" : "?");
	errno = 1234;
	sem_post(&empty_sem);
	r = sem_wait(&empty_sem);
	printf("sem: wait %d errno kept %d\n", r, errno);
}

static void timeouts_and_busy(void)
{
	struct timespec ts;
	pthread_t th;
	int r;

	pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
	sem_init(&held_sem, 0, 0);
	sem_init(&go_sem, 0, 0);
	pthread_create(&th, NULL, holder, NULL);
	while (sem_wait(&go_sem) != 0)
		;
	ts = soon(20);
	r = pthread_mutex_timedlock(&held_lock, &ts);
	printf("mutex timedlock: %s\n", r == ETIMEDOUT ? "ETIMEDOUT" : strerror(r));
	ts = soon(20);
	r = pthread_rwlock_timedwrlock(&table_lock, &ts);
	printf("rwlock timedwrlock: %s\n", r == ETIMEDOUT ? "ETIMEDOUT" : strerror(r));
	ts = soon(20);
	errno = 0;
	r = sem_timedwait(&held_sem, &ts);
	printf("sem timedwait: %d %s\n", r, errno == ETIMEDOUT ? "ETIMEDOUT" : "?");
	pthread_mutex_lock(&queue_lock);
	ts = soon(20);
	r = pthread_cond_timedwait(&not_empty, &queue_lock, &ts);
	pthread_mutex_unlock(&queue_lock);
	printf("cond timedwait: %s\n", r == ETIMEDOUT ? "ETIMEDOUT" : strerror(r));
	r = pthread_mutex_trylock(&held_lock);
	printf("mutex trylock: %s\n", r == EBUSY ? "EBUSY" : strerror(r));
	r = pthread_spin_trylock(&spin);
	printf("spin trylock: %s\n", r == EBUSY ? "EBUSY" : strerror(r));
	r = pthread_rwlock_trywrlock(&table_lock);
	printf("rwlock trywrlock: %s\n", r == EBUSY ? "EBUSY" : strerror(r));
	r = pthread_rwlock_tryrdlock(&table_lock);
	printf("rwlock tryrdlock: %d\n", r);
	pthread_rwlock_unlock(&table_lock);
	sem_post(&held_sem);
	pthread_join(th, NULL);
	pthread_rwlock_wrlock(&table_lock);
	pthread_rwlock_unlock(&table_lock);
	pthread_rwlock_rdlock(&table_lock);
	pthread_rwlock_unlock(&table_lock);
}

static void cancellation(void)
{
	pthread_t th;
	void *ret;

	pthread_create(&th, NULL, cancel_victim, NULL);
	while (sem_wait(&go_sem) != 0)
		;
	pthread_mutex_lock(&cancel_lock); /* the victim is in pthread_cond_wait now */
	pthread_mutex_unlock(&cancel_lock);
	pthread_cancel(th);
	pthread_join(th, &ret);
	printf("victim %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
}

int main(void)
{
	barriers();
	producer_consumer();
	semaphores();
	timeouts_and_busy();
	cancellation();
	return 0;
}
