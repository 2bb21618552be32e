/* SPDX-License-Identifier: MIT */
/*
 * The MPI paths beyond mpi_known.c (tests/integration, "t_mpi_paths"), with 4 ranks in a ring:
 * persistent requests (Send_init, Recv_init, Start, Startall, Request_free), matched probes
 * (Mprobe + Mrecv, Improbe + Imrecv), a cancelled receive, non-blocking collectives (Iallreduce,
 * Ibarrier) and one-sided communication (Put between fences). Every rank checks what it received
 * and the counts MPI_Get_count reports (a piggyback must never show in either), and rank 0
 * prints a checksum of all ranks' data, so that a run under sonde, with or without piggybacking,
 * can be compared with a plain one.
 */
#include <mpi.h>
#include <stdio.h>

#define N 10
#define STARTS 5

static unsigned long sum;
static int errors;

static void mix(const void *p, size_t n)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++)
		sum = sum * 131 + c[i];
}

static void expect_count(const MPI_Status *st, MPI_Datatype dt, int want)
{
	int n = -1;

	MPI_Get_count(st, dt, &n);
	errors += n != want;
}

/* 5 starts of a persistent send to the right and receive from the left (Startall, then
 * Start each, taking turns). */
static void persistent(int rank, int right, int left)
{
	int out[N] = { 0 }, in[N], i, k;
	MPI_Request rq[2];
	MPI_Status st[2];

	MPI_Send_init(out, N, MPI_INT, right, 21, MPI_COMM_WORLD, &rq[0]);
	MPI_Recv_init(in, N, MPI_INT, left, 21, MPI_COMM_WORLD, &rq[1]);
	for (k = 0; k < STARTS; k++) {
		for (i = 0; i < N; i++)
			out[i] = rank * 1000 + k * 10 + i;
		if (k % 2 == 0) {
			MPI_Startall(2, rq);
		} else {
			MPI_Start(&rq[1]);
			MPI_Start(&rq[0]);
		}
		MPI_Waitall(2, rq, st);
		expect_count(&st[1], MPI_INT, N);
		for (i = 0; i < N; i++)
			errors += in[i] != left * 1000 + k * 10 + i;
		mix(in, sizeof(in));
	}
	MPI_Request_free(&rq[0]);
	MPI_Request_free(&rq[1]);
}

/* Two messages to the right; from the left, one by Mprobe + Mrecv, one by Improbe (any
 * source) + Imrecv. */
static void matched(int rank, int right, int left)
{
	double d[7], dr[7];
	int v[3] = { rank, rank * 2, rank * 3 }, vr[3], i, flag = 0;
	MPI_Message m;
	MPI_Request rq;
	MPI_Status st;

	for (i = 0; i < 7; i++)
		d[i] = rank + i / 8.0;
	MPI_Send(d, 7, MPI_DOUBLE, right, 31, MPI_COMM_WORLD);
	MPI_Send(v, 3, MPI_INT, right, 32, MPI_COMM_WORLD);
	MPI_Mprobe(left, 31, MPI_COMM_WORLD, &m, &st);
	expect_count(&st, MPI_DOUBLE, 7);
	MPI_Mrecv(dr, 7, MPI_DOUBLE, &m, &st);
	expect_count(&st, MPI_DOUBLE, 7);
	errors += st.MPI_SOURCE != left || st.MPI_TAG != 31;
	for (i = 0; i < 7; i++)
		errors += dr[i] != left + i / 8.0;
	while (!flag)
		MPI_Improbe(MPI_ANY_SOURCE, 32, MPI_COMM_WORLD, &flag, &m, &st);
	expect_count(&st, MPI_INT, 3);
	MPI_Imrecv(vr, 3, MPI_INT, &m, &rq);
	MPI_Wait(&rq, &st);
	expect_count(&st, MPI_INT, 3);
	errors += st.MPI_SOURCE != left || vr[0] != left || vr[1] != 2 * left || vr[2] != 3 * left;
	mix(dr, sizeof(dr));
	mix(vr, sizeof(vr));
}

/* A receive nobody sends to, cancelled. */
static int cancelled(int left)
{
	int x = -1, flag = 0;
	MPI_Request rq;
	MPI_Status st;

	MPI_Irecv(&x, 1, MPI_INT, left, 99, MPI_COMM_WORLD, &rq);
	MPI_Cancel(&rq);
	MPI_Wait(&rq, &st);
	MPI_Test_cancelled(&st, &flag);
	errors += x != -1;
	return flag;
}

static void collectives_and_windows(int rank, int size, int right, int left)
{
	int total = 0, *slots, i;
	MPI_Request rq;
	MPI_Win win;

	MPI_Iallreduce(&rank, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq);
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	errors += total != size * (size - 1) / 2;
	MPI_Ibarrier(MPI_COMM_WORLD, &rq);
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	/* allocated by MPI: its shared-memory windows need that */
	MPI_Win_allocate(8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &slots, &win);
	for (i = 0; i < 8; i++)
		slots[i] = 0;
	MPI_Win_fence(0, win);
	MPI_Put(&rank, 1, MPI_INT, right, rank, 1, MPI_INT, win);
	MPI_Win_fence(0, win);
	errors += slots[left] != left;
	mix(&total, sizeof(total));
	mix(slots, 8 * sizeof(int));
	MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
	int rank, size, right, left, was_cancelled, all_errors = 0;
	unsigned long sums[8] = { 0 }, total = 0;
	int i;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 4)
		MPI_Abort(MPI_COMM_WORLD, 2);
	right = (rank + 1) % size;
	left = (rank + size - 1) % size;
	persistent(rank, right, left);
	matched(rank, right, left);
	was_cancelled = cancelled(left);
	collectives_and_windows(rank, size, right, left);
	MPI_Gather(&sum, 1, MPI_UNSIGNED_LONG, sums, 1, MPI_UNSIGNED_LONG, 0, MPI_COMM_WORLD);
	MPI_Reduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		for (i = 0; i < size; i++)
			total = total * 31 + sums[i];
		printf("paths checksum %lu errors %d cancelled %d\n", total, all_errors,
		       was_cancelled);
	}
	MPI_Finalize();
	return 0;
}
