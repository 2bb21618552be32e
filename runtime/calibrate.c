/* SPDX-License-Identifier: MIT */
/*
 * In-vitro calibration (docs/measurement.md §2.1): in the running process, on its CPU, through the
 * same exported hooks the program calls, measure the clock's cost and period and the probe costs
 * o_in, o_full and o_skip. Each is measured in batches; the slowest tenth of the batches (hit by
 * interrupts or preemption) is dropped, and the mean and standard deviation of the rest kept.
 */
#include "rt.h"

#include <string.h>

int sonde__calibrate(struct sprof_calib *out, unsigned size, int cpu);
int sonde__calibrate_overlap(struct sprof_overlap *out, unsigned size);


#define BATCHES 200
#define PER_BATCH 100

/* Instrumented stand-ins (calib_target.c), called through volatile pointers so the compiler
 * cannot see through the calls, as the program's calls are opaque to the runtime. */
void rt_calib_measured(void);
void rt_calib_excluded(void);
void rt_calib_plain(void);
typedef void (*call_fn)(void);
static call_fn volatile measured_fn = rt_calib_measured;
static call_fn volatile excluded_fn = rt_calib_excluded;
static call_fn volatile plain_fn = rt_calib_plain;
static uintptr_t measured_addr = (uintptr_t)rt_calib_measured; /* the functions measured */
static uintptr_t excluded_addr = (uintptr_t)rt_calib_excluded;
static int pairs = 1; /* probe pairs per call of a stand-in */
int rt_calib_dyn;

/*
 * sonde run --dynamic and sonde attach: the program's probes are reached through the patcher's trampolines and
 * the return hook (SPROTO_PROFILE points), not through compiler hooks. The stand-ins become
 * empty functions patched the same way (calib_dyn.c), so o_in, o_full and o_skip are the costs
 * of that path, the batches taken during the run too. Kept when they cannot be made.
 */
static void use_dynamic_standins(void)
{
	struct rt_calib_dyn_fns f;

	if (rt_calib_dyn || rt_mode == RT_MODE_PROFILE || rt_calib_dyn_standins(&f) != 0)
		return;
	measured_fn = f.measured;
	excluded_fn = f.excluded;
	plain_fn = f.plain;
	measured_addr = f.measured_addr;
	excluded_addr = f.excluded_addr;
	pairs = f.pairs;
	rt_calib_dyn = 1;
}

static void clock_cost(struct sprof_calib *c)
{
	double v[BATCHES];
	uint64_t dt = UINT64_MAX;
	int b, i;

	for (b = 0; b < BATCHES; b++) {
		uint64_t s = rt_now(), prev = s, x;

		for (i = 0; i < PER_BATCH; i++) {
			x = rt_now();
			if (x != prev && x - prev < dt)
				dt = x - prev;
			prev = x;
		}
		v[b] = (double)(prev - s) / PER_BATCH / rt_ticks_per_ns();
	}
	rt_trimmed_stats(v, BATCHES, &c->clock_ns, &c->clock_sd);
	c->dt_ns = (double)dt / rt_ticks_per_ns();
}

/* Per-call cost of a loop of calls of `fn`, one value per batch. */
static void loop_batches(call_fn volatile *fn, double *v)
{
	int b, i;

	for (b = 0; b < BATCHES; b++) {
		uint64_t s = rt_now();

		for (i = 0; i < PER_BATCH / pairs; i++)
			(*fn)();
		v[b] = (double)(rt_now() - s) / (PER_BATCH / pairs * pairs) / rt_ticks_per_ns();
	}
}

/* The plain loop's cost per call and its spread: the trimmed mean of its batches. */
struct plain_cost {
	double ns, sd;
};

/*
 * o_full: a call of an instrumented empty function minus a call of a plain one, as seen from
 * outside; o_in: what its own node measured per call (it has no body to measure). Each batch
 * is held against the plain loop's trimmed mean, not against the plain batch of its own index
 * (the two ran milliseconds apart): a trimmed mean drops the slow tail only, and a preempted
 * plain batch made its partner a fast outlier of thousands of ns that pulled o_full to 0 (a
 * test saw o_full under o_in). The spread adds the plain loop's.
 */
