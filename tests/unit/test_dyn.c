/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of dynamic instrumentation's runtime side (runtime/dyn/): functions instrumented
 * through hand-written entry trampolines (dyn_tramp.S) and the real return trampoline
 * (runtime/arch/x86_64/dyn_ret.S). Primitives, predicates on counters, arguments and return
 * values, timers (nesting over recursion, CPU time, consistent reads from another thread,
 * sums over threads), the shadow stack (longjmp, tail calls, a full stack, signal handlers),
 * pause, replacement and clearing of a point while calls are in progress, and the records of
 * threads that ended.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unwind.h>

#include <cmocka.h>

#include "dyn_test.h"

static int setup(void **state)
{
	(void)state;
	dyn_test_reset();
	return 0;
}

static void set1(uint32_t point, struct sproto_action a)
{
	assert_int_equal(set_point(point, 1, &a), 0);
}

static void set2(uint32_t point, struct sproto_action a, struct sproto_action b)
{
	struct sproto_action v[2] = { a, b };

	assert_int_equal(set_point(point, 2, v), 0);
}

static uint32_t shadow_depth(void)
{
	return dyn_self ? dyn_self->depth : 0;
}

/* ---- primitives ---- */

static void test_inactive(void **state)
{
	(void)state;
	assert_int_equal(tr_add(2, 3), 5);
	assert_null(dyn_self); /* an inactive point touches no thread state */
}

static void test_counters(void **state)
{
	struct sproto_action v[3] = { act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 3),
				      act_counter(SPROTO_AT_ENTRY, SPROTO_SUB, 2, 5),
				      act_counter(SPROTO_AT_ENTRY, SPROTO_SET, 3, -9) };
	int i;

	(void)state;
	assert_int_equal(set_point(P_ADD, 3, v), 0);
	for (i = 0; i < 1000; i++)
		assert_int_equal(tr_add(i, 1), i + 1);
	assert_int_equal(counter(1), 3000);
	assert_int_equal(counter(2), -5000);
	assert_int_equal(counter(3), -9);
	dyn_points_clear(P_ADD, 1);
	assert_int_equal(tr_add(1, 1), 2);
	assert_int_equal(counter(1), 3000);
}

/* Entry actions run in order, then exit actions in order. */
static void test_action_order(void **state)
{
	struct sproto_action v[4] = {
		act_counter(SPROTO_AT_EXIT, SPROTO_SET, 1, 0),
		act_counter(SPROTO_AT_ENTRY, SPROTO_SET, 1, 10),
		with_pred(act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 2, 1), SPROTO_PRED_COUNTER, 1,
			  SPROTO_EQ, 0),
		with_pred(act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 3, 1), SPROTO_PRED_COUNTER, 1,
			  SPROTO_EQ, 10),
	};

	(void)state;
	assert_int_equal(set_point(P_ADD, 4, v), 0);
	assert_int_equal(tr_add(1, 2), 3);
	assert_int_equal(counter(1), 0);
	assert_int_equal(counter(2), 1);
	assert_int_equal(counter(3), 1);
	assert_int_equal(shadow_depth(), 0);
}

/* ---- predicates ---- */

static void test_arg_predicates(void **state)
{
	static const int ops[] = { SPROTO_EQ, SPROTO_NE, SPROTO_LT, SPROTO_LE, SPROTO_GT, SPROTO_GE };
	static const long args[] = { -20, -11, -10, -9, 0, 10, 11 };
	size_t i, j;

	(void)state;
	for (i = 0; i < 6; i++) {
		long want = 0;

		dyn_counters_reset();
		set1(P_ADD, with_pred(act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 1),
				      SPROTO_PRED_ARG, 1, ops[i], -10));
		for (j = 0; j < sizeof(args) / sizeof(args[0]); j++) {
			long b = args[j];

			assert_int_equal(tr_add(1000, b), 1000 + b);
			want += ops[i] == SPROTO_EQ ? b == -10 : ops[i] == SPROTO_NE ? b != -10
				: ops[i] == SPROTO_LT ? b < -10 : ops[i] == SPROTO_LE ? b <= -10
				: ops[i] == SPROTO_GT ? b > -10 : b >= -10;
		}
		assert_int_equal(counter(1), want);
	}
	set1(P_ADD, with_pred(act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 2, 1), SPROTO_PRED_ARG, 0,
			      SPROTO_EQ, 77)); /* the first argument */
	tr_add(77, 0);
	tr_add(76, 77);
	assert_int_equal(counter(2), 1);
}

static void test_retval_predicate(void **state)
{
	(void)state;
	set2(P_ADD, with_pred(act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 1, 1), SPROTO_PRED_RETVAL, 0,
			      SPROTO_EQ, 5),
	     with_pred(act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 2, 1), SPROTO_PRED_RETVAL, 0,
		       SPROTO_LT, 0));
	assert_int_equal(tr_add(2, 3), 5);
	assert_int_equal(tr_add(1, 1), 2);
	assert_int_equal(tr_add(4, 1), 5);
	assert_int_equal(tr_add(-4, 1), -3);
	assert_int_equal(counter(1), 2);
	assert_int_equal(counter(2), 1);
	assert_int_equal(shadow_depth(), 0);
}

/* ADD_RET, TADD_RET: the return value added when positive (bytes read or written). */
static void test_add_return_value(void **state)
{
	struct sproto_action flag[3];

	(void)state;
	set2(P_ADD, act_counter(SPROTO_AT_EXIT, SPROTO_ADD_RET, 1, 0),
	     act_counter(SPROTO_AT_EXIT, SPROTO_TADD_RET, 5, 0));
	assert_int_equal(tr_add(2, 3), 5);
	assert_int_equal(tr_add(-4, 1), -3); /* an error's -1 (or any negative) adds nothing */
	assert_int_equal(tr_add(0, 0), 0);
	assert_int_equal(tr_add(1000, 24), 1024);
	assert_int_equal(counter(1), 1029);
	assert_int_equal(dyn_self->tcounters[5], 1029);
	/* behind a thread flag set at entry by an argument test, as io_bytes at a file */
	dyn_self->tcounters[5] = 0;
	flag[0] = with_pred(act_counter(SPROTO_AT_ENTRY, SPROTO_TSET, 6, 1), SPROTO_PRED_ARG, 0,
			    SPROTO_EQ, 7);
	flag[1] = with_pred(act_counter(SPROTO_AT_EXIT, SPROTO_TADD_RET, 5, 0),
			    SPROTO_PRED_TCOUNTER, 6, SPROTO_GT, 0);
	flag[2] = act_counter(SPROTO_AT_EXIT, SPROTO_TSET, 6, 0);
	assert_int_equal(set_point(P_ADD, 3, flag), 0);
	tr_add(7, 3);   /* 10 */
	tr_add(8, 100); /* not the object: nothing */
	assert_int_equal(dyn_self->tcounters[6], 0);
	assert_int_equal(dyn_self->tcounters[5], 10);
	assert_int_equal(shadow_depth(), 0);
}

/* TSET_ARG: an argument plus one into a thread counter (the live search's MPI channels),
 * behind an argument predicate as the search guards a peer by its communicator. */
static void test_tset_arg(void **state)
{
	struct sproto_action a = act_counter(SPROTO_AT_ENTRY, SPROTO_TSET_ARG, 7, 1);

	(void)state;
	set2(P_ADD, a, with_pred(act_counter(SPROTO_AT_ENTRY, SPROTO_TSET_ARG, 8, 0),
				 SPROTO_PRED_ARG, 1, SPROTO_EQ, 3));
	assert_int_equal(tr_add(2, 3), 5);
	assert_int_equal(dyn_self->tcounters[7], 4);  /* the second argument, 3, plus one */
	assert_int_equal(dyn_self->tcounters[8], 3);  /* the first, 2, plus one: arg[1] == 3 */
	assert_int_equal(tr_add(0, -1), -1);
	assert_int_equal(dyn_self->tcounters[7], 0);  /* -1 (MPI_ANY_SOURCE) reads as 0: none */
	assert_int_equal(dyn_self->tcounters[8], 3);  /* arg[1] != 3: left as it was */
	assert_int_equal(tr_add(41, 3), 44);
	assert_int_equal(dyn_self->tcounters[8], 42); /* the last call's */
	assert_int_equal(shadow_depth(), 0);
}

