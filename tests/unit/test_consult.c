/* SPDX-License-Identifier: MIT */
/*
 * The Performance Consultant (tool/consult/): the hypothesis language, and the W3 search
 * engine driven by a synthetic data source whose metrics are exact functions of time, so each
 * test can assert the Search History Graph exactly: which node is true, false, deferred,
 * never concluded or unavailable, and at which sample.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "consult/engine.h"
#include "consult/trigger.h"
#include "consult/hyp.h"

/* ---- a synthetic source: 50 ms periods; rates given by a function of (metric, focus) ---- */

#define PERIOD 50000000ull

struct syn {
	struct cs_source pub;
	uint32_t nsteps, cur;
	int known_end;
	double load;
	double cost;            /* CPUs per request at a procedure */
	const char *unsupported; /* a metric it cannot measure */
	double (*rate)(const char *metric, const char *code, uint32_t step);
	const char *const *procs; /* "/Code/m/<name>" children of /Code/m, NULL-terminated */
	int threads;              /* /Threads/1 and /Threads/2 exist */
	struct { uint32_t step; const char *name; } ph[4];
	uint32_t nph;
	struct { char metric[32], code[128]; uint32_t made; } req[256];
	uint32_t nreq;
	int late; /* a request reads nothing in the step after it is made (live: put in late) */
};

static struct syn *S(struct cs_source *s)
{
	return s->impl;
}

static int syn_supports(struct cs_source *s, const char *metric, const struct cs_focus *f)
{
	(void)f;
	return !S(s)->unsupported || strcmp(metric, S(s)->unsupported);
}

static uint32_t syn_children(struct cs_source *s, const struct cs_focus *f, int h, char ***out)
{
	const char *code = f->part[H_CODE];
	uint32_t n = 0, i;

	*out = NULL;
	if (h == H_THREADS && S(s)->threads && !f->part[H_THREADS]) {
		*out = malloc(2 * sizeof(char *));
		(*out)[0] = strdup("/Threads/1");
		(*out)[1] = strdup("/Threads/2");
		return 2;
	}
	if (h != H_CODE)
		return 0;
	if (!code) {
		*out = malloc(sizeof(char *));
		(*out)[0] = strdup("/Code/m");
		return 1;
	}
	if (strcmp(code, "/Code/m"))
		return 0;
	for (i = 0; S(s)->procs && S(s)->procs[i]; i++)
		n++;
	*out = calloc(n ? n : 1, sizeof(char *));
	for (i = 0; i < n; i++) {
		char buf[128];

		snprintf(buf, sizeof(buf), "/Code/m/%s", S(s)->procs[i]);
		(*out)[i] = strdup(buf);
	}
	return n;
}

static int syn_request(struct cs_source *s, const char *metric, const struct cs_focus *f)
{
	struct syn *y = S(s);

	snprintf(y->req[y->nreq].metric, sizeof(y->req[0].metric), "%s", metric);
	snprintf(y->req[y->nreq].code, sizeof(y->req[0].code), "%s",
		 f->part[H_CODE] ? f->part[H_CODE] : "/");
	y->req[y->nreq].made = y->cur;
	return (int)y->nreq++;
}

static void syn_cancel(struct cs_source *s, int id)
{
	(void)s;
	(void)id;
}

static double syn_cost(struct cs_source *s, const char *metric, const struct cs_focus *f)
{
	if (strcmp(metric, "busy"))
		return 0;
	return f->part[H_CODE] && strchr(f->part[H_CODE] + 6, '/') ? S(s)->cost : 0;
}

static double syn_max_rate(struct cs_source *s, const char *metric, const struct cs_focus *f)
{
	(void)s;
	(void)metric;
	(void)f;
	return 1;
}

static int syn_step(struct cs_source *s, struct cs_step *st)
{
	struct syn *y = S(s);
	uint32_t i;

	if (y->cur >= y->nsteps)
		return -1;
	st->t0 = y->cur * PERIOD;
	st->t1 = st->t0 + PERIOD;
	st->load = y->load;
	for (i = 0; i < y->nph; i++)
		if (y->ph[i].step == y->cur) {
			st->phase[st->nphase].t = st->t0;
			st->phase[st->nphase++].name = y->ph[i].name;
		}
	y->cur++;
	st->last = y->cur == y->nsteps;
	return 0;
}

static double syn_read(struct cs_source *s, int id)
{
	struct syn *y = S(s);
	double dt = (double)PERIOD / 1e9;

	if (!strcmp(y->req[id].metric, "active_threads"))
		return dt; /* a reading of the tool's (live: /proc), there at once */
	if (y->late && y->req[id].made == y->cur - 1)
		return 0;
	return y->rate(y->req[id].metric, y->req[id].code, y->cur - 1) * dt;
}

static uint64_t syn_run_end(struct cs_source *s)
{
	return S(s)->known_end ? S(s)->nsteps * PERIOD : 0;
}

static uint64_t syn_phase_end(struct cs_source *s, uint64_t start)
{
	struct syn *y = S(s);
	uint32_t i;

	if (!y->known_end)
		return 0;
	for (i = 0; i < y->nph; i++)
		if (y->ph[i].step * PERIOD > start)
			return y->ph[i].step * PERIOD;
	return y->nsteps * PERIOD;
}

static uint64_t syn_generation(struct cs_source *s)
{
	(void)s;
	return 1;
}

static const struct cs_source_ops syn_ops = {
	.supports = syn_supports, .children = syn_children, .request = syn_request,
	.cancel = syn_cancel, .cost = syn_cost, .max_rate = syn_max_rate, .step = syn_step,
	.read = syn_read, .run_end = syn_run_end, .phase_end = syn_phase_end,
	.generation = syn_generation, .sample_bytes = 12,
};

static void syn_init(struct syn *y, uint32_t nsteps,
		     double (*rate)(const char *, const char *, uint32_t))
{
	static const char *const procs[] = { "hot", "cold", NULL };

	memset(y, 0, sizeof(*y));
	y->pub = (struct cs_source){ .ops = &syn_ops, .impl = y };
	y->nsteps = nsteps;
	y->known_end = 1;
	y->load = 1;
	y->rate = rate;
	y->procs = procs;
	y->unsupported = "sync_time";
}

