/* SPDX-License-Identifier: MIT */
/*
 * A planted MPI bottleneck for `sonde consult` (docs/consult.md, docs/mpi.md): a hot peer pair
 * with a late sender on one tag. Every round rank 1 computes (`produce`) and then sends its
 * result to rank 0 with tag 42; rank 0 posts the receive at once (`consume`) and waits for it.
 * Ranks 2 and 3 compute as long and swap results with tag 7, each two rounds ahead of the
 * other's need (two messages sent before the first round): they never wait, however their
 * wake-ups jitter. The consultant should find, over 4 ranks: ExcessiveCommWait -> LateSender at rank 0,
 * in `consume`, from peer rank 1 on tag 42 (on MPI_COMM_WORLD), and no wait at tag 7 nor at
 * ranks 1, 2, 3. Rank 0 computes nothing: CPUBound and LoadImbalance (each of the other three
 * computes a third more than the ranks' mean) hold at ranks 1, 2 and 3 in `produce`.
 *   sonde cc -- mpicc -O1 -g -o consult_mpi_pair examples/consult_mpi_pair.c
 *   mpirun -np 4 sonde run --trace -o run -- ./consult_mpi_pair && sonde consult run
 * The work is a stand-in: a sleep to a deadline, so that what is planted does not depend on
 * how the four ranks (and their MPI library's polling) share this machine's CPUs. A trace has
 * no CPU clock: post mortem, time in a procedure is computing (docs/consult.md). An argument
 * scales the number of rounds (default 1.0).
 */
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

#define WORK_MS 10
#define ROUNDS 200
#define N 256

static volatile double sink;
static double buf[N], other[N];

/* Until ms milliseconds from now. */
static inline __attribute__((always_inline, no_instrument_function)) void pause_ms(double ms)
{
	struct timespec ts;
	long ns;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ns = ts.tv_nsec + (long)(ms * 1e6);
	ts.tv_sec += ns / 1000000000L;
	ts.tv_nsec = ns % 1000000000L;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
		;
}

/* Work for ms milliseconds, into buf. */
static __attribute__((noinline)) void produce(double ms)
{
	int i;

	pause_ms(ms);
	for (i = 0; i < N; i++)
		buf[i] = ms + i;
}

static __attribute__((noinline)) void consume(void)
{
	MPI_Recv(other, N, MPI_DOUBLE, 1, 42, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	sink += other[0];
}

/* This round's result to the peer (its need two rounds on), the peer's of two rounds ago. */
static __attribute__((noinline)) void swap(int peer)
{
	MPI_Send(buf, N, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD);
	MPI_Recv(other, N, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	sink += other[0];
}

/* The head start (before the first round) or the last two (after the last). */
static __attribute__((noinline)) void swap_ends(int peer, int sending)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (sending)
			MPI_Send(buf, N, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD);
		else
			MPI_Recv(other, N, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	int rank, r, rounds;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	rounds = (int)(ROUNDS * (scale > 0 ? scale : 1.0));
	if (rank >= 2)
		swap_ends(5 - rank, 1);
	for (r = 0; r < rounds; r++) {
		if (rank == 0) {
			consume();
		} else if (rank == 1) {
			produce(WORK_MS);
			MPI_Send(buf, N, MPI_DOUBLE, 0, 42, MPI_COMM_WORLD);
		} else {
			produce(WORK_MS);
			swap(5 - rank);
		}
	}
	if (rank >= 2)
		swap_ends(5 - rank, 0);
	MPI_Finalize();
	return sink < 0; /* 0 */
}
