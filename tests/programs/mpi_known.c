/* SPDX-License-Identifier: MIT */
/*
 * An MPI program of known message counts and bytes (tests/integration, "mpi_*"): every path the
 * wrappers have — blocking, non-blocking with each Wait/Test family, Sendrecv(_replace), Probe,
 * wildcard receives, short receives, and the collectives — with a checksum of everything
 * received, printed by rank 0, so a run under sonde (with or without piggybacking) can be
 * compared with a plain one. Run with 4 ranks.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 100

static unsigned long sum;

static void mix(const void *p, size_t n)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++)
		sum = sum * 131 + c[i];
}

static void ring_blocking(int rank, int size)
{
	int out[N], in[N + 8], i, k, right = (rank + 1) % size, left = (rank + size - 1) % size;
	MPI_Status st;

	for (k = 0; k < 10; k++) {
		for (i = 0; i < N; i++)
			out[i] = rank * 1000 + k * N + i;
		memset(in, 0x5a, sizeof(in)); /* in[N..] must stay as they are: a short receive */
		if (rank % 2 == 0) {
			MPI_Send(out, N, MPI_INT, right, 7, MPI_COMM_WORLD);
			MPI_Recv(in, N + 8, MPI_INT, left, 7, MPI_COMM_WORLD, &st);
		} else {
			MPI_Recv(in, N + 8, MPI_INT, left, 7, MPI_COMM_WORLD, &st);
			MPI_Send(out, N, MPI_INT, right, 7, MPI_COMM_WORLD);
		}
		MPI_Get_count(&st, MPI_INT, &i);
		if (i != N || in[N] != 0x5a5a5a5a)
			printf("rank %d: count %d, in[N] %x\n", rank, i, in[N]);
		mix(in, sizeof(in));
	}
}

static void ring_nonblocking(int rank, int size)
{
	double out[50], in[50];
	MPI_Request rq[2];
	MPI_Status st[2];
	int i, k, flag, idx, done, outc, ids[2], right = (rank + 1) % size;
	int left = (rank + size - 1) % size;

	for (k = 0; k < 8; k++) {
		for (i = 0; i < 50; i++)
			out[i] = rank + k * 0.5 + i;
		MPI_Irecv(in, 50, MPI_DOUBLE, left, 8, MPI_COMM_WORLD, &rq[0]);
		MPI_Isend(out, 50, MPI_DOUBLE, right, 8, MPI_COMM_WORLD, &rq[1]);
		switch (k % 4) {
		case 0:
			MPI_Waitall(2, rq, st);
			break;
		case 1:
			for (done = 0; done < 2; done++)
				MPI_Waitany(2, rq, &idx, MPI_STATUS_IGNORE);
			break;
		case 2:
			for (done = 0; done < 2;) {
				MPI_Testsome(2, rq, &outc, ids, MPI_STATUSES_IGNORE);
				done += outc == MPI_UNDEFINED ? 2 : outc;
			}
			break;
		default:
			do
				MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE);
			while (!flag);
			MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
		}
		mix(in, sizeof(in));
	}
}

static void exchange(int rank, int size)
{
	int a[20], b[20], i, right = (rank + 1) % size, left = (rank + size - 1) % size;

	for (i = 0; i < 20; i++)
		a[i] = rank + i;
	MPI_Sendrecv(a, 20, MPI_INT, right, 3, b, 20, MPI_INT, left, 3, MPI_COMM_WORLD,
		     MPI_STATUS_IGNORE);
	mix(b, sizeof(b));
	MPI_Sendrecv_replace(a, 20, MPI_INT, right, 4, left, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	mix(a, sizeof(a));
}

/* Rank 0 receives one message from each other rank, in whatever order (probed first). */
static void wildcard(int rank, int size)
{
	MPI_Status st;
	long buf[64];
	int i, n;

	if (rank != 0) {
		for (i = 0; i < rank * 10; i++)
			buf[i] = rank * i;
		MPI_Send(buf, rank * 10, MPI_LONG, 0, 9, MPI_COMM_WORLD);
		return;
	}
	for (i = 1; i < size; i++) {
		MPI_Probe(MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_LONG, &n);
		if (n != st.MPI_SOURCE * 10)
			printf("probe: %d longs from %d\n", n, st.MPI_SOURCE);
		MPI_Recv(buf, 64, MPI_LONG, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_LONG, &n);
		if (n != st.MPI_SOURCE * 10)
			printf("recv: %d longs from %d\n", n, st.MPI_SOURCE);
		sum += (unsigned long)buf[n - 1] * (unsigned long)st.MPI_SOURCE;
	}
}

static void collectives(int rank, int size)
{
	int v[16], all[64], cnt[16], dsp[16], i, s = rank + 1, r;

	MPI_Barrier(MPI_COMM_WORLD);
	for (i = 0; i < 16; i++)
		v[i] = rank * 16 + i;
	MPI_Bcast(v, 10, MPI_INT, 0, MPI_COMM_WORLD);
	mix(v, sizeof(v));
	MPI_Gather(&s, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (rank == 0)
		mix(all, (size_t)size * sizeof(int));
	MPI_Scatter(all, 1, MPI_INT, &r, 1, MPI_INT, 0, MPI_COMM_WORLD);
	mix(&r, sizeof(r));
	MPI_Allgather(&s, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
	mix(all, (size_t)size * sizeof(int));
	MPI_Reduce(&s, &r, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		mix(&r, sizeof(r));
	MPI_Allreduce(&s, &r, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	mix(&r, sizeof(r));
	for (i = 0; i < size; i++)
		v[i] = rank * 100 + i;
	MPI_Alltoall(v, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
	mix(all, (size_t)size * sizeof(int));
	MPI_Scan(&s, &r, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	mix(&r, sizeof(r));
	for (i = 0; i < size; i++) {
		cnt[i] = 1;
		dsp[i] = i;
	}
	MPI_Gatherv(&s, 1, MPI_INT, all, cnt, dsp, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Scatterv(all, cnt, dsp, MPI_INT, &r, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Allgatherv(&s, 1, MPI_INT, all, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
	MPI_Alltoallv(v, cnt, dsp, MPI_INT, all, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
	mix(all, (size_t)size * sizeof(int));
	MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	int rank, size;
	unsigned long total = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	ring_blocking(rank, size);
	ring_nonblocking(rank, size);
	exchange(rank, size);
	wildcard(rank, size);
	collectives(rank, size);
	MPI_Reduce(&sum, &total, 1, MPI_UNSIGNED_LONG, MPI_BXOR, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("checksum %lx\n", total);
	MPI_Finalize();
	return 0;
}
