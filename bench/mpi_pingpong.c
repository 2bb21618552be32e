/* SPDX-License-Identifier: MIT */
/*
 * The latency a message gains under libsonde-mpi.so (bench/mpi.sh). Ranks 0 and 1 bounce an
 * 8-byte message ROUNDS times per batch; with one rank, it sends each message to itself and
 * receives it (MPI_Send, then MPI_Recv: both ends' CPU cost, one after the other).
 *
 * Batches take turns between three kinds, so that all see the same machine (on a shared machine
 * the load changes from second to second, and a comparison of two runs measures the load as much
 * as the wrappers): the MPI_ routines (the wrappers, when libsonde-mpi.so is preloaded), the
 * PMPI_ ones (the MPI library alone, in the same process), and the PMPI_ ones with the message
 * typed as sonde's piggybacking types it — a struct datatype {2 int64 in a slot elsewhere,
 * the 8 bytes} — which is what the MPI library itself charges for a piggybacked message (no
 * wrapper involved). A fourth kind types the same two parts as an hindexed type of MPI_BYTE
 * {16 bytes at the slot, 8 at the data}, another construction of the same message, to show
 * whether the library handles it faster. Each kind's fastest batch gives ns per one-way
 * message. Uninstrumented, the first two kinds are the same calls (MPI_Send is PMPI_Send):
 * their difference is the noise.
 * Prints "oneway_ns W direct_ns D struct_ns S hindexed_ns H value V" on rank 0.
 *   mpi_pingpong [ROUNDS [BATCHES]]   (defaults 1000 and 200 of each kind)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

#define KINDS 4

typedef int (*send_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
typedef int (*recv_fn)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);

/* One batch: ns per one-way message of count elements of dt from v. */
static double batch(send_fn snd, recv_fn rcv, MPI_Datatype dt, int rank, int size, int rounds,
		    long *v)
{
	double t;
	int i;

	PMPI_Barrier(MPI_COMM_WORLD);
	t = PMPI_Wtime();
	for (i = 0; i < rounds; i++) {
		if (size == 1) {
			snd(v, 1, dt, 0, 0, MPI_COMM_WORLD);
			rcv(v, 1, dt, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			++*v;
		} else if (rank == 0) {
			snd(v, 1, dt, 1, 0, MPI_COMM_WORLD);
			rcv(v, 1, dt, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			rcv(v, 1, dt, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			++*v;
			snd(v, 1, dt, 0, 0, MPI_COMM_WORLD);
		}
	}
	return (PMPI_Wtime() - t) / ((size == 1 ? 1.0 : 2.0) * rounds) * 1e9;
}

/* {2 int64 at slot, 1 long at v}, as runtime/mpi/mpi_comp.c builds it */
static MPI_Datatype struct_type(const long *v, const int64_t *slot)
{
	int len[2] = { 2, 1 };
	MPI_Aint at[2] = { (MPI_Aint)((const char *)slot - (const char *)v), 0 };
	MPI_Datatype kinds[2] = { MPI_INT64_T, MPI_LONG }, t;

	PMPI_Type_create_struct(2, len, at, kinds, &t);
	PMPI_Type_commit(&t);
	return t;
}

/* the same two parts as bytes: {16 bytes at slot, sizeof(long) at v} */
static MPI_Datatype hindexed_type(const long *v, const int64_t *slot)
{
	int len[2] = { 2 * (int)sizeof(int64_t), (int)sizeof(long) };
	MPI_Aint at[2] = { (MPI_Aint)((const char *)slot - (const char *)v), 0 };
	MPI_Datatype t;

	PMPI_Type_create_hindexed(2, len, at, MPI_BYTE, &t);
	PMPI_Type_commit(&t);
	return t;
}

int main(int argc, char **argv)
{
	int rank, size, b, k, rounds = argc > 1 ? atoi(argv[1]) : 1000;
	int batches = argc > 2 ? atoi(argv[2]) : 200;
	static int64_t slot[2]; /* apart from v, as the wrappers' slot is from the program's data */
	double best[KINDS] = { -1, -1, -1, -1 }, t;
	MPI_Datatype st, ht;
	long v = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (rounds < 1 || batches < 1)
		MPI_Abort(MPI_COMM_WORLD, 2);
	st = struct_type(&v, slot);
	ht = hindexed_type(&v, slot);
	for (b = 0; b < KINDS * batches; b++) {
		k = (b + b / KINDS) % KINDS; /* the order rotates: no kind always follows the same one */
		if (k == 0)
			t = batch(MPI_Send, MPI_Recv, MPI_LONG, rank, size, rounds, &v);
		else if (k == 1)
			t = batch(PMPI_Send, PMPI_Recv, MPI_LONG, rank, size, rounds, &v);
		else if (k == 2)
			t = batch(PMPI_Send, PMPI_Recv, st, rank, size, rounds, &v);
		else
			t = batch(PMPI_Send, PMPI_Recv, ht, rank, size, rounds, &v);
		if (best[k] < 0 || t < best[k])
			best[k] = t;
	}
	PMPI_Type_free(&st);
	PMPI_Type_free(&ht);
	if (rank == 0)
		printf("oneway_ns %.1f direct_ns %.1f struct_ns %.1f hindexed_ns %.1f value %ld\n",
		       best[0], best[1], best[2], best[3], v);
	MPI_Finalize();
	return 0;
}
