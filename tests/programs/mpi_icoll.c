/* SPDX-License-Identifier: MIT */
/*
 * The non-blocking collectives of known counts and sizes (tests/integration, "t_mpi_icoll"):
 * every MPI-3 one that libsonde-mpi.so wraps, a known number of times with known sizes, completed
 * through each Wait and Test family, with a checksum of everything received printed by rank 0,
 * so that a run under sonde (with or without --mpi-comp, --trace) can be compared with a plain
 * one. Then a known delay: rank 1 runs 2000000 calls of work() before its MPI_Ibarrier, which the
 * others started at once and wait for in MPI_Wait (with --mpi-comp they inherit rank 1's delay
 * there). Run with 4 ranks; sizes below are per rank r (the expectations in
 * t_mpi_icoll.py). With the argument "many", many() alone.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define P 4

static unsigned long sum;
static volatile long acc;

static void mix(const void *p, size_t n)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++)
		sum = sum * 131 + c[i];
}

void work(long i);
void work(long i)
{
	acc += i % 7;
}

static void wait_test(MPI_Request *rq)
{
	int flag = 0;

	while (!flag)
		MPI_Test(rq, &flag, MPI_STATUS_IGNORE);
}

/* Ibarrier ×3 (Wait, Test, Waitall), Ibcast ×2 (10 ints from root 0; Waitany, Testany). */
static void barriers_bcasts(int rank)
{
	MPI_Request rq[2];
	int b[2][10], i, k, idx;

	MPI_Ibarrier(MPI_COMM_WORLD, &rq[0]);
	MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
	MPI_Ibarrier(MPI_COMM_WORLD, &rq[0]);
	wait_test(&rq[0]);
	for (k = 0; k < 2; k++)
		for (i = 0; i < 10; i++)
			b[k][i] = rank == 0 ? 100 * k + i : -1;
	MPI_Ibcast(b[0], 10, MPI_INT, 0, MPI_COMM_WORLD, &rq[0]);
	MPI_Ibarrier(MPI_COMM_WORLD, &rq[1]);
	MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
	MPI_Ibcast(b[1], 10, MPI_INT, 0, MPI_COMM_WORLD, &rq[0]);
	MPI_Waitany(1, rq, &idx, MPI_STATUS_IGNORE);
	mix(b, sizeof(b));
}

/* Igather (5 ints to root 1), Igatherv (r + 1 ints to root 2), Iscatter (6 ints from root 3),
 * Iscatterv (r + 2 ints from root 0): Waitsome until all four are done. */
static void rooted(int rank)
{
	int g[5], gr[P * 5], gv[P], gvr[1 + 2 + 3 + 4], sc[P * 6], scr[6], sv[2 + 3 + 4 + 5],
	    svr[P + 1];
	int cnt[P], dsp[P], scnt[P], sdsp[P], i, n, done = 0, idx[4];
	MPI_Request rq[4];

	for (i = 0; i < 5; i++)
		g[i] = rank * 10 + i;
	for (i = 0; i < P; i++) {
		gv[i] = rank * 100 + i;
		cnt[i] = i + 1;
		dsp[i] = i * (i + 1) / 2;
		scnt[i] = i + 2;
		sdsp[i] = i == 0 ? 0 : sdsp[i - 1] + scnt[i - 1];
	}
	for (i = 0; i < P * 6; i++)
		sc[i] = 1000 + i;
	for (i = 0; i < 2 + 3 + 4 + 5; i++)
		sv[i] = 2000 + i;
	memset(gr, 0, sizeof(gr));
	memset(gvr, 0, sizeof(gvr));
	memset(scr, 0, sizeof(scr));
	memset(svr, 0, sizeof(svr));
	MPI_Igather(g, 5, MPI_INT, gr, 5, MPI_INT, 1, MPI_COMM_WORLD, &rq[0]);
	MPI_Igatherv(gv, rank + 1, MPI_INT, gvr, cnt, dsp, MPI_INT, 2, MPI_COMM_WORLD, &rq[1]);
	MPI_Iscatter(sc, 6, MPI_INT, scr, 6, MPI_INT, 3, MPI_COMM_WORLD, &rq[2]);
	MPI_Iscatterv(sv, scnt, sdsp, MPI_INT, svr, rank + 2, MPI_INT, 0, MPI_COMM_WORLD, &rq[3]);
	while (done < 4) {
		MPI_Waitsome(4, rq, &n, idx, MPI_STATUSES_IGNORE);
		done += n;
	}
	mix(gr, sizeof(gr));
	mix(gvr, sizeof(gvr));
	mix(scr, sizeof(scr));
	mix(svr, sizeof(svr));
}

