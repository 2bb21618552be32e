/*
 * The cost of recording MPI events in a trace (docs/benchmarks.md, "MPI events in traces"):
 * ns per call of libsonde's rt_mpi_trace_send, _recv and _coll (runtime/mpi_trace.h), found with
 * dlsym as libsonde-mpi.so finds them, against an empty function called the same way. Run
 * under `sonde run --trace`. Prints "send NS recv NS coll NS empty NS" (medians of ROUNDS).
 * Usage: mpi_trace_cost [CALLS]
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 9

static void (*tr_send)(int, int, uint32_t, uint64_t);
static void (*tr_recv)(int, int, uint32_t, uint64_t, uint64_t);
static void (*tr_coll)(int, uint32_t, int, uint64_t, uint64_t, uint64_t);
static uint32_t (*tr_comm)(int, int, const int *);

/* Built with sonde cc (sonde run wants an instrumented program); what the loops call is not. */
#define UNTRACED __attribute__((no_instrument_function))

__attribute__((noinline)) UNTRACED static void empty(int a, int b, uint32_t c, uint64_t d)
{
	__asm__ volatile("" : : "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

static void (*volatile empty_p)(int, int, uint32_t, uint64_t) = empty;

UNTRACED static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* ns per call of kind k (0 send, 1 recv, 2 coll, 3 empty), median of ROUNDS. */
static double per_call(int k, long n, uint32_t comm)
{
	double r[ROUNDS];
	int i;

	for (i = 0; i < ROUNDS; i++) {
		double t0 = now_ns();
		long j;

		for (j = 0; j < n; j++) {
			if (k == 0)
				tr_send(1, (int)j & 1023, comm, 64);
			else if (k == 1)
				tr_recv(1, (int)j & 1023, comm, 64, 0);
			else if (k == 2)
				tr_coll(10, comm, -1, 8, 8, 0);
			else
				empty_p(1, (int)j & 1023, comm, 64);
		}
		r[i] = (now_ns() - t0) / (double)n;
	}
	qsort(r, ROUNDS, sizeof(r[0]), cmp);
	return r[ROUNDS / 2];
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	uint32_t comm;

	*(void **)&tr_send = dlsym(RTLD_DEFAULT, "rt_mpi_trace_send");
	*(void **)&tr_recv = dlsym(RTLD_DEFAULT, "rt_mpi_trace_recv");
	*(void **)&tr_coll = dlsym(RTLD_DEFAULT, "rt_mpi_trace_coll");
	*(void **)&tr_comm = dlsym(RTLD_DEFAULT, "rt_mpi_trace_comm");
	if (!tr_send || !tr_recv || !tr_coll || !tr_comm) {
		fprintf(stderr, "mpi_trace_cost: run it under sonde run --trace\n");
		return 1;
	}
	comm = tr_comm(0, 2, NULL);
	printf("send %.1f recv %.1f coll %.1f empty %.1f\n", per_call(0, n, comm),
	       per_call(1, n, comm), per_call(2, n, comm), per_call(3, n, comm));
	return 0;
}
