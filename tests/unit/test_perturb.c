/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of trace perturbation analysis (tool/analysis/perturb.h, trace_compare.h;
 * docs/analysis.md) on traces built by hand, with costs in ticks (1 tick = 1 ns here) and
 * expected times worked out below each test:
 *   sequential  t_a(e_i) = t_m(e_i) - sum_{j<i} cost(e_j)
 *   fork-join   concurrent events chain from the phase's opening event, the first event after
 *               the phase from the concurrent event with the greatest t_a
 *   events      t_a(d) = max(ready_local_a, ready_source_a) + t_m(d) - max(ready_local_m,
 *               ready_source_m); a thread's first event starts as delayed as its source
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perturb.h"
#include "trace_compare.h"

#define EPS 1e-9

/* One event as written in a test: type, time, argument, function id. */
struct ev {
	uint16_t type;
	uint64_t t, arg;
	uint32_t id;
};

#define E(type, t) { STRC_##type, t, 0, STRC_ID_NONE }
#define EA(type, t, arg) { STRC_##type, t, arg, STRC_ID_NONE }
#define EF(type, t, id) { STRC_##type, t, 0, id }

/* Up to 4 threads of hand-written events. */
struct fixture {
	struct strc_file f;
	struct strc_thread th[4];
	struct strc_module mod;
	struct strc_func funcs[4];
	uint32_t by_id[16];
};

static void add_thread(struct fixture *x, const struct ev *v, size_t n)
{
	struct strc_thread *th = &x->th[x->f.nthreads];
	size_t i;

	memset(th, 0, sizeof(*th));
	th->index = x->f.nthreads;
	th->tid = 100 + x->f.nthreads;
	th->ev = calloc(n, sizeof(*th->ev));
	th->nev = n;
	for (i = 0; i < n; i++) {
		th->ev[i] = (struct strc_event){ .t = v[i].t, .arg = v[i].arg, .id = v[i].id,
						 .type = v[i].type };
		if (v[i].type == STRC_THREAD_BEGIN)
			th->edge = v[i].arg;
		if (v[i].type == STRC_THREAD_END)
			th->self = v[i].arg;
	}
	x->f.threads = x->th;
	x->f.nthreads++;
}

static void fixture_free(struct fixture *x)
{
	uint32_t k;

	for (k = 0; k < x->f.nthreads; k++)
		free(x->th[k].ev);
}

/* One function per entry of vaddrs (id = first_id + i), in module "/bin/app". */
static void add_funcs(struct fixture *x, uint32_t first_id, const uint64_t *vaddrs, uint32_t n)
{
	static char path[] = "/bin/app", empty[] = "";
	uint32_t i;

	x->mod = (struct strc_module){ .index = 0, .path = path };
	x->f.modules = &x->mod;
	x->f.nmodules = 1;
	memset(x->by_id, 0xff, sizeof(x->by_id));
	for (i = 0; i < n; i++) {
		x->funcs[i] = (struct strc_func){ .id = first_id + i, .kind = SPROF_FUNC,
						  .module = 0, .vaddr = vaddrs[i],
						  .name = empty };
		x->by_id[first_id + i] = i;
	}
	x->f.funcs = x->funcs;
	x->f.nfuncs = n;
	x->f.func_by_id = x->by_id;
	x->f.func_id_cap = 16;
	x->f.ticks_per_ns = 1;
}

static void init(struct pt_trace *t, struct fixture *x, double alpha, double skip, double dt)
{
	struct pt_costs c = { .alpha = alpha, .skip = skip, .dt = dt };

	x->f.ticks_per_ns = 1;
	assert_int_equal(pt_init(t, &x->f, &c), 0);
}

static void expect_times(const struct pt_thread *th, const double *want, size_t n)
{
	size_t i;

	assert_int_equal(th->nev, n);
	for (i = 0; i < n; i++)
		assert_float_equal(th->ta[i], want[i], EPS);
}

/* ---- sequential ---- */

