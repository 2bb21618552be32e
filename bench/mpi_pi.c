/* SPDX-License-Identifier: MIT */
/*
 * Seed 001's Table 1 program (bench/mpi.sh): a master/worker Monte Carlo estimate of pi, the
 * area under 4/(1+x^2) on [0,1]. The master waits for a request from any worker, sends it a work
 * packet — the seed of a chunk of random points, so that computing, not copying, takes the time —
 * and waits for the chunk's count of points under the curve; workers draw the points, 12 at a
 * time, and test them with inside(), an instrumented function (its probes then make the run
 * about 70 % longer, as seed 001's 73 %; the more of the run the probes are, the more any
 * slowing of the machine during a run is multiplied in the compensated times). uniform(), called
 * per number, is not instrumented. inside() is kept out of line (noinline) in every build, so
 * that the uninstrumented and the instrumented programs are the same code apart from the probes:
 * instrumented, GCC does not inline it (its hooks would be called at every inlined copy), and a
 * plain build that inlines and vectorizes it would be another program. Built with
 * -DINLINE_INSIDE, the plain program inlines it: bench/mpi.sh reports that difference apart
 * (what instrumenting costs in code generation, which no compensation of the probes' cost can
 * remove). Few, large chunks: on a loaded machine each message can take milliseconds. One chunk
 * is out at a time, so only one worker computes at once (4 ranks on this machine's 2 CPUs would
 * otherwise time-share, and the probes' cost would be stretched by the sharing; bench/mpi.py
 * pins all four ranks to one CPU, where the waiting ones yield it to the computing one).
 * Every rank prints, over its time from the end of MPI_Init to the start of MPI_Finalize, what
 * the scheduler did to it (read outside that time): "rank R ns T cpu C rq Q slices S vcsw V
 * ivcsw I chunks K work_wall W work_cpu U" — CPU time and run-queue delay from
 * /proc/thread-self/schedstat, context switches from getrusage, and for a worker its chunks'
 * wall and CPU time (the difference: computing time during which another task had its CPU).
 * The master prints which worker got each chunk ("order 1 2 3 ...") and the calls of inside()
 * ("pi P inside_calls N"); rank 1, after MPI_Finalize, a probe pair's cost in situ (gauge()).
 *   mpi_pi CHUNKS POINTS   (defaults 6 and 10000000; POINTS is rounded down to a multiple of 12)
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define TAG_REQ 1
#define TAG_WORK 2
#define TAG_DONE 3

#ifdef INLINE_INSIDE
#define INSIDE_ATTR
#else
#define INSIDE_ATTR __attribute__((noinline))
#endif

int inside(const double *xy);

/* points per inside() call: 12 made the probes about 70 % of the work at 65 ns a probe pair, as in
 * the seed; bench/mpi.sh sets it (BENCH_MPI_PER_CALL) for a machine with cheaper probes */
#ifndef PER_CALL
#define PER_CALL 12
#endif

/* PER_CALL points (x, y): how many lie under the curve. */
INSIDE_ATTR int inside(const double *xy)
{
	int i, n = 0;

	for (i = 0; i < 2 * PER_CALL; i += 2)
		n += xy[i + 1] * (1.0 + xy[i] * xy[i]) < 1.0;
	return n;
}

/*
 * The same code as inside(), never instrumented: what inside() costs without its probes at the
 * same moment, for the gauge below. noinline like inside(), so both are the same machine code
 * in the uninstrumented build.
 */
__attribute__((noinline, no_instrument_function)) int inside_plain(const double *xy)
{
	int i, n = 0;

	for (i = 0; i < 2 * PER_CALL; i += 2)
		n += xy[i + 1] * (1.0 + xy[i] * xy[i]) < 1.0;
	return n;
}

__attribute__((no_instrument_function)) static double uniform(unsigned long long *seed)
{
	*seed ^= *seed << 13;
	*seed ^= *seed >> 7;
	*seed ^= *seed << 17;
	return (double)(*seed >> 11) / 9007199254740992.0;
}

#define NIF __attribute__((no_instrument_function))

/* What the scheduler did to the rank's thread (read outside the timed part). */
struct sched {
	unsigned long long run_ns, wait_ns, slices; /* /proc/thread-self/schedstat */
	long vcsw, ivcsw;                           /* getrusage(RUSAGE_THREAD) */
};

