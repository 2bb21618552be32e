/*
 * A target for `sonde attach`: the main thread and N-1 workers (argv[1], default 4) compute
 * the same rounds of integer and floating-point work over and over, each round compared
 * bit for bit with the first (registers or vector state disturbed by the tool would show);
 * the main thread sleeps a little between rounds, a reader thread checksums stdin. At stdin
 * EOF, or at SIGTERM/SIGINT, it prints the input's checksum, each thread's round value and
 * the number of SIGUSR1 received (each acknowledged with "usr1" on stderr): the output depends
 * only on the input and the signals sent, never on timing or on being attached to.
 * With "malloc" as argv[2], the rounds are malloc and free of many blocks instead: the
 * threads spend their time in the allocator, where a careless injection would deadlock.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 16

struct worker {
	pthread_t th;
	int index;
	uint64_t first;
	long bad_round; /* -1: every round gave the first one's value */
};

static int churn;
static atomic_int stop;
static atomic_int usr1;
static uint64_t in_sum = 1469598103934665603ull, in_bytes;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&usr1, 1);
	if (write(2, "usr1\n", 5) < 0)
		return;
}

static void on_term(int sig)
{
	(void)sig;
	atomic_store(&stop, 1);
}

/* Values kept in registers across the whole loop: x in an SSE register, h in a GPR. */
static uint64_t round_value(int seed)
{
	double x = 1.0 + seed, y = 0.5;
	uint64_t h = 14695981039346656037ull ^ (uint64_t)seed, bits;
	int i;

	for (i = 0; i < 300000; i++) {
		x = x * 1.0000001 + y / (1.0 + (double)(i & 1023));
		y = y * 0.999999 + 1e-7 * x;
		h = (h ^ (uint64_t)i) * 1099511628211ull;
	}
	memcpy(&bits, &x, sizeof(bits));
	return h ^ bits ^ (uint64_t)(y * 1e9);
}

static uint64_t churn_value(int seed)
{
	uint64_t h = (uint64_t)seed;
	int i;

	for (i = 0; i < 20000; i++) {
		unsigned char *p = malloc(16 + (size_t)(i * 37 % 4000));

		if (!p)
			abort();
		p[0] = (unsigned char)i;
		h = h * 31 + p[0];
		free(p);
	}
	return h;
}

static uint64_t value(int seed)
{
	return churn ? churn_value(seed) : round_value(seed);
}

static void work(struct worker *w, int nap)
{
	struct timespec ts = { 0, 200000 };
	long r;

	w->first = value(w->index);
	w->bad_round = -1;
	for (r = 1; !atomic_load(&stop); r++) {
		if (value(w->index) != w->first && w->bad_round < 0)
			w->bad_round = r;
		if (nap)
			nanosleep(&ts, NULL);
	}
}

static void *worker_main(void *arg)
{
	work(arg, 0);
	return NULL;
}

static void *reader_main(void *arg)
{
	unsigned char buf[4096];
	ssize_t n, i;

	(void)arg;
	while ((n = read(0, buf, sizeof(buf))) != 0) {
		if (n < 0)
			continue; /* EINTR: a signal handler ran on this thread */
		for (i = 0; i < n; i++)
			in_sum = (in_sum ^ buf[i]) * 1099511628211ull;
		in_bytes += (uint64_t)n;
	}
	atomic_store(&stop, 1);
	return NULL;
}

static void handle(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv)
{
	struct worker w[MAX_THREADS];
	pthread_t reader;
	int n = argc > 1 ? atoi(argv[1]) : 4, i;

	if (n < 1 || n > MAX_THREADS)
		return 2;
	churn = argc > 2 && !strcmp(argv[2], "malloc");
	handle(SIGUSR1, on_usr1);
	handle(SIGTERM, on_term);
	handle(SIGINT, on_term);
	for (i = 0; i < n; i++)
		w[i].index = i;
	for (i = 1; i < n; i++)
		if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0)
			return 1;
	if (pthread_create(&reader, NULL, reader_main, NULL) != 0)
		return 1;
	fprintf(stderr, "ready\n");
	work(&w[0], 1);
	for (i = 1; i < n; i++)
		pthread_join(w[i].th, NULL);
	printf("input: %llu bytes, checksum %016llx\n", (unsigned long long)in_bytes,
	       (unsigned long long)in_sum);
	for (i = 0; i < n; i++)
		if (w[i].bad_round < 0)
			printf("thread %d: %016llx, every round the same\n", i,
			       (unsigned long long)w[i].first);
		else
			printf("thread %d: round %ld differs from the first\n", i, w[i].bad_round);
	printf("signals: %d\n", atomic_load(&usr1));
	return 0;
}