/* Iallgather (3 ints), Iallgatherv (r + 1 ints), Ialltoall (2 ints a peer), Ialltoallv (j + 1
 * ints to peer j): Testall until done; Ireduce ×2 (7 doubles to root 0), Testsome. */
static void all(int rank)
{
	int a[3], ar[P * 3], av[P], avr[1 + 2 + 3 + 4], t[P * 2], tr[P * 2], tv[1 + 2 + 3 + 4],
	    tvr[P * P];
	int cnt[P], dsp[P], sc[P], sd[P], rc[P], rd[P], i, flag = 0, n, idx[2], done = 0;
	double d[7], dr[2][7];
	MPI_Request rq[4];

	for (i = 0; i < 3; i++)
		a[i] = rank * 3 + i;
	for (i = 0; i < P; i++) {
		av[i] = rank * 7 + i;
		cnt[i] = i + 1;
		dsp[i] = i * (i + 1) / 2;
		sc[i] = i + 1;
		sd[i] = dsp[i];
		rc[i] = rank + 1;
		rd[i] = i * (rank + 1);
	}
	for (i = 0; i < P * 2; i++)
		t[i] = rank * 50 + i;
	for (i = 0; i < 1 + 2 + 3 + 4; i++)
		tv[i] = rank * 60 + i;
	memset(tvr, 0, sizeof(tvr));
	MPI_Iallgather(a, 3, MPI_INT, ar, 3, MPI_INT, MPI_COMM_WORLD, &rq[0]);
	MPI_Iallgatherv(av, rank + 1, MPI_INT, avr, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &rq[1]);
	MPI_Ialltoall(t, 2, MPI_INT, tr, 2, MPI_INT, MPI_COMM_WORLD, &rq[2]);
	MPI_Ialltoallv(tv, sc, sd, MPI_INT, tvr, rc, rd, MPI_INT, MPI_COMM_WORLD, &rq[3]);
	while (!flag)
		MPI_Testall(4, rq, &flag, MPI_STATUSES_IGNORE);
	mix(ar, sizeof(ar));
	mix(avr, sizeof(avr));
	mix(tr, sizeof(tr));
	mix(tvr, sizeof(tvr));
	for (i = 0; i < 7; i++)
		d[i] = rank + i * 0.5;
	memset(dr, 0, sizeof(dr));
	MPI_Ireduce(d, dr[0], 7, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &rq[0]);
	MPI_Ireduce(d, dr[1], 7, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD, &rq[1]);
	while (done < 2) {
		MPI_Testsome(2, rq, &n, idx, MPI_STATUSES_IGNORE);
		done += n == MPI_UNDEFINED ? 0 : n;
	}
	mix(dr, sizeof(dr));
}

/* Iallreduce ×4 (16 ints; Wait, Testany, Waitall of two), Iscan and Iexscan (4 longs),
 * Ireduce_scatter (counts 1, 2, 3, 4 ints), Ireduce_scatter_block (2 ints each). */
