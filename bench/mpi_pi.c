/* SPDX-License-Identifier: MIT */
/*
 * Seed 001's Table 1 program (bench/mpi.sh): a master/worker Monte Carlo estimate of pi, the
 * area under 4/(1+x^2) on [0,1]. The master waits for a request from any worker, sends it a chunk
 * of random points, and waits for the chunk's count of points under the curve; workers test their
 * points with inside(), an instrumented function, 8 points a call. One chunk is out at a time, so
 * only one worker computes at once (4 ranks on this machine's 2 CPUs would otherwise time-share,
 * and the probes' cost would be stretched by the sharing). Every rank prints its time from the
 * end of MPI_Init to the start of MPI_Finalize: "rank R ns T".
 *   mpi_pi CHUNKS POINTS   (defaults 60 and 40000)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define TAG_REQ 1
#define TAG_WORK 2
#define TAG_DONE 3

int inside(const double *xy);

/* 8 points (x, y): how many lie under the curve. */
int inside(const double *xy)
{
	int i, n = 0;

	for (i = 0; i < 16; i += 2)
		n += xy[i + 1] * (1.0 + xy[i] * xy[i]) < 1.0;
	return n;
}

static unsigned long long seed = 88172645463325252ull;

static double uniform(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return (double)(seed >> 11) / 9007199254740992.0;
}

/* A chunk of points: x and y/4 in [0,1); (x, y) is under the curve when y/4 (1+x^2) < 1. */
static void fill(double *buf, int points)
{
	int i;

	for (i = 0; i < 2 * points; i++)
		buf[i] = uniform();
}

static long master(int size, int chunks, int points, double *buf)
{
	long hits = 0, h;
	int sent, stopped = 0, req;
	MPI_Status st;

	for (sent = 0; stopped < size - 1;) {
		MPI_Recv(&req, 1, MPI_INT, MPI_ANY_SOURCE, TAG_REQ, MPI_COMM_WORLD, &st);
		if (sent == chunks) {
			MPI_Send(buf, 0, MPI_DOUBLE, st.MPI_SOURCE, TAG_DONE, MPI_COMM_WORLD);
			stopped++;
			continue;
		}
		fill(buf, points);
		MPI_Send(buf, 2 * points, MPI_DOUBLE, st.MPI_SOURCE, TAG_WORK, MPI_COMM_WORLD);
		MPI_Recv(&h, 1, MPI_LONG, st.MPI_SOURCE, TAG_WORK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		hits += h;
		sent++;
	}
	return hits;
}

static void worker(int points, double *buf)
{
	MPI_Status st;
	long h;
	int i, req = 0;

	for (;;) {
		MPI_Send(&req, 1, MPI_INT, 0, TAG_REQ, MPI_COMM_WORLD);
		MPI_Recv(buf, 2 * points, MPI_DOUBLE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
		if (st.MPI_TAG == TAG_DONE)
			return;
		for (h = 0, i = 0; i + 8 <= points; i += 8)
			h += inside(buf + 2 * i);
		MPI_Send(&h, 1, MPI_LONG, 0, TAG_WORK, MPI_COMM_WORLD);
	}
}

int main(int argc, char **argv)
{
	int rank, size, chunks = argc > 1 ? atoi(argv[1]) : 60;
	int points = argc > 2 ? atoi(argv[2]) : 40000;
	double *buf, t0, t1;
	long hits;

	MPI_Init(&argc, &argv);
	t0 = MPI_Wtime();
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	points -= points % 8;
	buf = malloc(sizeof(double) * 2 * (size_t)points);
	if (!buf || size < 2 || chunks < 1 || points < 8)
		MPI_Abort(MPI_COMM_WORLD, 2);
	if (rank == 0) {
		hits = master(size, chunks, points, buf);
		printf("pi %.4f\n", 4.0 * (double)hits / ((double)chunks * points));
	} else {
		worker(points, buf);
	}
	t1 = MPI_Wtime();
	printf("rank %d ns %.0f\n", rank, (t1 - t0) * 1e9);
	free(buf);
	MPI_Finalize();
	return 0;
}
