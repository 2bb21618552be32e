/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the profile built from a trace (tool/trace_profile.c) on traces made by hand:
 * nesting, recursion, longjmp unwinding, regions, counters, phases, calls still open at the end,
 * flushes kept out of every interval, counted (rate-throttled) calls, unmatched exits, threads.
 * The clock runs at 2 ticks per ns: every time below is in ticks, every expected value in ns.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "trace_profile.h"

enum { F_MAIN = 1, F_A, F_B, F_REC, R_SOLVE, N_SETUP, N_COMPUTE, N_BYTES, F_HOT, NIDS };

#define START 1000 /* ticks: the process's start */
#define MAXEV 64

struct fixture {
	struct strc_file f;
	struct strc_func funcs[NIDS];
	struct strc_module mod;
	struct strc_thread threads[2];
	struct strc_event ev[2][MAXEV];
	uint32_t by_id[NIDS];
};

static struct fixture fx;

static void def(uint32_t id, uint32_t kind, const char *name)
{
	struct strc_file *f = &fx.f;

	fx.funcs[f->nfuncs] = (struct strc_func){ .id = id, .kind = kind, .module = 0,
						  .vaddr = 0x1000 + id, .name = (char *)(uintptr_t)name };
	fx.by_id[id] = f->nfuncs++;
}

/* A process of `nthreads` threads; its events are added with ev(). */
static void setup(uint32_t nthreads)
{
	struct strc_file *f = &fx.f;
	uint32_t i;

	memset(&fx, 0, sizeof(fx));
	memset(fx.by_id, 0xff, sizeof(fx.by_id));
	f->pid = 100;
	f->ppid = 1;
	f->start_ticks = START;
	f->start_unix_ns = 1234;
	f->ticks_per_ns = 2.0;
	f->calib = (struct sprof_calib){ .clock_kind = SPROF_CLOCK_TSC, .ticks_per_ns = 2.0,
					 .o_in = 5, .o_full = 9 };
	f->has_calib = 1;
	f->exe = (char *)(uintptr_t)"";
	f->cmdline = (char *)(uintptr_t)"./app 1";
	fx.mod = (struct strc_module){ .index = 0, .path = (char *)(uintptr_t)"/tmp/app" };
	f->modules = &fx.mod;
	f->nmodules = 1;
	def(F_MAIN, SPROF_FUNC, "");
	def(F_A, SPROF_FUNC, "");
	def(F_B, SPROF_FUNC, "");
	def(F_REC, SPROF_FUNC, "");
	def(R_SOLVE, SPROF_REGION, "solve");
	def(N_SETUP, SPROF_REGION, "setup");
	def(N_COMPUTE, SPROF_REGION, "compute");
	def(N_BYTES, SPROF_REGION, "bytes");
	def(F_HOT, SPROF_FUNC, "");
	f->funcs = fx.funcs;
	f->func_by_id = fx.by_id;
	f->func_id_cap = NIDS;
	for (i = 0; i < nthreads; i++)
		fx.threads[i] = (struct strc_thread){ .index = i, .tid = 100 + i, .ev = fx.ev[i],
						      .complete = 1 };
	f->threads = fx.threads;
	f->nthreads = nthreads;
}

static void ev_arg(uint32_t thread, uint16_t type, uint32_t id, uint64_t t, uint64_t arg,
		   double value)
{
	struct strc_thread *th = &fx.threads[thread];

	assert_true(th->nev < MAXEV);
	th->ev[th->nev++] = (struct strc_event){ .t = START + t, .arg = arg, .value = value,
						 .id = id, .type = type };
	if (type == STRC_FLUSH) {
		th->flushes++;
		th->flush_ticks += arg;
	}
}

static void ev(uint32_t thread, uint16_t type, uint32_t id, uint64_t t)
{
	ev_arg(thread, type, id, t, 0, 0);
}

static void begin(uint32_t thread, uint64_t t)
{
	ev_arg(thread, STRC_THREAD_BEGIN, STRC_ID_NONE, t, 100 + thread, 0);
}