static void reductions(int rank)
{
	int x[16], y[4][16], rs[1 + 2 + 3 + 4], rsr[P], rb[P * 2], rbr[2], cnt[P], i, idx,
	    flag = 0;
	long s[4], sr[2][4];
	MPI_Request rq[4];

	for (i = 0; i < 16; i++)
		x[i] = rank * 16 + i;
	for (i = 0; i < P; i++)
		cnt[i] = i + 1;
	for (i = 0; i < 1 + 2 + 3 + 4; i++)
		rs[i] = rank + i;
	for (i = 0; i < P * 2; i++)
		rb[i] = rank * 2 + i;
	for (i = 0; i < 4; i++)
		s[i] = rank * 4 + i + 1;
	memset(y, 0, sizeof(y));
	memset(sr, 0, sizeof(sr));
	memset(rsr, 0, sizeof(rsr));
	MPI_Iallreduce(x, y[0], 16, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[0]);
	MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
	MPI_Iallreduce(x, y[1], 16, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rq[0]);
	while (!flag)
		MPI_Testany(1, rq, &idx, &flag, MPI_STATUS_IGNORE);
	MPI_Iallreduce(x, y[2], 16, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &rq[0]);
	MPI_Iallreduce(x, y[3], 16, MPI_INT, MPI_BXOR, MPI_COMM_WORLD, &rq[1]);
	MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
	MPI_Iscan(s, sr[0], 4, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &rq[0]);
	MPI_Iexscan(s, sr[1], 4, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &rq[1]);
	MPI_Ireduce_scatter(rs, rsr, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[2]);
	MPI_Ireduce_scatter_block(rb, rbr, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[3]);
	MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
	if (rank == 0) /* Exscan leaves rank 0's buffer undefined */
		memset(sr[1], 0, sizeof(sr[1]));
	mix(y, sizeof(y));
	mix(sr, sizeof(sr));
	mix(rsr, sizeof(rsr));
	mix(rbr, sizeof(rbr));
}

/* The known delay: rank 1 computes (measured) before its Ibarrier; the others wait for it. */
static void delayed(int rank)
{
	MPI_Request rq;
	long i;

	MPI_Barrier(MPI_COMM_WORLD); /* all start together: the others wait the whole of work() */
	if (rank == 1)
		for (i = 0; i < 2000000; i++)
			work(i);
	MPI_Ibarrier(MPI_COMM_WORLD, &rq);
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
}

/* "many": 3000 Iallreduce each completed at once, then 300 Ibcast in flight at once (the
 * request map and the piggyback slots must give every entry back), one Ibarrier by Testsome. */
static void many(int rank)
{
	static MPI_Request rq[300];
	static int b[300];
	int i, x, y, n, idx;

	for (i = 0; i < 3000; i++) {
		x = rank + i;
		MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[0]);
		MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
		mix(&y, sizeof(y));
	}
	for (i = 0; i < 300; i++) {
		b[i] = rank == 0 ? i * 7 : -1;
		MPI_Ibcast(&b[i], 1, MPI_INT, 0, MPI_COMM_WORLD, &rq[i]);
	}
	MPI_Waitall(300, rq, MPI_STATUSES_IGNORE);
	mix(b, sizeof(b));
	MPI_Ibarrier(MPI_COMM_WORLD, &rq[0]);
	for (n = 0; n < 1;) {
		MPI_Testsome(1, rq, &n, &idx, MPI_STATUSES_IGNORE);
		n = n == MPI_UNDEFINED ? 0 : n;
	}
}

int main(int argc, char **argv)
{
	int rank, size;
	unsigned long all_sums[P];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != P) {
		if (rank == 0)
			fprintf(stderr, "mpi_icoll: run with %d ranks\n", P);
		MPI_Finalize();
		return 2;
	}
	if (argc > 1 && !strcmp(argv[1], "many")) {
		many(rank);
	} else {
		barriers_bcasts(rank);
		rooted(rank);
		all(rank);
		reductions(rank);
	}
	MPI_Gather(&sum, 1, MPI_UNSIGNED_LONG, all_sums, 1, MPI_UNSIGNED_LONG, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("checksum %lx %lx %lx %lx\n", all_sums[0], all_sums[1], all_sums[2],
		       all_sums[3]);
	if (argc == 1)
		delayed(rank); /* last: nothing hands the delays on after it but MPI_Finalize */
	MPI_Finalize();
	return 0;
}
