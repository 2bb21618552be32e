/* SPDX-License-Identifier: MIT */
/*
 * A known delay for parallel compensation (tests/integration, "mpi_delay"): rank 1 runs
 * 200000 measured calls of work() — its overhead is their probes' cost, which the profile
 * states — then sends one message to rank 0, which waits for it in MPI_Recv. Without
 * measurement rank 0 would have waited that much less: with piggybacking it inherits rank 1's
 * delay; the final barrier hands it to ranks 2 and 3, which waited there for ranks 0 and 1.
 */
#include <mpi.h>
#include <stdio.h>

static volatile long acc;

void work(long i);
void work(long i)
{
	acc += i % 7;
}

int main(int argc, char **argv)
{
	int rank;
	long i, v = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank == 1) {
		for (i = 0; i < 200000; i++)
			work(i);
		v = acc;
		MPI_Send(&v, 1, MPI_LONG, 0, 1, MPI_COMM_WORLD);
	} else if (rank == 0) {
		MPI_Recv(&v, 1, MPI_LONG, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		printf("received %ld\n", v);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
