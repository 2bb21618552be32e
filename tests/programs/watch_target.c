/*
 * A target for `sonde watch`: THREADS worker threads (argv[1], default 4) wait for lines on
 * stdin; for each line every worker calls round_of() once, which calls work() exactly K times
 * (argv[2], default 1000); the main thread waits for all of them, then acknowledges the line
 * with "done N" on stderr. So calls happen only while lines are fed, and their number is known:
 * work() lines × THREADS × K, round_of() lines × THREADS. At stdin EOF it prints each thread's
 * checksum and the total: the output depends only on the input.
 * tiny() is a function the patcher refuses (one byte: `ret`); nothing calls it.
 * Three lines are not rounds (no work call in this process), each acknowledged on stderr:
 * "fork": a child process computes one round of the line and prints it, the parent waits for
 * it ("forked N"); "linger": a child that only sleeps 60 s, with stdin, stdout and stderr
 * closed, not waited for ("lingering PID"); "hold": the main thread, in hold(), reads one more
 * line ("held", then "released").
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_THREADS 16

__asm__(".text\n.globl tiny\n.type tiny, @function\ntiny:\n\tret\n.size tiny, .-tiny\n");

static pthread_barrier_t go, done;
static int nthreads;
static long per_line;
static uint64_t seed;      /* the current line's hash, set before the barrier */
static int quit;
static uint64_t sums[MAX_THREADS];

__attribute__((noinline, noclone)) uint64_t work(uint64_t x, uint64_t i)
{
	uint64_t h = x ^ (i * 0x9e3779b97f4a7c15ull);

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}

__attribute__((noinline, noclone)) uint64_t round_of(uint64_t x, long k)
{
	uint64_t h = x;
	long i;

	for (i = 0; i < k; i++)
		h += work(h, (uint64_t)i);
	return h;
}

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg;

	for (;;) {
		pthread_barrier_wait(&go);
		if (quit)
			return NULL;
		sums[me] = sums[me] * 31 + round_of(seed + (uint64_t)me, per_line);
		pthread_barrier_wait(&done);
	}
}

/* A round in a child process, with the code (patched or not) it inherited. */
static void fork_round(const char *line)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		printf("child: %016llx\n", (unsigned long long)round_of(strlen(line), per_line));
		fflush(stdout);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
		exit(3);
}

static pid_t linger(void)
{
	pid_t pid = fork();
	int i;

	if (pid == 0) {
		for (i = 0; i < 3; i++)
			close(i);
		sleep(60);
		_exit(0);
	}
	return pid;
}

__attribute__((noinline, noclone)) void hold(void)
{
	char line[256];

	fprintf(stderr, "held\n");
	if (!fgets(line, sizeof(line), stdin))
		exit(4);
	fprintf(stderr, "released\n");
}

static uint64_t hash_line(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

int main(int argc, char **argv)
{
	pthread_t th[MAX_THREADS];
	char line[4096];
	uint64_t total = 0;
	long lines = 0, forks = 0;
	int i;

	nthreads = argc > 1 ? atoi(argv[1]) : 4;
	per_line = argc > 2 ? atol(argv[2]) : 1000;
	if (nthreads < 1 || nthreads > MAX_THREADS || per_line < 0)
		return 2;
	pthread_barrier_init(&go, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&done, NULL, (unsigned)nthreads + 1);
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) != 0)
			return 1;
	fprintf(stderr, "ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "fork\n")) {
			fork_round(line);
			fprintf(stderr, "forked %ld\n", ++forks);
			continue;
		}
		if (!strcmp(line, "linger\n")) {
			fprintf(stderr, "lingering %d\n", (int)linger());
			continue;
		}
		if (!strcmp(line, "hold\n")) {
			hold();
			continue;
		}
		seed = hash_line(line);
		pthread_barrier_wait(&go);
		pthread_barrier_wait(&done);
		fprintf(stderr, "done %ld\n", ++lines);
	}
	quit = 1;
	pthread_barrier_wait(&go);
	for (i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		printf("thread %d: %016llx\n", i, (unsigned long long)sums[i]);
		total ^= sums[i];
	}
	printf("lines %ld, work calls %ld, checksum %016llx\n", lines, lines * nthreads * per_line,
	       (unsigned long long)total);
	return 0;
}