/* The node of a call path (ids from the root), or -1. */
static int node_at(const struct sprof_thread *t, const uint32_t *path, int n)
{
	uint32_t cur = 0, i;
	int k;

	for (k = 0; k < n; k++) {
		for (i = 1; i < t->nnodes; i++)
			if (t->nodes[i].parent == cur && t->nodes[i].func == path[k])
				break;
		if (i == t->nnodes)
			return -1;
		cur = i;
	}
	return (int)cur;
}

static const struct sprof_node *path_node(const struct sprof_thread *t, int n, ...)
{
	uint32_t path[32];
	va_list ap;
	int k, i;

	va_start(ap, n);
	for (k = 0; k < n; k++)
		path[k] = va_arg(ap, uint32_t);
	va_end(ap);
	i = node_at(t, path, n);
	assert_true(i >= 0);
	return &t->nodes[i];
}

static void expect_node(const struct sprof_node *n, uint64_t calls, uint64_t incl, uint64_t excl)
{
	assert_int_equal(n->calls, calls);
	assert_int_equal(n->incl, incl);
	assert_int_equal(n->excl, excl);
}

/* Every node has one parent before it, and no two siblings share a function. */
static void expect_tree(const struct sprof_thread *t)
{
	uint32_t i, j;

	assert_true(t->nnodes >= 1);
	assert_int_equal(t->nodes[0].parent, SPROF_NO_PARENT);
	assert_int_equal(t->nodes[0].func, SPROF_ROOT_FUNC);
	for (i = 1; i < t->nnodes; i++) {
		assert_true(t->nodes[i].parent < i);
		assert_true(t->nodes[i].excl <= t->nodes[i].incl);
		for (j = 1; j < i; j++)
			assert_false(t->nodes[j].parent == t->nodes[i].parent &&
				     t->nodes[j].func == t->nodes[i].func);
	}
}

/*
 * main [0, 200) { a [20, 100) { b [40, 60) }, a [120, 160) }: a node per call path; times
 * halved to ns; exclusive = inclusive minus the children's.
 */
static void test_nesting(void **state)
{
	struct sprof_file *p;
	const struct sprof_thread *t;

	(void)state;
	setup(1);
	begin(0, 0);
	ev(0, STRC_ENTER, F_MAIN, 0);
	ev(0, STRC_ENTER, F_A, 20);
	ev(0, STRC_ENTER, F_B, 40);
	ev(0, STRC_EXIT, F_B, 60);
	ev(0, STRC_EXIT, F_A, 100);
	ev(0, STRC_ENTER, F_A, 120);
	ev(0, STRC_EXIT, F_A, 160);
	ev(0, STRC_EXIT, F_MAIN, 200);
	ev_arg(0, STRC_THREAD_END, STRC_ID_NONE, 210, 77, 0);
	p = trace_profile(&fx.f);
	assert_int_equal(p->nthreads, 1);
	t = &p->threads[0];
	expect_tree(t);
	assert_int_equal(t->nnodes, 4);
	expect_node(&t->nodes[0], 0, 105, 5);
	expect_node(path_node(t, 1, F_MAIN), 1, 100, 40);
	expect_node(path_node(t, 2, F_MAIN, F_A), 2, 60, 50);
	expect_node(path_node(t, 3, F_MAIN, F_A, F_B), 1, 10, 10);
	assert_int_equal(t->index, 0);
	assert_int_equal(t->tid, 100);
	assert_int_equal(t->start, 0);
	assert_int_equal(t->end, 105);
	assert_int_equal(t->flags, 1);
	sprof_free(p);
}