/* START_WALL_IF: the predicate and a second guard (a thread counter compared with a number)
 * both hold, or the timer does not start (its stop then does nothing). */
static void test_start_wall_if(void **state)
{
	struct sproto_action a = with_pred(act_timer(SPROTO_AT_ENTRY, SPROTO_START_WALL_IF, 3),
					   SPROTO_PRED_ARG, 0, SPROTO_EQ, 7);

	(void)state;
	a.value = SPROTO_GUARD(4, SPROTO_GT, 2);
	set2(P_ADD, a, act_timer(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 3));
	assert_int_equal(tr_add(7, 0), 7); /* the guard's counter is 0 */
	assert_non_null(dyn_self);
	assert_int_equal(dyn_self->wall[3].total, 0);
	dyn_self->tcounters[4] = 2; /* not above 2 */
	tr_add(7, 0);
	assert_int_equal(dyn_self->wall[3].total, 0);
	dyn_self->tcounters[4] = 3;
	tr_add(8, 0); /* the predicate fails */
	assert_int_equal(dyn_self->wall[3].total, 0);
	tr_add(7, 0);
	assert_true(dyn_self->wall[3].total > 0);
	assert_int_equal(dyn_self->wall[3].depth, 0);
	/* an equality with a negative constant */
	a.value = SPROTO_GUARD(4, SPROTO_EQ, -5);
	a.target = 6;
	set2(P_ADD, a, act_timer(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 6));
	tr_add(7, 0);
	assert_int_equal(dyn_self->wall[6].total, 0);
	dyn_self->tcounters[4] = -5;
	tr_add(7, 0);
	assert_true(dyn_self->wall[6].total > 0);
	assert_int_equal(shadow_depth(), 0);
}

static void count_inside(long x)
{
	tr_add(x, 0);
}

/* Seed 003 figure 5.4: calls of one function counted only while another is active. */
static void test_counter_predicate(void **state)
{
	(void)state;
	set2(P_HOOK, act_counter(SPROTO_AT_ENTRY, SPROTO_SET, 10, 1),
	     act_counter(SPROTO_AT_EXIT, SPROTO_SET, 10, 0));
	set1(P_ADD, with_pred(act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 11, 1), SPROTO_PRED_COUNTER,
			      10, SPROTO_GT, 0));
	tr_add(1, 2);
	assert_int_equal(counter(11), 0);
	hook = count_inside;
	assert_int_equal(tr_hook(5), 6);
	assert_int_equal(tr_hook(6), 7);
	assert_int_equal(counter(11), 2);
	assert_int_equal(counter(10), 0);
	tr_add(1, 2);
	assert_int_equal(counter(11), 2);
}

/* ---- return values through the return trampoline ---- */

static void test_return_values(void **state)
{
	struct pair p;

	(void)state;
	set1(P_HALF, act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 1, 1));
	set1(P_PAIR, act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 1, 1));
	assert_true(tr_half(3.0) == 1.5); /* argument and result in xmm0 */
	p = tr_pair(4, 5);
	assert_int_equal(p.a, 40);
	assert_int_equal(p.b, 500);
	assert_int_equal(counter(1), 2);
	assert_int_equal(shadow_depth(), 0);
}

/* ---- the profile runtime fed by points (sonde run --dynamic) ---- */

static void test_profile_primitive(void **state)
{
	struct sproto_action v[2] = { act_counter(SPROTO_AT_ENTRY, SPROTO_PROFILE, 0, 0x4242),
				      act_counter(SPROTO_AT_EXIT, SPROTO_PROFILE, 0, 0x4242) };
	long e = profile_enters, x = profile_exits;

	(void)state;
	atomic_store(&dyn_profile_live, 1); /* as sonde run --dynamic has it */
	assert_int_equal(set_point(P_HALF, 2, v), 0);
	assert_true(tr_half(7.0) == 3.5); /* the argument in xmm0 survives the probe */
	assert_int_equal(profile_enters, e + 1);
	assert_int_equal(profile_exits, x + 1);
	assert_ptr_equal(profile_last, (void *)0x4242);
	assert_int_equal(shadow_depth(), 0);
	/* off (an attached profile ended): the points stay, the probes are not called */
	assert_int_equal(dyn_profile_quiesce(100), 0);
	assert_true(tr_half(5.0) == 2.5);
	assert_int_equal(profile_enters, e + 1);
	assert_int_equal(profile_exits, x + 1);
	assert_int_equal(shadow_depth(), 0);
	atomic_store(&dyn_profile_live, 1);
}

/* ---- the calibration's code (arch/x86_64/dyn_calib_code.c, calib_dyn.c) ---- */

/*
 * Its patched functions run their point's actions, entry and exit, once per call, from each
 * of the callers' sites; the plain one and an inactive point run none. The profile stand-ins
 * call the profile probes with the patched function's address.
 */
static void test_calibration_code(void **state)
{
	struct sproto_action v[2] = { act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 3, 1),
				      act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 4, 10) };
	struct sproto_point_set ps = { .point = DYN_CALIB_POINT, .n = 2 };
	struct rt_calib_dyn_fns p;
	struct dyn_calib_fns f, g;
	static struct {
		struct dyn_prog p;
		struct dyn_action a[2];
	} mem;
	long e = profile_enters, x = profile_exits;

	(void)state;
	assert_int_equal(dyn_calib_code(&f), 0);
	assert_int_equal(dyn_calib_code(&g), 0);
	assert_ptr_equal(f.sites[0], g.sites[0]); /* made once */
	f.plain();
	f.plain_sites();
	f.fn[0]();
	assert_int_equal(counter(3), 0);
	memcpy(ps.act, v, sizeof(v));
	dyn_prog_fill(&mem.p, &ps);
	atomic_store(&dyn_points[DYN_CALIB_POINT], &mem.p);
	f.fn[0]();
	f.sites[0]();
	assert_int_equal(counter(3), 1 + DYN_CALIB_SITES);
	assert_int_equal(counter(4), 10 * (1 + DYN_CALIB_SITES));
	assert_int_equal(shadow_depth(), 0);
	f.plain_sites();
	assert_int_equal(counter(3), 1 + DYN_CALIB_SITES);
	atomic_store(&dyn_points[DYN_CALIB_POINT], NULL);
	dyn_points_clear(0, DYN_POINTS); /* the protocol's clear leaves the calibration's alone */
	assert_int_equal(rt_calib_dyn_standins(&p), 0);
	assert_int_equal(p.pairs, DYN_CALIB_SITES);
	assert_non_null(atomic_load(&dyn_points[DYN_CALIB_POINT + 1]));
	p.measured();
	assert_int_equal(profile_enters, e + DYN_CALIB_SITES);
	assert_int_equal(profile_exits, x + DYN_CALIB_SITES);
	assert_ptr_equal(profile_last, (void *)p.measured_addr);
	p.excluded();
	assert_ptr_equal(profile_last, (void *)p.excluded_addr);
	p.plain();
	assert_int_equal(profile_enters, e + 2 * DYN_CALIB_SITES);
	assert_int_equal(shadow_depth(), 0);
}

/* ---- timers ---- */

