/* SPDX-License-Identifier: MIT */
/*
 * Shared by the dynamic instrumentation tests and the benchmark: the instrumented test
 * functions (tr_* in tests/unit/dyn_tramp.S, bodies t_* in dyn_support.c), their point ids,
 * and helpers that set points without the control server.
 */
#ifndef SONDE_TEST_DYN_H
#define SONDE_TEST_DYN_H

#include <setjmp.h>
#include <stdint.h>

#include "../../runtime/dyn/dyn.h"

enum {
	P_ADD = 1, P_REC = 2, P_HALF = 3, P_PAIR = 4, P_JUMP = 5, P_TAIL = 6, P_SPIN = 7,
	P_HOOK = 8, P_OUTER = 9, P_SIG = 10, P_BENCH = 11, P_BENCH_OFF = 12
};

struct pair {
	long a, b;
};

/* Instrumented (entry trampoline, then the body). */
long tr_add(long a, long b);
long tr_rec(long n);        /* n + 1 levels; the innermost spins rec_spin_ns (wall) */
double tr_half(double x);
struct pair tr_pair(long a, long b);
long tr_jump(long depth);   /* longjmp(*jump_to) at depth 0 */
long tr_tail(long a, long b); /* tail-calls tr_add */
long tr_spin(long ns, long cpu); /* spins ns of wall (cpu 0) or thread CPU time (cpu 1) */
long tr_hook(long x);       /* calls hook(x) if set */
long tr_outer(long depth);  /* setjmp, tr_jump(depth), returns 7 */
long tr_sig(long a, long b); /* the body of tr_add, another point */
long tr_bench(long x);
long tr_bench_off(long x);
long tr_bench_noflags(long x);     /* the same without pushfq/popfq */
long tr_bench_off_noflags(long x);
long t_bench(long x);

extern long rec_spin_ns;
extern long profile_enters, profile_exits; /* calls of the profile probes' stand-ins */
extern void *profile_last;
extern jmp_buf *jump_to;
extern void (*hook)(long x);

/* Actions, tersely. */
struct sproto_action act_counter(int when, int prim, uint32_t counter, int64_t value);
struct sproto_action act_timer(int when, int prim, uint32_t timer);
struct sproto_action with_pred(struct sproto_action a, int pred, uint32_t index, int op,
			       int64_t k);
/* Replace a point's actions (dyn_point_set): 0 or -1. */
int set_point(uint32_t point, int n, const struct sproto_action *act);
int64_t counter(uint32_t i);
/* A timer summed over threads (tid 0) or one thread, in ns, through a metric. */
int64_t timer_ns(int kind, uint32_t index, uint32_t tid);
void dyn_test_init(void);
void dyn_test_reset(void);
uint64_t mono_ns(void);

#endif
