/* SPDX-License-Identifier: MIT */
/*
 * In-process calibration of dynamic instrumentation (docs/dynamic.md, "Costs"): what each
 * primitive, predicate and trampoline costs in this process, on this machine, now — the cost
 * model's inputs (tool/mdl/cost.h, seed 003 Fig. 6.2) — and, for `sonde run --dynamic`, the
 * stand-ins through which the profile's probe costs are calibrated (calibrate.c).
 *
 * The code measured is the real thing: empty functions on a NOP sled patched with the
 * patcher's entry trampoline (arch/x86_64/dyn_calib_code.c), calling sonde__dyn_entry with
 * points of their own (ids above the protocol's, DYN_CALIB_POINT + i) whose action lists are
 * the configurations measured; exit actions hook the return through the runtime's return
 * trampoline. Each figure is a difference of per-call times of loops of calls (batches; the
 * slowest tenth dropped, as calibrate.c does), each call made from one of DYN_CALIB_SITES call
 * sites in turn, so that returns go to varied places as in a program.
 *
 * Primitives are measured on the control thread when it starts, before it serves anyone, with
 * a private per-thread record (not on the list the sampler reads) and counter 0 put back as it
 * was: no point of the protocol is active then (dyn_server_start cleared them). Nobody waits
 * for it but a tool that connects at once, whose HELLO is answered a few ms later.
 */
#include "dyn/dyn.h"

#include <math.h>
#include <string.h>

#define BATCHES 64
#define PER_BATCH 6    /* calls of a caller: DYN_CALIB_SITES executions each */
#define CPU_BATCHES 16 /* the CPU timer makes two system calls: fewer, or it takes ms */
#define CPU_PER_BATCH 1
#define MAX_ACT 4

typedef void (*call_fn)(void);

struct prog_mem {
	struct dyn_prog p;
	struct dyn_action a[MAX_ACT];
};

/* ---- the profile's stand-ins (sonde run --dynamic) ---- */

static struct prog_mem profile_prog[2];

/*
 * The calibration stand-ins of calibrate.c as `sonde run --dynamic` measures the program: two
 * patched empty functions whose points have PROFILE actions at entry and exit (the second is
 * the one calibrate.c excludes), each called from DYN_CALIB_SITES sites by a plain function,
 * and the unpatched one likewise. 0, or -1 (no executable page).
 */
int rt_calib_dyn_standins(struct rt_calib_dyn_fns *out)
{
	struct dyn_calib_fns f;
	int i;

	if (dyn_calib_code(&f) != 0)
		return -1;
	for (i = 0; i < 2; i++) {
		struct sproto_point_set ps = { .point = DYN_CALIB_POINT + 1 + i, .n = 2 };

		ps.act[0] = (struct sproto_action){ .when = SPROTO_AT_ENTRY, .prim = SPROTO_PROFILE,
						    .value = (int64_t)(uintptr_t)f.fn[1 + i] };
		ps.act[1] = ps.act[0];
		ps.act[1].when = SPROTO_AT_EXIT;
		dyn_prog_fill(&profile_prog[i].p, &ps);
		atomic_store(&dyn_points[DYN_CALIB_POINT + 1 + i], &profile_prog[i].p);
	}
	out->measured = f.sites[1];
	out->excluded = f.sites[2];
	out->plain = f.plain_sites;
	out->measured_addr = (uintptr_t)f.fn[1];
	out->excluded_addr = (uintptr_t)f.fn[2];
	out->pairs = DYN_CALIB_SITES;
	return 0;
}

/* ---- primitives and trampolines ---- */

static call_fn volatile target_fn;

/* ns per execution (target_fn runs DYN_CALIB_SITES): trimmed mean (and sd) over batches. */
static double per_call(int batches, int per_batch, double *sd)
{
	double v[BATCHES], mean;
	int b, i;

	for (b = 0; b < batches; b++) {
		uint64_t s = rt_now();

		for (i = 0; i < per_batch; i++)
			target_fn();
		v[b] = (double)(rt_now() - s) / (per_batch * DYN_CALIB_SITES) / rt_ticks_per_ns();
	}
	rt_trimmed_stats(v, batches, &mean, sd);
	return mean;
}

/* One configuration: the point's actions, or none (NULL: an inactive point). */
static double measure(const struct sproto_action *act, unsigned n, int cpu, double *sd)
{
	static struct prog_mem mem[16];
	static unsigned used;
	struct sproto_point_set ps = { .point = DYN_CALIB_POINT, .n = (uint16_t)n };
	const struct dyn_prog *p = NULL;

	if (n) {
		struct prog_mem *m = &mem[used++ % 16];

		memcpy(ps.act, act, n * sizeof(*act));
		dyn_prog_fill(&m->p, &ps);
		p = &m->p;
	}
	atomic_store(&dyn_points[DYN_CALIB_POINT], p);
	target_fn(); /* first use: the thread's state, the code in the caches */
	return cpu ? per_call(CPU_BATCHES, CPU_PER_BATCH, sd) : per_call(BATCHES, PER_BATCH, sd);
}

static struct sproto_action act(uint8_t when, uint8_t prim)
{
	return (struct sproto_action){ .when = when, .prim = prim,
				       .value = prim <= SPROTO_SUB || prim >= SPROTO_TSET };
}