/*
 * alpha 10, o_skip 2: ENTER 0, ENTER 100, COUNT(5 calls) 150, EXIT 200, FLUSH(50 ticks) 250,
 * EXIT 400, END-of-process bookkeeping (UNWIND costs nothing) 410.
 *   ENTER 0        0
 *   ENTER 100      100 - 10            = 90
 *   COUNT 150      150 - 20            = 130
 *   EXIT 200       200 - 20 - 10       = 170
 *   FLUSH 250      250 - 40            = 210
 *   EXIT 400       400 - 40 - 50       = 310
 *   UNWIND 410     410 - 100           = 310
 */
static void test_sequential_exact(void **state)
{
	static const struct ev v[] = { EF(ENTER, 0, 1), EF(ENTER, 100, 2), {STRC_COUNT, 150, 5, 3},
				       EF(EXIT, 200, 2), EA(FLUSH, 250, 50), EF(EXIT, 400, 1),
				       EA(UNWIND, 410, 0) };
	static const double want[] = { 0, 90, 130, 170, 210, 310, 310 };
	struct fixture x = { 0 };
	struct pt_trace t;
	struct pt_totals tt;

	(void)state;
	add_thread(&x, v, 7);
	init(&t, &x, 10, 2, 0);
	pt_sequential(&t);
	expect_times(&t.th[0], want, 7);
	assert_int_equal(t.th[0].simultaneous, 0);
	pt_totals(&t, &tt);
	assert_float_equal(tt.t_m, 410, EPS);
	assert_float_equal(tt.dp_seq, 100, EPS); /* 4 records * 10 + 5 calls * 2 + 50 */
	assert_int_equal(tt.n_seq, 4 + 5);
	assert_float_equal(tt.t_a_seq, 310, EPS);
	assert_float_equal(tt.t_a_fj, 310, EPS); /* no phase: the same */
	assert_float_equal(tt.end, 310, EPS);
	pt_free(&t);
	fixture_free(&x);
}

/* Events closer than their cost keep their predecessor's time (and are counted). */
static void test_sequential_simultaneous(void **state)
{
	static const struct ev v[] = { E(ENTER, 0), E(EXIT, 5), E(ENTER, 100) };
	static const double want[] = { 0, 0, 80 };
	struct fixture x = { 0 };
	struct pt_trace t;

	(void)state;
	add_thread(&x, v, 3);
	init(&t, &x, 10, 0, 0);
	pt_sequential(&t);
	expect_times(&t.th[0], want, 3);
	assert_int_equal(t.th[0].simultaneous, 1);
	pt_free(&t);
	fixture_free(&x);
}

/* ---- fork-join: main creates two threads of unequal length and joins them ---- */

/*
 * main:     ENTER 0, CREATE(e1) 100, CREATE(e2) 110, JOIN(p1) 1000, JOIN(p2) 1200, EXIT 1300
 * thread 1: BEGIN(e1) 105, 10 events at 105 + 40j, END(p1) 600          (12 events)
 * thread 2: BEGIN(e2) 115, 40 events at 115 + 25j, END(p2) 1150         (42 events)
 */
static void fork_join_trace(struct fixture *x)
{
	static const struct ev m[] = { E(ENTER, 0), EA(CREATE, 100, 1), EA(CREATE, 110, 2),
				       EA(JOIN, 1000, 0x71), EA(JOIN, 1200, 0x72), E(EXIT, 1300) };
	struct ev w[42];
	int j;

	add_thread(x, m, 6);
	w[0] = (struct ev)EA(THREAD_BEGIN, 105, 1);
	for (j = 1; j <= 10; j++)
		w[j] = (struct ev){ j % 2 ? STRC_ENTER : STRC_EXIT, 105 + 40 * (uint64_t)j, 0, 1 };
	w[11] = (struct ev)EA(THREAD_END, 600, 0x71);
	add_thread(x, w, 12);
	w[0] = (struct ev)EA(THREAD_BEGIN, 115, 2);
	for (j = 1; j <= 40; j++)
		w[j] = (struct ev){ j % 2 ? STRC_ENTER : STRC_EXIT, 115 + 25 * (uint64_t)j, 0, 1 };
	w[41] = (struct ev)EA(THREAD_END, 1150, 0x72);
	add_thread(x, w, 42);
}

