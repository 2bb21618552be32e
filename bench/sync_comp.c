/* SPDX-License-Identifier: MIT */
/*
 * Multi-threaded programs of known shape for the shared-memory compensation benchmark
 * (bench/sync.sh): built once plain and once with `sonde cc`, their compensated time under
 * `sonde run --sync` is compared with the plain build's time. Prints "elapsed_ns N" (main's
 * own time) and a checksum, then each worker's CPU time and the time it spent runnable but
 * waiting for a CPU (the run-queue delay of /proc/thread-self/schedstat): bench/sync.py uses
 * them to tell the probes' cost in situ from the calibrated one, and to see the machine's load.
 * Worker 0 also notes when each of its rounds ends, and main prints the median round ("round_ns":
 * robust to the few rounds a loaded machine stretches by milliseconds, unlike the elapsed time).
 * Each worker also times what it spent blocked, as the program sees it ("blocked", "blocked_ns":
 * lock, its contended pthread_mutex_lock calls; handoff, its pthread_mutex_lock and
 * pthread_cond_wait calls until its turn, in the rounds it had to wait; barrier, every
 * pthread_barrier_wait, as the runtime times them), for bench/sync.py to hold against the
 * compensated waits. Each worker also counts the rounds in which it found the other worker last seen on its own
 * CPU ("shared": the two threads took turns on one CPU instead of running in parallel, which
 * the compensation's model does not cover). SYNC_COMP_PIN=apart pins worker i to CPU i,
 * SYNC_COMP_PIN=together both to the last CPU (bench/sync.py compares the placements).
 * Built with -DSYNC_COMP_DISTURB=N (bench/sync.sh's sync_comp.disturb), each worker also reads
 * its CPU-time clock and the monotonic clock every N steps (what an in-situ window's boundary
 * does, runtime/insitu.c) and prints "disturb_ns", the time those reads took: how the program's
 * elapsed time answers a small uniform disturbance that is not sonde's, for bench/sync.py.
 * Each thread calls a short function `step` many times, so probes cost a good share of the run,
 * and synchronizes with the others:
 *   handoff   2 threads take turns through one mutex (a token passed with a condition variable)
 *   barrier   2 threads, one with 3x the work of the other, meet at a barrier each round
 *   lock      2 threads update shared state under one mutex, much work outside it
 *   serial    the same with 8x the work inside the mutex (2 WORK) as outside it (WORK): the lock
 *             is the program's bottleneck, its threads run one after the other
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS 2

static const char *mode;
static long rounds, work;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cond = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t barrier;
static int turn;
static unsigned long shared_sum;
static long long cpu_ns[THREADS], runq_ns[THREADS], life_ns[THREADS];
static long long blocked_ns[THREADS]; /* time in the calls that blocked (above) */
static long blocked[THREADS];         /* their rounds */
static long shared_rounds[THREADS];
static long long *round_end; /* worker 0's, ns */
static volatile int last_cpu[THREADS] = { -1, -1 };

/* CLOCK_MONOTONIC in ns; not instrumented, so that the instrumented build has no more probes. */
__attribute__((no_instrument_function)) static long long now_ns(void)
{
	struct timespec c;

	clock_gettime(CLOCK_MONOTONIC, &c);
	return (long long)c.tv_sec * 1000000000ll + c.tv_nsec;
}

/* Once per round: whether the other worker was last seen on this worker's CPU. */
static void note_cpu(int id)
{
	int c = sched_getcpu();

	last_cpu[id] = c;
	if (c >= 0 && last_cpu[(id + 1) % THREADS] == c)
		shared_rounds[id]++;
}