static void pair_cost(struct rt_thread *t, call_fn volatile *fn, struct plain_cost plain,
		      double *full, double *full_sd, double *in, double *in_sd)
{
	double vf[BATCHES], vi[BATCHES];
	struct rt_node *n;
	int b, i;

	(*fn)(); /* make its node, or its trace definition */
	n = t->root->first_child;
	if (!n && !rt_trace_on) { /* the hooks are not ours (sonde calibrate uses RTLD_DEEPBIND) */
		*full = *full_sd = 0;
		return;
	}
	for (b = 0; b < BATCHES; b++) {
		uint64_t incl0 = n ? n->incl : 0, s;

		if (rt_trace_on)
			rt_trace_scratch_rewind(t);
		s = rt_now();
		for (i = 0; i < PER_BATCH / pairs; i++)
			(*fn)();
		vf[b] = (double)(rt_now() - s) / (PER_BATCH / pairs * pairs) / rt_ticks_per_ns() -
			plain.ns;
		incl0 = rt_trace_on ? rt_trace_exit_ticks(t) : n->incl - incl0;
		vi[b] = (double)incl0 / (PER_BATCH / pairs * pairs) / rt_ticks_per_ns();
	}
	rt_trimmed_stats(vf, BATCHES, full, full_sd);
	*full_sd = __builtin_sqrt(*full_sd * *full_sd + plain.sd * plain.sd);
	if (in)
		rt_trimmed_stats(vi, BATCHES, in, in_sd);
	/* A cost is never negative: a negative mean is noise (the plain loop's batches were
	 * preempted), and removing a negative cost would add time to the results. */
	if (*full < 0)
		*full = 0;
	if (in && *in < 0)
		*in = 0;
}

#define SAMPLE_PAIRS 64

/*
 * One batch measured while the program runs (probe.c), with the thread's own stand-in state:
 * o_full and o_in per pair as the machine's speed is now. -1 when it could not be measured.
 */
int rt_calib_sample(struct rt_thread *scratch, double *full, double *in)
{
	struct rt_thread *saved = rt_self;
	uint64_t s, p, e, incl0;
	struct rt_node *n;
	int i;

	rt_self = scratch;
	measured_fn(); /* its node, on the first sample */
	n = scratch->root->first_child;
	s = rt_now();
	for (i = 0; i < SAMPLE_PAIRS / pairs; i++)
		plain_fn();
	p = rt_now();
	incl0 = n ? n->incl : 0;
	for (i = 0; i < SAMPLE_PAIRS / pairs; i++)
		measured_fn();
	e = rt_now();
	rt_self = saved;
	if (!n)
		return -1;
	*full = (double)((e - p) - (p - s)) / (SAMPLE_PAIRS / pairs * pairs) / rt_ticks_per_ns();
	*in = (double)(n->incl - incl0) / (SAMPLE_PAIRS / pairs * pairs) / rt_ticks_per_ns();
	return 0;
}

struct sprof_overlap rt_overlap;

double rt_calib_chain(double x);
double rt_calib_chain_plain(double x);
typedef double (*chain_fn)(double);
static chain_fn volatile chain_measured = rt_calib_chain;
static chain_fn volatile chain_plain = rt_calib_chain_plain;
static volatile double chain_sink;

#define CHAIN_BATCHES 100

/* ns per call of PER_BATCH chained calls of fn, starting from x. */
static double chain_batch(chain_fn volatile *fn, double x)
{
	uint64_t s = rt_now();
	int i;

	for (i = 0; i < PER_BATCH; i++)
		x = (*fn)(x);
	chain_sink = x;
	return (double)(rt_now() - s) / PER_BATCH / rt_ticks_per_ns();
}

/*
 * The pair's cost next to latency-bound work (rt_overlap): batches of the instrumented chain and
 * of its plain copy taking turns, the difference per call; on t, the caller's scratch thread.
 * An out-of-order core runs the probes' instructions while the chain waits, so this can be far
 * below o_full (AMD EPYC, 2026-11-22) or close to it (where the clock read stalls the front end).
 */
static void overlap_cost(struct rt_thread *t, struct sprof_overlap *o)
{
	double d[CHAIN_BATCHES], w[CHAIN_BATCHES], unused;
	struct rt_func *f;
	int b;

	chain_measured(1.0); /* its node */
	f = rt_func_get((uintptr_t)rt_calib_chain, SPROF_FUNC, NULL);
	if (!f || !t->root->first_child)
		return;
	f->kind = 0xff; /* calibration entries are not written */
	for (b = 0; b < CHAIN_BATCHES; b++) {
		w[b] = chain_batch(&chain_plain, 1.0 + b);
		d[b] = chain_batch(&chain_measured, 1.0 + b) - w[b];
	}
	rt_trimmed_stats(d, CHAIN_BATCHES, &o->o_pair, &o->o_pair_sd);
	rt_trimmed_stats(w, CHAIN_BATCHES, &o->work_ns, &unused);
	if (o->o_pair < 0)
		o->o_pair = 0;
	o->steps = RT_CALIB_CHAIN_STEPS;
	o->batches = CHAIN_BATCHES;
}