static void test_edges_and_phase(void **state)
{
	struct fixture x = { 0 };
	struct pt_trace t;

	(void)state;
	fork_join_trace(&x);
	init(&t, &x, 10, 0, 0);
	assert_int_equal(t.nedges, 4);
	/* sorted by dependent: main's JOINs (from the ENDs), then the two BEGINs */
	assert_int_equal(t.edges[0].dst_thr, 0);
	assert_int_equal(t.edges[0].dst, 3);
	assert_int_equal(t.edges[0].src_thr, 1);
	assert_int_equal(t.edges[0].src, 11);
	assert_int_equal(t.edges[0].kind, PT_EDGE_JOIN);
	assert_int_equal(t.edges[1].dst, 4);
	assert_int_equal(t.edges[1].src_thr, 2);
	assert_int_equal(t.edges[2].dst_thr, 1);
	assert_int_equal(t.edges[2].src, 1);
	assert_int_equal(t.edges[2].kind, PT_EDGE_CREATE);
	assert_int_equal(t.edges[3].dst_thr, 2);
	assert_int_equal(t.edges[3].src, 2);
	assert_int_equal(t.nphases, 1);
	assert_int_equal(t.phases[0].open, 1);
	assert_int_equal(t.phases[0].close, 4);
	assert_int_equal(t.phases[0].main_end, 3);
	assert_int_equal(t.phases[0].nthreads, 2);
	assert_int_equal(t.th[1].phase, 0);
	assert_int_equal(t.th[2].phase, 0);
	pt_free(&t);
	fixture_free(&x);
}

/*
 * alpha 10. Main, sequential: ENTER 0 -> 0; CREATE 100 -> 90 (the basis: delay 10).
 * Thread 1: t_m - 10 - 10c: BEGIN 95 ... END 600 - 10 - 110 = 480.
 * Thread 2: END 1150 - 10 - 410 = 730.
 * Main's own work in the phase: CREATE 110 - (10 + 10) = 90. From its first JOIN it waits:
 * JOIN(p1) 1000 takes its basis from the greatest approximated concurrent event up to 1000:
 * main's CREATE 90, thread 1's END 480, thread 2's event at 990 (j = 35): 990 - 360 = 630 ->
 * 1000 - 360 = 640. JOIN(p2) 1200, closing the phase: the greatest up to 1200 is thread 2's END
 * (730, delay 420): 780. EXIT 1300 - 430 = 870.
 */
static void test_forkjoin_critical_path(void **state)
{
	static const double main_want[] = { 0, 90, 90, 640, 780, 870 };
	struct fixture x = { 0 };
	struct pt_trace t;

	(void)state;
	fork_join_trace(&x);
	init(&t, &x, 10, 0, 0);
	pt_forkjoin(&t);
	expect_times(&t.th[0], main_want, 6);
	assert_float_equal(t.th[1].ta[0], 95, EPS);
	assert_float_equal(t.th[1].ta[11], 480, EPS);
	assert_float_equal(t.th[2].ta[0], 105, EPS);
	assert_float_equal(t.th[2].ta[41], 730, EPS);
	pt_free(&t);
	fixture_free(&x);
}

/*
 * Total time: T_m = 1300. Sequential: DP = main's 6 events = 60, T_a = 1240.
 * Fork-join: DP^s = main outside the phase's inside: ENTER, CREATE(open), JOIN(close), EXIT
 * = 40. Lengths once their own DP is removed, from the opening CREATE (100): thread 1
 * 600 - 100 - 120 = 380, thread 2 1150 - 100 - 420 = 630, main's own work (CREATE at 110)
 * 10 - 10 - 10 = -10. N_max = 42 on thread 2, DP^c = 420, T_a = 1300 - 40 - 420 = 840.
 */
static void test_total_time(void **state)
{
	struct fixture x = { 0 };
	struct pt_trace t;
	struct pt_totals tt;

	(void)state;
	fork_join_trace(&x);
	init(&t, &x, 10, 0, 0);
	pt_forkjoin(&t);
	pt_totals(&t, &tt);
	assert_float_equal(tt.t_m, 1300, EPS);
	assert_float_equal(tt.dp_seq, 60, EPS);
	assert_float_equal(tt.t_a_seq, 1240, EPS);
	assert_float_equal(tt.dp_s, 40, EPS);
	assert_int_equal(tt.n_s, 4);
	assert_float_equal(tt.dp_c, 420, EPS);
	assert_int_equal(tt.n_max, 42);
	assert_int_equal(t.phases[0].crit, 2);
	assert_float_equal(tt.t_a_fj, 840, EPS);
	assert_float_equal(tt.end, 870, EPS); /* the fork-join trace's last event */
	pt_free(&t);
	fixture_free(&x);
}

