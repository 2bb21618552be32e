/*
 * A target for `sonde watch` on sync objects and files (tests/integration: t_watch_sync,
 * t_watch_files). Usage: dyn_resources FILE_A FILE_B.
 *
 * Opens FILE_A (read-write) and FILE_B, says "ready" and "heap 0xADDR" (a heap mutex) on
 * stderr, then does one phase per line of stdin, acknowledged "done N" on stderr:
 *   sync    two threads, each: hot_lock locked and unlocked HOT times, locks[3] and locks[0]
 *           OTHER times each, the heap mutex, local_lock and typed_lock HEAP times each,
 *           rw read-locked 5 and write-locked 2 times, sem posted and waited 3 times, the
 *           barrier waited once (both threads: it opens)
 *   io      FILE_A: 100 writes of 64 bytes, 10 preads of 32 bytes, one fsync;
 *           FILE_B: 3 pwrites of 100 bytes, one writev of 10 + 20 bytes, one read that
 *           fails (write-only: -1, EBADF);
 *           B2 (FILE_B opened again by "reopen"): one write of 5 bytes
 *   reopen  FILE_A closed, FILE_B opened again (B2: it takes FILE_A's descriptor number),
 *           FILE_A opened again (a new number)
 * Nothing else calls a sync or I/O function between lines (stdin is read with read(0)).
 */
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define HOT 1000
#define OTHER 10
#define HEAP 7
#define THREADS 2

typedef pthread_mutex_t lock_t;

pthread_mutex_t hot_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t locks[4] = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
			     PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER };
lock_t typed_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static sem_t sem;
static pthread_barrier_t barrier;
static pthread_mutex_t *heap_lock;
static unsigned long shared;
static int fd_a, fd_b, fd_b2 = -1;
static const char *path_a, *path_b;

static void lock_n(pthread_mutex_t *m, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		pthread_mutex_lock(m);
		__atomic_fetch_add(&shared, 1, __ATOMIC_RELAXED); /* two threads, other mutexes */
		pthread_mutex_unlock(m);
	}
}

static void local_locks(void)
{
	static pthread_mutex_t local_lock = PTHREAD_MUTEX_INITIALIZER;

	lock_n(&local_lock, HEAP);
}

static void *sync_phase(void *arg)
{
	int i;

	(void)arg;
	lock_n(&hot_lock, HOT);
	lock_n(&locks[3], OTHER);
	lock_n(&locks[0], OTHER);
	lock_n(heap_lock, HEAP);
	lock_n(&typed_lock, HEAP);
	local_locks();
	for (i = 0; i < 5; i++) {
		pthread_rwlock_rdlock(&rw);
		pthread_rwlock_unlock(&rw);
	}
	for (i = 0; i < 2; i++) {
		pthread_rwlock_wrlock(&rw);
		pthread_rwlock_unlock(&rw);
	}
	for (i = 0; i < 3; i++) {
		sem_post(&sem);
		sem_wait(&sem);
	}
	pthread_barrier_wait(&barrier);
	return NULL;
}

static void sync_threads(void)
{
	pthread_t t[THREADS];
	int i;

	for (i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, sync_phase, NULL) != 0)
			exit(3);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
}

static void must(int ok, const char *what)
{
	if (!ok) {
		perror(what);
		exit(2);
	}
}

static void io_phase(void)
{
	char buf[100], in[32];
	struct iovec iov[2] = { { buf, 10 }, { buf + 10, 20 } };
	int i;

	memset(buf, 'x', sizeof(buf));
	for (i = 0; i < 100; i++)
		must(write(fd_a, buf, 64) == 64, "write A");
	for (i = 0; i < 10; i++)
		must(pread(fd_a, in, sizeof(in), 64 * i) == sizeof(in), "pread A");
	must(fsync(fd_a) == 0, "fsync A");
	for (i = 0; i < 3; i++)
		must(pwrite(fd_b, buf, 100, 100 * i) == 100, "pwrite B");
	must(writev(fd_b, iov, 2) == 30, "writev B");
	must(read(fd_b, in, sizeof(in)) == -1, "read B fails");
	if (fd_b2 >= 0)
		must(write(fd_b2, buf, 5) == 5, "write B2");
}

static void reopen(void)
{
	close(fd_a);
	fd_b2 = open(path_b, O_WRONLY | O_APPEND);
	fd_a = open(path_a, O_RDWR | O_APPEND);
	must(fd_a >= 0 && fd_b2 >= 0, "reopen");
}

/* One line of stdin, with read(0) only (no stdio lock, no other file touched). */
static int read_line(char *buf, size_t cap)
{
	size_t n = 0;
	char c;

	while (read(0, &c, 1) == 1) {
		if (c == '\n') {
			buf[n] = 0;
			return 0;
		}
		if (n + 1 < cap)
			buf[n++] = c;
	}
	return -1;
}

static void say(const char *fmt, unsigned long v)
{
	char msg[64];
	int n = snprintf(msg, sizeof(msg), fmt, v);

	must(write(2, msg, (size_t)n) == n, "stderr");
}

int main(int argc, char **argv)
{
	char line[64];
	unsigned long lines = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: dyn_resources FILE_A FILE_B\n");
		return 2;
	}
	path_a = argv[1];
	path_b = argv[2];
	fd_a = open(path_a, O_RDWR | O_CREAT | O_TRUNC, 0644);
	fd_b = open(path_b, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	must(fd_a >= 0 && fd_b >= 0, "open");
	heap_lock = malloc(sizeof(*heap_lock));
	must(heap_lock && pthread_mutex_init(heap_lock, NULL) == 0, "heap mutex");
	must(sem_init(&sem, 0, 0) == 0, "sem_init");
	must(pthread_barrier_init(&barrier, NULL, THREADS) == 0, "barrier");
	say("ready\n", 0);
	say("heap 0x%lx\n", (unsigned long)heap_lock);
	while (read_line(line, sizeof(line)) == 0) {
		if (!strcmp(line, "sync"))
			sync_threads();
		else if (!strcmp(line, "io"))
			io_phase();
		else if (!strcmp(line, "reopen"))
			reopen();
		say("done %lu\n", ++lines);
	}
	printf("shared %lu\n", shared);
	return 0;
}