/* Only the outermost start and stop of a recursion count: the time once, not per level. */
static void test_timer_recursion(void **state)
{
	uint64_t t0, elapsed;
	int64_t wall, cpu;

	(void)state;
	rec_spin_ns = 3000000;
	{
		struct sproto_action v[4] = { act_timer(SPROTO_AT_ENTRY, SPROTO_START_WALL, 5),
					      act_timer(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 5),
					      act_timer(SPROTO_AT_ENTRY, SPROTO_START_CPU, 6),
					      act_timer(SPROTO_AT_EXIT, SPROTO_STOP_CPU, 6) };

		assert_int_equal(set_point(P_REC, 4, v), 0);
	}
	t0 = mono_ns();
	assert_int_equal(tr_rec(6), 6);
	elapsed = mono_ns() - t0;
	wall = timer_ns(SPROTO_TERM_WALL, 5, 0);
	cpu = timer_ns(SPROTO_TERM_CPU, 6, 0);
	assert_true(wall >= 3000000 && (uint64_t)wall <= elapsed + 50000);
	assert_true(cpu > 0 && cpu <= wall + 1000000);
	assert_int_equal(dyn_self->wall[5].depth, 0);
	assert_int_equal(dyn_self->cpu[6].depth, 0);
	assert_int_equal(shadow_depth(), 0);
	assert_int_equal(tr_rec(2), 2);
	assert_true(timer_ns(SPROTO_TERM_WALL, 5, 0) >= wall + 3000000);
}

static void test_cpu_timer(void **state)
{
	int64_t cpu, wall;

	(void)state;
	set2(P_SPIN, act_timer(SPROTO_AT_ENTRY, SPROTO_START_CPU, 1),
	     act_timer(SPROTO_AT_EXIT, SPROTO_STOP_CPU, 1));
	tr_spin(20000000, 1);
	cpu = timer_ns(SPROTO_TERM_CPU, 1, 0);
	wall = timer_ns(SPROTO_TERM_WALL, 1, 0);
	assert_true(cpu >= 20000000 && cpu < 25000000);
	assert_int_equal(wall, 0); /* wall and CPU timers are apart */
}

/* A stop without its start, and a start without its stop, do no harm. */
static void test_timer_unbalanced(void **state)
{
	int64_t v;

	(void)state;
	set1(P_ADD, act_timer(SPROTO_AT_ENTRY, SPROTO_STOP_WALL, 2));
	tr_add(1, 1);
	assert_int_equal(timer_ns(SPROTO_TERM_WALL, 2, 0), 0);
	set1(P_ADD, act_timer(SPROTO_AT_ENTRY, SPROTO_START_WALL, 2));
	tr_add(1, 1);
	tr_add(1, 1);
	assert_int_equal(dyn_self->wall[2].depth, 2);
	v = timer_ns(SPROTO_TERM_WALL, 2, 0);
	tr_spin(1000000, 0);
	assert_true(timer_ns(SPROTO_TERM_WALL, 2, 0) >= v + 1000000); /* running: grows */
}

static _Atomic int reading_done;
static _Atomic uint64_t most_read;

/*
 * While the owner starts and stops, a value read from another thread is never more than the
 * owner will have added (the clock is read inside the consistent window): at the end no read
 * exceeds the final total, but for the TSC's skew between cores.
 */
static void *timer_reader(void *arg)
{
	const struct dyn_timer *tm = arg;
	uint64_t most = 0;

	while (!atomic_load(&reading_done)) {
		uint64_t v = dyn_timer_value(tm, 0, 0);

		if (v > most)
			most = v;
	}
	atomic_store(&most_read, most);
	return NULL;
}

static void test_timer_consistent_reads(void **state)
{
	struct dyn_timer *tm;
	pthread_t th;
	uint64_t final;
	int i;

	(void)state;
	set2(P_ADD, act_timer(SPROTO_AT_ENTRY, SPROTO_START_WALL, 3),
	     act_timer(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 3));
	tr_add(0, 0); /* makes this thread's state */
	tm = &dyn_self->wall[3];
	atomic_store(&reading_done, 0);
	assert_int_equal(pthread_create(&th, NULL, timer_reader, tm), 0);
	for (i = 0; i < 2000000; i++)
		tr_add(i, 1);
	final = tm->total;
	atomic_store(&reading_done, 1);
	pthread_join(th, NULL);
	assert_true(atomic_load(&most_read) > 0);
	assert_true(atomic_load(&most_read) <= final + 10000);
	assert_int_equal(tm->seq % 2, 0);
	assert_int_equal(tm->depth, 0);
}

static void *add_loop_thread(void *arg)
{
	long i = 0;

	(void)arg;
	while (!atomic_load(&reading_done))
		tr_add(i++, 1);
	return NULL;
}

/* What dyn_sample's SAMPLEs refer to (version 9): each read here in order, as the tool does. */
static struct sproto_sctx sctx;

/* One SAMPLE of dyn_sample, read and made whole in the context of those before it. */
static void read_sample(const uint8_t *msg, size_t n, struct sproto_msg *dm)
{
	struct sproto_header h;
	char err[100];

	assert_true(n > 0);
	assert_int_equal(sproto_frame(msg, n, &h, err, sizeof(err)), (long)n);
	assert_int_equal(sproto_decode(&h, msg + SPROTO_HEADER_SIZE, dm, err, sizeof(err)), 0);
	assert_int_equal(sproto_sample_resolve(&dm->u.sample, &sctx, err, sizeof(err)), 0);
}

/* Decode one sample of dyn_sample into e[] (at most 4 entries): its entry count. */
static uint32_t sample_entries(int last, struct sproto_sample_entry *e)
{
	static uint8_t msg[4096];
	size_t n = dyn_sample(msg, sizeof(msg), 0, 0, 1, last, 0);
	struct sproto_msg dm;
	uint32_t i;

	read_sample(msg, n, &dm);
	for (i = 0; i < dm.u.sample.n && i < 4; i++)
		sproto_sample_entry(&dm.u.sample, i, &e[i]);
	return dm.u.sample.n;
}

/* A metric enabled "changes only" (protocol version 4) is left out of the samples in which
 * its value did not change, never out of its first, out of the last too (version 7); the other
 * one always comes. Its value travels in its first entry only (version 6), the deltas after. */
static void test_sample_changes_only(void **state)
{
	struct sproto_metric every = { .id = 2, .n = 1, .term = { { SPROTO_TERM_COUNTER, 7, 0 } } };
	struct sproto_metric changes = { .id = 3, .n = 1, .flags = SPROTO_M_CHANGES,
					 .term = { { SPROTO_TERM_COUNTER, 8, 0 } } };
	struct sproto_sample_entry e[4];

	(void)state;
	assert_int_equal(dyn_metric_enable(&every), 0);
	assert_int_equal(dyn_metric_enable(&changes), 0);
	assert_int_equal(sample_entries(0, e), 2); /* the first of each */
	assert_true(e[1].metric == 3 && e[1].flags == (SPROTO_S_FIRST | SPROTO_S_VALUE) &&
		    e[1].delta == 0 && e[1].value == 0);
	assert_int_equal(sample_entries(0, e), 1); /* nothing changed: metric 2 only */
	assert_int_equal(e[0].metric, 2);
	atomic_fetch_add(&dyn_counters[8].v, 5);
	assert_int_equal(sample_entries(0, e), 2);
	assert_true(e[1].metric == 3 && e[1].value == 0 && e[1].delta == 5 && !e[1].flags);
	assert_int_equal(sample_entries(0, e), 1);
	atomic_fetch_add(&dyn_counters[7].v, 1);
	assert_int_equal(sample_entries(0, e), 1);
	assert_true(e[0].metric == 2 && e[0].delta == 1);
	assert_int_equal(sample_entries(1, e), 1); /* the last: unchanged, not sent (v7) */
	assert_true(e[0].metric == 2 && e[0].flags == SPROTO_S_LAST);
	atomic_fetch_add(&dyn_counters[8].v, 3);
	assert_int_equal(sample_entries(1, e), 2); /* changed: sent, flagged last */
	assert_true(e[1].metric == 3 && e[1].delta == 3 && e[1].flags == SPROTO_S_LAST);
	/* every third bucket (changed or not), the delta since it last went; the same terms
	 * enabled again change only that: the values go on */
	changes.every = 3;
	changes.flags = 0;
	assert_int_equal(dyn_metric_enable(&changes), 0);
	atomic_fetch_add(&dyn_counters[8].v, 2);
	assert_int_equal(sample_entries(0, e), 1);
	assert_int_equal(sample_entries(0, e), 1);
	assert_int_equal(sample_entries(0, e), 2);
	assert_true(e[1].metric == 3 && e[1].delta == 2 && !e[1].flags);
	assert_int_equal(sample_entries(0, e), 1);
	assert_int_equal(sample_entries(0, e), 1);
	assert_int_equal(sample_entries(0, e), 2);
	assert_true(e[1].metric == 3 && e[1].delta == 0);
	/* every third bucket and "changes only" (version 6): in the third bucket, and only when
	 * it changed since it last went (the live search's points' execution counters) */
	changes.flags = SPROTO_M_CHANGES;
	assert_int_equal(dyn_metric_enable(&changes), 0);
	assert_int_equal(sample_entries(0, e), 1);
	assert_int_equal(sample_entries(0, e), 1);
	assert_int_equal(sample_entries(0, e), 1); /* its bucket, unchanged: not sent */
	atomic_fetch_add(&dyn_counters[8].v, 4);
	assert_int_equal(sample_entries(0, e), 1); /* changed, not its bucket */
	assert_int_equal(sample_entries(0, e), 1);
	assert_int_equal(sample_entries(0, e), 2);
	assert_true(e[1].metric == 3 && e[1].delta == 4 && !e[1].flags);
	atomic_fetch_add(&dyn_counters[8].v, 1);
	assert_int_equal(sample_entries(1, e), 2); /* the last goes whatever the pace */
	assert_true(e[1].metric == 3 && e[1].delta == 1 && e[1].flags == SPROTO_S_LAST);
}

