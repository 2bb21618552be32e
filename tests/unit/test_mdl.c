/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of tool/mdl/: the built-in metric library parses; parse errors at their exact
 * file:line:column; plans for several foci with and without a program's procedures; time
 * histograms (exact bucket values after folds), aggregation of asynchronous streams that start
 * late and lag (values worked out by hand in the comments), the cost model's decisions, and the
 * text rendering.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mdl/cost.h"
#include "mdl/histogram.h"
#include "mdl/mdl.h"

#ifndef MDL_BUILTIN
#define MDL_BUILTIN "share/sonde/metrics.mdl"
#endif
#define EPS 1e-9

/* cmocka's assert_float_equal compares floats: these values need doubles. */
#define assert_near(a, b, eps)                                                         \
	do {                                                                           \
		double a_ = (a), b_ = (b);                                             \
		if (fabs(a_ - b_) > (eps))                                             \
			fail_msg("%s = %.17g, expected %.17g", #a, a_, b_);           \
	} while (0)

static struct mdl_lib *builtin(void)
{
	struct mdl_lib *lib = mdl_lib_new();

	if (mdl_load_file(lib, MDL_BUILTIN) != 0)
		fail_msg("%s", lib->err);
	return lib;
}

/* ---- the library ---- */

static void test_builtin_parses(void **state)
{
	struct mdl_lib *lib = builtin();
	const struct mdl_metric *m;
	static const char *const names[] = { "calls", "call_rate", "calls_made", "wall_time",
					     "cpu_time", "observed_cost", "big_calls", "lock_ops",
					     "sync_wait", "sync_ops", "lock_hold", "io_ops", "io_time",
					     "io_bytes" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_non_null(mdl_find_metric(lib, names[i]));
	m = mdl_find_metric(lib, "calls");
	assert_int_equal(m->base, MDL_BASE_COUNTER);
	assert_int_equal(m->fold, MDL_FOLD_SUM);
	assert_int_equal(m->agg, MDL_AGG_SUM);
	assert_string_equal(m->units->text, "calls");
	assert_int_equal(m->ncons, 3);
	m = mdl_find_metric(lib, "call_rate");
	assert_int_equal(m->fold, MDL_FOLD_AVG);
	m = mdl_find_metric(lib, "wall_time");
	assert_int_equal(m->base, MDL_BASE_EXTERNAL);
	assert_string_equal(m->external, "wall_time");
	assert_int_equal(m->units->divide, 1000000000);
	assert_int_equal(mdl_find_constraint(lib, "wall_inside")->var, MDL_VAR_WALL_TIMER);
	assert_int_equal(mdl_find_constraint(lib, "cpu_inside")->var, MDL_VAR_CPU_TIMER);
	assert_int_equal(mdl_find_constraint(lib, "active")->kind, MDL_CONS_FLAG);
	assert_int_equal(mdl_find_constraint(lib, "thread")->kind, MDL_CONS_SELECT);
	mdl_lib_free(lib);
}

/* A user's file read after the built-in one may use its units and constraints. */
static void test_user_file_on_builtin(void **state)
{
	struct mdl_lib *lib = builtin();
	const char *src = "metric mine {\n"
			  "\tunits calls;\n"
			  "\tconstraint entries;\n"
			  "\tbase is counter { append at \"work\"->entry [ addCounter(mine); ] }\n"
			  "}\n";

	(void)state;
	assert_int_equal(mdl_load_string(lib, "user.mdl", src), 0);
	assert_non_null(mdl_find_metric(lib, "mine"));
	assert_int_equal(mdl_load_string(lib, "again.mdl", src), -1);
	assert_string_equal(lib->err, "again.mdl:1:8: 'mine' is already defined at user.mdl:1:8");
	mdl_lib_free(lib);
}

static void expect_error(const char *src, const char *msg)
{
	struct mdl_lib *lib = mdl_lib_new();

	if (mdl_load_string(lib, "t.mdl", src) == 0)
		fail_msg("parsed without error, expected: %s", msg);
	if (strcmp(lib->err, msg))
		fail_msg("\n  got      %s\n  expected %s", lib->err, msg);
	mdl_lib_free(lib);
}

#define M1 "metric m {\n\tbase is counter {\n\t\tappend at $procedures->entry [ "

static void test_errors(void **state)
{
	(void)state;
	expect_error("42", "t.mdl:1:1: expected a definition (units, constraint, metric or a "
		     "list), found a number");
	expect_error("metric m {\n  units nope;\n", "t.mdl:2:9: unknown units 'nope'");
	expect_error("metric if { }", "t.mdl:1:8: 'if' is a reserved word");
	expect_error("metric m { base is counter { } }\nmetric m {",
		     "t.mdl:2:8: 'm' is already defined at t.mdl:1:8");
	expect_error(M1 "addCounter(m, 1) ] } }",
		     "t.mdl:3:51: expected ';', found ']'");
	expect_error(M1 "if ($return > 0) addCounter(m); ] } }",
		     "t.mdl:3:38: $return is only defined at an exit point");
	expect_error(M1 "if ($arg[7] > 0) addCounter(m); ] } }",
		     "t.mdl:3:43: $arg[i] needs i from 0 to 5 (register arguments)");
	expect_error(M1 "addCount(m); ] } }", "t.mdl:3:34: unknown primitive 'addCount'");
	expect_error(M1 "setCounter(m); ] } }",
		     "t.mdl:3:46: expected ',' and the value to set, found ')'");
	expect_error(M1 "startWallTimer(m); ] } }",
		     "t.mdl:3:49: startWallTimer needs a wall timer; 'm' is a counter");
	expect_error(M1 "addCounter(x); ] } }", "t.mdl:3:45: unknown counter or timer 'x'");
	expect_error("metric m {\n\tbase is timer {\n\t\tappend at $procedures->entry "
		     "[ startWallTimer(m); stopProcessTimer(m); ] } }",
		     "t.mdl:3:70: stopProcessTimer needs a process timer; 'm' is a wall timer");
	expect_error("metric m {\n\tbase is timer {\n\t\tappend at $procedures->entry "
		     "[ if (m) addCounter(x); ] } }",
		     "t.mdl:3:38: predicates test counters; 'm' is a timer");
	expect_error("units u { name \"u", "t.mdl:1:16: unterminated string");
	expect_error("metric m { base is counter { append at @", "t.mdl:1:40: unexpected "
		     "character '@'");
	expect_error("metric m { base is counter { append at nolist->entry [ ] } }",
		     "t.mdl:1:40: unknown list or foreach variable 'nolist'");
	expect_error("metric m { base is counter { append at $constraint->entry [ ] } }",
		     "t.mdl:1:40: $constraint is only defined in a constraint");
	expect_error("constraint c /Foo/* is counter { }",
		     "t.mdl:1:15: expected a resource hierarchy (Code, Threads, Process, "
		     "SyncObject, Files)");
	expect_error("constraint c /Code/* is select;",
		     "t.mdl:1:12: a select constraint applies to /Threads/* or /Process/*, not "
		     "/Code/*");
	expect_error("constraint c /Code/* is counter {\n\tappend at $constraint->entry "
		     "constrained [ ] }",
		     "t.mdl:2:31: a flag constraint's requests cannot be constrained");
	expect_error("metric m { constraint nope; base is counter { } }",
		     "t.mdl:1:23: unknown constraint 'nope'");
	expect_error("constraint c /Code/* is counter { }\n"
		     "metric m { constraint c; base is external \"x\"; }",
		     "t.mdl:2:23: constraint 'c' guards instrumentation, but 'm' has none (its "
		     "base is external)");
	expect_error("metric m { foldOperator max; }",
		     "t.mdl:1:25: expected sum or avg, found 'max'");
	expect_error("metric m { name \"a\"; name \"b\"; }", "t.mdl:1:22: 'name' is given twice");
	expect_error("metric m {\n\tname \"x\";\n", "t.mdl:3:1: expected a header (name, units, "
		     "foldOperator, aggregateOperator), a constraint or the base, found end of "
		     "file");
	expect_error("metric m { base is timer { } }",
		     "t.mdl:1:12: the timer base of 'm' starts no timer");
	expect_error("metric m { base is counter { append at $procedures->entry "
		     "[ addCounter(m, 99999999999999999999); ] } }",
		     "t.mdl:1:75: bad integer (64-bit, no fraction)");
}

/* ---- plans ---- */

static const struct mdl_proc procs[] = {
	{ "app.c", "solve", 0x1000, 0 }, { "app.c", "main", 0x2000, 0 },
	{ "app.c", "helper", 0x3000, 0 }, { "util.c", "solve", 0x4000, 0 },
	{ "libm.so.6", "sin", 0x5000, 1 }, { "libc.so.6", "pthread_mutex_lock", 0x6000, 1 },
};
static const struct mdl_program prog = { procs, sizeof(procs) / sizeof(procs[0]), NULL, NULL };

static struct mdl_plan *plan(const struct mdl_lib *lib, const char *metric, const char *focus,
			     const struct mdl_program *p)
{
	char err[512];
	struct mdl_plan *pl = mdl_plan(lib, metric, focus, p, err, sizeof(err));

	if (!pl)
		fail_msg("plan %s at %s: %s", metric, focus, err);
	return pl;
}

static void expect_plan_error(const struct mdl_lib *lib, const char *metric, const char *focus,
			      const char *msg)
{
	char err[512] = "";
	struct mdl_plan *pl = mdl_plan(lib, metric, focus, &prog, err, sizeof(err));

	assert_null(pl);
	assert_string_equal(err, msg);
}

static void expect_req(const struct mdl_request *r, const char *module, const char *name,
		       uint64_t addr, enum mdl_point pt, uint32_t nact)
{
	if (module)
		assert_string_equal(r->module, module);
	else
		assert_null(r->module);
	assert_string_equal(r->name, name);
	assert_int_equal(r->addr, addr);
	assert_int_equal(r->point, pt);
	assert_int_equal(r->nact, nact);
}

static void expect_act(const struct mdl_action *a, enum mdl_prim prim, uint32_t var,
		       int64_t value, enum mdl_opd opd)
{
	assert_int_equal(a->prim, prim);
	assert_int_equal(a->var, var);
	if (prim <= MDL_SUB)
		assert_int_equal(a->value, value);
	assert_int_equal(a->pred.opd, opd);
}

static void test_plan_whole_program(void **state)
{
	struct mdl_lib *lib = builtin();
	struct mdl_plan *p = plan(lib, "calls", "/Code", NULL);
	uint32_t i;

	(void)state;
	assert_int_equal(p->nreq, 1); /* no symbols: one wildcard for the session to expand */
	expect_req(&p->req[0], "*", "*", 0, MDL_ENTRY, 1);
	expect_act(&p->req[0].act[0], MDL_ADD, 0, 1, MDL_OPD_NONE);
	assert_int_equal(p->thread, -1);
	assert_int_equal(p->pid, -1);
	assert_null(p->external);
	assert_int_equal(p->vars[0].kind, MDL_VAR_COUNTER);
	mdl_plan_free(p);
	p = plan(lib, "calls", "", &prog); /* the program's own procedures, not libm's or libc's */
	assert_int_equal(p->nreq, 4);
	for (i = 0; i < 4; i++)
		expect_req(&p->req[i], procs[i].module, procs[i].name, procs[i].addr, MDL_ENTRY, 1);
	mdl_plan_free(p);
	p = plan(lib, "cpu_time", "/", &prog); /* read by the sampler: nothing to install */
	assert_int_equal(p->nreq, 0);
	assert_string_equal(p->external, "cpu_time");
	assert_int_equal(p->fold, MDL_FOLD_AVG);
	mdl_plan_free(p);
	mdl_lib_free(lib);
}

static void test_plan_procedure_module_thread(void **state)
{
	struct mdl_lib *lib = builtin();
	struct mdl_plan *p = plan(lib, "calls", "/Code/app.c/solve", &prog);
	uint32_t i;

	(void)state;
	assert_int_equal(p->nreq, 1); /* not util.c's solve */
	expect_req(&p->req[0], "app.c", "solve", 0x1000, MDL_ENTRY, 1);
	mdl_plan_free(p);
	p = plan(lib, "calls", "/Code/app.c/solve", NULL);
	expect_req(&p->req[0], "app.c", "solve", 0, MDL_ENTRY, 1);
	mdl_plan_free(p);

	/* timers nest: starts prepended at entries, stops appended at exits; thread 3 only */
	p = plan(lib, "wall_time", "/Code/app.c/Threads/3", &prog);
	assert_int_equal(p->nreq, 6);
	for (i = 0; i < 3; i++) {
		expect_req(&p->req[i], "app.c", procs[i].name, procs[i].addr, MDL_ENTRY, 1);
		expect_act(&p->req[i].act[0], MDL_START_WALL, 0, 0, MDL_OPD_NONE);
		expect_req(&p->req[3 + i], "app.c", procs[i].name, procs[i].addr, MDL_EXIT, 1);
		expect_act(&p->req[3 + i].act[0], MDL_STOP_WALL, 0, 0, MDL_OPD_NONE);
	}
	assert_int_equal(p->vars[0].kind, MDL_VAR_WALL_TIMER);
	assert_int_equal(p->thread, 3);
	assert_null(p->external);
	mdl_plan_free(p);

	/* a module by the start of its soname; a process */
	p = plan(lib, "cpu_time", "/Code/libm.so,/Process/77", &prog);
	assert_int_equal(p->nreq, 2);
	expect_req(&p->req[0], "libm.so.6", "sin", 0x5000, MDL_ENTRY, 1);
	expect_act(&p->req[0].act[0], MDL_START_CPU, 0, 0, MDL_OPD_NONE);
	assert_int_equal(p->req[0].library, 1);
	assert_int_equal(p->pid, 77);
	assert_int_equal(p->vars[0].kind, MDL_VAR_CPU_TIMER);
	mdl_plan_free(p);

	/* the predicate example */
	p = plan(lib, "big_calls", "/Code/app.c/helper", &prog);
	assert_int_equal(p->nreq, 1);
	expect_act(&p->req[0].act[0], MDL_ADD, 0, 1, MDL_OPD_ARG);
	assert_int_equal(p->req[0].act[0].pred.arg, 0);
	assert_int_equal(p->req[0].act[0].pred.op, MDL_GT);
	assert_int_equal(p->req[0].act[0].pred.k, 1000);
	mdl_plan_free(p);
	mdl_lib_free(lib);
}

/* A flag constraint: a counter up while solve is active guards the lock counts. */
static void test_plan_flag(void **state)
{
	struct mdl_lib *lib = builtin();
	struct mdl_plan *p = plan(lib, "lock_ops", "/Code/app.c/solve", &prog);
	const struct mdl_pred *d;

	(void)state;
	assert_int_equal(p->nvars, 2);
	assert_string_equal(p->vars[1].name, "active");
	assert_int_equal(p->vars[1].role, MDL_ROLE_FLAG);
	assert_int_equal(p->nreq, 3);
	expect_req(&p->req[0], "app.c", "solve", 0x1000, MDL_ENTRY, 1);
	expect_act(&p->req[0].act[0], MDL_ADD, 1, 1, MDL_OPD_NONE);
	expect_req(&p->req[1], "app.c", "solve", 0x1000, MDL_EXIT, 1);
	expect_act(&p->req[1].act[0], MDL_SUB, 1, 1, MDL_OPD_NONE);
	expect_req(&p->req[2], "libc.so.6", "pthread_mutex_lock", 0x6000, MDL_ENTRY, 1);
	expect_act(&p->req[2].act[0], MDL_ADD, 0, 1, MDL_OPD_COUNTER);
	d = &p->req[2].act[0].pred;
	assert_int_equal(d->counter, 1);
	assert_int_equal(d->op, MDL_GT);
	assert_int_equal(d->k, 0);
	assert_int_equal(p->missing, 4); /* the other lock procedures */
	mdl_plan_free(p);
	p = plan(lib, "lock_ops", "/Code", &prog); /* the whole program: no flag, no guard */
	assert_int_equal(p->nvars, 1);
	assert_int_equal(p->nreq, 1);
	expect_act(&p->req[0].act[0], MDL_ADD, 0, 1, MDL_OPD_NONE);
	mdl_plan_free(p);
	mdl_lib_free(lib);
}

/* prepend and append order the actions at one point; a guard with a predicate is refused. */
static void test_plan_order_and_conjunction(void **state)
{
	struct mdl_lib *lib = mdl_lib_new();
	struct mdl_plan *p;
	char err[512];
	const char *src =
		"constraint f /Code/*/* is counter {\n"
		"\tappend at $constraint->entry [ addCounter(f, 1); ]\n"
		"}\n"
		"metric m {\n"
		"\tconstraint f;\n"
		"\tbase is counter {\n"
		"\t\tappend at \"x\"->entry constrained [ addCounter(m, 2); ]\n"
		"\t\tprepend at \"x\"->entry [ setCounter(m, 5); ]\n"
		"\t\tappend at \"x\"->calls(\"y\") [ subCounter(m); ]\n"
		"\t}\n"
		"}\n"
		"metric both {\n"
		"\tconstraint f;\n"
		"\tbase is counter {\n"
		"\t\tappend at \"x\"->entry constrained [ if ($arg[1] == 3) addCounter(both); ]\n"
		"\t}\n"
		"}\n";

	(void)state;
	if (mdl_load_string(lib, "o.mdl", src))
		fail_msg("%s", lib->err);
	p = plan(lib, "m", "/Code/a.c/x", NULL);
	assert_int_equal(p->nreq, 3);
	expect_req(&p->req[0], "a.c", "x", 0, MDL_ENTRY, 1);
	expect_act(&p->req[0].act[0], MDL_ADD, 1, 1, MDL_OPD_NONE);
	expect_req(&p->req[1], NULL, "x", 0, MDL_ENTRY, 2);
	expect_act(&p->req[1].act[0], MDL_SET, 0, 5, MDL_OPD_NONE);
	expect_act(&p->req[1].act[1], MDL_ADD, 0, 2, MDL_OPD_COUNTER);
	expect_req(&p->req[2], NULL, "x", 0, MDL_CALL, 1);
	assert_string_equal(p->req[2].callee, "y");
	mdl_plan_free(p);
	p = plan(lib, "both", "/Code", NULL); /* no flag in the focus: its own predicate only */
	expect_act(&p->req[0].act[0], MDL_ADD, 0, 1, MDL_OPD_ARG);
	mdl_plan_free(p);
	assert_null(mdl_plan(lib, "both", "/Code/a.c/x", NULL, err, sizeof(err)));
	assert_string_equal(err, "o.mdl:15:3: a constrained request with a predicate of its own "
			    "would test two; the runtime tests one per primitive");
	mdl_lib_free(lib);
}

static void test_plan_errors(void **state)
{
	struct mdl_lib *lib = builtin();

	(void)state;
	expect_plan_error(lib, "nope", "/Code", "unknown metric 'nope' ('sonde metrics' lists "
			  "them)");
	expect_plan_error(lib, "observed_cost", "/Code/app.c",
			  "metric 'observed_cost' cannot be constrained to /Code/app.c (none of "
			  "its constraints matches)");
	expect_plan_error(lib, "calls", "/Code/app.c/nosuch",
			  "no procedure 'nosuch' in module 'app.c'");
	expect_plan_error(lib, "calls", "/Code/other.c", "no module 'other.c' in the program");
	expect_plan_error(lib, "calls", "/Files/etc", "metric 'calls' cannot be constrained to "
			  "/Files/etc (none of its constraints matches)");
	expect_plan_error(lib, "calls", "/Machine/x", "focus /Machine/x: resources under /Machine "
			  "are not supported yet");
	expect_plan_error(lib, "calls", "/Threads/two",
			  "focus /Threads/two: /Threads takes a number, as in /Threads/2");
	expect_plan_error(lib, "calls", "/Code/a/b/c",
			  "focus /Code/a/b/c: /Code has modules and procedures, nothing below");
	expect_plan_error(lib, "calls", "solve",
			  "focus solve: a focus starts with /Code, /Threads, /Process, /SyncObject "
			  "or /Files");
	mdl_lib_free(lib);
}

/* ---- sync objects and files: $object ---- */

static const struct mdl_proc io_procs[] = {
	{ "app.c", "main", 0x1000, 0 },
	{ "libc.so.6", "pthread_mutex_lock", 0x6000, 1 },
	{ "libc.so.6", "pthread_mutex_trylock", 0x6100, 1 },
	{ "libc.so.6", "pthread_mutex_unlock", 0x6200, 1 },
	{ "libc.so.6", "pthread_rwlock_rdlock", 0x6300, 1 },
	{ "libc.so.6", "read", 0x7000, 1 }, { "libc.so.6", "write", 0x7100, 1 },
	{ "libc.so.6", "fsync", 0x7200, 1 },
};

/* What the session's resolver would say: hot_lock at 0x4040, /tmp/x.dat open as fds 3 and 7,
 * /tmp/closed.dat not open, anything else unknown. */
static int fake_resolve(void *arg, const char *path, int64_t *vals, uint32_t cap, uint32_t *n,
			char *err, size_t errcap)
{
	(void)arg;
	*n = 0;
	if (!strcmp(path, "/SyncObject/mutex/hot_lock") && cap >= 1) {
		vals[(*n)++] = 0x4040;
		return 0;
	}
	if (!strcmp(path, "/Files/tmp/x.dat") && cap >= 2) {
		vals[(*n)++] = 3;
		vals[(*n)++] = 7;
		return 0;
	}
	if (!strcmp(path, "/Files/tmp/closed.dat"))
		return 0;
	snprintf(err, errcap, "no %s", path);
	return -1;
}

static const struct mdl_program io_prog = { io_procs, sizeof(io_procs) / sizeof(io_procs[0]),
					    fake_resolve, NULL };

static const struct mdl_request *req_at(const struct mdl_plan *p, const char *name,
					enum mdl_point pt)
{
	uint32_t i;

	for (i = 0; i < p->nreq; i++)
		if (!strcmp(p->req[i].name, name) && p->req[i].point == pt)
			return &p->req[i];
	fail_msg("no request at %s %s", name, mdl_point_name(pt));
	return NULL;
}

static void expect_object_pred(const struct mdl_action *a, int64_t k)
{
	assert_int_equal(a->pred.opd, MDL_OPD_ARG);
	assert_int_equal(a->pred.arg, 0);
	assert_int_equal(a->pred.op, MDL_EQ);
	assert_int_equal(a->pred.object, 1);
	assert_int_equal(a->pred.k, k);
}

/* A sync object: a predicate arg[0] == &object on the kind's functions, not on the others'. */
static void test_plan_sync_object(void **state)
{
	struct mdl_lib *lib = builtin();
	struct mdl_plan *p = plan(lib, "sync_ops", "/SyncObject/mutex/hot_lock", &io_prog);
	const struct mdl_request *r;

	(void)state;
	assert_int_equal(p->resource, MDL_RES_SYNC);
	assert_string_equal(p->object, "/SyncObject/mutex/hot_lock");
	assert_int_equal(p->nobjects, 1);
	assert_int_equal(p->nreq, 2); /* lock and trylock: no rwlock, no unlock */
	r = req_at(p, "pthread_mutex_lock", MDL_ENTRY);
	assert_int_equal(r->nact, 1);
	expect_act(&r->act[0], MDL_ADD, 0, 1, MDL_OPD_ARG);
	expect_object_pred(&r->act[0], 0x4040);
	mdl_plan_free(p);

	/* wall time: the start tests the object, the stop does not need to */
	p = plan(lib, "sync_wait", "/SyncObject/mutex/hot_lock", &io_prog);
	assert_int_equal(p->vars[0].kind, MDL_VAR_WALL_TIMER);
	r = req_at(p, "pthread_mutex_lock", MDL_ENTRY);
	expect_act(&r->act[0], MDL_START_WALL, 0, 0, MDL_OPD_ARG);
	expect_object_pred(&r->act[0], 0x4040);
	r = req_at(p, "pthread_mutex_lock", MDL_EXIT);
	expect_act(&r->act[0], MDL_STOP_WALL, 0, 0, MDL_OPD_NONE);
	mdl_plan_free(p);

	/* hold time: a flag set by the object's lock and unlock guards the timer */
	p = plan(lib, "lock_hold", "/SyncObject/mutex/hot_lock", &io_prog);
	assert_int_equal(p->nvars, 2);
	assert_string_equal(p->vars[1].name, "mutex_held");
	r = req_at(p, "pthread_mutex_lock", MDL_EXIT); /* start before the flag is reset */
	assert_int_equal(r->nact, 2);
	expect_act(&r->act[0], MDL_START_WALL, 0, 0, MDL_OPD_COUNTER);
	expect_act(&r->act[1], MDL_SET, 1, 0, MDL_OPD_NONE);
	r = req_at(p, "pthread_mutex_unlock", MDL_ENTRY); /* the flag set, then the stop */
	assert_int_equal(r->nact, 2);
	expect_act(&r->act[0], MDL_SET, 1, 1, MDL_OPD_ARG);
	expect_object_pred(&r->act[0], 0x4040);
	expect_act(&r->act[1], MDL_STOP_WALL, 0, 0, MDL_OPD_COUNTER);
	mdl_plan_free(p);

	/* a kind: every object of it, the tests left out, nothing resolved */
	p = plan(lib, "sync_ops", "/SyncObject/mutex", &io_prog);
	assert_int_equal(p->any_object, 1);
	assert_int_equal(p->nobjects, 0);
	assert_int_equal(p->nreq, 2);
	r = req_at(p, "pthread_mutex_trylock", MDL_ENTRY);
	expect_act(&r->act[0], MDL_ADD, 0, 1, MDL_OPD_NONE);
	mdl_plan_free(p);

	/* without a resolver: a placeholder, for showing the plan */
	p = plan(lib, "sync_ops", "/SyncObject/rwlock/rw", NULL);
	assert_int_equal(p->resolved, 0);
	assert_int_equal(p->nreq, 8); /* rwlock_ops, wildcards by name */
	expect_object_pred(&p->req[0].act[0], MDL_NO_OBJECT);
	mdl_plan_free(p);
	mdl_lib_free(lib);
}

/* A file: one action per open descriptor; bytes from the return value, behind a flag. */
static void test_plan_file(void **state)
{
	struct mdl_lib *lib = builtin();
	struct mdl_plan *p = plan(lib, "io_ops", "/Files/tmp/x.dat", &io_prog);
	const struct mdl_request *r;

	(void)state;
	assert_int_equal(p->resource, MDL_RES_FILE);
	assert_string_equal(p->object, "/Files/tmp/x.dat");
	assert_int_equal(p->nreq, 3); /* read, write, fsync */
	r = req_at(p, "fsync", MDL_ENTRY);
	assert_int_equal(r->nact, 2);
	expect_object_pred(&r->act[0], 3);
	expect_object_pred(&r->act[1], 7);
	mdl_plan_free(p);

	p = plan(lib, "io_bytes", "/Files/tmp/x.dat/,/Threads/4", &io_prog);
	assert_int_equal(p->thread, 4);
	assert_int_equal(p->nreq, 4); /* read and write, entry and exit; not fsync */
	r = req_at(p, "write", MDL_ENTRY);
	assert_int_equal(r->nact, 2);
	expect_act(&r->act[0], MDL_SET, 1, 1, MDL_OPD_ARG);
	expect_object_pred(&r->act[1], 7);
	r = req_at(p, "write", MDL_EXIT);
	assert_int_equal(r->nact, 2);
	assert_int_equal(r->act[0].prim, MDL_ADD);
	assert_int_equal(r->act[0].from_return, 1);
	assert_int_equal(r->act[0].pred.opd, MDL_OPD_COUNTER);
	expect_act(&r->act[1], MDL_SET, 1, 0, MDL_OPD_NONE);
	mdl_plan_free(p);

	/* not open now: the predicate holds for no call until the session sees it open */
	p = plan(lib, "io_time", "/Files/tmp/closed.dat", &io_prog);
	assert_int_equal(p->resolved, 1);
	assert_int_equal(p->nobjects, 0);
	r = req_at(p, "read", MDL_ENTRY);
	assert_int_equal(r->nact, 1);
	expect_object_pred(&r->act[0], MDL_NO_OBJECT);
	mdl_plan_free(p);
	mdl_lib_free(lib);
}

static void test_plan_object_errors(void **state)
{
	struct mdl_lib *lib = builtin();
	char err[512];

	(void)state;
	expect_plan_error(lib, "sync_ops", "/SyncObject/spin/x",
			  "focus /SyncObject/spin/x: no sync object kind 'spin' (mutex, rwlock, "
			  "cond, barrier, sem)");
	expect_plan_error(lib, "sync_ops", "/SyncObject/mutex/a/b",
			  "focus /SyncObject/mutex/a/b: /SyncObject has kinds and objects, nothing "
			  "below");
	expect_plan_error(lib, "io_ops", "/Files/tmp/x.dat,/Files/tmp/y",
			  "focus /Files/tmp/x.dat,/Files/tmp/y: one sync object or file at a time");
	expect_plan_error(lib, "calls", "/SyncObject/mutex/hot_lock",
			  "metric 'calls' cannot be constrained to /SyncObject/mutex/hot_lock (none "
			  "of its constraints matches)");
	expect_plan_error(lib, "sync_wait", "/SyncObject/mutex/hot_lock,/Code/app.c/main",
			  "focus /SyncObject/mutex/hot_lock,/Code/app.c/main: 'mutex_wait' cannot "
			  "narrow 'sync_wait' and guard it with a flag too (the runtime tests one "
			  "predicate per primitive)");
	assert_null(mdl_plan(lib, "sync_ops", "/SyncObject/mutex/cold", &io_prog, err,
			     sizeof(err)));
	assert_string_equal(err, "no /SyncObject/mutex/cold"); /* the resolver's own words */
	mdl_lib_free(lib);
}

#define C1 "constraint c /SyncObject/*/* is replace counter {\n\tappend at \"f\"->"

static void test_object_parse_errors(void **state)
{
	(void)state;
	expect_error("metric m { base is counter { append at $procedures->entry "
		     "[ if ($arg[0] == $object) addCounter(m); ] } }",
		     "t.mdl:1:76: $object is only defined in a constraint whose paths are all "
		     "under /SyncObject or /Files");
	expect_error("constraint c /Code/*, /Files/* is counter { append at \"f\"->entry "
		     "[ if ($arg[0] == $object) setCounter(c, 1); ] }",
		     "t.mdl:1:83: $object is only defined in a constraint whose paths are all "
		     "under /SyncObject or /Files");
	expect_error(C1 "entry [ addCounter($metric, $return); ] }",
		     "t.mdl:2:45: $return is only defined at an exit point");
	expect_error(C1 "exit [ subCounter($metric, $return); ] }",
		     "t.mdl:2:44: only addCounter adds $return");
	expect_error(C1 "entry [ if ($arg[0] == $objet) addCounter($metric); ] }",
		     "t.mdl:2:40: expected a number or $object, found '$objet'");
}

/* ---- time histograms ---- */

static void expect_buckets(const struct hist *h, const double *sum, const double *cover)
{
	uint32_t i;

	for (i = 0; i < h->n; i++) {
		assert_near(h->sum[i], sum[i], EPS);
		assert_near(h->cover[i], cover[i], EPS);
	}
}

/*
 * 4 buckets of 10 ns. [0,40) in four pieces fits; [40,50) folds once (width 20): 1+2, 3+4, 5
 * over half its bucket. [50,170) folds twice (width 80): 3+7+5 = 15 over [0,80) with 50 ns
 * covered, then 12 spread over 120 ns: 30 ns in bucket 0 (3), 80 in bucket 1 (8), 10 in 2 (1).
 */
static void test_hist_fold(void **state)
{
	struct hist *h = hist_new(4, 10, 0, MDL_FOLD_SUM);
	const double s1[] = { 3, 7, 5, 0 }, c1[] = { 20, 20, 10, 0 };
	const double s2[] = { 18, 8, 1, 0 }, c2[] = { 80, 80, 10, 0 };
	uint64_t t;

	(void)state;
	for (t = 0; t < 4; t++)
		hist_add(h, t * 10, t * 10 + 10, (double)t + 1);
	assert_int_equal(h->folds, 0);
	hist_add(h, 40, 50, 5);
	assert_int_equal(h->folds, 1);
	assert_int_equal(h->width, 20);
	expect_buckets(h, s1, c1);
	h->fold = MDL_FOLD_AVG; /* per second of covered time: 3/20 ns, 5/10 ns */
	assert_near(hist_value(h, 0), 1.5e8, 1e-3);
	assert_near(hist_value(h, 2), 5e8, 1e-3);
	h->fold = MDL_FOLD_SUM;
	hist_add(h, 50, 170, 12);
	assert_int_equal(h->folds, 3);
	assert_int_equal(h->width, 80);
	assert_int_equal(h->used, 3);
	expect_buckets(h, s2, c2);
	assert_near(hist_total(h), 27, EPS);
	assert_near(hist_value(h, 1), 8, EPS);
	h->fold = MDL_FOLD_AVG;
	assert_near(hist_value(h, 0), 18.0 / 80 * 1e9, 1e-3);
	assert_near(hist_rate(h), 27.0 / 170 * 1e9, 1e-3);
	hist_free(h);
}

/* An odd number of buckets: the last one folds alone; cumulative samples; time before start. */
static void test_hist_odd_and_samples(void **state)
{
	struct hist *h = hist_new(3, 100, 1000, MDL_FOLD_SUM);
	const double s[] = { 20, 20, 0 }, c[] = { 200, 200, 0 };

	(void)state;
	hist_sample(h, 900, 5);    /* baseline only */
	hist_sample(h, 1100, 25);  /* +20 over [900,1100): half before the start is lost */
	hist_sample(h, 1300, 45);  /* +20 over [1100,1300) */
	hist_sample(h, 1400, 55);  /* +10 past the end: fold to width 200, [1200,1400) += 10 */
	expect_buckets(h, s, c);
	assert_int_equal(h->folds, 1);
	assert_int_equal(hist_end(h), 1600);
	hist_sample(h, 1400, 56); /* no time passed: the change lands at the last time */
	assert_near(h->sum[1], 21, EPS);
	hist_free(h);
}

/* ---- aggregation ---- */

struct emitted {
	uint64_t t0[16], t1[16];
	double v[16];
	int n;
};

static void collect(void *arg, uint64_t t0, uint64_t t1, double v)
{
	struct emitted *e = arg;

	if (e->n < 16) {
		e->t0[e->n] = t0;
		e->t1[e->n] = t1;
		e->v[e->n] = v;
	}
	e->n++;
}

/*
 * A starts at 0 and samples every 100 ns, B starts late (150) and lags. Emitted intervals:
 *   A(100,10)              -> [0,100)   A 10          (B not started)
 *   A(200,30)              -> [100,150) A 10 (half of [100,200) = 20)
 *   A(300,60)              -> nothing: B holds the time at 150; A queues [200,300) = 30
 *   B(250,5)               -> [150,250) A 10 + 15, B 5
 *   B(350,25)              -> [250,300) A 15, B 10 (half of [250,350) = 20)
 *   A ends                 -> [300,350) B 10 (A stopped at 300: not counted in avg/min/max)
 */
static void run_two_streams(enum mdl_agg op, struct emitted *e)
{
	struct agg *a = agg_new(op, collect, e);
	uint32_t A = agg_source(a, 0), B = agg_source(a, 150);

	agg_sample(a, A, 100, 10);
	agg_sample(a, A, 200, 30);
	agg_sample(a, A, 300, 60);
	assert_int_equal(e->n, 2);
	agg_sample(a, B, 250, 5);
	agg_sample(a, B, 350, 25);
	agg_end(a, A);
	assert_near(a->dropped, 0, EPS);
	agg_free(a);
}

static void expect_emitted(const struct emitted *e, const double *v)
{
	static const uint64_t t[] = { 0, 100, 150, 250, 300, 350 };
	int i;

	assert_int_equal(e->n, 5);
	for (i = 0; i < 5; i++) {
		assert_int_equal(e->t0[i], t[i]);
		assert_int_equal(e->t1[i], t[i + 1]);
		assert_near(e->v[i], v[i], EPS);
	}
}

static void test_agg_late_and_lagging(void **state)
{
	const double sum[] = { 10, 10, 30, 25, 10 }, avg[] = { 10, 10, 15, 12.5, 10 };
	const double mx[] = { 10, 10, 25, 15, 10 }, mn[] = { 10, 10, 5, 10, 10 };
	const double hs[] = { 10, 25, 40, 10 }, hc[] = { 100, 100, 100, 50 };
	struct emitted e = { .n = 0 };
	struct hist *h = hist_new(4, 100, 0, MDL_FOLD_SUM);
	int i;

	(void)state;
	run_two_streams(MDL_AGG_SUM, &e);
	expect_emitted(&e, sum);
	for (i = 0; i < e.n; i++) /* into a histogram: 60 from A + 25 from B */
		hist_add(h, e.t0[i], e.t1[i], e.v[i]);
	expect_buckets(h, hs, hc);
	hist_free(h);
	memset(&e, 0, sizeof(e));
	run_two_streams(MDL_AGG_AVG, &e);
	expect_emitted(&e, avg);
	memset(&e, 0, sizeof(e));
	run_two_streams(MDL_AGG_MAX, &e);
	expect_emitted(&e, mx);
	memset(&e, 0, sizeof(e));
	run_two_streams(MDL_AGG_MIN, &e);
	expect_emitted(&e, mn);
}

/* A source heard of after the current time passed its start loses its share before it. */
static void test_agg_registered_late(void **state)
{
	struct emitted e = { .n = 0 };
	struct agg *a = agg_new(MDL_AGG_SUM, collect, &e);
	uint32_t A = agg_source(a, 0), B;

	(void)state;
	agg_sample(a, A, 100, 10); /* -> [0,100) 10 */
	B = agg_source(a, 50);
	agg_sample(a, B, 150, 20); /* [50,150) = 20: [50,100) already emitted, 10 dropped */
	agg_sample(a, A, 200, 30); /* -> [100,150): A 10 + B 10 */
	assert_int_equal(e.n, 2);
	assert_int_equal(e.t0[1], 100);
	assert_int_equal(e.t1[1], 150);
	assert_near(e.v[1], 20, EPS);
	assert_near(a->dropped, 10, EPS);
	agg_free(a);
}

/*
 * A runs ahead: [0,2) = 10 then [2,6) = 2. When B reports [0,3) = 3 the interval [0,3) gets
 * A's 10 + 2/4 of 2 = 10.5, + 3. With a queue of one piece (the thesis's pending sample) A's
 * two samples merge into [0,6) = 12, of which [0,3) gets 6: + 3 = 9.
 */
static void test_agg_queue_merge(void **state)
{
	int q;

	(void)state;
	for (q = 0; q < 2; q++) {
		struct emitted e = { .n = 0 };
		struct agg *a = agg_new(MDL_AGG_SUM, collect, &e);
		uint32_t A = agg_source(a, 0), B = agg_source(a, 0);

		a->maxq = q ? 1 : 64;
		agg_sample(a, A, 2, 10);
		agg_sample(a, A, 6, 12);
		agg_sample(a, B, 3, 3);
		assert_int_equal(e.n, 1);
		assert_near(e.v[0], q ? 9 : 13.5, EPS);
		agg_free(a);
	}
}

/* ---- cost model ---- */

static struct cost_params params(void)
{
	struct cost_params c;

	cost_defaults(&c);
	c.prim_ns[MDL_ADD] = 3;
	c.prim_ns[MDL_START_WALL] = 18;
	c.prim_ns[MDL_STOP_WALL] = 22;
	c.pred_ns = 1;
	c.tramp_ns[MDL_ENTRY] = 10;
	c.tramp_ns[MDL_EXIT] = 15;
	c.tramp_ns[MDL_CALL] = 10;
	c.freq_user = 1e6; /* a busy program: a million calls per second per procedure */
	c.freq_library = 1e5;
	c.wildcard_procs = 100;
	return c;
}

/*
 * At 1e6 calls/s: calls at solve = 1e6 × (10 + 3) = 1.3e7 ns/s (1.3 %); wall_time at solve
 * shares the entry trampoline: 1e6 × 18 + 1e6 × (15 + 22) = 5.5e7 (5.5 %, total 6.8 %); calls
 * over the whole program without symbols stands for 100 procedures: 1.3e9 (130 %): deferred.
 */
static void test_cost_decisions(void **state)
{
	struct cost_params c = params();
	struct cost_model *m = cost_model_new(&c);
	struct mdl_lib *lib = builtin();
	struct mdl_plan *calls = plan(lib, "calls", "/Code/app.c/solve", &prog);
	struct mdl_plan *wall = plan(lib, "wall_time", "/Code/app.c/solve", &prog);
	struct mdl_plan *all = plan(lib, "calls", "/Code", NULL);
	struct mdl_plan *cpu = plan(lib, "cpu_time", "/Code", NULL);
	double ns;

	(void)state;
	assert_near(cost_point_ns(&c, &calls->req[0]), 13, EPS);
	assert_near(cost_predict(m, wall), 1e6 * (10 + 18) + 1e6 * (15 + 22), 1e-3);
	assert_int_equal(cost_admit(m, calls, &ns), COST_INSTALL);
	assert_near(ns, 1.3e7, 1e-3);
	assert_near(cost_total(m), 0.013, EPS);
	assert_int_equal(cost_admit(m, wall, &ns), COST_INSTALL);
	assert_near(ns, 5.5e7, 1e-3);
	assert_near(cost_total(m), 0.068, EPS);
	assert_int_equal(cost_admit(m, all, &ns), COST_DEFER);
	assert_near(ns, 1e6 * 100 * 13, 1e-3);
	assert_near(cost_total(m), 0.068, EPS); /* a deferred plan adds nothing */
	assert_int_equal(cost_admit(m, cpu, &ns), COST_INSTALL); /* costs nothing */
	cost_release(m, wall);
	assert_near(cost_total(m), 0.013, EPS);
	mdl_plan_free(calls);
	mdl_plan_free(wall);
	mdl_plan_free(all);
	mdl_plan_free(cpu);
	mdl_lib_free(lib);
	cost_model_free(m);
}

/* Observed counts replace the static frequency; observed cost = counts × costs; the alarm. */
static void test_cost_observed(void **state)
{
	struct cost_params c = params();
	struct cost_model *m = cost_model_new(&c);
	struct mdl_lib *lib = builtin();
	struct mdl_plan *calls = plan(lib, "calls", "/Code/app.c/solve", &prog);
	struct mdl_plan *rate = plan(lib, "call_rate", "/Code/app.c/solve", &prog);
	double f;

	(void)state;
	assert_int_equal(cost_admit(m, calls, NULL), COST_INSTALL);
	assert_int_equal(cost_observe(m, &calls->req[0], 5000, 1e9), 0); /* 5000 calls/s */
	assert_near(cost_total(m), 5000 * 13 / 1e9, EPS);
	assert_near(cost_predict(m, rate), 5000 * 3, 1e-6); /* trampoline already there */
	assert_near(cost_observed_ns(m), 5000 * 13, 1e-6);
	assert_int_equal(cost_admit(m, rate, NULL), COST_INSTALL);
	assert_near(cost_observed_ns(m), 5000 * 16, 1e-6); /* both counters now */
	assert_int_equal(cost_alarm(m, 65000, 1e9, &f), 0);
	assert_near(f, 6.5e-5, EPS);
	assert_int_equal(cost_alarm(m, 3e8, 1e9, &f), 1);
	assert_int_equal(cost_observe(m, &rate->req[0], 1, 1), 0);
	cost_release(m, rate);
	cost_release(m, calls);
	assert_int_equal(cost_observe(m, &calls->req[0], 1, 1), -1); /* no longer installed */
	assert_near(cost_total(m), 0, EPS);
	mdl_plan_free(calls);
	mdl_plan_free(rate);
	mdl_lib_free(lib);
	cost_model_free(m);
}

/* ---- rendering ---- */

/* [1, 2, 4] per second in 2 rows of 8 eighths: heights 4, 8 and 16 eighths. */
static void test_render(void **state)
{
	struct hist *h = hist_new(4, 1000000000, 0, MDL_FOLD_SUM);
	struct hist_view v = { .title = "t", .units = "calls", .rows = 2, .ascii = 1 };
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	(void)state;
	hist_add(h, 0, 1000000000, 1);
	hist_add(h, 1000000000, 2000000000, 2);
	hist_add(h, 2000000000, 3000000000, 4);
	hist_render(out, h, &v);
	fclose(out);
	assert_string_equal(buf, "t  (calls per 1 s column; total 7 calls; 0 folds)\n"
				 "       4 |  #\n"
				 "         |:##\n"
				 "       0 +---\n"
				 "         0 3 s\n");
	free(buf);
	hist_free(h);
}

/* 1000 buckets in at most 70 columns: no line longer than 80 columns (Unicode or not). */
static void test_render_width(void **state)
{
	struct hist *h = hist_new(0, 1000000, 0, MDL_FOLD_AVG);
	struct hist_view v = { .title = "call_rate /Code", .units = "calls/s" };
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	uint64_t t;

	(void)state;
	for (t = 0; t < 3000; t++)
		hist_sample(h, t * 1000000, (double)(t * t));
	assert_int_equal(h->folds, 2);
	hist_render(out, h, &v);
	fclose(out);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t cols = 0;
		const char *p;

		for (p = line; *p; p++)
			cols += ((unsigned char)*p & 0xc0) != 0x80; /* count UTF-8 characters */
		assert_true(cols <= 80);
	}
	free(buf);
	hist_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin_parses),
		cmocka_unit_test(test_user_file_on_builtin),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_plan_whole_program),
		cmocka_unit_test(test_plan_procedure_module_thread),
		cmocka_unit_test(test_plan_flag),
		cmocka_unit_test(test_plan_order_and_conjunction),
		cmocka_unit_test(test_plan_errors),
		cmocka_unit_test(test_plan_sync_object),
		cmocka_unit_test(test_plan_file),
		cmocka_unit_test(test_plan_object_errors),
		cmocka_unit_test(test_object_parse_errors),
		cmocka_unit_test(test_hist_fold),
		cmocka_unit_test(test_hist_odd_and_samples),
		cmocka_unit_test(test_agg_late_and_lagging),
		cmocka_unit_test(test_agg_registered_late),
		cmocka_unit_test(test_agg_queue_merge),
		cmocka_unit_test(test_cost_decisions),
		cmocka_unit_test(test_cost_observed),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_render_width),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
