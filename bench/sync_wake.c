/* SPDX-License-Identifier: MIT */
/*
 * What a futex wake-up costs on this machine, by how long the sleeper has slept (bench/sync.sh;
 * docs/benchmarks.md, "Where the barrier and lock residues come from"): a sleeper thread waits
 * in FUTEX_WAIT, a waker thread on another CPU spins for SLEEP_US then stores and calls
 * FUTEX_WAKE. Per sleep: the median time of the waker's FUTEX_WAKE call and the median wake-up
 * latency (from just before the wake to when the sleeper runs again, seen by the waker).
 * Usage: sync_wake ROUNDS SLEEP_US...
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic int word, asleep, awake;
static int rounds;

static long long now_ns(void)
{
	struct timespec c;

	clock_gettime(CLOCK_MONOTONIC, &c);
	return (long long)c.tv_sec * 1000000000ll + c.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Round r: note it is about to sleep, sleep until word is r, say it runs again. */
static void *sleeper(void *arg)
{
	int r, base = *(int *)arg;

	pin(0);
	for (r = base + 1; r <= base + rounds; r++) {
		atomic_store(&asleep, r);
		while (atomic_load(&word) != r)
			syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, r - 1, NULL, NULL, 0);
		atomic_store(&awake, r);
	}
	return NULL;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

static void one(long long sleep_ns, long long *wake, long long *lat, int base)
{
	pthread_t th;
	int r;

	pthread_create(&th, NULL, sleeper, &base);
	for (r = base + 1; r <= base + rounds; r++) {
		long long t0, a, b;

		while (atomic_load(&asleep) != r)
			;
		t0 = now_ns();
		while (now_ns() - t0 < sleep_ns)
			;
		a = now_ns();
		atomic_store(&word, r);
		syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		b = now_ns();
		while (atomic_load(&awake) != r)
			;
		wake[r - base - 1] = b - a;
		lat[r - base - 1] = now_ns() - a;
	}
	pthread_join(th, NULL);
	qsort(wake, (size_t)rounds, sizeof(*wake), cmp_ll);
	qsort(lat, (size_t)rounds, sizeof(*lat), cmp_ll);
	printf("sleep_us %lld wake_ns %lld latency_ns %lld\n", sleep_ns / 1000, wake[rounds / 2],
	       lat[rounds / 2]);
}

int main(int argc, char **argv)
{
	long long *wake, *lat;
	int i;

	if (argc < 3 || (rounds = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: sync_wake ROUNDS SLEEP_US...\n");
		return 2;
	}
	wake = malloc(sizeof(*wake) * (size_t)rounds);
	lat = malloc(sizeof(*lat) * (size_t)rounds);
	if (!wake || !lat)
		return 1;
	pin(1);
	for (i = 2; i < argc; i++)
		one(atoll(argv[i]) * 1000, wake, lat, (i - 2) * rounds);
	return 0;
}
