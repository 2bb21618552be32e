/* SPDX-License-Identifier: MIT */
/*
 * What an instrumented call costs: a function called in a loop through the entry trampoline
 * of docs/dynamic.md (tests/unit/dyn_tramp.S), against the same function called directly.
 * Best of 7 runs of the thread's CPU time; ns per call, and the direct call's own time taken
 * off. The second column is the same through a trampoline without pushfq/popfq: the flags are
 * dead at a call (the ABI does not keep them), so entry, exit and call-site points could go
 * without; what they cost shows here.
 *
 *   dyn_bench [CALLS]     (default 10000000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dyn_test.h"

typedef long (*fn_t)(long);

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long arg_mask = -1; /* the argument is i & arg_mask: RECORD sees that many objects */

static double ns_per_call(fn_t f, long calls)
{
	double best = 1e30;
	int run;

	for (run = 0; run < 7; run++) {
		uint64_t t0 = cpu_ns();
		long i, s = 0;

		for (i = 0; i < calls; i++)
			s += f(0x10000 + (i & arg_mask) * 64);
		if (s == 42)
			puts("");
		t0 = cpu_ns() - t0;
		if ((double)t0 / (double)calls < best)
			best = (double)t0 / (double)calls;
	}
	return best;
}

static void row(const char *what, fn_t f, fn_t g, long calls, double base)
{
	double ns = ns_per_call(f, calls), ns2 = ns_per_call(g, calls);

	printf("%-42s %7.2f ns/call (+%6.2f)   no flags: +%6.2f\n", what, ns, ns - base,
	       ns2 - base);
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 10000000;
	fn_t direct = t_bench, on = tr_bench, off = tr_bench_off, on2 = tr_bench_noflags;
	fn_t off2 = tr_bench_off_noflags;
	struct sproto_action a[2];
	double base;

	dyn_test_init();
	dyn_test_reset();
	base = ns_per_call(direct, calls);
	printf("%-44s %7.2f ns/call\n", "direct call", base);
	row("inactive point (trampoline, one load)", off, off2, calls, base);
	a[0] = act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 1);
	set_point(P_BENCH, 1, a);
	row("one counter at entry", on, on2, calls, base);
	a[0] = act_counter(SPROTO_AT_ENTRY, SPROTO_TADD, 1, 1);
	set_point(P_BENCH, 1, a);
	row("one thread counter at entry", on, on2, calls, base);
	a[0] = with_pred(act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 1), SPROTO_PRED_ARG, 0,
			 SPROTO_GE, 0);
	set_point(P_BENCH, 1, a);
	row("one counter at entry, predicate on arg[0]", on, on2, calls, base);
	a[0] = act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 1);
	a[1] = act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 2, 1);
	set_point(P_BENCH, 2, a);
	row("counters at entry and exit (return hook)", on, on2, calls, base);
	a[0] = act_timer(SPROTO_AT_ENTRY, SPROTO_START_WALL, 1);
	a[1] = act_timer(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 1);
	set_point(P_BENCH, 2, a);
	row("wall timer start/stop", on, on2, calls, base);
	a[0] = act_timer(SPROTO_AT_ENTRY, SPROTO_START_CPU, 1);
	a[1] = act_timer(SPROTO_AT_EXIT, SPROTO_STOP_CPU, 1);
	set_point(P_BENCH, 2, a);
	row("CPU timer start/stop (two system calls)", on, on2, calls / 20, base);
	a[0] = (struct sproto_action){ SPROTO_AT_ENTRY, SPROTO_RECORD, SPROTO_PRED_NONE, 0,
				       SPROTO_OBJ_MUTEX, 0, SPROTO_RECORD_USE, 0 };
	set_point(P_BENCH, 1, a);
	arg_mask = 0;
	row("RECORD arg[0], one object", on, on2, calls, base);
	arg_mask = 63;
	row("RECORD arg[0], 64 objects in turn", on, on2, calls, base);
	arg_mask = -1;
	atomic_store(&dyn_paused, 1);
	row("paused", on, on2, calls, base);
	printf("counter 1: %lld\n", (long long)counter(1));
	return 0;
}