/* rec -> rec -> rec: each level of a recursion is a deeper node. */
static void test_recursion(void **state)
{
	struct sprof_file *p;
	const struct sprof_thread *t;

	(void)state;
	setup(1);
	begin(0, 0);
	ev(0, STRC_ENTER, F_MAIN, 0);
	ev(0, STRC_ENTER, F_REC, 10);
	ev(0, STRC_ENTER, F_REC, 20);
	ev(0, STRC_ENTER, F_REC, 30);
	ev(0, STRC_EXIT, F_REC, 40);
	ev(0, STRC_ENTER, F_REC, 50);
	ev(0, STRC_EXIT, F_REC, 60);
	ev(0, STRC_EXIT, F_REC, 70);
	ev(0, STRC_EXIT, F_REC, 80);
	ev(0, STRC_EXIT, F_MAIN, 100);
	p = trace_profile(&fx.f);
	t = &p->threads[0];
	expect_tree(t);
	assert_int_equal(t->nnodes, 5);
	expect_node(path_node(t, 2, F_MAIN, F_REC), 1, 35, 10);
	expect_node(path_node(t, 3, F_MAIN, F_REC, F_REC), 1, 25, 15);
	expect_node(path_node(t, 4, F_MAIN, F_REC, F_REC, F_REC), 2, 10, 10);
	sprof_free(p);
}

/*
 * Four levels of rec, each entered one tick (half a ns) after its caller, all left together:
 * rounded on its own, each level's exclusive half ns would be 1 ns, 4 ns for rec against its
 * 2 ns inclusive. Taken from the rounded inclusive times, the levels' exclusive times add up to
 * the outermost's inclusive time.
 */
static void test_recursion_rounding(void **state)
{
	const struct sprof_thread *t;
	struct sprof_file *p;
	uint64_t sum = 0;
	uint32_t i;

	(void)state;
	setup(1);
	begin(0, 0);
	ev(0, STRC_ENTER, F_MAIN, 0);
	for (i = 0; i < 4; i++)
		ev(0, STRC_ENTER, F_REC, 10 + i);
	for (i = 0; i < 4; i++)
		ev(0, STRC_EXIT, F_REC, 14);
	ev(0, STRC_EXIT, F_MAIN, 20);
	p = trace_profile(&fx.f);
	t = &p->threads[0];
	expect_tree(t);
	expect_node(path_node(t, 2, F_MAIN, F_REC), 1, 2, 0);
	expect_node(path_node(t, 3, F_MAIN, F_REC, F_REC), 1, 2, 1);
	expect_node(path_node(t, 4, F_MAIN, F_REC, F_REC, F_REC), 1, 1, 0);
	expect_node(path_node(t, 5, F_MAIN, F_REC, F_REC, F_REC, F_REC), 1, 1, 1);
	expect_node(path_node(t, 1, F_MAIN), 1, 10, 8);
	for (i = 1; i < t->nnodes; i++)
		if (t->nodes[i].func == F_REC)
			sum += t->nodes[i].excl;
	assert_int_equal(sum, 2);
	sprof_free(p);
}

/* A longjmp from b to main: UNWIND(1) closes b and a at its time; exits of them are ignored. */
static void test_unwind(void **state)
{
	struct sprof_file *p;
	const struct sprof_thread *t;

	(void)state;
	setup(1);
	begin(0, 0);
	ev(0, STRC_ENTER, F_MAIN, 0);
	ev(0, STRC_ENTER, F_A, 10);
	ev(0, STRC_ENTER, F_B, 20);
	ev_arg(0, STRC_UNWIND, STRC_ID_NONE, 40, 1, 0);
	ev(0, STRC_EXIT, F_A, 45); /* matches nothing open: ignored */
	ev(0, STRC_ENTER, F_B, 50);
	ev(0, STRC_EXIT, F_B, 60);
	ev(0, STRC_EXIT, F_MAIN, 80);
	p = trace_profile(&fx.f);
	t = &p->threads[0];
	expect_tree(t);
	expect_node(path_node(t, 1, F_MAIN), 1, 40, 20);
	expect_node(path_node(t, 2, F_MAIN, F_A), 1, 15, 5);
	expect_node(path_node(t, 3, F_MAIN, F_A, F_B), 1, 10, 10);
	expect_node(path_node(t, 2, F_MAIN, F_B), 1, 5, 5);
	sprof_free(p);
}

