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
 * pins the master to one CPU and the workers to the other). Every rank prints its time from the
 * end of MPI_Init to the start of MPI_Finalize: "rank R ns T"; the master also the calls of
 * inside(): "pi P inside_calls N".
 *   mpi_pi CHUNKS POINTS   (defaults 6 and 10000000; POINTS is rounded down to a multiple of 12)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define TAG_REQ 1
#define TAG_WORK 2
#define TAG_DONE 3

#ifdef INLINE_INSIDE
#define INSIDE_ATTR
#else
#define INSIDE_ATTR __attribute__((noinline))
#endif

int inside(const double *xy);

#define PER_CALL 12 /* the probes then cost about 70 % of the work here, as in the seed */

/* PER_CALL points (x, y): how many lie under the curve. */
INSIDE_ATTR int inside(const double *xy)
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

/* A chunk of points: x and y/4 in [0,1); (x, y) is under the curve when y/4 (1+x^2) < 1. */

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
		seed = 88172645463325252ull + 7919ull * (unsigned long long)sent;
		MPI_Send(&seed, 1, MPI_UNSIGNED_LONG_LONG, st.MPI_SOURCE, TAG_WORK, MPI_COMM_WORLD);
		MPI_Recv(&h, 1, MPI_LONG, st.MPI_SOURCE, TAG_WORK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		hits += h;
		sent++;
	}
	return hits;
}

static void worker(int points)
{
	unsigned long long seed;
	double xy[2 * PER_CALL];
	MPI_Status st;
	long h;
	int i, k, req = 0;

	for (;;) {
		MPI_Send(&req, 1, MPI_INT, 0, TAG_REQ, MPI_COMM_WORLD);
		MPI_Recv(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
		if (st.MPI_TAG == TAG_DONE)
			return;
		for (h = 0, i = 0; i + PER_CALL <= points; i += PER_CALL) {
			for (k = 0; k < 2 * PER_CALL; k++)
				xy[k] = uniform(&seed);
			h += inside(xy);
		}
		MPI_Send(&h, 1, MPI_LONG, 0, TAG_WORK, MPI_COMM_WORLD);
	}
}

int main(int argc, char **argv)
{
	int rank, size, chunks = argc > 1 ? atoi(argv[1]) : 6;
	int points = argc > 2 ? atoi(argv[2]) : 10000000;
	double t0, t1;
	long hits;

	MPI_Init(&argc, &argv);
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
	printf("rank %d ns %.0f\n", rank, (t1 - t0) * 1e9);
	MPI_Finalize();
	return 0;
}