/* A metric sent in units of 1024 (version 6, the live search's timers): its value shifted
 * right by 10, its deltas the differences of those, so that they add up to the change since
 * the enable short of less than 1024; "changes only" looks at what is sent. */
static void test_sample_kilo(void **state)
{
	struct sproto_metric m = { .id = 6, .n = 1, .flags = SPROTO_M_CHANGES | SPROTO_M_KILO,
				   .term = { { SPROTO_TERM_COUNTER, 9, 0 } } };
	struct sproto_sample_entry e[4];
	int64_t sum = 0;

	(void)state;
	atomic_store(&dyn_counters[9].v, 3000); /* 2 units at the enable */
	assert_int_equal(dyn_metric_enable(&m), 0);
	assert_int_equal(sample_entries(0, e), 1);
	assert_true(e[0].metric == 6 && e[0].value == 2 && e[0].delta == 0 &&
		    e[0].flags == (SPROTO_S_FIRST | SPROTO_S_VALUE));
	atomic_fetch_add(&dyn_counters[9].v, 5000); /* 8000: 7 units */
	assert_int_equal(sample_entries(0, e), 1);
	assert_int_equal(e[0].delta, 5);
	sum += e[0].delta;
	atomic_fetch_add(&dyn_counters[9].v, 100); /* 8100: still 7 units, not sent */
	assert_int_equal(sample_entries(0, e), 0);
	atomic_fetch_add(&dyn_counters[9].v, 1000); /* 9100: 8 units */
	assert_int_equal(sample_entries(0, e), 1);
	sum += e[0].delta;
	assert_true(sum * 1024 <= 9100 - 3000 + 1023 && sum * 1024 > 9100 - 3000 - 1024);
	/* enabled again in plain units: its values start again (the next is a first) */
	m.flags = SPROTO_M_CHANGES;
	assert_int_equal(dyn_metric_enable(&m), 0);
	assert_int_equal(sample_entries(0, e), 1);
	assert_true(e[0].value == 9100 && (e[0].flags & SPROTO_S_FIRST));
}

/* Units of 65536 and deltas only (version 7, the live search's timers and points): no value
 * is sent, the first entry only when the value changed (unchanged metrics send nothing, the
 * last sample included), the deltas add up to the change since the enable short of less
 * than 65536; enabled again with the same terms in other flags, the values go on. */
static void test_sample_k64_deltas(void **state)
{
	struct sproto_metric m = { .id = 6, .n = 1,
				   .flags = SPROTO_M_CHANGES | SPROTO_M_K64 | SPROTO_M_DELTAS,
				   .term = { { SPROTO_TERM_COUNTER, 9, 0 } } };
	struct sproto_metric other = { .id = 1, .n = 1, .term = { { SPROTO_TERM_COUNTER, 7, 0 } } };
	struct sproto_sample_entry e[4];
	int64_t sum = 0;

	(void)state;
	dyn_metrics_clear();
	assert_int_equal(dyn_metric_enable(&other), 0);
	atomic_store(&dyn_counters[9].v, 100000); /* 1 unit at the enable */
	assert_int_equal(dyn_metric_enable(&m), 0);
	assert_int_equal(sample_entries(0, e), 1); /* no first entry: it did not change */
	assert_int_equal(e[0].metric, 1);
	atomic_fetch_add(&dyn_counters[9].v, 200000); /* 300000: 4 units */
	assert_int_equal(sample_entries(0, e), 2);
	assert_true(e[1].metric == 6 && e[1].delta == 3 && e[1].value == 0 &&
		    e[1].flags == SPROTO_S_FIRST);
	sum += e[1].delta;
	atomic_fetch_add(&dyn_counters[9].v, 30000); /* 330000: 5 units */
	assert_int_equal(sample_entries(0, e), 2);
	assert_true(e[1].delta == 1 && !e[1].flags);
	sum += e[1].delta;
	assert_true(sum * 65536 <= 330000 - 100000 + 65535 && sum * 65536 > 330000 - 100000 - 65536);
	/* paced every 2 buckets, same terms and units: the values go on */
	m.every = 2;
	assert_int_equal(dyn_metric_enable(&m), 0);
	atomic_fetch_add(&dyn_counters[9].v, 65536);
	assert_int_equal(sample_entries(0, e), 1); /* not its bucket */
	assert_int_equal(sample_entries(0, e), 2);
	assert_true(e[1].metric == 6 && e[1].delta == 1 && !e[1].flags);
	assert_int_equal(sample_entries(1, e), 1); /* the last: unchanged, not sent */
	assert_int_equal(e[0].metric, 1);
	/* units of 1024 now: new values, a first entry again (still without its value) */
	m.flags = SPROTO_M_CHANGES | SPROTO_M_KILO | SPROTO_M_DELTAS;
	m.every = 0;
	assert_int_equal(dyn_metric_enable(&m), 0);
	atomic_fetch_add(&dyn_counters[9].v, 2048);
	assert_int_equal(sample_entries(0, e), 2);
	assert_true(e[1].metric == 6 && e[1].delta == 2 && e[1].flags == SPROTO_S_FIRST);
	dyn_metrics_clear();
}

/* The sampler's values of a busy timer never go back. */
static void test_timer_samples_monotonic(void **state)
{
	struct sproto_metric m = { .id = 5, .n = 1, .term = { { SPROTO_TERM_WALL, 3, 0 } } };
	static uint8_t msg[4096];
	pthread_t th;
	int64_t last = 0;
	int i, k;

	(void)state;
	set2(P_ADD, act_timer(SPROTO_AT_ENTRY, SPROTO_START_WALL, 3),
	     act_timer(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 3));
	assert_int_equal(dyn_metric_enable(&m), 0);
	atomic_store(&reading_done, 0);
	assert_int_equal(pthread_create(&th, NULL, add_loop_thread, NULL), 0);
	for (k = 0; k < 20000; k++) {
		size_t n = dyn_sample(msg, sizeof(msg), 0, 0, 1, 0, 0);
		struct sproto_sample_entry e;
		struct sproto_msg dm;

		read_sample(msg, n, &dm);
		assert_int_equal(dm.u.sample.n, 1);
		sproto_sample_entry(&dm.u.sample, 0, &e);
		e.value = e.flags & SPROTO_S_VALUE ? e.value : last + e.delta;
		assert_true(e.delta >= 0 && e.value >= last);
		last = e.value;
		for (i = 0; i < 100; i++)
			__asm__ volatile("pause");
	}
	atomic_store(&reading_done, 1);
	pthread_join(th, NULL);
	assert_true(last > 0);
}

struct spinner {
	pthread_t th;
	int tid;
	int64_t elapsed_ns; /* the thread's own wall time around its calls */
};

