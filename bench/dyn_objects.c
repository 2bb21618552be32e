/*
 * What a sync object or file focus of `sonde watch` costs the program (bench/dyn_objects.sh):
 * times, inside the program, N uncontended lock/unlock pairs of hot_lock (the object a watch
 * focuses on) and of cold_lock (another one: its calls pay the point and a predicate that
 * fails), and N one-byte pwrites to FILE (focused) and to FILE.other. The fastest of 7 batches
 * of each, in ns per operation, on one line. Usage: dyn_objects FILE [N] — it first sleeps
 * 300 ms, so that a watch reading the file's descriptors every 100 ms has seen them.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t hot_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t cold_lock = PTHREAD_MUTEX_INITIALIZER;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double pairs(pthread_mutex_t *m, long n)
{
	double best = 1e30, t;
	long i;
	int b;

	for (b = 0; b < 7; b++) {
		t = now_ns();
		for (i = 0; i < n; i++) {
			pthread_mutex_lock(m);
			pthread_mutex_unlock(m);
		}
		t = (now_ns() - t) / (double)n;
		best = t < best ? t : best;
	}
	return best;
}

static double writes(int fd, long n)
{
	double best = 1e30, t;
	long i;
	int b;

	for (b = 0; b < 7; b++) {
		t = now_ns();
		for (i = 0; i < n; i++)
			if (pwrite(fd, "x", 1, 0) != 1)
				exit(2);
		t = (now_ns() - t) / (double)n;
		best = t < best ? t : best;
	}
	return best;
}

int main(int argc, char **argv)
{
	char other[4200];
	long n = argc > 2 ? atol(argv[2]) : 200000;
	int fd, fd2;

	if (argc < 2 || n <= 0) {
		fprintf(stderr, "usage: dyn_objects FILE [N]\n");
		return 2;
	}
	snprintf(other, sizeof(other), "%s.other", argv[1]);
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	fd2 = open(other, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || fd2 < 0)
		return 2;
	usleep(300000);
	printf("hot_ns %.2f cold_ns %.2f write_ns %.2f other_write_ns %.2f\n", pairs(&hot_lock, n),
	       pairs(&cold_lock, n), writes(fd, n / 4), writes(fd2, n / 4));
	close(fd);
	close(fd2);
	unlink(argv[1]);
	unlink(other);
	return 0;
}