/* A private, unpublished thread state to stand in for the caller's while calibrating (the
 * probes of the stand-ins measure into it); with CPU-time probes when cpu. NULL: none. */
static struct rt_thread *scratch_thread(int cpu)
{
	struct rt_thread *t = rt_thread_new(0);

	if (!t)
		return NULL;
	t->scratch = 1;
	if (cpu) /* `sonde calibrate --cpu` asks for it whatever the configuration */
		atomic_fetch_or(&t->slow, RT_SLOW_CPU);
	else
		atomic_fetch_and(&t->slow, ~RT_SLOW_CPU);
	return t;
}

/* The overlap measurement of a profile run (not with the trampolines of --dynamic, whose
 * stand-ins are empty, nor with --trace, whose analysis models no price). */
void rt_calibrate_overlap(struct sprof_overlap *o)
{
	struct rt_thread *saved = rt_self, *t;

	if (rt_calib_dyn || rt_trace_on || rt_mode != RT_MODE_PROFILE)
		return;
	t = scratch_thread(0);
	if (!t)
		return;
	rt_self = t;
	overlap_cost(t, o);
	rt_self = saved;
	rt_thread_release(t);
}

/* The clock's part alone: all a program without probes needs (sampled only). */
void rt_calibrate_clock(struct sprof_calib *c)
{
	c->clock_kind = rt_clock_tsc ? SPROF_CLOCK_TSC : SPROF_CLOCK_MONOTONIC;
	c->ticks_per_ns = rt_ticks_per_ns();
	c->samples = BATCHES;
	clock_cost(c);
}

/* Everything: the clock, then o_in, o_full and o_skip on a scratch thread (scratch_thread). */
void rt_calibrate(struct sprof_calib *c, int cpu)
{
	struct rt_thread *saved = rt_self, *t;
	struct rt_func *f;
	double plain_batches[BATCHES], unused;
	struct plain_cost plain;
	int busy = rt_busy;

	use_dynamic_standins();
	rt_calibrate_clock(c);
	t = scratch_thread(cpu);
	if (!t)
		return;
	if (rt_trace_on && rt_trace_scratch(t) != 0) {
		rt_thread_release(t);
		return;
	}
	rt_self = t;
	if (rt_calib_dyn)
		rt_busy = 0; /* the points run only for a thread that is not the runtime's */
	loop_batches(&plain_fn, plain_batches);
	rt_trimmed_stats(plain_batches, BATCHES, &plain.ns, &plain.sd);
	pair_cost(t, &measured_fn, plain, &c->o_full, &c->o_full_sd, &c->o_in, &c->o_in_sd);
	f = rt_func_get(excluded_addr, SPROF_FUNC, NULL);
	if (f) {
		atomic_store(&f->off, 1);
		pair_cost(t, &excluded_fn, plain, &c->o_skip, &c->o_skip_sd, NULL, &unused);
		f->kind = 0xff; /* calibration entries are not written */
	}
	f = rt_func_get(measured_addr, SPROF_FUNC, NULL);
	if (f)
		f->kind = 0xff;
	rt_busy = busy;
	rt_self = saved;
	rt_thread_release(t);
}

/* For `sonde calibrate`, which loads the runtime with dlopen: a fresh measurement. */
RT_EXPORT int sonde__calibrate(struct sprof_calib *out, unsigned size, int cpu)
{
	if (size != sizeof(*out) || !atomic_load(&rt_ready))
		return -1;
	rt_busy = 1;
	rt_calibrate(out, cpu);
	rt_busy = 0;
	return 0;
}

/* For `sonde calibrate`: a fresh measurement of a pair next to latency-bound work; -1 when it
 * cannot be made here. */
RT_EXPORT int sonde__calibrate_overlap(struct sprof_overlap *out, unsigned size)
{
	if (size != sizeof(*out) || !atomic_load(&rt_ready))
		return -1;
	memset(out, 0, sizeof(*out));
	rt_busy = 1;
	rt_calibrate_overlap(out);
	rt_busy = 0;
	return out->batches ? 0 : -1;
}