/* AE = T_m - T, RE = AE / T, RAE = (T_a - T) / T (seed 000 eqs. 1, 2, 5). */
static void test_error_formulas(void **state)
{
	struct pt_errors e = pt_errors(1300, 840, 800);

	(void)state;
	assert_float_equal(e.ae, 500, EPS);
	assert_float_equal(e.re, 0.625, EPS);
	assert_float_equal(e.rae, 0.05, EPS);
	e = pt_errors(1300, 780, 800);
	assert_float_equal(e.rae, -0.025, EPS);
}

/* ---- the event model ---- */

/*
 * The same trace, events model, alpha 10.
 * Main: ENTER 0 -> 0, CREATE 100 -> 90, CREATE 110 -> 90 (delay 20, then 30).
 * Thread 1 starts as delayed as main at CREATE(e1): 10 -> BEGIN 95, END 600 - 120 = 480.
 * Thread 2 starts with main's delay at CREATE(e2): 20 -> BEGIN 95, END 1150 - 430 = 720.
 * JOIN(p1) 1000 waits for thread 1, whose END (and its probe) was ready at 610, approximated
 * 480; main was ready at 110 + 10 = 120 (approximated 90): 480 + (1000 - 610) = 870.
 * JOIN(p2) 1200: main ready at 1010 (approximated 870), thread 2 at 1160 (approximated 720):
 * the dependency is already satisfied: 870 + (1200 - 1160) = 910. EXIT 1300 - 300 = 1000.
 */
static void test_events_join(void **state)
{
	static const double main_want[] = { 0, 90, 90, 870, 910, 1000 };
	struct fixture x = { 0 };
	struct pt_trace t;

	(void)state;
	fork_join_trace(&x);
	init(&t, &x, 10, 0, 0);
	pt_events(&t);
	expect_times(&t.th[0], main_want, 6);
	assert_float_equal(t.th[1].ta[0], 95, EPS);
	assert_float_equal(t.th[1].ta[11], 480, EPS);
	assert_float_equal(t.th[2].ta[0], 95, EPS);
	assert_float_equal(t.th[2].ta[41], 720, EPS);
	assert_int_equal(t.waited, 1);     /* JOIN(p1) took its time from thread 1 */
	assert_int_equal(t.dep_before, 0);
	assert_int_equal(t.broken, 0);
	pt_free(&t);
	fixture_free(&x);
}

/*
 * A join waiting on a slow thread whose probes cost much, by a main thread that did little:
 *   main:   ENTER 0, CREATE(e1) 10, JOIN(p1) 1000, EXIT 1010          alpha 10
 *   worker: BEGIN(e1) 12, FLUSH(600 ticks) 20, END(p1) 990
 * Worker: BEGIN starts with main's delay at CREATE (10): 2; FLUSH 20 - 20 = 0 -> keeps 2
 * (simultaneous); END 990 - 620 = 370.
 * JOIN: main ready at 20 (approximated 0), the worker at 1000 (approximated 370):
 * 370 + (1000 - 1000) = 370; main's plain local time 1000 - 20 = 980 was not before it.
 * EXIT 1010 - (1000 - 370 + 10) = 370.
 */
static void test_events_slow_thread(void **state)
{
	static const struct ev m[] = { E(ENTER, 0), EA(CREATE, 10, 1), EA(JOIN, 1000, 9),
				       E(EXIT, 1010) };
	static const struct ev w[] = { EA(THREAD_BEGIN, 12, 1), EA(FLUSH, 20, 600),
				       EA(THREAD_END, 990, 9) };
	static const double want[] = { 0, 0, 370, 370 };
	struct fixture x = { 0 };
	struct pt_trace t;

	(void)state;
	add_thread(&x, m, 4);
	add_thread(&x, w, 3);
	init(&t, &x, 10, 0, 0);
	pt_events(&t);
	assert_float_equal(t.th[1].ta[0], 2, EPS);
	assert_float_equal(t.th[1].ta[1], 2, EPS);
	assert_float_equal(t.th[1].ta[2], 370, EPS);
	assert_int_equal(t.th[1].simultaneous, 1);
	expect_times(&t.th[0], want, 4);
	assert_int_equal(t.waited, 1);
	assert_int_equal(t.dep_before, 0);
	pt_free(&t);
	fixture_free(&x);
}