/* ns as whole picoseconds, 0 below zero (a difference lost in noise), capped at 4.29 ms. */
static uint32_t ps(double ns)
{
	return ns > 0 ? ns < 4294967.0 ? (uint32_t)(ns * 1000 + 0.5) : UINT32_MAX : 0;
}

static void put(struct sproto_costs *c, uint16_t item, double ns, double sd)
{
	if (c->n >= SPROTO_MAX_COSTS)
		return;
	c->c[c->n].item = item;
	c->c[c->n].mean_ps = ps(ns);
	c->c[c->n].sd_ps = ps(sd);
	c->n++;
}

static double root_sum(double a, double b)
{
	return sqrt(a * a + b * b);
}

/* A single primitive at entry, over the inactive point's time. */
static void one_prim(struct sproto_costs *c, uint8_t prim, double e0, double e0_sd)
{
	struct sproto_action a = act(SPROTO_AT_ENTRY, prim);
	double sd, ns = measure(&a, 1, 0, &sd);

	put(c, SPROTO_COST_PRIM + prim, ns - e0, root_sum(sd, e0_sd));
}

/* A timer's start and stop at entry, split evenly: each reads the clock once. */
static void timer_pair(struct sproto_costs *c, uint8_t start, double e0, double e0_sd)
{
	struct sproto_action a[2] = { act(SPROTO_AT_ENTRY, start), act(SPROTO_AT_ENTRY, start + 1) };
	double sd, ns = measure(a, 2, start == SPROTO_START_CPU, &sd) - e0;

	put(c, SPROTO_COST_PRIM + start, ns / 2, root_sum(sd, e0_sd) / 2);
	put(c, SPROTO_COST_PRIM + start + 1, ns / 2, root_sum(sd, e0_sd) / 2);
}

static void measure_all(struct sproto_costs *c, const struct dyn_calib_fns *f)
{
	struct sproto_action a[2];
	double call, call_sd, e0, e0_sd, add, add_sd, set, set_sd, sd, ns;
	uint8_t prim;

	target_fn = f->plain_sites;
	target_fn();
	call = per_call(BATCHES, PER_BATCH, &call_sd);
	put(c, SPROTO_COST_CALL, call, call_sd);
	target_fn = f->sites[0];
	e0 = measure(NULL, 0, 0, &e0_sd);
	put(c, SPROTO_COST_ENTRY, e0 - call, root_sum(e0_sd, call_sd));
	for (prim = SPROTO_SET; prim <= SPROTO_TSUB; prim++)
		if (prim < SPROTO_START_WALL || prim > SPROTO_STOP_CPU)
			one_prim(c, prim, e0, e0_sd);
	timer_pair(c, SPROTO_START_WALL, e0, e0_sd);
	timer_pair(c, SPROTO_START_CPU, e0, e0_sd);
	/* a predicate: the same SET behind a test that holds (arg[0] >= INT64_MIN) */
	a[0] = act(SPROTO_AT_ENTRY, SPROTO_SET);
	set = measure(a, 1, 0, &set_sd);
	a[0].pred = SPROTO_PRED_ARG;
	a[0].op = SPROTO_GE;
	a[0].pred_value = INT64_MIN;
	ns = measure(a, 1, 0, &sd);
	put(c, SPROTO_COST_PRED, ns - set, root_sum(sd, set_sd));
	/* the return hook: an ADD at entry and one at exit, less the entry's ADD point and an ADD */
	a[0] = act(SPROTO_AT_ENTRY, SPROTO_ADD);
	add = measure(a, 1, 0, &add_sd);
	a[1] = act(SPROTO_AT_EXIT, SPROTO_ADD);
	ns = measure(a, 2, 0, &sd);
	put(c, SPROTO_COST_EXIT, ns - 2 * add + e0, root_sum(sd, 2 * add_sd));
	atomic_store(&dyn_points[DYN_CALIB_POINT], NULL);
}

/*
 * On the control thread, before it serves: every figure of `out` (flags 0 and no figure when
 * the code could not be made). rt_calib's o_full is the PROFILE pair when the profile runtime
 * measured it through the same trampolines (sonde run --dynamic).
 */
void dyn_calibrate_costs(struct sproto_costs *out)
{
	static struct dyn_thread *scratch;
	struct dyn_thread *saved_self = dyn_self;
	int saved_busy = rt_busy;
	int64_t counter0 = atomic_load(&dyn_counters[0].v);
	uint64_t t0 = dyn_mono_ns();
	struct dyn_calib_fns f;

	memset(out, 0, sizeof(*out));
	if (!scratch)
		scratch = dyn_sys_map(sizeof(*scratch));
	if (!scratch || dyn_calib_code(&f) != 0)
		return;
	scratch->tid = dyn_sys_gettid();
	dyn_self = scratch;
	rt_busy = 0;
	measure_all(out, &f);
	rt_busy = saved_busy;
	dyn_self = saved_self;
	atomic_store(&dyn_counters[0].v, counter0);
	if (rt_mode == RT_MODE_DYNAMIC && rt_calib_dyn && rt_calib.o_full > 0) {
		put(out, SPROTO_COST_PRIM + SPROTO_PROFILE, rt_calib.o_full, rt_calib.o_full_sd);
		out->flags |= SPROTO_COSTS_PROFILE;
	}
	out->flags |= SPROTO_COSTS_MEASURED;
	out->when_ns = dyn_mono_ns();
	out->elapsed_ns = out->when_ns - t0;
}