/* An exit closes the innermost open call of its function and the calls above it. */
static void test_exit_skips_frames(void **state)
{
	struct sprof_file *p;
	const struct sprof_thread *t;

	(void)state;
	setup(1);
	begin(0, 0);
	ev(0, STRC_EXIT, F_B, 2); /* entered before the trace: ignored */
	ev(0, STRC_ENTER, F_MAIN, 10);
	ev(0, STRC_ENTER, F_A, 20);
	ev(0, STRC_ENTER, F_B, 30);
	ev(0, STRC_EXIT, F_MAIN, 50);
	p = trace_profile(&fx.f);
	t = &p->threads[0];
	expect_tree(t);
	assert_int_equal(t->nnodes, 4);
	expect_node(path_node(t, 1, F_MAIN), 1, 20, 5);
	expect_node(path_node(t, 2, F_MAIN, F_A), 1, 15, 5);
	expect_node(path_node(t, 3, F_MAIN, F_A, F_B), 1, 10, 10);
	sprof_free(p);
}

/* Regions are nodes like functions; the names of phases and counters are not functions. */
static void test_regions(void **state)
{
	struct sprof_file *p;
	const struct sprof_thread *t;
	const struct sprof_func *fn;

	(void)state;
	setup(1);
	begin(0, 0);
	ev(0, STRC_ENTER, F_MAIN, 0);
	ev(0, STRC_REGION_BEGIN, R_SOLVE, 10);
	ev(0, STRC_ENTER, F_A, 20);
	ev(0, STRC_EXIT, F_A, 30);
	ev(0, STRC_REGION_END, R_SOLVE, 50);
	ev(0, STRC_EXIT, F_MAIN, 60);
	p = trace_profile(&fx.f);
	t = &p->threads[0];
	expect_tree(t);
	expect_node(path_node(t, 2, F_MAIN, R_SOLVE), 1, 20, 15);
	expect_node(path_node(t, 3, F_MAIN, R_SOLVE, F_A), 1, 5, 5);
	fn = sprof_func_of(p, R_SOLVE);
	assert_non_null(fn);
	assert_int_equal(fn->kind, SPROF_REGION);
	assert_string_equal(fn->name, "solve");
	assert_null(sprof_func_of(p, N_SETUP));
	assert_null(sprof_func_of(p, N_BYTES));
	fn = sprof_func_of(p, F_B); /* never called: functions are all kept, as the runtime does */
	assert_non_null(fn);
	assert_int_equal(fn->kind, SPROF_FUNC);
	assert_int_equal(fn->vaddr, 0x1000 + F_B);
	assert_int_equal(fn->module, 0);
	assert_string_equal(fn->name, "");
	sprof_free(p);
}

/* USER events: count, sum, min, max per counter and thread. */
static void test_counters(void **state)
{
	struct sprof_file *p;
	uint32_t i;
	int seen = 0;

	(void)state;
	setup(2);
	begin(0, 0);
	ev_arg(0, STRC_USER, N_BYTES, 10, 0, 4.0);
	ev_arg(0, STRC_USER, N_BYTES, 20, 0, -2.5);
	ev_arg(0, STRC_USER, N_BYTES, 30, 0, 10.0);
	begin(1, 5);
	ev_arg(1, STRC_USER, N_BYTES, 15, 0, 7.0);
	p = trace_profile(&fx.f);
	assert_int_equal(p->ncounters, 2);
	for (i = 0; i < p->ncounters; i++) {
		const struct sprof_counter *c = &p->counters[i];

		assert_string_equal(c->name, "bytes");
		if (c->thread == 0) {
			assert_int_equal(c->count, 3);
			assert_float_equal(c->sum, 11.5, 1e-12);
			assert_float_equal(c->min, -2.5, 1e-12);
			assert_float_equal(c->max, 10.0, 1e-12);
			seen |= 1;
		} else {
			assert_int_equal(c->thread, 1);
			assert_int_equal(c->count, 1);
			assert_float_equal(c->sum, 7.0, 1e-12);
			seen |= 2;
		}
	}
	assert_int_equal(seen, 3);
	sprof_free(p);
}