/*
 * The dependency already satisfied, and a local approximation that falls before its source:
 *   main:   ENTER 0, CREATE(e1) 10, FLUSH(500) 20, JOIN(p1) 700, EXIT 710      alpha 10
 *   worker: BEGIN(e1) 12, END(p1) 300
 * Worker: BEGIN 12 - 10 = 2, END 300 - 20 = 280 (ready at 310).
 * JOIN: main's plain local time 700 - 520 = 180 is before the worker's end (280): the join
 * could not have returned then. Main ready at 520 (approximated 0); the worker at 310
 * (approximated 280): 280 + (700 - 520) = 460.
 * With a FLUSH of 100 instead: plain local 700 - 120 = 580, ready at 120 (approximated 0),
 * worker ready at 310 (approximated 280): 280 + (700 - 310) = 670?  No: the later of the
 * ready times is the worker's, approximated 280, so 280 + 390 = 670 -- yet main's own
 * approximation is 580 < 670: the measured time after 310 was main's, not waiting. Both
 * readings agree with the formula: t_a = max(0, 280) + (700 - max(120, 310)) = 670.
 */
static void test_events_dependency_satisfied(void **state)
{
	static const struct ev m[] = { E(ENTER, 0), EA(CREATE, 10, 1), EA(FLUSH, 20, 500),
				       EA(JOIN, 700, 9), E(EXIT, 710) };
	static const struct ev w[] = { EA(THREAD_BEGIN, 12, 1), EA(THREAD_END, 300, 9) };
	struct fixture x = { 0 };
	struct pt_trace t;

	(void)state;
	add_thread(&x, m, 5);
	add_thread(&x, w, 2);
	init(&t, &x, 10, 0, 0);
	pt_events(&t);
	assert_float_equal(t.th[1].ta[1], 280, EPS);
	assert_float_equal(t.th[0].ta[3], 460, EPS);
	assert_int_equal(t.dep_before, 1);
	assert_int_equal(t.nlisted, 1);
	assert_int_equal(t.listed[0].kind, PT_RE_DEPENDENT);
	assert_int_equal(t.listed[0].thr_a, 1);
	assert_int_equal(t.listed[0].a, 1);
	assert_int_equal(t.listed[0].thr_b, 0);
	assert_int_equal(t.listed[0].b, 3);
	pt_free(&t);
	fixture_free(&x);
}

/*
 * A worker that ended long before main joined it, main with little overhead: the join keeps
 * its local time.
 *   main:   ENTER 0, CREATE(e1) 10, ENTER 500, JOIN(p1) 600, EXIT 610    alpha 10
 *   worker: BEGIN(e1) 12, END(p1) 100
 * Main: 0, 0, 480, then JOIN: ready at 510 (approximated 480), worker ready at 110
 * (approximated 100 - 20 = 80): 480 + (600 - 510) = 570 = 600 - 30, its local time.
 */
static void test_events_no_wait(void **state)
{
	static const struct ev m[] = { E(ENTER, 0), EA(CREATE, 10, 1), E(ENTER, 500),
				       EA(JOIN, 600, 9), E(EXIT, 610) };
	static const struct ev w[] = { EA(THREAD_BEGIN, 12, 1), EA(THREAD_END, 100, 9) };
	static const double want[] = { 0, 0, 480, 570, 570 };
	struct fixture x = { 0 };
	struct pt_trace t;

	(void)state;
	add_thread(&x, m, 5);
	add_thread(&x, w, 2);
	init(&t, &x, 10, 0, 0);
	pt_events(&t);
	expect_times(&t.th[0], want, 5);
	assert_int_equal(t.waited, 0);
	assert_int_equal(t.dep_before, 0);
	pt_free(&t);
	fixture_free(&x);
}