static void round_done(int id, long r)
{
	if (id == 0 && round_end)
		round_end[r] = now_ns();
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

/* The median of worker 0's rounds (the time from one round's end to the next), ns. */
static long long median_round(void)
{
	long i;

	if (!round_end || rounds < 2)
		return 0;
	for (i = rounds - 1; i > 0; i--)
		round_end[i] -= round_end[i - 1];
	qsort(round_end + 1, (size_t)(rounds - 1), sizeof(*round_end), cmp_ll);
	return round_end[1 + (rounds - 1) / 2];
}

__attribute__((noinline)) static unsigned long step(unsigned long x)
{
	int i;

	for (i = 0; i < 20; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

#ifdef SYNC_COMP_DISTURB
static long long disturb_ns[THREADS];
static __thread unsigned long steps;
static __thread int worker_id;

/* Every SYNC_COMP_DISTURB steps: two clock reads, timed (the timing's own reads are vDSO ones). */
__attribute__((no_instrument_function)) static void disturb(void)
{
	struct timespec c;
	long long t0;

	if (++steps % SYNC_COMP_DISTURB)
		return;
	t0 = now_ns();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
	disturb_ns[worker_id] += now_ns() - t0;
}
#else
__attribute__((no_instrument_function)) static void disturb(void)
{
}
#endif

static unsigned long compute(long n, unsigned long x)
{
	long i;

	for (i = 0; i < n; i++) {
		x = step(x);
		disturb();
	}
	return x;
}

static void handoff(int id)
{
	long r;

	long long t0;
	int waited;

	for (r = 0; r < rounds; r++) {
		t0 = now_ns();
		pthread_mutex_lock(&lock);
		waited = turn != id;
		while (turn != id)
			pthread_cond_wait(&turn_cond, &lock);
		if (waited) {
			blocked[id]++;
			blocked_ns[id] += now_ns() - t0;
		}
		note_cpu(id);
		shared_sum += compute(work, (unsigned long)r);
		turn = (id + 1) % THREADS;
		pthread_cond_broadcast(&turn_cond);
		pthread_mutex_unlock(&lock);
		round_done(id, r);
	}
}

static void barrier_rounds(int id)
{
	unsigned long x = 0;
	long long t0;
	long r;

	for (r = 0; r < rounds; r++) {
		x = compute(id == 0 ? 3 * work : work, x);
		note_cpu(id);
		t0 = now_ns();
		pthread_barrier_wait(&barrier);
		blocked[id]++;
		blocked_ns[id] += now_ns() - t0;
		round_done(id, r);
	}
	pthread_mutex_lock(&lock);
	shared_sum += x;
	pthread_mutex_unlock(&lock);
}

/* glibc's lock word, the mutex's first int: 0 when free (as the runtime's wrapper looks). */
static int lock_taken(void)
{
	return __atomic_load_n((const int *)&lock, __ATOMIC_RELAXED) != 0;
}

/* Rounds of WORK steps outside the lock and `inside` steps under it. */
static void lock_rounds(int id, long inside)
{
	unsigned long x = (unsigned long)id;
	long long t0;
	long r;
	int taken;

	for (r = 0; r < rounds; r++) {
		x = compute(work, x);
		note_cpu(id);
		taken = lock_taken();
		t0 = taken ? now_ns() : 0;
		pthread_mutex_lock(&lock);
		if (taken) {
			blocked[id]++;
			blocked_ns[id] += now_ns() - t0;
		}
		shared_sum += compute(inside, x);
		pthread_mutex_unlock(&lock);
		round_done(id, r);
	}
}

/* The calling thread's run-queue delay so far (ns), 0 when the kernel does not say. */
static long long runq_delay(void)
{
	long long run = 0, wait = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%lld %lld", &run, &wait) != 2)
		wait = 0;
	fclose(f);
	return wait;
}

/* SYNC_COMP_PIN: the worker's CPU, or none (the scheduler's choice). */
static void pin(int id)
{
	const char *how = getenv("SYNC_COMP_PIN");
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	if (!how || n < 1)
		return;
	CPU_ZERO(&set);
	if (!strcmp(how, "apart"))
		CPU_SET(id % n, &set);
	else if (!strcmp(how, "together"))
		CPU_SET(n - 1, &set);
	else
		return;
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *worker(void *arg)
{
	int id = (int)(long)arg;
	long long q0, t0;
	struct timespec c;

	pin(id);
#ifdef SYNC_COMP_DISTURB
	worker_id = id;
#endif
	q0 = runq_delay();
	t0 = now_ns();

	if (!strcmp(mode, "handoff"))
		handoff(id);
	else if (!strcmp(mode, "barrier"))
		barrier_rounds(id);
	else if (!strcmp(mode, "serial"))
		lock_rounds(id, 2 * work);
	else
		lock_rounds(id, work / 4);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
	cpu_ns[id] = (long long)c.tv_sec * 1000000000ll + c.tv_nsec;
	runq_ns[id] = runq_delay() - q0;
	life_ns[id] = now_ns() - t0;
	return NULL;
}

#define SPEED_BLOCKS 5
#define SPEED_STEPS 10000 /* of 12 points each */

/*
 * One block of the speed loop, no probe: bench/mpi_pi.c's plain loop (24 random doubles, then
 * how many of their 12 points lie under the curve), many independent operations a step, so that
 * it feels what a busy sibling hyperthread takes (a chain of dependent operations does not).
 */
__attribute__((no_instrument_function, noinline)) static unsigned long speed_block(unsigned long x)
{
	double xy[24];
	unsigned long n = 0;
	long i;
	int k;

	for (i = 0; i < SPEED_STEPS; i++) {
		for (k = 0; k < 24; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			xy[k] = (double)(x >> 11) * (1.0 / 9007199254740992.0);
		}
		for (k = 0; k < 24; k += 2)
			n += xy[k + 1] * (1.0 + xy[k] * xy[k]) < 1.0;
	}
	return x + n;
}

/*
 * The plain loop's speed on CPU `cpu`, ns a step (median of SPEED_BLOCKS blocks, in CPU time),
 * the calling thread pinned there for it; -1 when it cannot be pinned. This machine's vCPUs run
 * at one of two speeds for seconds at a time (docs/measurement.md): bench/sync.py compares the
 * runs made at one speed. Outside main's timed part.
 */
__attribute__((no_instrument_function)) static double speed_on(int cpu)
{
	long long t[SPEED_BLOCKS];
	static volatile unsigned long sink;
	cpu_set_t set;
	int k;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		return -1;
	for (k = 0; k < SPEED_BLOCKS; k++) {
		struct timespec c0, c1;

		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
		sink = speed_block(sink + (unsigned long)k + 1);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
		t[k] = (long long)(c1.tv_sec - c0.tv_sec) * 1000000000ll + (c1.tv_nsec - c0.tv_nsec);
	}
	qsort(t, SPEED_BLOCKS, sizeof(t[0]), cmp_ll);
	return (double)t[SPEED_BLOCKS / 2] / SPEED_STEPS;
}

/* "speed B A" per CPU (B before the timed part, A after), main's CPU mask as it was after. */
__attribute__((no_instrument_function)) static void speeds(double *v, int n)
{
	cpu_set_t was;
	int cpu;

	if (sched_getaffinity(0, sizeof(was), &was) != 0)
		return;
	for (cpu = 0; cpu < n; cpu++)
		v[cpu] = speed_on(cpu);
	sched_setaffinity(0, sizeof(was), &was);
}

int main(int argc, char **argv)
{
	pthread_t th[THREADS];
	struct timespec a, b;
	double before[THREADS] = { -1, -1 }, after[THREADS] = { -1, -1 };
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	long i;

	if (argc < 4) {
		fprintf(stderr, "usage: sync_comp handoff|barrier|lock|serial ROUNDS WORK\n");
		return 2;
	}
	mode = argv[1];
	rounds = atol(argv[2]);
	work = atol(argv[3]);
	if (rounds > 0)
		round_end = calloc((size_t)rounds, sizeof(*round_end));
	ncpu = ncpu < THREADS ? ncpu : THREADS;
	speeds(before, ncpu);
	clock_gettime(CLOCK_MONOTONIC, &a);
	pthread_barrier_init(&barrier, NULL, THREADS);
	for (i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	speeds(after, ncpu);
	for (i = 0; i < ncpu; i++)
		printf("speed cpu%ld %.3f %.3f\n", i, before[i], after[i]);
	printf("elapsed_ns %lld sum %lu round_ns %lld\n",
	       (long long)(b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec), shared_sum,
	       median_round());
	for (i = 0; i < THREADS; i++)
		printf("worker %ld cpu_ns %lld runq_ns %lld shared %ld life_ns %lld blocked %ld "
		       "blocked_ns %lld\n", i, cpu_ns[i], runq_ns[i], shared_rounds[i], life_ns[i],
		       blocked[i], blocked_ns[i]);
#ifdef SYNC_COMP_DISTURB
	for (i = 0; i < THREADS; i++)
		printf("worker %ld disturb_ns %lld every %d\n", i, disturb_ns[i], SYNC_COMP_DISTURB);
#endif
	return 0;
}