static void *spin_thread(void *arg)
{
	struct spinner *s = arg;
	uint64_t t0 = mono_ns();
	int i;

	for (i = 0; i < 20; i++)
		tr_spin(1000000, 0);
	s->elapsed_ns = (int64_t)(mono_ns() - t0);
	s->tid = dyn_self->tid;
	return NULL;
}

/* Timers are per thread and summed over the threads; one thread's alone on request. */
static void test_timer_threads(void **state)
{
	struct spinner s[4];
	int64_t sum = 0, all;
	int i;

	(void)state;
	set2(P_SPIN, act_timer(SPROTO_AT_ENTRY, SPROTO_START_WALL, 4),
	     act_timer(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 4));
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&s[i].th, NULL, spin_thread, &s[i]), 0);
	for (i = 0; i < 4; i++)
		pthread_join(s[i].th, NULL);
	all = timer_ns(SPROTO_TERM_WALL, 4, 0);
	for (i = 0; i < 4; i++) {
		int64_t one = timer_ns(SPROTO_TERM_WALL, 4, (uint32_t)s[i].tid);

		/* at least the 20 ms spun, at most the thread's wall time (no bound on the
		 * machine's load) */
		assert_true(one >= 20000000 && one <= s[i].elapsed_ns);
		sum += one;
	}
	assert_true(all >= sum - 4 && all <= sum + 4); /* ticks to ns, rounded once or 4 times */
}

/* ---- counters over threads ---- */

static void *add_thread(void *arg)
{
	long i;

	(void)arg;
	for (i = 0; i < 200000; i++)
		tr_add(i, 0);
	return NULL;
}

static void test_counter_threads(void **state)
{
	pthread_t th[4];
	int i;

	(void)state;
	set2(P_ADD, act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 7, 1),
	     act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 8, 2));
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, add_thread, NULL), 0);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(counter(7), 800000);
	assert_int_equal(counter(8), 1600000);
}

/* ---- thread counters ---- */

static int64_t tcounter_ns(uint32_t index, uint32_t tid)
{
	return timer_ns(SPROTO_TERM_TCOUNTER, index, tid);
}

struct adder {
	pthread_t th;
	int tid;
};

static void *tadd_thread(void *arg)
{
	struct adder *a = arg;
	long i;

	for (i = 0; i < 100000; i++)
		tr_add(i, 0);
	a->tid = dyn_self->tid;
	return NULL;
}

/* Per thread, summed over threads (those that ended too), or one thread's. */
static void test_thread_counters(void **state)
{
	struct adder a[3];
	int i;

	(void)state;
	set1(P_ADD, act_counter(SPROTO_AT_ENTRY, SPROTO_TADD, 3, 2));
	assert_int_equal(atomic_load(&dyn_points[P_ADD])->one_tadd, 1);
	for (i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&a[i].th, NULL, tadd_thread, &a[i]), 0);
	for (i = 0; i < 3; i++)
		pthread_join(a[i].th, NULL);
	assert_int_equal(tcounter_ns(3, 0), 600000);
	assert_int_equal(tcounter_ns(3, (uint32_t)a[1].tid), 200000);
	dyn_threads_sweep(); /* they ended: their counts stay in the sum, not in a thread's */
	assert_int_equal(tcounter_ns(3, 0), 600000);
	assert_int_equal(tcounter_ns(3, (uint32_t)a[1].tid), 0);
	set2(P_ADD, act_counter(SPROTO_AT_ENTRY, SPROTO_TSET, 4, 10),
	     act_counter(SPROTO_AT_EXIT, SPROTO_TSUB, 4, 3));
	tr_add(1, 1);
	assert_int_equal(dyn_self->tcounters[4], 7);
	assert_int_equal(tcounter_ns(4, (uint32_t)dyn_self->tid), 7);
}

static _Atomic int other_done;

static void *count_outside(void *arg)
{
	(void)arg;
	tr_add(1, 2); /* its flag is its own: not counted */
	atomic_store(&other_done, 1);
	return NULL;
}

static void count_inside_with_other(long x)
{
	pthread_t th;

	tr_add(x, 0); /* counted: this thread is inside tr_hook */
	assert_int_equal(pthread_create(&th, NULL, count_outside, NULL), 0);
	pthread_join(th, NULL);
}

/* Seed 003 figure 5.4 with a per-thread flag: another thread's calls meanwhile do not count. */
static void test_thread_constraint(void **state)
{
	(void)state;
	set2(P_HOOK, act_counter(SPROTO_AT_ENTRY, SPROTO_TSET, 1, 1),
	     act_counter(SPROTO_AT_EXIT, SPROTO_TSET, 1, 0));
	set1(P_ADD, with_pred(act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 12, 1),
			      SPROTO_PRED_TCOUNTER, 1, SPROTO_GT, 0));
	hook = count_inside_with_other;
	assert_int_equal(tr_hook(3), 4);
	assert_int_equal(atomic_load(&other_done), 1);
	assert_int_equal(counter(12), 1);
	tr_add(1, 1);
	assert_int_equal(counter(12), 1);
	assert_int_equal(dyn_self->tcounters[1], 0);
}

/* ---- the shadow stack ---- */

/* Frames left by a longjmp are dropped at the next entry; their exits never run. */
static void test_longjmp_entry(void **state)
{
	jmp_buf jb;
	int i;

	(void)state;
	set1(P_JUMP, act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 1, 1));
	set2(P_ADD, act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 2, 1),
	     act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 3, 1));
	jump_to = &jb;
	for (i = 0; i < 3 * DYN_SHADOW; i++) {
		if (!setjmp(jb))
			tr_jump(3);
		assert_int_equal(tr_add(i, 1), i + 1);
	}
	assert_int_equal(counter(1), 0);
	assert_int_equal(counter(2), 3 * DYN_SHADOW);
	assert_int_equal(counter(3), 3 * DYN_SHADOW);
	assert_int_equal(shadow_depth(), 0);
	assert_int_equal(dyn_lost_total(), 0);
}

/* ...or at the exit of a function below them. */
static void test_longjmp_exit(void **state)
{
	int i;

	(void)state;
	set1(P_JUMP, act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 1, 1));
	set1(P_OUTER, act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 2, 1));
	for (i = 0; i < 100; i++)
		assert_int_equal(tr_outer(i % 7), 7);
	assert_int_equal(counter(1), 0);
	assert_int_equal(counter(2), 100);
	assert_int_equal(shadow_depth(), 0);
}

/* A tail call from one instrumented function to another: both exits fire, in order. */
static void test_tail_call(void **state)
{
	(void)state;
	set2(P_TAIL, act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 1, 1),
	     with_pred(act_counter(SPROTO_AT_EXIT, SPROTO_SET, 3, 1), SPROTO_PRED_COUNTER, 2,
		       SPROTO_EQ, 1));
	set2(P_ADD, act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 2, 1),
	     with_pred(act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 4, 1), SPROTO_PRED_RETVAL, 0,
		       SPROTO_EQ, 9));
	assert_int_equal(tr_tail(4, 5), 9);
	assert_int_equal(counter(1), 1);
	assert_int_equal(counter(2), 1);
	assert_int_equal(counter(3), 1); /* the callee's exit ran first */
	assert_int_equal(counter(4), 1);
	assert_int_equal(shadow_depth(), 0);
}

/* Deeper than the shadow stack: the calls beyond it run no action and are counted as lost. */
static void test_shadow_full(void **state)
{
	long extra = 100;

	(void)state;
	rec_spin_ns = 0;
	{
		struct sproto_action v[4] = { act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 1),
					      act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 2, 1),
					      act_timer(SPROTO_AT_ENTRY, SPROTO_START_WALL, 9),
					      act_timer(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 9) };

		assert_int_equal(set_point(P_REC, 4, v), 0);
	}
	assert_int_equal(tr_rec(DYN_SHADOW + extra - 1), DYN_SHADOW + extra - 1);
	assert_int_equal(counter(1), DYN_SHADOW);
	assert_int_equal(counter(2), DYN_SHADOW);
	assert_int_equal(dyn_lost_total(), extra);
	assert_int_equal(dyn_self->wall[9].depth, 0);
	assert_int_equal(shadow_depth(), 0);
	assert_int_equal(tr_rec(3), 3); /* and on as before */
	assert_int_equal(counter(2), DYN_SHADOW + 4);
}

