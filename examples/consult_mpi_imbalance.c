/* SPDX-License-Identifier: MIT */
/*
 * A planted MPI bottleneck for `sonde consult` (docs/consult.md, docs/mpi.md): one slow rank.
 * Every round each rank computes in `work` and then all meet in `exchange` (an MPI_Allreduce
 * on MPI_COMM_WORLD); rank 2 works four times as long as the others, so they wait for it at
 * the collective. The consultant should find, over 4 ranks: LoadImbalance and CPUBound at
 * rank 2 in `work`, and ExcessiveMPISyncWait -> WaitAtCollective on MPI_COMM_WORLD in
 * `exchange` at ranks 0, 1 and 3, never at rank 2.
 *   sonde cc -- mpicc -O1 -g -o consult_mpi_imbalance examples/consult_mpi_imbalance.c
 *   mpirun -np 4 sonde run --trace -o run -- ./consult_mpi_imbalance && sonde consult run
 * The work is a stand-in: a sleep to a deadline, so that what is planted does not depend on
 * how the four ranks (and their MPI library's polling) share this machine's CPUs. A trace has
 * no CPU clock: post mortem, time in a procedure is computing (docs/consult.md). An argument
 * scales the number of rounds (default 1.0).
 */
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

#define SLOW_MS 20 /* rank 2's work per round */
#define FAST_MS 1 /* the others' */
#define ROUNDS 120

static volatile double sink;

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

/* Work for ms milliseconds. */
static __attribute__((noinline)) void work(double ms)
{
	pause_ms(ms);
	sink += ms;
}

static __attribute__((noinline)) double exchange(double v)
{
	double sum = 0;

	MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	return sum;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0, total = 0;
	int rank, r, rounds;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	rounds = (int)(ROUNDS * (scale > 0 ? scale : 1.0));
	for (r = 0; r < rounds; r++) {
		work(rank == 2 ? SLOW_MS : FAST_MS);
		total += exchange((double)r);
	}
	MPI_Finalize();
	return total > 0 ? 0 : 1;
}