NIF static void sched_read(struct sched *s)
{
	struct rusage ru;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (!f || fscanf(f, "%llu %llu %llu", &s->run_ns, &s->wait_ns, &s->slices) != 3)
		s->run_ns = s->wait_ns = s->slices = 0;
	if (f)
		fclose(f);
	getrusage(RUSAGE_THREAD, &ru);
	s->vcsw = ru.ru_nvcsw;
	s->ivcsw = ru.ru_nivcsw;
}

NIF static long long ns_of(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A worker's computing: chunks, their wall time and their CPU time. */
static long long work_wall, work_cpu;
static int work_chunks;

/* A chunk of points: x and y/4 in [0,1); (x, y) is under the curve when y/4 (1+x^2) < 1. */

#define MAX_ORDER 4096
static int order[MAX_ORDER]; /* the master's hand-outs: the worker of each chunk */

static long master(int size, int chunks)
{
	unsigned long long seed;
	long hits = 0, h;
	int sent, stopped = 0, req;
	MPI_Status st;

	for (sent = 0; stopped < size - 1;) {
		MPI_Recv(&req, 1, MPI_INT, MPI_ANY_SOURCE, TAG_REQ, MPI_COMM_WORLD, &st);
		if (sent == chunks) {
			MPI_Send(&seed, 0, MPI_UNSIGNED_LONG_LONG, st.MPI_SOURCE, TAG_DONE,
				 MPI_COMM_WORLD);
			stopped++;
			continue;
		}
		if (sent < MAX_ORDER)
			order[sent] = st.MPI_SOURCE; /* which worker computes which chunk */
		seed = 88172645463325252ull + 7919ull * (unsigned long long)sent;
		MPI_Send(&seed, 1, MPI_UNSIGNED_LONG_LONG, st.MPI_SOURCE, TAG_WORK, MPI_COMM_WORLD);
		MPI_Recv(&h, 1, MPI_LONG, st.MPI_SOURCE, TAG_WORK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		hits += h;
		sent++;
	}
	return hits;
}

/*
 * A chunk: `points` points drawn from `seed`, tested by fn. Always inlined with fn a constant, so
 * the worker's loop and the gauge's loops are the same code calling inside() (or inside_plain())
 * directly.
 */
__attribute__((always_inline, no_instrument_function)) static inline long
chunk(int (*fn)(const double *), unsigned long long seed, int points)
{
	double xy[2 * PER_CALL];
	long h = 0;
	int i, k;

	for (i = 0; i + PER_CALL <= points; i += PER_CALL) {
		for (k = 0; k < 2 * PER_CALL; k++)
			xy[k] = uniform(&seed);
		h += fn(xy);
	}
	return h;
}

static void worker(int points)
{
	unsigned long long seed;
	MPI_Status st;
	long long w0, c0;
	long h;
	int req = 0;

	for (;;) {
		MPI_Send(&req, 1, MPI_INT, 0, TAG_REQ, MPI_COMM_WORLD);
		MPI_Recv(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
		if (st.MPI_TAG == TAG_DONE)
			return;
		w0 = ns_of(CLOCK_MONOTONIC);
		c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
		h = chunk(inside, seed, points);
		work_cpu += ns_of(CLOCK_THREAD_CPUTIME_ID) - c0;
		work_wall += ns_of(CLOCK_MONOTONIC) - w0;
		work_chunks++;
		MPI_Send(&h, 1, MPI_LONG, 0, TAG_WORK, MPI_COMM_WORLD);
	}
}

NIF static void print_order(int chunks)
{
	int i;

	printf("order");
	for (i = 0; i < chunks && i < MAX_ORDER; i++)
		printf(" %d", order[i]);
	printf("\n");
}

#ifndef GAUGE_BLOCKS
#define GAUGE_BLOCKS 24
#endif
#ifndef GAUGE_POINTS
#define GAUGE_POINTS 48000
#endif

NIF static long long gauge_plain(unsigned long long seed, long *h)
{
	long long c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);

	*h += chunk(inside_plain, seed, GAUGE_POINTS);
	return ns_of(CLOCK_THREAD_CPUTIME_ID) - c0;
}

NIF static long long gauge_probed(unsigned long long seed, long *h)
{
	long long c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);

	*h += chunk(inside, seed, GAUGE_POINTS);
	return ns_of(CLOCK_THREAD_CPUTIME_ID) - c0;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/*
 * The probes' cost in situ, after MPI_Finalize (outside every time Table 1 reports): blocks of
 * the workers' loop through inside() and through inside_plain() taking turns, each timed in CPU
 * time; the median difference per call is what a probe pair of inside() costs here and now,
 * whatever the machine's speed in this run (both sides see it). Uninstrumented, ~0 (the
 * gauge's own error). Rank 1 only: "gauge_pair_ns G".
 */
NIF static void gauge(double plain_before)
{
	long long d[GAUGE_BLOCKS], p[GAUGE_BLOCKS];
	long h = 0; /* the points' count, kept so that the loops are not optimized away */
	int b;

	for (b = 0; b < GAUGE_BLOCKS; b++) {
		p[b] = gauge_plain(11ull + (unsigned long long)b, &h);
		d[b] = gauge_probed(11ull + (unsigned long long)b, &h) - p[b];
	}
	qsort(d, GAUGE_BLOCKS, sizeof(d[0]), cmp_ll);
	qsort(p, GAUGE_BLOCKS, sizeof(p[0]), cmp_ll);
	printf("gauge_pair_ns %.2f plain_point_ns %.3f plain_before_ns %.3f gauge_hits %ld\n",
	       (double)d[GAUGE_BLOCKS / 2] / (GAUGE_POINTS / PER_CALL),
	       (double)p[GAUGE_BLOCKS / 2] / GAUGE_POINTS, plain_before, h);
}

/*
 * The plain loop's speed before MPI_Init, ns per point (median of blocks): with the gauge's
 * after MPI_Finalize it tells whether the CPU ran at one speed over the run. This machine's
 * vCPUs switch, for seconds at a time, between two speeds (the plain loop 3.1-3.2 or 3.6-4.0 ns
 * a point; a probe pair 5 or 15 ns: docs/benchmarks.md), which no compensation can remove.
 */
static volatile long gauge_sink;

NIF static double plain_speed(void)
{
	long long p[GAUGE_BLOCKS / 2];
	long h = 0;
	int b;

	for (b = 0; b < GAUGE_BLOCKS / 2; b++)
		p[b] = gauge_plain(7ull + (unsigned long long)b, &h);
	gauge_sink = h; /* the points' count: the loops are not optimized away */
	qsort(p, GAUGE_BLOCKS / 2, sizeof(p[0]), cmp_ll);
	return (double)p[GAUGE_BLOCKS / 4] / GAUGE_POINTS;
}

int main(int argc, char **argv)
{
	int rank, size, chunks = argc > 1 ? atoi(argv[1]) : 6;
	int points = argc > 2 ? atoi(argv[2]) : 10000000;
	struct sched s0, s1;
	double t0, t1;
	long hits;
	double before = plain_speed(); /* outside the times Table 1 reports */

	MPI_Init(&argc, &argv);
	sched_read(&s0);
	t0 = MPI_Wtime();
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	points -= points % PER_CALL;
	if (size < 2 || chunks < 1 || points < PER_CALL)
		MPI_Abort(MPI_COMM_WORLD, 2);
	if (rank == 0) {
		hits = master(size, chunks);
		printf("pi %.4f inside_calls %ld\n", 4.0 * (double)hits / ((double)chunks * points),
		       (long)chunks * (points / PER_CALL));
	} else {
		worker(points);
	}
	t1 = MPI_Wtime();
	sched_read(&s1);
	if (rank == 0)
		print_order(chunks);
	printf("rank %d ns %.0f cpu %llu rq %llu slices %llu vcsw %ld ivcsw %ld chunks %d "
	       "work_wall %lld work_cpu %lld\n", rank, (t1 - t0) * 1e9, s1.run_ns - s0.run_ns,
	       s1.wait_ns - s0.wait_ns, s1.slices - s0.slices, s1.vcsw - s0.vcsw,
	       s1.ivcsw - s0.ivcsw, work_chunks, work_wall, work_cpu);
	MPI_Finalize();
	if (rank == 1)
		gauge(before);
	return 0;
}
