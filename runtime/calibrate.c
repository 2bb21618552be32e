/* SPDX-License-Identifier: MIT */
/*
 * In-vitro calibration (docs/models.md §2.1): in the running process, on its CPU, through the
 * same exported hooks the program calls, measure the clock's cost and period and the probe costs
 * o_in, o_full and o_skip. Each is measured in batches; the slowest tenth of the batches (hit by
 * interrupts or preemption) is dropped, and the mean and standard deviation of the rest kept.
 */
#include "rt.h"

int sonde__calibrate(struct sprof_calib *out, unsigned size, int cpu);

#include <math.h>

#define BATCHES 200
#define PER_BATCH 100

typedef void (*hook_fn)(void *, void *);
void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);

/* Called through volatile pointers, as an instrumented program calls through its PLT. */
static hook_fn volatile enter_hook = __cyg_profile_func_enter;
static hook_fn volatile exit_hook = __cyg_profile_func_exit;
static void noop(void *a, void *b) { (void)a, (void)b; }
static hook_fn volatile noop_hook = noop;

/* Distinct code addresses standing for "a measured function" and "an excluded function". */
static void calib_measured(void) {}
static void calib_excluded(void) {}

static void sort(double *v, int n)
{
	int i, j;

	for (i = 1; i < n; i++) {
		double x = v[i];

		for (j = i; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* Mean and standard deviation of the fastest 90 % of the batch values. */
static void trimmed_stats(double *v, int n, double *mean, double *sd)
{
	double s = 0, q = 0;
	int i, keep = n - n / 10;

	sort(v, n);
	for (i = 0; i < keep; i++)
		s += v[i];
	*mean = s / keep;
	for (i = 0; i < keep; i++)
		q += (v[i] - *mean) * (v[i] - *mean);
	*sd = keep > 1 ? sqrt(q / (keep - 1)) : 0;
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
	trimmed_stats(v, BATCHES, &c->clock_ns, &c->clock_sd);
	c->dt_ns = (double)dt / rt_ticks_per_ns();
}

/* Per-pair cost of the empty loop with two indirect calls: subtracted from the probe loops. */
static double loop_cost(void)
{
	double v[BATCHES], mean, sd;
	int b, i;

	for (b = 0; b < BATCHES; b++) {
		uint64_t s = rt_now();

		for (i = 0; i < PER_BATCH; i++) {
			noop_hook((void *)calib_measured, NULL);
			noop_hook((void *)calib_measured, NULL);
		}
		v[b] = (double)(rt_now() - s) / PER_BATCH / rt_ticks_per_ns();
	}
	trimmed_stats(v, BATCHES, &mean, &sd);
	return mean;
}

/* Batches of enter+exit pairs of `fn`: the whole cost seen from outside, and (through the
 * node the probes fill) the part inside the probes' own timestamps. */
static void pair_cost(struct rt_thread *t, void *fn, double loop, double *full, double *full_sd,
		      double *in, double *in_sd)
{
	double vf[BATCHES], vi[BATCHES];
	struct rt_node *n;
	int b, i;

	enter_hook(fn, NULL); /* make its node */
	exit_hook(fn, NULL);
	n = t->root->first_child;
	for (b = 0; b < BATCHES; b++) {
		uint64_t incl0 = n->incl, s = rt_now();

		for (i = 0; i < PER_BATCH; i++) {
			enter_hook(fn, NULL);
			exit_hook(fn, NULL);
		}
		vf[b] = (double)(rt_now() - s) / PER_BATCH / rt_ticks_per_ns() - loop;
		vi[b] = (double)(n->incl - incl0) / PER_BATCH / rt_ticks_per_ns();
	}
	trimmed_stats(vf, BATCHES, full, full_sd);
	if (in)
		trimmed_stats(vi, BATCHES, in, in_sd);
}

/* Measure everything with a private, unpublished thread state standing in for the caller's. */
void rt_calibrate(struct sprof_calib *c, int cpu)
{
	struct rt_thread *saved = rt_self, *t;
	struct rt_func *skip;
	double loop, unused;

	c->clock_kind = rt_clock_tsc ? SPROF_CLOCK_TSC : SPROF_CLOCK_MONOTONIC;
	c->ticks_per_ns = rt_ticks_per_ns();
	c->samples = BATCHES;
	clock_cost(c);
	t = rt_thread_new(0);
	if (!t)
		return;
	t->cpu = cpu;
	rt_self = t;
	loop = loop_cost();
	pair_cost(t, (void *)calib_measured, loop, &c->o_full, &c->o_full_sd, &c->o_in, &c->o_in_sd);
	skip = rt_func_get((uintptr_t)calib_excluded, SPROF_FUNC, NULL);
	if (skip) {
		atomic_store(&skip->off, 1);
		/* the node is made before the function is known to be off, so take it first */
		pair_cost(t, (void *)calib_excluded, loop, &c->o_skip, &c->o_skip_sd, NULL, &unused);
		skip->kind = 0xff;
	}
	skip = rt_func_get((uintptr_t)calib_measured, SPROF_FUNC, NULL);
	if (skip)
		skip->kind = 0xff; /* calibration entries are not written */
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
