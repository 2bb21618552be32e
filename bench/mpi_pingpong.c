/* SPDX-License-Identifier: MIT */
/*
 * The latency a message gains under libsonde-mpi.so (bench/mpi.sh): ranks 0 and 1 bounce an
 * 8-byte message ROUNDS times; the fastest of 7 batches gives ns per one-way message. With one
 * rank, it sends each message to itself and receives it (MPI_Send, then MPI_Recv): the CPU cost
 * of a message's two ends, without the scheduling noise of two processes on a shared machine.
 * Prints "oneway_ns N" on rank 0.   mpi_pingpong [ROUNDS]   (default 20000)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int rank, size, i, b, rounds = argc > 1 ? atoi(argv[1]) : 20000;
	double best = 0, t;
	long v = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (b = 0; b < 7; b++) {
		MPI_Barrier(MPI_COMM_WORLD);
		t = MPI_Wtime();
		for (i = 0; i < rounds; i++) {
			if (size == 1) {
				MPI_Send(&v, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD);
				MPI_Recv(&v, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				v++;
			} else if (rank == 0) {
				MPI_Send(&v, 1, MPI_LONG, 1, 0, MPI_COMM_WORLD);
				MPI_Recv(&v, 1, MPI_LONG, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else if (rank == 1) {
				MPI_Recv(&v, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				v++;
				MPI_Send(&v, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD);
			}
		}
		t = (MPI_Wtime() - t) / ((size == 1 ? 1.0 : 2.0) * rounds) * 1e9;
		if (b == 0 || t < best)
			best = t;
	}
	if (rank == 0)
		printf("oneway_ns %.1f value %ld\n", best, v);
	MPI_Finalize();
	return 0;
}
