/* SPDX-License-Identifier: MIT */
/*
 * Calls already running when a tool inserts its timers (docs/dynamic.md, "Calls already
 * running"): a thread blocked in pthread_mutex_lock on `held`, which main holds, and a thread
 * inside spin(), a loop that began before. Prints "ready" on stderr once the waiter sleeps in
 * the kernel; each line of stdin is acknowledged with "done N"; a line "release" lets both go.
 * At the end, stdout has the spin count's parity and the waiter's result (the run's output must
 * be that of an untouched run).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop;
static atomic_int waiter_tid;
static int waited;

__attribute__((noinline)) static unsigned long spin(unsigned long x)
{
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

static void *spinner(void *arg)
{
	static unsigned long out;

	out = spin((unsigned long)(uintptr_t)arg);
	return &out;
}

static void *waiter(void *arg)
{
	(void)arg;
	atomic_store(&waiter_tid, (int)syscall(SYS_gettid));
	pthread_mutex_lock(&held);
	waited = 1;
	pthread_mutex_unlock(&held);
	return NULL;
}

/* The waiter is asleep (state S) in the kernel, as seen in /proc. */
static int asleep(int tid)
{
	char path[64], buf[256], *p;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = (int)fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n > 0 ? n : 0] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

int main(void)
{
	pthread_t w, s;
	unsigned long *x;
	char line[64];
	int n = 0;

	pthread_mutex_lock(&held);
	pthread_create(&w, NULL, waiter, NULL);
	pthread_create(&s, NULL, spinner, (void *)1);
	while (!atomic_load(&waiter_tid) || !asleep(atomic_load(&waiter_tid)))
		usleep(1000);
	fprintf(stderr, "ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "release\n"))
			break;
		fprintf(stderr, "done %d\n", ++n);
	}
	atomic_store(&stop, 1);
	pthread_mutex_unlock(&held);
	pthread_join(w, NULL);
	pthread_join(s, (void **)&x);
	printf("waited %d spin %lu\n", waited, *x & 1);
	return 0;
}