/* ---- pause, replacement, clearing while a call is in progress ---- */

static void pause_now(long x)
{
	(void)x;
	atomic_store(&dyn_paused, 1);
}

static void test_pause(void **state)
{
	(void)state;
	set2(P_HOOK, act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 1),
	     act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 2, 1));
	hook = pause_now;
	assert_int_equal(tr_hook(1), 2); /* entered before the pause: its exit still runs */
	assert_int_equal(counter(1), 1);
	assert_int_equal(counter(2), 1);
	hook = NULL;
	tr_hook(1);
	assert_int_equal(counter(1), 1);
	assert_int_equal(counter(2), 1);
	assert_int_equal(shadow_depth(), 0);
	atomic_store(&dyn_paused, 0);
	tr_hook(1);
	assert_int_equal(counter(1), 2);
	assert_int_equal(counter(2), 2);
}

static void replace_now(long x)
{
	struct sproto_action a = act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 3, x);

	assert_int_equal(set_point(P_HOOK, 1, &a), 0);
}

static void clear_now(long x)
{
	(void)x;
	dyn_points_clear(P_HOOK, 1);
}

static void test_replace_and_clear(void **state)
{
	(void)state;
	set2(P_HOOK, act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 1),
	     act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 2, 1));
	hook = replace_now;
	assert_int_equal(tr_hook(5), 6); /* the exit runs the new actions */
	assert_int_equal(counter(1), 1);
	assert_int_equal(counter(2), 0);
	assert_int_equal(counter(3), 5);
	set2(P_HOOK, act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 1),
	     act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 2, 1));
	hook = clear_now;
	assert_int_equal(tr_hook(8), 9); /* cleared meanwhile: returns, runs nothing */
	assert_int_equal(counter(1), 2);
	assert_int_equal(counter(2), 0);
	assert_int_equal(shadow_depth(), 0);
}

/* ---- signal handlers running instrumented code on top of it ---- */

static volatile sig_atomic_t in_handler_calls;

static void on_alarm(int sig)
{
	(void)sig;
	tr_sig(1, 2);
	in_handler_calls++;
}

static void test_signals(void **state)
{
	struct itimerval it = { { 0, 50 }, { 0, 50 } }, off = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa;
	uint64_t end;
	long i = 0;

	(void)state;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	set2(P_ADD, act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 1),
	     act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 2, 1));
	{
		struct sproto_action v[4] = { act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 3, 1),
					      act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 4, 1),
					      act_timer(SPROTO_AT_ENTRY, SPROTO_START_WALL, 7),
					      act_timer(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 7) };

		assert_int_equal(set_point(P_SIG, 4, v), 0);
	}
	setitimer(ITIMER_REAL, &it, NULL);
	for (end = mono_ns() + 300000000; mono_ns() < end; i++)
		assert_int_equal(tr_add(i, 1), i + 1);
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_DFL);
	assert_true(in_handler_calls > 10);
	assert_int_equal(counter(1), i);
	assert_int_equal(counter(2), i);
	assert_int_equal(counter(3), in_handler_calls);
	assert_int_equal(counter(4), in_handler_calls);
	assert_int_equal(dyn_self->wall[7].depth, 0);
	assert_int_equal(shadow_depth(), 0);
}

/* ---- an alternate signal stack above the interrupted one ---- */

#define ALT_STACK (1u << 20)
static uint8_t *alt_region; /* [0, 2 MB): the thread's stack; [3 MB, 4 MB): its signal stack */

static void on_usr1(int sig)
{
	(void)sig;
	assert_int_equal(tr_sig(1, 2), 3);
}

static void raise_usr1(long x)
{
	(void)x;
	raise(SIGUSR1);
}

/* From a handler on the alternate stack: hooked calls there, then a jump out of it all. */
static void on_usr2(int sig)
{
	(void)sig;
	tr_jump(2);
}

static void jump_out_of_handler(long x)
{
	sigjmp_buf here;
	jmp_buf *volatile saved = jump_to;

	(void)x;
	jump_to = (jmp_buf *)&here;
	if (!sigsetjmp(here, 1))
		raise(SIGUSR2);
	jump_to = saved;
}

static void *alt_thread(void *arg)
{
	stack_t ss = { .ss_sp = alt_region + 3 * ALT_STACK, .ss_flags = 0, .ss_size = ALT_STACK };
	struct sigaction sa;

	(void)arg;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_ONSTACK;
	assert_int_equal(sigaltstack(&ss, NULL), 0);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	hook = raise_usr1;
	assert_int_equal(tr_hook(4), 5); /* its frame lies below the handler's: it stays */
	assert_int_equal(dyn_self->depth, 0);
	sa.sa_handler = on_usr2;
	assert_int_equal(sigaction(SIGUSR2, &sa, NULL), 0);
	hook = jump_out_of_handler;
	assert_int_equal(tr_hook(6), 7); /* the frames left above on the signal stack go */
	assert_int_equal(dyn_self->depth, 0);
	hook = NULL;
	signal(SIGUSR1, SIG_DFL);
	signal(SIGUSR2, SIG_DFL);
	return NULL;
}

static void test_altstack(void **state)
{
	pthread_attr_t attr;
	pthread_t th;

	(void)state;
	alt_region = mmap(NULL, 4 * ALT_STACK, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(alt_region != MAP_FAILED);
	set1(P_HOOK, act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 1, 1));
	set2(P_SIG, act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 2, 1),
	     act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 3, 1));
	set2(P_JUMP, act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 4, 1),
	     act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 5, 1));
	pthread_attr_init(&attr);
	assert_int_equal(pthread_attr_setstack(&attr, alt_region, 2 * ALT_STACK), 0);
	assert_int_equal(pthread_create(&th, &attr, alt_thread, NULL), 0);
	pthread_join(th, NULL);
	pthread_attr_destroy(&attr);
	munmap(alt_region, 4 * ALT_STACK);
	assert_int_equal(counter(1), 2);
	assert_int_equal(counter(2), 1);
	assert_int_equal(counter(3), 1);
	assert_int_equal(counter(4), 3); /* entered at depths 2, 1, 0 */
	assert_int_equal(counter(5), 0); /* and never returned */
}

/* ---- the entry and exit functions called directly, as a trampoline would ---- */

static void test_direct_calls(void **state)
{
	struct sonde_regs regs;
	struct sonde_retregs rr;
	uint64_t slot[2] = { 0x1234, 0 };
	uint32_t before;

	(void)state;
	memset(&regs, 0, sizeof(regs));
	set2(P_ADD, with_pred(act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 1), SPROTO_PRED_ARG, 4,
			      SPROTO_EQ, 55),
	     with_pred(act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 2, 1), SPROTO_PRED_RETVAL, 0,
		       SPROTO_EQ, -1));
	regs.r8 = 55; /* arg[4] */
	sonde__dyn_entry(P_ADD, &regs, NULL); /* a call site: no return to hook */
	assert_int_equal(counter(1), 1);
	assert_int_equal(dyn_lost_total(), 0);
	before = dyn_self ? dyn_self->depth : 0;
	sonde__dyn_entry(P_ADD, &regs, slot);
	assert_int_equal(counter(1), 2);
	assert_int_equal(slot[0], (uint64_t)(uintptr_t)&sonde__dyn_ret_tramp);
	assert_int_equal(dyn_self->depth, before + 1);
	memset(&rr, 0, sizeof(rr));
	rr.rax = (uint64_t)-1;
	rr.sp = (uint64_t)(uintptr_t)&slot[1]; /* the return popped the slot */
	assert_int_equal(sonde__dyn_exit(&rr), 0x1234);
	assert_int_equal(counter(2), 1);
	assert_int_equal(dyn_self->depth, before);
	/* ids wrap at the table's size (the protocol's ids, then the calibration's), never overflow */
	sonde__dyn_entry(DYN_POINT_SLOTS + P_ADD, &regs, NULL);
	assert_int_equal(counter(1), 3);
}

