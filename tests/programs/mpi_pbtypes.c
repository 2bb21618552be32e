/*
 * The piggyback's type table (runtime/mpi/mpi_pbtypes.c) under real MPI, 4 ranks in a ring
 * (each sends to its right, receives from its left). Every message's values are checked; rank 0
 * prints "MODE errors E sum S" (the same without sonde, with it, and with --mpi-comp).
 *   hit:   the same buffers again and again, LOOPS times: blocking calls from two stack depths,
 *          then Isend/Irecv each completed at once (the slot pool hands out the same slot), so 4
 *          keys and 4 * LOOPS lookups per rank.
 *   churn: 300 distinct offsets sent and received one by one, then by MPI_Sendrecv, then all
 *          300 posted non-blocking before one MPI_Waitall (more types in flight than the table
 *          holds: the replaced ones are freed while their operations are pending); 1800 lookups.
 *   free:  FREES times a vector type of MPI_INT made, used by one send and one receive, freed;
 *          its handle is often given out again to the next one, of another stride.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define LOOPS 50
#define N 300
#define FREES 40

static int rank, size, right, left, errors;
static long sum;

static void check(long got, long want)
{
	errors += got != want;
	sum += got;
}

/* A blocking call from `depth` frames further down the stack. */
static __attribute__((noinline)) void send_at(int depth, const long *v)
{
	volatile char pad[64];

	pad[0] = (char)depth;
	if (depth > 0) {
		send_at(depth - 1, v);
		return;
	}
	MPI_Send(v, 1, MPI_LONG, right, 1, MPI_COMM_WORLD);
	(void)pad[0];
}

static __attribute__((noinline)) void recv_at(int depth, long *v)
{
	volatile char pad[64];

	pad[0] = (char)depth;
	if (depth > 0) {
		recv_at(depth - 1, v);
		return;
	}
	MPI_Recv(v, 1, MPI_LONG, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	(void)pad[0];
}

static void hit(void)
{
	static long s, r, s2, r2;
	MPI_Request q;
	int i;

	for (i = 0; i < LOOPS; i++) {
		s = 1000L * rank + i;
		if (rank % 2 == 0) {
			send_at(i % 2 ? 3 : 0, &s);
			recv_at(i % 3, &r);
		} else {
			recv_at(i % 3, &r);
			send_at(i % 2 ? 3 : 0, &s);
		}
		check(r, 1000L * left + i);
	}
	for (i = 0; i < LOOPS; i++) {
		s2 = 7000L * rank + i;
		MPI_Isend(&s2, 1, MPI_LONG, right, 2, MPI_COMM_WORLD, &q);
		MPI_Wait(&q, MPI_STATUS_IGNORE);
		MPI_Irecv(&r2, 1, MPI_LONG, left, 2, MPI_COMM_WORLD, &q);
		MPI_Wait(&q, MPI_STATUS_IGNORE);
		check(r2, 7000L * left + i);
	}
}

static void churn(void)
{
	static long s[N], r[N], r3[N];
	static MPI_Request q[2 * N];
	int i;

	for (i = 0; i < N; i++)
		s[i] = 100000L * rank + i;
	for (i = 0; i < N; i++) { /* eager messages: the ring does not block */
		MPI_Send(&s[i], 1, MPI_LONG, right, 3, MPI_COMM_WORLD);
		MPI_Recv(&r[N - 1 - i], 1, MPI_LONG, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	for (i = 0; i < N; i++)
		check(r[N - 1 - i], 100000L * left + i);
	memset(r, 0, sizeof(r));
	for (i = 0; i < N; i++)
		MPI_Sendrecv(&s[i], 1, MPI_LONG, right, 4, &r[(i * 7) % N], 1, MPI_LONG, left, 4,
			     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	for (i = 0; i < N; i++)
		check(r[(i * 7) % N], 100000L * left + i);
	for (i = 0; i < N; i++)
		MPI_Irecv(&r3[i], 1, MPI_LONG, left, 5 + i, MPI_COMM_WORLD, &q[i]);
	for (i = 0; i < N; i++)
		MPI_Isend(&s[N - 1 - i], 1, MPI_LONG, right, 5 + N - 1 - i, MPI_COMM_WORLD, &q[N + i]);
	MPI_Waitall(2 * N, q, MPI_STATUSES_IGNORE);
	for (i = 0; i < N; i++)
		check(r3[i], 100000L * left + i);
}

static void free_types(void)
{
	static int s[8], r[8];
	MPI_Datatype t, prev = MPI_DATATYPE_NULL;
	int i, k, stride, reused = 0;

	for (i = 0; i < FREES; i++) {
		stride = 1 + i % 3;
		MPI_Type_vector(2, 1, stride, MPI_INT, &t);
		MPI_Type_commit(&t);
		reused += t == prev;
		for (k = 0; k < 8; k++) {
			s[k] = 1000 * rank + 10 * i + k;
			r[k] = -1;
		}
		if (rank % 2 == 0) {
			MPI_Send(s, 1, t, right, 6, MPI_COMM_WORLD);
			MPI_Recv(r, 1, t, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(r, 1, t, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(s, 1, t, right, 6, MPI_COMM_WORLD);
		}
		/* elements 0 and stride came; the rest of r is untouched */
		for (k = 0; k < 8; k++)
			check(r[k], k == 0 || k == stride ? 1000 * left + 10 * i + k : -1);
		prev = t;
		MPI_Type_free(&t);
	}
	if (rank == 0)
		fprintf(stderr, "mpi_pbtypes: rank 0 got a freed type's handle again %d times\n",
			reused);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "hit";
	long total = 0;
	int all = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	right = (rank + 1) % size;
	left = (rank + size - 1) % size;
	if (!strcmp(mode, "hit"))
		hit();
	else if (!strcmp(mode, "churn"))
		churn();
	else if (!strcmp(mode, "free"))
		free_types();
	else
		errors = 1000000;
	MPI_Reduce(&errors, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&sum, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%s errors %d sum %ld\n", mode, all, total);
	MPI_Finalize();
	return all != 0;
}