/* A thread whose BEGIN was measured before its creator's CREATE returned keeps that order. */
static void test_events_begin_before_create(void **state)
{
	static const struct ev m[] = { E(ENTER, 0), E(ENTER, 50), EA(CREATE, 100, 1) };
	static const struct ev w[] = { EA(THREAD_BEGIN, 90, 1), E(ENTER, 150) };
	struct fixture x = { 0 };
	struct pt_trace t;

	(void)state;
	add_thread(&x, m, 3);
	add_thread(&x, w, 2);
	init(&t, &x, 10, 0, 0);
	pt_events(&t);
	/* CREATE 100 - 20 = 80; BEGIN 80 + (90 - 100) = 70; ENTER 150 - 30 = 120 */
	assert_float_equal(t.th[0].ta[2], 80, EPS);
	assert_float_equal(t.th[1].ta[0], 70, EPS);
	assert_float_equal(t.th[1].ta[1], 120, EPS);
	pt_free(&t);
	fixture_free(&x);
}

/* ---- the approximated trace ---- */

/*
 * The fork-join trace with a FLUSH in main, approximated by the event model, written and read
 * back: the same events but the FLUSH, at the approximated times, feature STRC_F_APPROX.
 */
static void test_approx_trace_round_trip(void **state)
{
	static const uint64_t va[] = { 0x100 };
	static const struct ev m[] = { EF(ENTER, 0, 1), EA(FLUSH, 50, 40), EA(CREATE, 100, 1),
				       EA(CREATE, 110, 2), EA(JOIN, 1000, 0x71),
				       EA(JOIN, 1200, 0x72), EF(EXIT, 1300, 1) };
	struct fixture x = { 0 };
	struct strc_file out, *back = NULL;
	struct pt_trace t;
	uint8_t *buf = NULL;
	size_t len = 0, i, j;
	char err[256];
	uint32_t k;

	(void)state;
	fork_join_trace(&x);
	free(x.th[0].ev); /* main again, with a FLUSH */
	x.f.nthreads = 0;
	add_thread(&x, m, 7);
	x.f.nthreads = 3;
	add_funcs(&x, 1, va, 1);
	x.f.start_ticks = 0;
	init(&t, &x, 10, 0, 0);
	pt_events(&t);
	pt_approx_file(&t, &x.f, &out);
	assert_int_equal(out.threads[0].nev, 6);
	assert_int_equal(strc_write_mem(&out, &buf, &len, err, sizeof(err)), 0);
	if (strc_read_mem(buf, len, &back, err, sizeof(err)) != 0)
		fail_msg("read back: %s", err);
	assert_true(back->features & STRC_F_APPROX);
	assert_int_equal(back->nthreads, 3);
	for (k = 0; k < 3; k++) {
		const struct strc_thread *b = &back->threads[k];

		assert_int_equal(b->nev, t.th[k].nev - (k == 0));
		for (i = j = 0; i < t.th[k].nev; i++) {
			if (t.th[k].ev[i].type == STRC_FLUSH)
				continue;
			assert_int_equal(b->ev[j].type, t.th[k].ev[i].type);
			assert_int_equal(b->ev[j].t, (uint64_t)(t.th[k].ta[i] + 0.5));
			j++;
		}
	}
	assert_int_equal(back->threads[1].edge, 1);
	assert_int_equal(back->threads[0].flushes, 0);
	strc_free(back);
	free(buf);
	pt_approx_free(&out);
	pt_free(&t);
	fixture_free(&x);
}

/* ---- reorderings and ties ---- */

/*
 * alpha 0, dt 5. Thread 0: ENTER 0, EXIT 100 (t_a = t_m). Thread 1: ENTER 0, FLUSH(c) 20,
 * EXIT 110: t_a(EXIT) = 110 - c, measured 10 > dt after thread 0's EXIT.
 *   c = 23: 87, 13 before it: reordered.   c = 13: 97, within dt: a tie.   c = 5: no issue.
 * Thread 1's EXIT at 104 (measured within dt of 100) with c = 50: not ordered, not counted.
 */
