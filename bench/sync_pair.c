/* SPDX-License-Identifier: MIT */
/*
 * Uncontended lock/unlock pairs of one mutex (and of one spinlock), timed inside the program:
 * prints "mutex_ns <per pair> spin_ns <per pair>" (the fastest of 7 batches). Run alone, under
 * `sonde run` (wrappers present, not measuring) and under `sonde run --sync` by bench/sync.sh.
 * Only main is instrumented, so no probe runs inside the timed loops.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_spinlock_t s;
	long n = argc > 1 ? atol(argv[1]) : 2000000, i;
	double best_m = 1e30, best_s = 1e30, t0, t;
	int b;

	pthread_spin_init(&s, PTHREAD_PROCESS_PRIVATE);
	for (b = 0; b < 7; b++) {
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			pthread_mutex_lock(&m);
			pthread_mutex_unlock(&m);
		}
		t = (now_ns() - t0) / (double)n;
		best_m = t < best_m ? t : best_m;
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			pthread_spin_lock(&s);
			pthread_spin_unlock(&s);
		}
		t = (now_ns() - t0) / (double)n;
		best_s = t < best_s ? t : best_s;
	}
	printf("mutex_ns %.2f spin_ns %.2f\n", best_m, best_s);
	return 0;
}