/* ---- unwinding through a hooked return (dyn_ret.S's unwind information, unwind.c) ---- */

#define BT_MAX 64
static uintptr_t bt_ips[BT_MAX];
static int bt_n;
static uint64_t hooked_ret; /* tr_hook's real return address, from the shadow stack */

/*
 * Where each frame is, as an unwinder looks it up: a return address - 1 (inside the call), or
 * the pc itself after a signal frame (the trampoline's frame is one: dyn_ret.S).
 */
static uintptr_t frame_pc(struct _Unwind_Context *ctx)
{
	int exact = 0;
	uintptr_t ip = _Unwind_GetIPInfo(ctx, &exact);

	return exact ? ip : ip - 1;
}

static _Unwind_Reason_Code bt_frame(struct _Unwind_Context *ctx, void *arg)
{
	(void)arg;
	if (bt_n == BT_MAX)
		return _URC_END_OF_STACK;
	bt_ips[bt_n++] = frame_pc(ctx);
	return _URC_NO_REASON;
}

static void backtrace_now(long x)
{
	(void)x;
	hooked_ret = dyn_self->frames[dyn_self->depth - 1].ret;
	bt_n = 0;
	_Unwind_Backtrace(bt_frame, NULL);
}

/* Where the walk found the trampoline: -1 if it did not. */
static int tramp_index(void)
{
	int i;

	for (i = 0; i < bt_n; i++)
		if (bt_ips[i] == (uintptr_t)dyn_ret_tramp_local - 1)
			return i;
	return -1;
}

/* A walk through a hooked return sees the real caller after the trampoline, and goes on. */
static void test_unwind_backtrace(void **state)
{
	int k;

	(void)state;
	set1(P_HOOK, act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 1, 1));
	hook = backtrace_now;
	assert_int_equal(tr_hook(1), 2);
	hook = NULL;
	k = tramp_index();
	assert_true(k > 0);
	assert_true(k + 2 < bt_n); /* the caller, and beyond it */
	assert_int_equal(bt_ips[k + 1], hooked_ret - 1); /* in the call of tr_hook */
	assert_int_equal(counter(1), 1); /* a walk closes nothing */
	assert_int_equal(shadow_depth(), 0);
}

static jmp_buf forced_back;
static struct _Unwind_Exception forced_exc;
static int forced_seen_caller;

/* Stops the forced unwinding at the frame the trampoline returns to: the test's own. */
static _Unwind_Reason_Code forced_stop(int version, _Unwind_Action actions,
				       _Unwind_Exception_Class cls, struct _Unwind_Exception *exc,
				       struct _Unwind_Context *ctx, void *arg)
{
	(void)version;
	(void)cls;
	(void)exc;
	(void)arg;
	if (actions & _UA_END_OF_STACK)
		abort(); /* walked past the test: the trampoline was not seen through */
	if (frame_pc(ctx) == hooked_ret - 1) {
		forced_seen_caller = 1;
		longjmp(forced_back, 1);
	}
	return _URC_NO_REASON;
}

static void forced_unwind_now(long x)
{
	(void)x;
	hooked_ret = dyn_self->frames[dyn_self->depth - 1].ret;
	memset(&forced_exc, 0, sizeof(forced_exc));
	forced_exc.exception_class = 0x534f4e4445000000ull; /* "SONDE" */
	_Unwind_ForcedUnwind(&forced_exc, forced_stop, NULL);
	abort();
}

/*
 * A forced unwinding (what pthread_exit does) through a hooked return: the personality routine
 * runs the exit actions once (a predicate on the return value does not hold: there is none),
 * the unwinding reaches the caller, and the frame is dropped at the next entry.
 */
static void test_unwind_forced(void **state)
{
	(void)state;
	set2(P_HOOK, act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 1, 1),
	     with_pred(act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 2, 1), SPROTO_PRED_RETVAL, 0,
		       SPROTO_NE, 12345));
	forced_seen_caller = 0;
	hook = forced_unwind_now;
	if (!setjmp(forced_back))
		tr_hook(1);
	hook = NULL;
	assert_int_equal(forced_seen_caller, 1);
	assert_int_equal(counter(1), 1);
	assert_int_equal(counter(2), 0);
	assert_int_equal(tr_hook(2), 3); /* a normal call after it: its exit only */
	assert_int_equal(counter(1), 2);
	assert_int_equal(counter(2), 1);
	assert_int_equal(shadow_depth(), 0);
}

/* ---- records of threads that ended ---- */

static void *start_only_thread(void *arg)
{
	(void)arg;
	tr_spin(1000000, 0); /* starts timer 8 and never stops it */
	return NULL;
}

static int count_records(void)
{
	struct dyn_thread *t;
	int n = 0;

	for (t = atomic_load(&dyn_threads); t; t = t->next)
		n++;
	return n;
}

static struct dyn_thread *exited_record;

static void exit_now(long x)
{
	exited_record = dyn_self;
	pthread_exit((void *)x);
}

static void *hook_thread(void *arg)
{
	(void)arg;
	tr_hook(5);
	return NULL;
}

static void *tr_add_thread(void *arg)
{
	(void)arg;
	return (void *)tr_add(1, 2);
}

/*
 * pthread_exit from an instrumented function: the exit actions run once as the forced unwinding
 * passes the hooked return, the thread ends with the frame closed on its record; a new thread
 * (which may run on the same, reused, stack) forgets the frames of records whose thread is gone.
 */
static void test_gone_frames(void **state)
{
	pthread_t th;
	void *ret;

	(void)state;
	set1(P_HOOK, act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 1, 1));
	set1(P_ADD, act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 2, 1));
	hook = exit_now;
	assert_int_equal(pthread_create(&th, NULL, hook_thread, NULL), 0);
	pthread_join(th, &ret);
	hook = NULL;
	assert_int_equal((long)ret, 5);
	assert_int_equal(counter(1), 1);
	assert_non_null(exited_record);
	assert_int_equal(exited_record->depth, 1);
	assert_int_equal(exited_record->frames[0].closed, 1);
	assert_int_equal(pthread_create(&th, NULL, tr_add_thread, NULL), 0);
	pthread_join(th, &ret);
	assert_int_equal((long)ret, 3);
	assert_int_equal(counter(2), 1);
	assert_int_equal(exited_record->depth, 0);
	assert_int_equal(counter(1), 1);
}

/* ---- catch-up: a call running when its point got timers (sonde__dyn_catch_up) ---- */

static long catchup_answers[3];

/* Calls tr_hook; the return address of that call lies in this function's first bytes. */
__attribute__((noinline)) static long via_hook(long x)
{
	long r = tr_hook(x);

	__asm__ volatile("" : : : "memory"); /* not a tail call */
	return r;
}

/* The slot holding tr_hook's return address into via_hook (or the return trampoline, when
 * hooked), found on the stack a little above us. */
static uint64_t *hook_slot_n(int n)
{
	uint64_t *p = (uint64_t *)__builtin_frame_address(0);
	uintptr_t lo = (uintptr_t)via_hook;
	int i;

	for (i = 0; i < 512; i++, p++)
		if (((*p >= lo && *p < lo + 64) || *p == (uint64_t)(uintptr_t)sonde__dyn_ret_tramp) &&
		    !n--)
			return p;
	return NULL;
}

static uint64_t *hook_slot(void)
{
	return hook_slot_n(0);
}

/* Inside tr_hook, which began with no actions at its point: the timer comes and the call is
 * caught up (twice: the second time it is hooked already by these actions), then it runs on. */