static void reorder_case(uint64_t exit_t, uint64_t flush, uint64_t reorders, uint64_t ties)
{
	const struct ev a[] = { E(ENTER, 0), E(EXIT, 100) };
	const struct ev b[] = { E(ENTER, 0), EA(FLUSH, 20, flush), E(EXIT, exit_t) };
	struct fixture x = { 0 };
	struct pt_trace t;

	add_thread(&x, a, 2);
	add_thread(&x, b, 3);
	init(&t, &x, 0, 0, 5);
	pt_sequential(&t);
	pt_reorders(&t);
	assert_int_equal(t.reorders, reorders);
	assert_int_equal(t.ties, ties);
	if (reorders) {
		assert_int_equal(t.nlisted, 1);
		assert_int_equal(t.listed[0].kind, PT_RE_PAIR);
		assert_int_equal(t.listed[0].thr_a, 0);
		assert_int_equal(t.listed[0].a, 1);
		assert_int_equal(t.listed[0].thr_b, 1);
		assert_int_equal(t.listed[0].b, 2);
	}
	pt_free(&t);
	fixture_free(&x);
}

static void test_reordering_detected(void **state)
{
	(void)state;
	reorder_case(110, 23, 1, 0);
}

static void test_ties_within_dt(void **state)
{
	(void)state;
	reorder_case(110, 13, 0, 1);
	reorder_case(110, 5, 0, 0);
	reorder_case(104, 50, 0, 0);
}

/* Many threads take the heap path: the same answer. */
static void test_reorderings_many_threads(void **state)
{
	const struct ev a[] = { E(ENTER, 0), E(EXIT, 100) };
	const struct ev b[] = { E(ENTER, 0), EA(FLUSH, 20, 23), E(EXIT, 110) };
	struct fixture *x = calloc(1, sizeof(*x));
	struct strc_thread th[20];
	struct pt_trace t;
	uint32_t k;

	(void)state;
	memset(th, 0, sizeof(th));
	for (k = 0; k < 20; k++) { /* thread 19 is the reordered one */
		const struct ev *v = k == 19 ? b : a;
		size_t n = k == 19 ? 3 : 2, i;

		th[k].index = k;
		th[k].nev = n;
		th[k].ev = calloc(n, sizeof(*th[k].ev));
		for (i = 0; i < n; i++)
			th[k].ev[i] = (struct strc_event){ .t = v[i].t, .arg = v[i].arg,
							   .id = v[i].id, .type = v[i].type };
	}
	x->f.threads = th;
	x->f.nthreads = 20;
	init(&t, x, 0, 0, 5);
	pt_sequential(&t);
	pt_reorders(&t);
	assert_int_equal(t.reorders, 1);
	assert_int_equal(t.listed[0].thr_b, 19);
	assert_int_equal(t.listed[0].b, 2);
	pt_free(&t);
	for (k = 0; k < 20; k++)
		free(th[k].ev);
	free(x);
}

/* ---- comparing a full and a partial trace ---- */

/*
 * Full (functions f = id 1 at 0x100, g = id 2 at 0x200): ENTER f 0, ENTER g 100, EXIT g 200,
 * EXIT f 300; alpha 10: t_a 0, 90, 180, 270.
 * Partial (f only, as id 7): ENTER f 0, EXIT f 260, FLUSH 261; t_a 0, 250, 250 (the FLUSH,
 * 241, keeps its predecessor's time).
 * Matched: ENTER f |0 - 0| = 0, EXIT f |270 - 250| = 20: total 20, mean 10, 4 % of 250.
 * Measured: |300 - 260| = 40: mean 20, 7.69 % of 260.
 */