/* A small why axis: the root, Hot (busy > T), and one the source cannot measure. */
static const char *const HYPS =
	"threshold T = 0.2;\n"
	"hypothesis Top { }\n"
	"hypothesis Hot { parent Top; test busy / active_threads > T; share busy; }\n"
	"hypothesis Locks { parent Top; test sync_time > T; }\n";

static struct hyp_lib *lib_of(const char *text)
{
	struct hyp_lib *lib = hyp_lib_new();

	if (hyp_load_string(lib, "test.hyp", text) != 0) {
		fprintf(stderr, "%s\n", lib->err);
		fail();
	}
	return lib;
}

static const struct cs_node *node_at(const struct cs_engine *e, const char *hyp,
				     const char *focus, const char *phase)
{
	uint32_t i;

	for (i = 0; i < e->nnodes; i++) {
		const struct cs_node *n = &e->nodes[i];
		char f[256];

		cs_focus_str(f, sizeof(f), &n->focus);
		if (strcmp(e->lib->hyps[n->hyp].name, hyp) || strcmp(f, focus))
			continue;
		if (!phase ? n->phase < 0 : n->phase >= 0 && !strcmp(e->phases[n->phase].name, phase))
			return n;
	}
	return NULL;
}

static enum cs_state state_of(const struct cs_engine *e, const char *hyp, const char *focus,
			      const char *phase)
{
	const struct cs_node *n = node_at(e, hyp, focus, phase);

	return n ? n->state : CS_STATE_COUNT;
}

static uint32_t step_of(uint64_t t)
{
	return (uint32_t)(t / PERIOD);
}

/* ---- the hypothesis language ---- */

static void expect_error(const char *text, const char *msg)
{
	struct hyp_lib *lib = hyp_lib_new();

	assert_int_equal(hyp_load_string(lib, "bad.hyp", text), -1);
	if (!strstr(lib->err, msg)) {
		fprintf(stderr, "got: %s\nwanted: %s\n", lib->err, msg);
		fail();
	}
	hyp_lib_free(lib);
}

static void test_language(void **state)
{
	struct hyp_lib *lib = lib_of(HYPS);
	char buf[256];
	int h;

	(void)state;
	assert_int_equal(lib->nhyps, 3);
	h = hyp_find(lib, "Hot");
	assert_int_equal(h, 1);
	assert_int_equal(lib->hyps[0].nchildren, 2);
	assert_int_equal(lib->hyps[h].nmetrics, 2);
	hx_print(buf, sizeof(buf), lib, lib->hyps[h].test);
	assert_string_equal(buf, "busy / active_threads > T");
	assert_int_equal(hyp_set_threshold(lib, "T=0.35"), 0);
	assert_true(lib->thresholds[0].value == 0.35);
	assert_int_equal(hyp_set_threshold(lib, "U=1"), -1);
	assert_non_null(strstr(lib->err, "unknown threshold 'U'"));
	assert_int_equal(hyp_set_threshold(lib, "T=-1"), -1);
	/* a later file sets a threshold again; hypotheses cannot be redefined */
	assert_int_equal(hyp_load_string(lib, "user.hyp", "threshold T = 0.5 \"mine\";"), 0);
	assert_true(lib->thresholds[0].value == 0.5);
	assert_int_equal(hyp_load_string(lib, "user.hyp", "\nhypothesis Hot { }"), -1);
	assert_string_equal(lib->err, "user.hyp:2:12: 'Hot' is already defined");
	hyp_lib_free(lib);

	expect_error("hypothesis Top { }\nhypothesis A { parent Nope; test x > 1; }",
		     "bad.hyp:2:23: unknown hypothesis 'Nope'");
	expect_error("hypothesis Top { }\nhypothesis A { parent Top; test x + 1; }",
		     "bad.hyp:2:35: expected a comparison here, found a number");
	expect_error("hypothesis Top { }\nhypothesis A { parent Top; test (x > 1) > 2; }",
		     "bad.hyp:2:36: expected a number here, found a comparison");
	expect_error("hypothesis Top { }\nhypothesis A { parent Top; test x > 1 @; }",
		     "bad.hyp:2:39: unexpected character '@'");
	expect_error("hypothesis Top { }\nhypothesis A { parent Top; }",
		     "bad.hyp:2:12: hypothesis 'A' has a parent but no test");
	expect_error("hypothesis A { test x > 1; }", "has a test but no parent");
	expect_error("threshold X = 1.5.2;", "bad.hyp:1:15: bad number");
	expect_error("hypothesis Top { hint Disks; }", "bad.hyp:1:23: unknown hierarchy");
	expect_error("hypothesis Top { name \"open; }", "bad.hyp:1:23: unterminated string");
}

