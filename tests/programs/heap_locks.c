/*
 * Heap sync objects for `sonde watch PID --resources` (tests/integration/t_heap_objects.py).
 * Usage: heap_locks. Says "ready" on stderr, then does one phase per line of stdin,
 * acknowledged "done N" on stderr:
 *   make  1 + QUIET mutexes, an rwlock and a semaphore malloc'ed and initialised in make_locks
 *         (one call site each kind), their addresses said on stderr before "done":
 *         "hot 0xADDR", then QUIET lines "quiet 0xADDR", "rwlock 0xADDR", "sem 0xADDR"
 *   use   THREADS threads: each locks the hot mutex HOT times and its own quiet mutex (quiet[k],
 *         k < THREADS) QUIET_USES times; the quiet mutexes from THREADS on are never locked;
 *         the main thread then read-locks the rwlock 3 and write-locks it 2 times, posts the
 *         semaphore 4 times and waits for it 4 times
 * Nothing else calls a pthread sync function between lines (stdin is read with read(0);
 * pthread_create takes the loader's lock, which is ld.so's data, not the heap).
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 4
#define QUIET 11
#define HOT 250
#define QUIET_USES 10

static pthread_mutex_t *hot, *quiet[QUIET];
static pthread_rwlock_t *rw;
static sem_t *sem;
static unsigned long shared;

static void *alloc(size_t n)
{
	void *p = calloc(1, n);

	if (!p) {
		perror("calloc");
		exit(1);
	}
	return p;
}

static pthread_mutex_t *new_mutex(void)
{
	pthread_mutex_t *m = alloc(sizeof(*m));

	pthread_mutex_init(m, NULL); /* the mutexes' init site */
	return m;
}

static __attribute__((noinline)) void make_locks(void)
{
	int i;

	hot = new_mutex();
	for (i = 0; i < QUIET; i++)
		quiet[i] = new_mutex();
	rw = alloc(sizeof(*rw));
	pthread_rwlock_init(rw, NULL); /* the rwlock's init site */
	sem = alloc(sizeof(*sem));
	sem_init(sem, 0, 0);
	fprintf(stderr, "hot %p\n", (void *)hot);
	for (i = 0; i < QUIET; i++)
		fprintf(stderr, "quiet %p\n", (void *)quiet[i]);
	fprintf(stderr, "rwlock %p\nsem %p\n", (void *)rw, (void *)sem);
}

static void *worker(void *arg)
{
	int k = (int)(long)arg, i;

	for (i = 0; i < HOT; i++) {
		pthread_mutex_lock(hot);
		/* atomic: threads past their hot loop add under other mutexes at the same time */
		__atomic_fetch_add(&shared, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(hot);
	}
	for (i = 0; i < QUIET_USES; i++) {
		pthread_mutex_lock(quiet[k]);
		__atomic_fetch_add(&shared, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(quiet[k]);
	}
	return NULL;
}

static void use_locks(void)
{
	pthread_t t[THREADS];
	long k;
	int i;

	for (k = 0; k < THREADS; k++)
		if (pthread_create(&t[k], NULL, worker, (void *)k) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			exit(1);
		}
	for (k = 0; k < THREADS; k++)
		pthread_join(t[k], NULL);
	for (i = 0; i < 5; i++) {
		if (i < 3)
			pthread_rwlock_rdlock(rw);
		else
			pthread_rwlock_wrlock(rw);
		pthread_rwlock_unlock(rw);
	}
	for (i = 0; i < 4; i++)
		sem_post(sem);
	for (i = 0; i < 4; i++)
		sem_wait(sem);
}

/* One line of stdin without stdio (its locks are not pthread's, but keep it plain). */
static int read_line(char *buf, size_t cap)
{
	size_t n = 0;
	char c;

	while (n + 1 < cap && read(0, &c, 1) == 1) {
		if (c == '\n') {
			buf[n] = 0;
			return 0;
		}
		buf[n++] = c;
	}
	return -1;
}

int main(void)
{
	char line[64];
	int n = 0;

	fprintf(stderr, "ready\n");
	while (read_line(line, sizeof(line)) == 0) {
		if (!strcmp(line, "make"))
			make_locks();
		else if (!strcmp(line, "use") && hot)
			use_locks();
		fprintf(stderr, "done %d\n", ++n);
	}
	printf("shared %lu\n", shared);
	return 0;
}