static void test_compare(void **state)
{
	static const uint64_t full_va[] = { 0x100, 0x200 }, part_va[] = { 0x100 };
	static const struct ev fv[] = { EF(ENTER, 0, 1), EF(ENTER, 100, 2), EF(EXIT, 200, 2),
					EF(EXIT, 300, 1) };
	static const struct ev pv[] = { EF(ENTER, 0, 7), EF(EXIT, 260, 7), EA(FLUSH, 261, 1) };
	struct fixture full = { 0 }, part = { 0 };
	struct pt_trace ft, pt;
	struct tc_result r;

	(void)state;
	add_funcs(&full, 1, full_va, 2);
	add_funcs(&part, 7, part_va, 1);
	add_thread(&full, fv, 4);
	add_thread(&part, pv, 3);
	init(&ft, &full, 10, 0, 0);
	init(&pt, &part, 10, 0, 0);
	pt_sequential(&ft);
	pt_sequential(&pt);
	tc_compare(&full.f, &ft, &part.f, &pt, &r);
	assert_int_equal(r.approx.nrows, 1);
	assert_int_equal(r.approx.rows[0].ref_events, 4);
	assert_int_equal(r.approx.rows[0].an_events, 2); /* the FLUSH is not compared */
	assert_int_equal(r.approx.rows[0].matched, 2);
	assert_float_equal(r.approx.rows[0].total, 20, EPS);
	assert_float_equal(r.approx.rows[0].mean, 10, EPS);
	assert_float_equal(r.approx.rows[0].an_time, 250, EPS);
	assert_float_equal(r.approx.rows[0].ref_time, 270, EPS);
	assert_float_equal(r.measured.rows[0].total, 40, EPS);
	assert_float_equal(r.measured.rows[0].mean, 20, EPS);
	assert_float_equal(r.measured.all.mean, 20, EPS);
	assert_float_equal(r.approx.rows[0].percent, 4, EPS);
	assert_float_equal(r.approx.all.percent, 4, EPS);
	assert_float_equal(r.measured.rows[0].an_time, 261, EPS);
	assert_int_equal(r.unmatched, 0);
	tc_free(&r);
	pt_free(&ft);
	pt_free(&pt);
	fixture_free(&full);
	fixture_free(&part);
}

/* An event of the partial trace for a function the full one does not have is unmatched;
 * occurrences are counted per function and type. */
static void test_compare_occurrences(void **state)
{
	static const uint64_t full_va[] = { 0x100, 0x200 }, part_va[] = { 0x200, 0x300 };
	static const struct ev fv[] = { EF(ENTER, 0, 1), EF(EXIT, 10, 1), EF(ENTER, 20, 2),
					EF(EXIT, 30, 2), EF(ENTER, 40, 2), EF(EXIT, 50, 2) };
	static const struct ev pv[] = { EF(ENTER, 0, 1), EF(EXIT, 12, 1), EF(ENTER, 22, 0),
					EF(EXIT, 35, 0), EF(ENTER, 37, 0), EF(EXIT, 39, 0) };
	struct fixture full = { 0 }, part = { 0 };
	struct pt_trace ft, pt;
	struct tc_result r;

	(void)state;
	add_funcs(&full, 1, full_va, 2);
	add_funcs(&part, 0, part_va, 2); /* id 0 = 0x200 (g), id 1 = 0x300 (unknown) */
	add_thread(&full, fv, 6);
	add_thread(&part, pv, 6);
	init(&ft, &full, 0, 0, 0);
	init(&pt, &part, 0, 0, 0);
	pt_sequential(&ft);
	pt_sequential(&pt);
	tc_compare(&full.f, &ft, &part.f, &pt, &r);
	/* the unknown function's two events match nothing; g's first ENTER and EXIT match g's
	 * first, the second ones the second: |22 - 20| + |35 - 30| + |37 - 40| + |39 - 50| */
	assert_int_equal(r.approx.rows[0].matched, 4);
	assert_int_equal(r.unmatched, 2);
	assert_float_equal(r.approx.rows[0].total, 21, EPS);
	tc_free(&r);
	pt_free(&ft);
	pt_free(&pt);
	fixture_free(&full);
	fixture_free(&part);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sequential_exact),
		cmocka_unit_test(test_sequential_simultaneous),
		cmocka_unit_test(test_edges_and_phase),
		cmocka_unit_test(test_forkjoin_critical_path),
		cmocka_unit_test(test_total_time),
		cmocka_unit_test(test_error_formulas),
		cmocka_unit_test(test_events_join),
		cmocka_unit_test(test_events_slow_thread),
		cmocka_unit_test(test_events_dependency_satisfied),
		cmocka_unit_test(test_events_no_wait),
		cmocka_unit_test(test_events_begin_before_create),
		cmocka_unit_test(test_approx_trace_round_trip),
		cmocka_unit_test(test_reordering_detected),
		cmocka_unit_test(test_ties_within_dt),
		cmocka_unit_test(test_reorderings_many_threads),
		cmocka_unit_test(test_compare),
		cmocka_unit_test(test_compare_occurrences),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