/* A phase marker ends the current phase; one still open at the end lasts to the end of the run. */
static void test_phases(void **state)
{
	struct sprof_file *p;

	(void)state;
	setup(1);
	begin(0, 0);
	ev(0, STRC_PHASE, N_SETUP, 10);
	ev(0, STRC_PHASE, N_COMPUTE, 30);
	ev(0, STRC_PHASE, STRC_ID_NONE, 50);
	ev(0, STRC_PHASE, N_SETUP, 70);
	ev_arg(0, STRC_PROC_END, STRC_ID_NONE, 90, 0, 0);
	p = trace_profile(&fx.f);
	assert_int_equal(p->nphases, 3);
	assert_string_equal(p->phases[0].name, "setup");
	assert_int_equal(p->phases[0].start, 5);
	assert_int_equal(p->phases[0].end, 15);
	assert_string_equal(p->phases[1].name, "compute");
	assert_int_equal(p->phases[1].start, 15);
	assert_int_equal(p->phases[1].end, 25);
	assert_int_equal(p->phases[2].start, 35);
	assert_int_equal(p->phases[2].end, 45);
	assert_int_equal(p->run.wall_ns, 45);
	sprof_free(p);
}

/* Calls still open when a stream ends (a killed process) close at its last event. */
static void test_open_at_end(void **state)
{
	struct sprof_file *p;
	const struct sprof_thread *t;

	(void)state;
	setup(1);
	fx.threads[0].complete = 0;
	begin(0, 0);
	ev(0, STRC_ENTER, F_MAIN, 10);
	ev(0, STRC_ENTER, F_A, 20);
	ev(0, STRC_ENTER, F_B, 30);
	ev(0, STRC_EXIT, F_B, 40);
	ev_arg(0, STRC_USER, N_BYTES, 70, 0, 1.0);
	p = trace_profile(&fx.f);
	t = &p->threads[0];
	expect_tree(t);
	expect_node(&t->nodes[0], 0, 35, 5);
	expect_node(path_node(t, 1, F_MAIN), 1, 30, 5);
	expect_node(path_node(t, 2, F_MAIN, F_A), 1, 25, 20);
	expect_node(path_node(t, 3, F_MAIN, F_A, F_B), 1, 5, 5);
	assert_int_equal(t->flags, 0);
	assert_int_equal(p->run.wall_ns, 35); /* no PROC_END: the last event */
	sprof_free(p);
}

/* A flush of 40 ticks inside a and main: no interval open then includes it. */
static void test_flush(void **state)
{
	struct sprof_file *p;
	const struct sprof_thread *t;

	(void)state;
	setup(1);
	begin(0, 0);
	ev(0, STRC_ENTER, F_MAIN, 0);
	ev(0, STRC_ENTER, F_A, 10);
	ev_arg(0, STRC_FLUSH, STRC_ID_NONE, 20, 40, 0);
	ev(0, STRC_EXIT, F_A, 80);
	ev(0, STRC_ENTER, F_B, 90);
	ev(0, STRC_EXIT, F_B, 100);
	ev(0, STRC_EXIT, F_MAIN, 120);
	ev_arg(0, STRC_PROC_END, STRC_ID_NONE, 120, 0, 0);
	p = trace_profile(&fx.f);
	t = &p->threads[0];
	expect_tree(t);
	expect_node(&t->nodes[0], 0, 40, 0);
	expect_node(path_node(t, 1, F_MAIN), 1, 40, 20);
	expect_node(path_node(t, 2, F_MAIN, F_A), 1, 15, 15);
	expect_node(path_node(t, 2, F_MAIN, F_B), 1, 5, 5);
	assert_int_equal(t->end, 60); /* thread times stay wall-clock */
	assert_int_equal(p->run.wall_ns, 40); /* the main thread's flushes are not the program's */
	sprof_free(p);
}