static void catch_up_inside(long x)
{
	struct sproto_point_set ps = { .point = P_HOOK, .n = 1 };
	struct sproto_action v[2] = { act_timer(SPROTO_AT_ENTRY, SPROTO_START_WALL, 3),
				      act_timer(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 3) };
	uint64_t args[6] = { (uint64_t)x, 0, 0, 0, 0, 0 };
	uint64_t *slot = hook_slot();

	assert_non_null(slot);
	assert_int_equal(set_point(P_HOOK, 2, v), 0);
	ps.act[0] = v[0];
	catchup_answers[0] = sonde__dyn_catch_up(&ps, slot, args);
	catchup_answers[1] = sonde__dyn_catch_up(&ps, slot, args);
	assert_int_equal(dyn_self->wall[3].depth, 1);
	tr_spin(3000000, 0);
}

/* Inside a call that began under the timer's actions: nothing to catch up. */
static void catch_up_begun(long x)
{
	struct sproto_point_set ps = { .point = P_HOOK, .n = 1 };
	uint64_t args[6] = { (uint64_t)x, 0, 0, 0, 0, 0 };

	uint64_t *slot = hook_slot();

	assert_non_null(slot);
	ps.act[0] = act_timer(SPROTO_AT_ENTRY, SPROTO_START_WALL, 3);
	catchup_answers[2] = sonde__dyn_catch_up(&ps, slot, args);
	assert_int_equal(dyn_self->wall[3].depth, 1);
}

/*
 * Outer tr_hook (no actions when it began) -> the point gets counters at entry and exit ->
 * inner tr_hook (hooked at its entry) -> the outer call caught up from inside the inner one:
 * its frame goes below the inner one's, and both exits run, inner first.
 */
static void nested_hook(long x)
{
	struct sproto_point_set ps = { .point = P_HOOK, .n = 1 };
	struct sproto_action v[2] = { act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 1),
				      act_counter(SPROTO_AT_EXIT, SPROTO_ADD, 2, 1) };
	uint64_t args[6] = { 0 }, *outer;

	if (x == 1) { /* the outer call */
		assert_int_equal(set_point(P_HOOK, 2, v), 0);
		assert_int_equal(via_hook(10), 11);
		return;
	}
	outer = hook_slot_n(1); /* above the inner call's slot */
	assert_non_null(outer);
	assert_int_equal(shadow_depth(), 1);
	ps.act[0] = v[0];
	catchup_answers[0] = sonde__dyn_catch_up(&ps, outer, args);
	assert_int_equal(shadow_depth(), 2);
	assert_true(dyn_self->frames[0].slot == outer); /* the older call, below */
	assert_true(dyn_self->frames[1].slot < outer);
}

static void test_catch_up_nested(void **state)
{
	(void)state;
	hook = nested_hook;
	assert_int_equal(via_hook(1), 2);
	hook = NULL;
	assert_int_equal(catchup_answers[0], 0);
	assert_int_equal(counter(1), 2);      /* the inner entry, the outer caught up */
	assert_int_equal(counter(2), 2);      /* both exits ran */
	assert_int_equal(shadow_depth(), 0);
}

static void test_catch_up(void **state)
{
	struct sproto_point_set bad = { .point = P_HOOK, .n = SPROTO_MAX_ACTIONS + 1 };
	uint64_t args[6] = { 0 };
	int64_t before;

	(void)state;
	hook = catch_up_inside;
	assert_int_equal(via_hook(41), 42);
	hook = NULL;
	assert_int_equal(catchup_answers[0], 0);
	assert_int_equal(catchup_answers[1], 1);
	assert_int_equal(dyn_self->wall[3].depth, 0); /* stopped by the hooked return */
	assert_int_equal(shadow_depth(), 0);
	before = timer_ns(SPROTO_TERM_WALL, 3, 0);
	assert_true(before >= 3000000);
	hook = catch_up_begun;
	assert_int_equal(via_hook(1), 2);
	hook = NULL;
	assert_int_equal(catchup_answers[2], 1);
	assert_int_equal(dyn_self->wall[3].depth, 0);
	assert_int_equal(shadow_depth(), 0);
	/* a point without exit actions: nothing would stop the timer, so nothing is done */
	set1(P_HOOK, act_timer(SPROTO_AT_ENTRY, SPROTO_START_WALL, 3));
	hook = catch_up_begun;
	assert_int_equal(via_hook(1), 2);
	hook = NULL;
	assert_int_equal(catchup_answers[2], -2);
	assert_int_equal(dyn_self->wall[3].depth, 1); /* the entry started it: unbalanced, as set */
	dyn_self->wall[3].depth = 0;
	assert_int_equal(sonde__dyn_catch_up(&bad, (uint64_t *)args, args), -3);
}

static void test_thread_records(void **state)
{
	pthread_t th;
	int before, i;
	int64_t v;

	(void)state;
	set1(P_SPIN, act_timer(SPROTO_AT_ENTRY, SPROTO_START_WALL, 8));
	assert_int_equal(pthread_create(&th, NULL, start_only_thread, NULL), 0);
	pthread_join(th, NULL);
	dyn_threads_sweep();
	v = timer_ns(SPROTO_TERM_WALL, 8, 0);
	assert_true(v >= 1000000);
	assert_int_equal(timer_ns(SPROTO_TERM_WALL, 8, 0), v); /* closed at the sweep */
	before = count_records();
	for (i = 0; i < 5; i++) { /* new threads take the free records over */
		assert_int_equal(pthread_create(&th, NULL, start_only_thread, NULL), 0);
		pthread_join(th, NULL);
		dyn_threads_sweep();
	}
	assert_int_equal(count_records(), before);
	assert_true(timer_ns(SPROTO_TERM_WALL, 8, 0) >= v + 5 * 1000000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_inactive, setup),
		cmocka_unit_test_setup(test_counters, setup),
		cmocka_unit_test_setup(test_action_order, setup),
		cmocka_unit_test_setup(test_arg_predicates, setup),
		cmocka_unit_test_setup(test_retval_predicate, setup),
		cmocka_unit_test_setup(test_counter_predicate, setup),
		cmocka_unit_test_setup(test_add_return_value, setup),
		cmocka_unit_test_setup(test_tset_arg, setup),
		cmocka_unit_test_setup(test_start_wall_if, setup),
		cmocka_unit_test_setup(test_return_values, setup),
		cmocka_unit_test_setup(test_profile_primitive, setup),
		cmocka_unit_test_setup(test_calibration_code, setup),
		cmocka_unit_test_setup(test_timer_recursion, setup),
		cmocka_unit_test_setup(test_cpu_timer, setup),
		cmocka_unit_test_setup(test_timer_unbalanced, setup),
		cmocka_unit_test_setup(test_timer_consistent_reads, setup),
		cmocka_unit_test_setup(test_timer_samples_monotonic, setup),
		cmocka_unit_test_setup(test_sample_changes_only, setup),
		cmocka_unit_test_setup(test_sample_kilo, setup),
		cmocka_unit_test_setup(test_sample_k64_deltas, setup),
		cmocka_unit_test_setup(test_timer_threads, setup),
		cmocka_unit_test_setup(test_counter_threads, setup),
		cmocka_unit_test_setup(test_thread_counters, setup),
		cmocka_unit_test_setup(test_catch_up, setup),
		cmocka_unit_test_setup(test_catch_up_nested, setup),
		cmocka_unit_test_setup(test_thread_constraint, setup),
		cmocka_unit_test_setup(test_longjmp_entry, setup),
		cmocka_unit_test_setup(test_longjmp_exit, setup),
		cmocka_unit_test_setup(test_tail_call, setup),
		cmocka_unit_test_setup(test_shadow_full, setup),
		cmocka_unit_test_setup(test_pause, setup),
		cmocka_unit_test_setup(test_replace_and_clear, setup),
		cmocka_unit_test_setup(test_signals, setup),
		cmocka_unit_test_setup(test_altstack, setup),
		cmocka_unit_test_setup(test_direct_calls, setup),
		cmocka_unit_test_setup(test_unwind_backtrace, setup),
		cmocka_unit_test_setup(test_unwind_forced, setup),
		cmocka_unit_test_setup(test_thread_records, setup),
		cmocka_unit_test_setup(test_gone_frames, setup),
	};

	dyn_test_init();
	return cmocka_run_group_tests_name("dyn", tests, NULL, NULL);
}