static void test_builtin_file(void **state)
{
	struct hyp_lib *lib = hyp_lib_new();
	static const char *const names[] = {
		"TopLevel", "CPUBound", "SyncBottleneck", "ExcessiveSyncWaitingTime",
		"FrequentSyncOps", "IOBottleneck", "ExcessiveIOBlockingTime", "TooManySmallIOOps",
		"VirtualMemory", "InstrumentationOverhead", "ExcessiveCommWait", "LateSender",
		"ExcessiveMPISyncWait", "WaitAtCollective", "LoadImbalance",
	};
	size_t i;

	(void)state;
	if (hyp_load_file(lib, HYP_BUILTIN) != 0) {
		fprintf(stderr, "%s\n", lib->err);
		fail();
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_int_equal(hyp_find(lib, names[i]), (int)i);
	assert_int_equal(lib->hyps[hyp_find(lib, "ExcessiveSyncWaitingTime")].parents[0],
			 hyp_find(lib, "SyncBottleneck"));
	assert_int_equal(lib->hyps[hyp_find(lib, "ExcessiveSyncWaitingTime")].hint, H_SYNC);
	assert_true(lib->thresholds[hyp_find_threshold(lib, "SmallIOBytes")].fixed);
	/* MPI: refined along the ranks and the message channels (docs/consult.md "MPI runs") */
	assert_int_equal(lib->hyps[hyp_find(lib, "LateSender")].hint, H_PEER);
	assert_int_equal(lib->hyps[hyp_find(lib, "WaitAtCollective")].hint, H_PROCESS);
	assert_int_equal(lib->hyps[hyp_find(lib, "LateSender")].parents[0],
			 hyp_find(lib, "ExcessiveCommWait"));
	assert_true(lib->thresholds[hyp_find_threshold(lib, "ImbalanceThreshold")].fixed);
	assert_int_equal(lib->hyps[hyp_find(lib, "LoadImbalance")].nmetrics, 4);
	assert_int_equal(cs_hier_of("Communicator"), H_COMM);
	assert_int_equal(cs_hier_of("Tag"), H_TAG);
	hyp_lib_free(lib);
}

/* ---- the search ---- */

/* The whole program is busy; "hot" 0.8 of it, "cold" 0.05. */
static double rate_cpu(const char *metric, const char *code, uint32_t step)
{
	(void)step;
	if (strcmp(metric, "busy"))
		return 0;
	if (!strcmp(code, "/Code/m/hot"))
		return 0.8;
	if (!strcmp(code, "/Code/m/cold"))
		return 0.05;
	return 0.9;
}

static struct cs_engine *search(struct syn *y, struct hyp_lib *lib, const struct cs_params *p)
{
	struct cs_engine *e = cs_engine_new(lib, p, &y->pub);

	cs_engine_run(e);
	return e;
}

static void test_magnify(void **state)
{
	struct hyp_lib *lib = lib_of(HYPS);
	struct cs_params p;
	struct cs_engine *e;
	struct syn y;
	const struct cs_node *n;

	(void)state;
	cs_params_default(&p);
	syn_init(&y, 60, rate_cpu);
	e = search(&y, lib, &p);
	/* why: Hot at the whole program after the minimum observation time (5 periods) */
	n = node_at(e, "Hot", "/", NULL);
	assert_non_null(n);
	assert_int_equal(n->state, CS_TRUE);
	assert_int_equal(step_of(n->t_decided), 5);
	assert_int_equal(state_of(e, "Locks", "/", NULL), CS_UNAVAILABLE);
	/* where: the module, then its procedures, each after 5 more periods */
	n = node_at(e, "Hot", "/Code/m", NULL);
	assert_int_equal(n->state, CS_TRUE);
	assert_int_equal(step_of(n->t_decided), 10);
	n = node_at(e, "Hot", "/Code/m/hot", NULL);
	assert_int_equal(n->state, CS_TRUE);
	assert_int_equal(step_of(n->t_decided), 15);
	assert_true(fabs(n->share - 0.8) < 1e-9);
	assert_true(cs_node_is_bottleneck(e, n));
	assert_false(cs_node_is_bottleneck(e, node_at(e, "Hot", "/Code/m", NULL)));
	/* cold: never above 0.2; the run's end is known, so false once the rest of the run
	 * could not lift its average over 0.2 -- but the sufficient observation time (1 s, 20
	 * periods from its start at 10) comes first: given up, not false */
	n = node_at(e, "Hot", "/Code/m/cold", NULL);
	assert_int_equal(n->state, CS_NEVER);
	assert_int_equal(step_of(n->t_end), 30);
	assert_int_equal(e->nnodes, 6);
	cs_engine_free(e);

	/* with a long sufficient time, cold is false when even the busiest rest of the run
	 * could not lift it: busy / active_threads at most (0.05 O + R) / O (busy all the R s
	 * to come, active_threads as low as it could be), <= 0.2 when R <= 0.15 O, with
	 * O = t - 0.5 s observed and R = 3 s - t: t >= 2.674 s, period 54 */
	p.suff_obs = 100;
	syn_init(&y, 60, rate_cpu);
	e = search(&y, lib, &p);
	n = node_at(e, "Hot", "/Code/m/cold", NULL);
	assert_int_equal(n->state, CS_FALSE);
	assert_int_equal(step_of(n->t_decided), 54);
	cs_engine_free(e);

	/* live: the end is unknown, so nothing is ever false before it */
	syn_init(&y, 60, rate_cpu);
	y.known_end = 0;
	e = search(&y, lib, &p);
	n = node_at(e, "Hot", "/Code/m/cold", NULL);
	assert_int_equal(n->state, CS_FALSE);
	assert_int_equal(step_of(n->t_decided), 60); /* at the end, on all its data */
	cs_engine_free(e);
	hyp_lib_free(lib);
}

/* 0.31 for 10 periods, then nothing: the cumulative average falls below the threshold. */
static double rate_fall(const char *metric, const char *code, uint32_t step)
{
	(void)code;
	return !strcmp(metric, "busy") && step < 10 ? 0.31 : 0;
}

static void test_hysteresis(void **state)
{
	struct hyp_lib *lib = lib_of(HYPS);
	struct cs_params p;
	struct cs_engine *e;
	struct syn y;
	const struct cs_node *n;

	(void)state;
	cs_params_default(&p);
	/* without hysteresis: 3.1 / (10 + k) <= 2 from k = 6: false after period 16 */
	p.hyst = 1;
	syn_init(&y, 40, rate_fall);
	e = search(&y, lib, &p);
	n = node_at(e, "Hot", "/", NULL);
	assert_int_equal(n->state, CS_FALSE);
	assert_true(n->was_true);
	assert_int_equal(n->nflips, 2);
	assert_int_equal(step_of(n->flips[0].t), 5);
	assert_int_equal(step_of(n->flips[1].t), 16);
	cs_engine_free(e);
	/* hysteresis 0.9: true turns false below 0.18: 3.1 / (10 + k) < 1.8 from k = 8 */
	p.hyst = 0.9;
	syn_init(&y, 40, rate_fall);
	e = search(&y, lib, &p);
	n = node_at(e, "Hot", "/", NULL);
	assert_int_equal(n->nflips, 2);
	assert_int_equal(step_of(n->flips[1].t), 18);
	/* a true node that turned false is re-tested, and stays in the graph as was-true */
	assert_int_equal(n->state, CS_FALSE);
	cs_engine_free(e);
	hyp_lib_free(lib);
}

/* A cumulative average that hovers around the threshold: 0.3 for 10 periods, then 0.21 and
 * 0.19 in turn, 10 periods each (the rates that give it; some are negative, which only this
 * synthetic source can do). */
static double avg_wobble(uint32_t n)
{
	return n <= 10 ? 0.3 : ((n - 11) / 10) % 2 ? 0.19 : 0.21;
}

static double rate_wobble(const char *metric, const char *code, uint32_t step)
{
	(void)code;
	if (strcmp(metric, "busy"))
		return 0;
	return avg_wobble(step + 1) * (step + 1) - (step ? avg_wobble(step) * step : 0);
}

static void test_damping(void **state)
{
	struct hyp_lib *lib = lib_of(HYPS);
	struct cs_params p;
	struct cs_engine *e;
	struct syn y;
	uint32_t flips_plain;

	(void)state;
	cs_params_default(&p);
	p.hyst = 1;
	syn_init(&y, 200, rate_wobble);
	y.known_end = 0;
	e = search(&y, lib, &p);
	flips_plain = node_at(e, "Hot", "/", NULL)->transitions;
	cs_engine_free(e);
	p.hyst = 0.9;
	syn_init(&y, 200, rate_wobble);
	y.known_end = 0;
	e = search(&y, lib, &p);
	/* appendix A: with hysteresis the test stops oscillating */
	assert_int_equal(flips_plain, 19);
	assert_int_equal(node_at(e, "Hot", "/", NULL)->transitions, 1);
	assert_int_equal(node_at(e, "Hot", "/", NULL)->state, CS_TRUE);
	cs_engine_free(e);
	hyp_lib_free(lib);
}

static double rate_three(const char *metric, const char *code, uint32_t step)
{
	(void)step;
	if (strcmp(metric, "busy"))
		return 0;
	if (!strncmp(code, "/Code/m/", 8))
		return !strcmp(code, "/Code/m/b") ? 0.5 : 0.01;
	return 0.9;
}

static void test_budget_and_ignore(void **state)
{
	static const char *const procs[] = { "a", "b", "c", NULL };
	struct hyp_lib *lib = lib_of(HYPS);
	struct cs_params p;
	struct cs_engine *e;
	struct syn y;
	const struct cs_node *a, *b, *c;

	(void)state;
	cs_params_default(&p);
	p.suff_obs = 0.5;
	syn_init(&y, 80, rate_three);
	y.procs = procs;
	y.cost = 0.06; /* one procedure at a time fits the budget of 0.10 */
	e = cs_engine_new(lib, &p, &y.pub);
	while (e->now < 11 * PERIOD)
		cs_engine_step(e);
	assert_int_equal(state_of(e, "Hot", "/Code/m/a", NULL), CS_TESTING);
	assert_int_equal(state_of(e, "Hot", "/Code/m/b", NULL), CS_DEFERRED);
	assert_int_equal(state_of(e, "Hot", "/Code/m/c", NULL), CS_DEFERRED);
	cs_engine_run(e);
	a = node_at(e, "Hot", "/Code/m/a", NULL);
	b = node_at(e, "Hot", "/Code/m/b", NULL);
	c = node_at(e, "Hot", "/Code/m/c", NULL);
	/* in order, each after the one before gave up (0.5 s) */
	assert_int_equal(step_of(a->t_start), 10);
	assert_int_equal(step_of(b->t_start), 20);
	assert_int_equal(b->state, CS_TRUE);
	assert_int_equal(step_of(c->t_start), 25);
	/* b, true, keeps its instrumentation; c still starts: nothing else is under test */
	assert_true(fabs(e->st.cost_max - 0.12) < 1e-12);
	cs_engine_free(e);

	/* ignore a: tested after the others; priority c: first */
	p.ignore = (const char *[]){ "/Code/m/a" };
	p.nignore = 1;
	p.priority = (const char *[]){ "/Code/m/c" };
	p.npriority = 1;
	syn_init(&y, 80, rate_three);
	y.procs = procs;
	y.cost = 0.06;
	e = search(&y, lib, &p);
	a = node_at(e, "Hot", "/Code/m/a", NULL);
	b = node_at(e, "Hot", "/Code/m/b", NULL);
	c = node_at(e, "Hot", "/Code/m/c", NULL);
	assert_true(c->t_start < b->t_start);
	assert_true(b->t_start < a->t_start);
	assert_int_equal(step_of(c->t_start), 10);
	cs_engine_free(e);

	/* no room for the instrumentation (a point full): never started, not even as the one
	 * refinement that always starts when nothing is under test */
	memset(&p, 0, sizeof(p));
	cs_params_default(&p);
	p.suff_obs = 0.5;
	syn_init(&y, 80, rate_three);
	y.procs = procs;
	y.cost = CS_COST_NO_ROOM;
	e = cs_engine_new(lib, &p, &y.pub);
	while (e->now < 40 * PERIOD)
		cs_engine_step(e);
	a = node_at(e, "Hot", "/Code/m/a", NULL);
	assert_int_equal(a->state, CS_DEFERRED);
	assert_string_equal(a->why, "no room for its instrumentation (points full of other "
			    "requests' actions)");
	assert_int_equal(state_of(e, "Hot", "/Code/m/b", NULL), CS_DEFERRED);
	assert_true(e->st.cost_max < 1);
	cs_engine_run(e);
	assert_true(node_at(e, "Hot", "/Code/m/a", NULL)->state != CS_TRUE);
	cs_engine_free(e);
	hyp_lib_free(lib);
}

/* The procedure "hot" is busy only in phase B (periods 30 to 59), "cold" only in A. */
static double rate_phases(const char *metric, const char *code, uint32_t step)
{
	int in_b = step >= 30;

	if (strcmp(metric, "busy"))
		return 0;
	if (!strcmp(code, "/Code/m/hot"))
		return in_b ? 0.9 : 0;
	if (!strcmp(code, "/Code/m/cold"))
		return in_b ? 0 : 0.9;
	return 0.95;
}

static void test_phases(void **state)
{
	struct hyp_lib *lib = lib_of(HYPS);
	struct cs_params p;
	struct cs_engine *e;
	struct syn y;
	const struct cs_node *n;

	(void)state;
	cs_params_default(&p);
	syn_init(&y, 60, rate_phases);
	y.ph[0].step = 0;
	y.ph[0].name = "A";
	y.ph[1].step = 30;
	y.ph[1].name = "B";
	y.nph = 2;
	e = search(&y, lib, &p);
	assert_int_equal(e->nphases, 2);
	assert_int_equal(state_of(e, "Top", "/", "A"), CS_TRUE);
	n = node_at(e, "Hot", "/Code/m/cold", "A");
	assert_int_equal(n->state, CS_TRUE);
	assert_true(cs_node_is_bottleneck(e, n));
	n = node_at(e, "Hot", "/Code/m/hot", "B");
	assert_int_equal(n->state, CS_TRUE);
	assert_int_equal(step_of(n->t_decided), 31 + 15);
	assert_true(cs_node_is_bottleneck(e, n));
	/* the other procedure in each phase: false (the phase's end is known) or given up */
	assert_true(state_of(e, "Hot", "/Code/m/hot", "A") == CS_FALSE ||
		    state_of(e, "Hot", "/Code/m/hot", "A") == CS_NEVER);
	assert_true(state_of(e, "Hot", "/Code/m/cold", "B") == CS_FALSE ||
		    state_of(e, "Hot", "/Code/m/cold", "B") == CS_NEVER);
	assert_false(node_at(e, "Hot", "/Code/m/hot", "A")->was_true);
	assert_false(node_at(e, "Hot", "/Code/m/cold", "B")->was_true);
	cs_engine_free(e);
	hyp_lib_free(lib);
}

/* Late refinements: the fraction of the interval observed holds a conclusion back. */
static double rate_late(const char *metric, const char *code, uint32_t step)
{
	(void)step;
	if (strcmp(metric, "busy"))
		return 0;
	return !strcmp(code, "/Code/m/hot") ? 0.8 : 0.9;
}

static void test_min_fraction(void **state)
{
	struct hyp_lib *lib = lib_of(HYPS);
	struct cs_params p;
	struct cs_engine *e;
	struct syn y;
	const struct cs_node *n;

	(void)state;
	cs_params_default(&p);
	p.min_fraction = 0.5; /* hot starts at period 10: observed >= half of elapsed at 20 */
	syn_init(&y, 60, rate_late);
	e = search(&y, lib, &p);
	n = node_at(e, "Hot", "/Code/m", NULL);
	/* the module starts at 5 and needs 5 observed of 10 elapsed */
	assert_int_equal(step_of(n->t_decided), 10);
	n = node_at(e, "Hot", "/Code/m/hot", NULL);
	assert_int_equal(step_of(n->t_start), 10);
	assert_int_equal(step_of(n->t_decided), 20);
	cs_engine_free(e);
	hyp_lib_free(lib);
}

/* Load compensation: the program runs half the time; 0.15 busy is 0.30 of what it could. */
static double rate_load(const char *metric, const char *code, uint32_t step)
{
	(void)code;
	(void)step;
	return !strcmp(metric, "busy") ? 0.15 : 0;
}

static void test_load(void **state)
{
	struct hyp_lib *lib = lib_of(HYPS);
	struct cs_params p;
	struct cs_engine *e;
	struct syn y;

	(void)state;
	cs_params_default(&p);
	syn_init(&y, 40, rate_load);
	y.load = 0.5;
	e = search(&y, lib, &p);
	assert_int_equal(state_of(e, "Hot", "/", NULL), CS_TRUE);
	cs_engine_free(e);
	p.load_comp = 0;
	syn_init(&y, 40, rate_load);
	y.load = 0.5;
	e = search(&y, lib, &p);
	assert_false(node_at(e, "Hot", "/", NULL)->was_true);
	cs_engine_free(e);
	hyp_lib_free(lib);
}

/* Hints order where-refinements; a hypothesis with refinements of its own is refined along
 * why only. */
static void test_why_then_where(void **state)
{
	struct hyp_lib *lib = lib_of("threshold T = 0.2;\n"
				      "hypothesis Top { }\n"
				      "hypothesis Hot { parent Top; test busy > T; }\n"
				      "hypothesis Hotter { parent Hot; test busy > 0.5; hint Code; }\n");
	struct cs_params p;
	struct cs_engine *e;
	struct syn y;

	(void)state;
	cs_params_default(&p);
	syn_init(&y, 60, rate_cpu);
	e = search(&y, lib, &p);
	assert_int_equal(state_of(e, "Hot", "/", NULL), CS_TRUE);
	assert_null(node_at(e, "Hot", "/Code/m", NULL));
	assert_int_equal(state_of(e, "Hotter", "/", NULL), CS_TRUE);
	assert_int_equal(state_of(e, "Hotter", "/Code/m/hot", NULL), CS_TRUE);
	assert_int_equal(node_at(e, "Hotter", "/Code/m/hot", NULL)->axis, CS_WHERE);
	cs_engine_free(e);
	hyp_lib_free(lib);
}

/* Refinements to threads come last (seed 003 §8.1): only when nothing else waits or is
 * under test. */
static void test_threads_last(void **state)
{
	struct hyp_lib *lib = lib_of(HYPS);
	struct cs_params p;
	struct cs_engine *e;
	struct syn y;
	const struct cs_node *t1, *cold;
	uint32_t i;

	(void)state;
	cs_params_default(&p);
	syn_init(&y, 80, rate_cpu);
	y.threads = 1;
	e = search(&y, lib, &p);
	t1 = node_at(e, "Hot", "/Threads/1", NULL);
	cold = node_at(e, "Hot", "/Code/m/cold", NULL);
	assert_non_null(t1);
	assert_int_equal(t1->rank, 2);
	assert_int_equal(step_of(cold->t_end), 30);
	for (i = 0; i < e->nnodes; i++)
		if (e->nodes[i].focus.part[H_THREADS] && e->nodes[i].state != CS_NEVER)
			assert_true(e->nodes[i].t_start >= cold->t_end);
	assert_int_equal(step_of(t1->t_start), 30);
	/* --priority /Threads: first */
	p.priority = (const char *[]){ "/Threads" };
	p.npriority = 1;
	syn_init(&y, 80, rate_cpu);
	y.threads = 1;
	e = (cs_engine_free(e), search(&y, lib, &p));
	assert_int_equal(step_of(node_at(e, "Hot", "/Threads/1", NULL)->t_start), 5);
	cs_engine_free(e);
	hyp_lib_free(lib);
}

/* Phases as rate_phases; "hot" is first called in period 30 (the start of phase B). */
static double rate_trig(const char *metric, const char *code, uint32_t step)
{
	if (!strcmp(metric, "calls"))
		return !strcmp(code, "/Code/m/hot") && step >= 30 ? 100 : 0;
	return rate_phases(metric, code, step);
}

/* call:hot fires at the end of period 30: the search sees periods 31 on, shifted to 0, in
 * the phase open then (B), and finds hot; cold (busy before) is never true. */
static void test_trigger_call(void **state)
{
	struct hyp_lib *lib = lib_of(HYPS);
	struct cs_source *t;
	struct cs_params p;
	struct cs_engine *e;
	struct syn y;
	char err[256];

	(void)state;
	cs_params_default(&p);
	syn_init(&y, 80, rate_trig);
	y.ph[0].step = 0;
	y.ph[0].name = "A";
	y.ph[1].step = 30;
	y.ph[1].name = "B";
	y.nph = 2;
	t = cs_trigger_new(&y.pub, "call:hot", 1, err, sizeof(err));
	assert_non_null(t);
	e = cs_engine_new(lib, &p, t);
	cs_engine_run(e);
	assert_int_equal(cs_trigger_fired(t), 31 * PERIOD);
	assert_int_equal(e->nphases, 1);
	assert_string_equal(e->phases[0].name, "B");
	assert_int_equal(e->phases[0].start, 0);
	assert_int_equal(e->now, (80 - 31) * PERIOD);
	assert_true(node_at(e, "Hot", "/Code/m/hot", NULL)->was_true);
	assert_true(node_at(e, "Hot", "/Code/m/hot", "B")->was_true);
	assert_false(node_at(e, "Hot", "/Code/m/cold", NULL)->was_true);
	cs_engine_free(e);
	cs_trigger_free(t);
	hyp_lib_free(lib);
	/* a procedure the program does not have */
	syn_init(&y, 80, rate_trig);
	assert_null(cs_trigger_new(&y.pub, "call:nowhere", 1, err, sizeof(err)));
	assert_non_null(strstr(err, "no procedure nowhere"));
}

/* METRIC>VALUE: per second over one period; one that never crosses searches nothing. */
static void test_trigger_metric(void **state)
{
	struct hyp_lib *lib = lib_of(HYPS);
	struct cs_source *t;
	struct cs_params p;
	struct cs_engine *e;
	struct syn y;
	char err[256];

	(void)state;
	cs_params_default(&p);
	syn_init(&y, 40, rate_trig);
	t = cs_trigger_new(&y.pub, "busy>0.9", 1, err, sizeof(err));
	assert_non_null(t);
	e = cs_engine_new(lib, &p, t);
	cs_engine_run(e);
	assert_int_equal(cs_trigger_fired(t), PERIOD); /* busy is 0.95 at / from the start */
	assert_int_equal(e->now, 39 * PERIOD);
	cs_engine_free(e);
	cs_trigger_free(t);
	syn_init(&y, 40, rate_trig);
	t = cs_trigger_new(&y.pub, "busy>2", 1, err, sizeof(err));
	e = cs_engine_new(lib, &p, t);
	cs_engine_run(e);
	assert_int_equal(cs_trigger_fired(t), 0);
	assert_int_equal(e->st.steps, 0);
	cs_engine_free(e);
	cs_trigger_free(t);
	assert_int_equal(cs_trigger_check("busy>x", err, sizeof(err)), -1);
	assert_int_equal(cs_trigger_check("nonsense", err, sizeof(err)), -1);
	assert_int_equal(cs_trigger_check("cpu_time<0.5", err, sizeof(err)), 0);
	hyp_lib_free(lib);
}

/* ---- pacing (a live source: pairs only concluded nodes read come in lumps) ---- */

#define LUMP 5

static struct {
	int slow[256];
	uint32_t since[256]; /* steps since the lump of a slow request */
	uint32_t slowed, fresh;
} pz;

/* Only busy is paced (live, active_threads is read from /proc each step). */
static void pz_pace_req(struct cs_source *s, int id, double wait)
{
	int slow = wait > 0 && !strcmp(S(s)->req[id].metric, "busy");

	if (slow == pz.slow[id])
		return; /* the wait grows with the observation: only a change of pace restarts */
	pz.slow[id] = slow;
	pz.since[id] = 0;
	pz.slowed += (uint32_t)slow;
}

/* A slow request's increase comes every LUMP steps, LUMP steps' worth. */
static int pz_current(struct cs_source *s, int id)
{
	(void)s;
	return !pz.slow[id] || pz.since[id] % LUMP == 0;
}

static int pz_fresh(struct cs_source *s, int id)
{
	int f = pz_current(s, id);

	pz.fresh += (uint32_t)f;
	return f;
}

static double pz_read(struct cs_source *s, int id)
{
	double v = syn_read(s, id);

	if (!pz.slow[id])
		return v;
	return ++pz.since[id] % LUMP == 0 ? LUMP * v : 0;
}

static double rate_near(const char *metric, const char *code, uint32_t step)
{
	(void)code;
	(void)step;
	return !strcmp(metric, "busy") ? 0.22 : 0;
}

/* Hot at / is true at 0.22 (threshold 0.2, 0.18 with hysteresis); its pair, then read by no
 * node under test, comes in lumps: read between two lumps its average would fall to about
 * 0.22 x 6/10 = 0.13 and turn false; the engine waits for each lump instead, and counts as
 * samples only the readings that came. */
static void test_pacing(void **state)
{
	static struct cs_source_ops ops;
	struct hyp_lib *lib = lib_of(HYPS);
	struct cs_params p;
	struct cs_engine *e;
	struct syn y;
	const struct cs_node *n;

	(void)state;
	memset(&pz, 0, sizeof(pz));
	ops = syn_ops;
	ops.read = pz_read;
	ops.pace_req = pz_pace_req;
	ops.current = pz_current;
	ops.fresh = pz_fresh;
	cs_params_default(&p);
	syn_init(&y, 60, rate_near);
	y.pub.ops = &ops;
	y.known_end = 0;
	e = search(&y, lib, &p);
	n = node_at(e, "Hot", "/", NULL);
	assert_int_equal(n->state, CS_TRUE);
	assert_int_equal(step_of(n->t_decided), 5);
	assert_int_equal(n->transitions, 1);
	assert_true(pz.slowed >= 1);
	assert_true(fabs(n->values[0] - 0.22) < 1e-9); /* on complete data */
	assert_int_equal(e->st.samples, pz.fresh);
	/* active_threads each of the 60 steps, busy each step until true (6), then a lump every
	 * 5: fewer than 80, where 120 came before */
	assert_true(n->samples >= 60 && n->samples < 80);
	cs_engine_free(e);
	hyp_lib_free(lib);
}

/* ---- settled: the re-tests wait CS_RETEST_FRACTION of the shortest observation ---- */

static struct {
	uint32_t settled_steps, checked;
	double last;
} sp;

static void sp_progress(struct cs_engine *e, void *arg)
{
	double least = INFINITY;
	uint32_t i;

	(void)arg;
	for (i = 0; i < e->nnodes; i++) {
		const struct cs_node *n = &e->nodes[i];

		if (n->state == CS_TESTING || n->state == CS_UNTESTED || n->state == CS_DEFERRED) {
			assert_true(e->st.settled_s == 0);
			return;
		}
		if (n->term_req[0] >= 0 && n->observed < least)
			least = n->observed;
	}
	assert_true(isfinite(least));
	assert_true(fabs(e->st.settled_s - CS_RETEST_FRACTION * least) < 1e-9);
	assert_true(e->st.settled_s >= sp.last); /* wider and wider, as the run goes on */
	sp.last = e->st.settled_s;
	sp.settled_steps++;
}

/* Hot true everywhere: once every refinement is concluded the search is settled, and the pace
 * it asks for grows with the time its true nodes have been observed; they are still re-tested
 * (each lump of the source), and the samples of the settled steps are counted apart. */
static void test_settled_pace(void **state)
{
	static struct cs_source_ops ops;
	struct hyp_lib *lib = lib_of(HYPS);
	struct cs_params p;
	struct cs_engine *e;
	struct syn y;
	const struct cs_node *n;

	(void)state;
	memset(&pz, 0, sizeof(pz));
	memset(&sp, 0, sizeof(sp));
	ops = syn_ops;
	ops.read = pz_read;
	ops.pace_req = pz_pace_req;
	ops.current = pz_current;
	ops.fresh = pz_fresh;
	cs_params_default(&p);
	syn_init(&y, 60, rate_near);
	y.pub.ops = &ops;
	y.known_end = 0;
	e = cs_engine_new(lib, &p, &y.pub);
	e->progress = sp_progress;
	cs_engine_run(e);
	n = node_at(e, "Hot", "/", NULL);
	assert_int_equal(n->state, CS_TRUE);
	assert_true(sp.settled_steps >= 30);
	assert_true(sp.last >= CS_RETEST_FRACTION * 1.5); /* 1.5 s and more observed */
	assert_int_equal(e->st.settled_steps, sp.settled_steps - 1); /* counted from the next */
	assert_true(e->st.settled_samples > 0 && e->st.settled_samples < e->st.samples);
	assert_true(e->st.retest_samples >= e->st.settled_samples);
	/* re-tested at each of its lumps (every 5th step) after its first conclusion */
	assert_true(n->retests >= (60 - 6) / 5 - 1 && n->retests <= 60 - 5);
	cs_engine_free(e);
	hyp_lib_free(lib);
}

/* ---- the engine's next step: as late as the nodes under test allow ---- */

static struct {
	double wait;
	uint32_t steps, testing_steps, tight;
} nw;

static void nw_pace(struct cs_source *s, double settled, double wait)
{
	(void)s;
	(void)settled;
	nw.wait = wait;
}

/* Each node under test could be concluded by then, no later: one short of its minimum
 * observation time at that time (and a quarter of it more), one past it after a quarter of
 * its observation or its minimum observation time, and at its sufficient observation time
 * (with the same slack); one of them is that tight. Nothing under test: no step needed. */
static void nw_progress(struct cs_engine *e, void *arg)
{
	double slack = CS_RETEST_FRACTION * e->par.min_obs, least = INFINITY;
	uint32_t i;

	(void)arg;
	nw.steps++;
	for (i = 0; i < e->nnodes; i++) {
		const struct cs_node *n = &e->nodes[i];
		double w;

		if (n->state != CS_TESTING || n->term_req[0] < 0)
			continue;
		if (n->observed + 1e-9 < e->par.min_obs) {
			w = e->par.min_obs - n->observed + slack;
		} else {
			w = fmax(CS_RETEST_FRACTION * n->observed, e->par.min_obs);
			if (e->par.suff_obs > n->observed)
				w = fmin(w, e->par.suff_obs - n->observed + slack);
		}
		least = fmin(least, w);
	}
	if (!isfinite(least)) {
		assert_true(isinf(nw.wait));
		return;
	}
	nw.testing_steps++;
	assert_true(nw.wait <= least + 1e-9);
	nw.tight += fabs(nw.wait - fmax(least, 1e-3)) < 1e-9;
}

/* Hot at the whole program, its module and procedure (test_magnify): the engine asks for its
 * next step when its nodes under test could next conclude — 0.3125 s after refinements start
 * at 0.25 s minimum observation, not every period — and for none once nothing is under test. */
static void test_next_need(void **state)
{
	static struct cs_source_ops ops;
	struct hyp_lib *lib = lib_of(HYPS);
	struct cs_params p;
	struct cs_engine *e;
	struct syn y;

	(void)state;
	memset(&nw, 0, sizeof(nw));
	ops = syn_ops;
	ops.pace = nw_pace;
	cs_params_default(&p);
	syn_init(&y, 60, rate_cpu);
	y.pub.ops = &ops;
	y.known_end = 0;
	e = cs_engine_new(lib, &p, &y.pub);
	e->progress = nw_progress;
	cs_engine_step(e); /* the first period: the root's children observed 0.05 s of 0.25 */
	assert_true(fabs(nw.wait - (0.25 - 0.05 + CS_RETEST_FRACTION * 0.25)) < 1e-9);
	cs_engine_run(e);
	assert_int_equal(nw.steps, 60);
	assert_true(nw.testing_steps > 10 && nw.testing_steps < 60);
	assert_int_equal(nw.tight, nw.testing_steps);
	assert_int_equal(state_of(e, "Hot", "/Code/m/hot", NULL), CS_TRUE);
	cs_engine_free(e);
	hyp_lib_free(lib);
}

/*
 * A source whose requests are put in only during the step after they are made (live: the
 * instrumentation is committed when that step begins, after the engine's own time; under load
 * most of it) says so (late_start): that step is dropped for the nodes that read a new
 * request, so its zeros are not averaged in as observed time.
 */
static void test_late_start(void **state)
{
	static struct cs_source_ops ops;
	struct hyp_lib *lib = lib_of(HYPS);
	struct cs_params p;
	struct cs_engine *e;
	struct syn y;
	const struct cs_node *n;
	int i;

	(void)state;
	cs_params_default(&p);
	syn_init(&y, 60, rate_cpu);
	y.known_end = 0;
	y.late = 1;
	y.pub.late_start = 1;
	e = search(&y, lib, &p);
	/* each level one step later than test_magnify's (5, 10, 15): its first step dropped */
	n = node_at(e, "Hot", "/", NULL);
	assert_int_equal(n->state, CS_TRUE);
	assert_int_equal(step_of(n->t_decided), 6);
	assert_int_equal(step_of(n->t_start), 0); /* its requests made; its data from 1 */
	n = node_at(e, "Hot", "/Code/m", NULL);
	assert_int_equal(step_of(n->t_decided), 12);
	n = node_at(e, "Hot", "/Code/m/hot", NULL);
	assert_int_equal(n->state, CS_TRUE);
	assert_int_equal(step_of(n->t_decided), 18);
	assert_int_equal(step_of(n->t_start), 12);
	assert_true(fabs(n->share - 0.8) < 1e-9); /* its own rate, no zeros averaged in */
	assert_true(fabs(n->observed - (60 - 13) * (double)PERIOD / 1e9) < 1e-9);
	cs_engine_free(e);

	/* the step to be dropped is asked short: the source's shortest */
	ops = syn_ops;
	ops.pace = nw_pace;
	syn_init(&y, 60, rate_cpu);
	y.pub.ops = &ops;
	y.known_end = 0;
	y.late = 1;
	y.pub.late_start = 1;
	e = cs_engine_new(lib, &p, &y.pub);
	for (i = 0; i < 6; i++) /* Hot at / true at the 6th: /Code/m started, new */
		cs_engine_step(e);
	assert_int_equal(state_of(e, "Hot", "/Code/m", NULL), CS_TESTING);
	assert_true(nw.wait <= 1e-3);
	cs_engine_step(e); /* dropped: now one short of its minimum observation time */
	assert_true(fabs(nw.wait - (0.25 + CS_RETEST_FRACTION * 0.25)) < 1e-9);
	cs_engine_free(e);

	/* the same source not saying so: the first step's zeros count as observed time */
	syn_init(&y, 60, rate_cpu);
	y.known_end = 0;
	y.late = 1;
	e = search(&y, lib, &p);
	n = node_at(e, "Hot", "/Code/m/hot", NULL);
	assert_true(n->share < 0.8 - 0.01);
	cs_engine_free(e);
	hyp_lib_free(lib);
}

static void test_focus(void **state)
{
	struct cs_focus f, g;
	char buf[128];

	(void)state;
	assert_int_equal(cs_focus_parse(&f, "/Threads/12,/Code/app.c/solve"), 0);
	cs_focus_str(buf, sizeof(buf), &f);
	assert_string_equal(buf, "/Code/app.c/solve,/Threads/12");
	cs_focus_copy(&g, &f);
	assert_true(cs_focus_equal(&f, &g));
	cs_focus_free(&g);
	assert_int_equal(cs_focus_parse(&g, "/Code"), 0);
	cs_focus_str(buf, sizeof(buf), &g);
	assert_string_equal(buf, "/");
	assert_false(cs_focus_equal(&f, &g));
	assert_int_equal(cs_focus_parse(&g, "/Disks/1"), -1);
	cs_focus_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_language),
		cmocka_unit_test(test_builtin_file),
		cmocka_unit_test(test_focus),
		cmocka_unit_test(test_settled_pace),
		cmocka_unit_test(test_next_need),
		cmocka_unit_test(test_late_start),
		cmocka_unit_test(test_magnify),
		cmocka_unit_test(test_hysteresis),
		cmocka_unit_test(test_damping),
		cmocka_unit_test(test_budget_and_ignore),
		cmocka_unit_test(test_phases),
		cmocka_unit_test(test_min_fraction),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_why_then_where),
		cmocka_unit_test(test_threads_last),
		cmocka_unit_test(test_trigger_call),
		cmocka_unit_test(test_trigger_metric),
		cmocka_unit_test(test_pacing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