/* COUNT: calls recorded only as a count are unmeasured calls of the current call path. */
static void test_counted_calls(void **state)
{
	struct sprof_file *p;
	const struct sprof_thread *t;
	const struct sprof_func *fn;

	(void)state;
	setup(1);
	begin(0, 0);
	ev(0, STRC_ENTER, F_MAIN, 0);
	ev(0, STRC_ENTER, F_HOT, 10);
	ev(0, STRC_EXIT, F_HOT, 12);
	ev_arg(0, STRC_COUNT, F_HOT, 20, 7, 0);
	ev(0, STRC_ENTER, F_A, 30);
	ev_arg(0, STRC_COUNT, F_HOT, 40, 3, 0);
	ev(0, STRC_EXIT, F_A, 50);
	ev(0, STRC_EXIT, F_MAIN, 60);
	p = trace_profile(&fx.f);
	t = &p->threads[0];
	expect_tree(t);
	assert_int_equal(path_node(t, 1, F_MAIN)->skipped, 7);
	assert_int_equal(path_node(t, 2, F_MAIN, F_A)->skipped, 3);
	assert_int_equal(path_node(t, 2, F_MAIN, F_HOT)->calls, 1);
	fn = sprof_func_of(p, F_HOT);
	assert_non_null(fn);
	assert_true(fn->flags & SPROF_FN_THROTTLED);
	assert_int_equal(fn->throttled_at, 10);
	assert_int_equal(fn->throttled_calls, 1);
	assert_false(sprof_func_of(p, F_A)->flags & SPROF_FN_THROTTLED);
	sprof_free(p);
}

/* Threads have trees of their own; the run's fields come from RUN, CALIB and PROC_END. */
static void test_threads_and_run(void **state)
{
	struct sprof_file *p;

	(void)state;
	setup(2);
	fx.f.end_reason = SPROF_END_SIGNAL;
	fx.f.end_signal = 15;
	fx.threads[1].dropped = 3;
	begin(0, 0);
	ev(0, STRC_ENTER, F_MAIN, 0);
	ev(0, STRC_EXIT, F_MAIN, 100);
	ev_arg(0, STRC_PROC_END, STRC_ID_NONE, 100, 0, 0);
	begin(1, 20);
	ev(1, STRC_ENTER, F_A, 20);
	ev(1, STRC_EXIT, F_A, 60);
	p = trace_profile(&fx.f);
	assert_int_equal(p->nthreads, 2);
	expect_tree(&p->threads[1]);
	assert_int_equal(p->threads[1].index, 1);
	assert_int_equal(p->threads[1].start, 10);
	assert_int_equal(p->threads[1].end, 30);
	assert_int_equal(p->threads[1].lost_calls, 2);
	expect_node(path_node(&p->threads[1], 1, F_A), 1, 20, 20);
	assert_int_equal(node_at(&p->threads[1], (const uint32_t[]){ F_MAIN }, 1), -1);
	assert_int_equal(p->run.pid, 100);
	assert_int_equal(p->run.ppid, 1);
	assert_int_equal(p->run.end_reason, SPROF_END_SIGNAL);
	assert_int_equal(p->run.end_signal, 15);
	assert_int_equal(p->run.wall_ns, 50);
	assert_int_equal(p->run.nthreads, 2);
	assert_int_equal(p->run.start_unix_ns, 1234);
	assert_string_equal(p->run.exe, "/tmp/app"); /* RUN has none: the executable's module */
	assert_string_equal(p->run.cmdline, "./app 1");
	assert_float_equal(p->calib.o_full, 9, 1e-12);
	assert_int_equal(p->nmodules, 1);
	assert_string_equal(p->modules[0].path, "/tmp/app");
	sprof_free(p);
}

/* A thread without events and a process without any calls still make a valid profile. */
static void test_empty(void **state)
{
	struct sprof_file *p;

	(void)state;
	setup(1);
	p = trace_profile(&fx.f);
	assert_int_equal(p->nthreads, 1);
	assert_int_equal(p->threads[0].nnodes, 1);
	expect_node(&p->threads[0].nodes[0], 0, 0, 0);
	sprof_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nesting),
		cmocka_unit_test(test_recursion),
		cmocka_unit_test(test_recursion_rounding),
		cmocka_unit_test(test_unwind),
		cmocka_unit_test(test_exit_skips_frames),
		cmocka_unit_test(test_regions),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_phases),
		cmocka_unit_test(test_open_at_end),
		cmocka_unit_test(test_flush),
		cmocka_unit_test(test_counted_calls),
		cmocka_unit_test(test_threads_and_run),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests_name("trace_profile", tests, NULL, NULL);
}
