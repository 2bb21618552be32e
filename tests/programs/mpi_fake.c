/*
 * MPI events without MPI: four forked "ranks" pass real messages through pipes and record them
 * through libsonde's MPI trace API (runtime/mpi_trace.h, found with dlsym: run alone, nothing is
 * recorded), as libsonde-mpi.so does around PMPI calls.
 *
 * Messages (rank: sends / receives): a token ring of ROUNDS rounds, 0 -> 1 -> 2 -> 3 -> 0, tag
 * = round, 64 * (round + 1) bytes; then 0 sends 1000 bytes tag 5 to 2 on a communicator of
 * ranks {0, 2}; 1 sends tags 10 and 11 (8 bytes each) to 2, which records them in reverse tag
 * order (as specific-tag receives may); 3 makes TICKS calls of an instrumented function (their
 * probes delay it far more than 2) and then waits for 24 bytes tag 20 that 2 sends after 20 ms of
 * uninstrumented work: removing the probes alone would put that receive before its send. Then
 * every rank records a Barrier and an Allreduce.
 * Totals: 0: 4 / 3, 1: 5 / 3, 2: 4 / 6, 3: 3 / 4; 16 messages; 8 collectives.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N 4
#define ROUNDS 3
#define WORLD_ID 0
#define TICKS 20000

static struct {
	uint32_t (*comm)(int rank, int size, const int *world);
	void (*send)(int peer, int tag, uint32_t comm, uint64_t bytes);
	void (*recv)(int peer, int tag, uint32_t comm, uint64_t bytes, uint64_t began);
	void (*coll)(int op, uint32_t comm, int root, uint64_t sent, uint64_t recvd,
		     uint64_t began);
	uint64_t (*clock)(void);
} api;

static int into[N][2]; /* into[r]: the pipe rank r reads */
static int side[2];    /* rank 0 -> rank 2 on the sub-communicator */
static char buf[4096];
static volatile double sink;

static void load_api(void)
{
	*(void **)&api.comm = dlsym(RTLD_DEFAULT, "rt_mpi_trace_comm");
	*(void **)&api.send = dlsym(RTLD_DEFAULT, "rt_mpi_trace_send");
	*(void **)&api.recv = dlsym(RTLD_DEFAULT, "rt_mpi_trace_recv");
	*(void **)&api.coll = dlsym(RTLD_DEFAULT, "rt_mpi_trace_coll");
	*(void **)&api.clock = dlsym(RTLD_DEFAULT, "rt_mpi_trace_clock");
	if (!api.comm || !api.send || !api.recv || !api.coll || !api.clock)
		api.comm = NULL;
}

static void tick(void)
{
	sink = sink + 1;
}

static void spin_ms(int ms)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

static void work(int n)
{
	double s = 0;
	int i;

	for (i = 0; i < n * 200000; i++)
		s += i * 0.5;
	sink = s;
}

/* put and get stand for MPI's internals: not instrumented, as PMPI calls are not. */
#define UNTRACED __attribute__((no_instrument_function))

UNTRACED static void put(int fd, size_t n)
{
	if (write(fd, buf, n) != (ssize_t)n)
		exit(3);
}

UNTRACED static void get(int fd, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);

		if (r <= 0)
			exit(4);
		got += (size_t)r;
	}
}

static void send_msg(int fd, int peer, int tag, uint32_t comm, size_t n)
{
	if (api.comm)
		api.send(peer, tag, comm, n);
	put(fd, n);
}

UNTRACED static void recv_msg(int fd, int peer, int tag, uint32_t comm, size_t n)
{
	uint64_t began = api.comm ? api.clock() : 0;

	get(fd, n);
	if (api.comm)
		api.recv(peer, tag, comm, n, began);
}

static void ring(int r, uint32_t world)
{
	int i, next = (r + 1) % N, prev = (r + N - 1) % N;

	for (i = 0; i < ROUNDS; i++) {
		size_t n = 64 * (size_t)(i + 1);

		if (r != 0)
			recv_msg(into[r][0], prev, i, world, n);
		work(r + 1);
		send_msg(into[next][1], next, i, world, n);
		if (r == 0)
			recv_msg(into[r][0], prev, i, world, n);
	}
}

static void extra(int r, uint32_t world, uint32_t sub)
{
	uint64_t began;

	if (r == 0)
		send_msg(side[1], 1, 5, sub, 1000);
	if (r == 2)
		recv_msg(side[0], 0, 5, sub, 1000);
	if (r == 1) {
		send_msg(into[2][1], 2, 10, world, 8);
		send_msg(into[2][1], 2, 11, world, 8);
	}
	if (r == 2) {
		began = api.comm ? api.clock() : 0;
		get(into[2][0], 16);
		if (api.comm) {
			api.recv(1, 11, world, 8, began);
			api.recv(1, 10, world, 8, began);
		}
	}
	if (r == 2) {
		spin_ms(20);
		send_msg(into[3][1], 3, 20, world, 24);
	}
	if (r == 3) {
		int i;

		for (i = 0; i < TICKS; i++)
			tick();
		recv_msg(into[3][0], 2, 20, world, 24);
	}
	began = api.comm ? api.clock() : 0;
	if (api.comm) {
		api.coll(1 /* Barrier */, world, -1, 0, 0, began);
		api.coll(10 /* Allreduce */, world, -1, 8, 8, api.clock());
	}
}

static void rank_main(int r)
{
	static const int members[2] = { 0, 2 };
	uint32_t world = WORLD_ID, sub = 1;

	if (api.comm) {
		world = api.comm(r, N, NULL);
		if (r % 2 == 0)
			sub = api.comm(r / 2, 2, members);
	}
	ring(r, world);
	extra(r, world, sub);
	exit(0);
}

int main(void)
{
	int r, status, bad = 0;

	load_api();
	for (r = 0; r < N; r++)
		if (pipe(into[r]))
			return 1;
	if (pipe(side))
		return 1;
	for (r = 0; r < N; r++) {
		pid_t p = fork();

		if (p < 0)
			return 1;
		if (p == 0)
			rank_main(r);
	}
	for (r = 0; r < N; r++)
		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	printf("%d ranks, %d failed\n", N, bad);
	return bad != 0;
}
