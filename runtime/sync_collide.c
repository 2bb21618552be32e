/* SPDX-License-Identifier: MIT */
/*
 * The inputs of the collision rule (sync_rule_collide, SONDE_SYNC_RULE=collide;
 * docs/measurement.md, "Collisions"), measured at start-up in the running process: how long a
 * waiter on a mutex is still on its way into the futex sleep (s), what a release that catches it
 * there costs it (c) and what waking it once asleep costs (l). As bench/sync_wake.c does: a
 * helper thread on another CPU blocks on a mutex that this thread holds; this thread releases it
 * a chosen time after the helper's arrival, in the runtime's own terms (the clock read before the
 * real lock call, the one before the real unlock), and the helper notes when it holds the lock.
 * The latency after the release is a step (on this VM 0.5-0.6 µs before ~0.5 µs, 7-8 µs after):
 * s is found by bisection on the release's time, each point a majority of trials.
 *
 * A few milliseconds of start-up, only with the rule chosen; any trouble (one CPU, a thread that
 * cannot start, trials that do not end within 50 ms: a loaded machine) leaves s = 0, the rule
 * of sync_rule_woken. Counts of the rule's cases are logged at the end (runtime.log).
 */
#include "rt.h"
#include "insertion_sort.h"
#include "sync_rule.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

int rt_sync_collide_on;              /* SONDE_SYNC_RULE=collide */
uint64_t rt_sync_collide_s, rt_sync_collide_c, rt_sync_collide_l; /* ticks */

static _Atomic uint64_t cases[4];     /* waits by enum sync_collision */
static _Atomic int64_t cases_ns[4];  /* what each case changed against sync_rule_woken (ticks) */
#define D_CLASSES 9
static _Atomic uint64_t d_classes[D_CLASSES]; /* waits with d_c > 0 by d_c: < 250 ns, then x2 */

#define TRIALS_END 31 /* trials at each end: a release at once, one long after */
#define TRIALS_STEP 15 /* trials per point of the bisection */
#define STEPS 8       /* bisection steps: 1/256 of the range */
#define FAR_NS 4000   /* a release this long after the arrival finds the waiter asleep */
#define GAP_NS 2000   /* between trials: the helper back to its spin */
#define BUDGET_NS 50000000 /* the whole calibration: beyond it, give up */

typedef int (*lock_fn)(pthread_mutex_t *);

static pthread_mutex_t cal_mutex = PTHREAD_MUTEX_INITIALIZER;
static lock_fn cal_lock, cal_unlock;
static _Atomic uint64_t go, arrived, holds, done_trial;
static _Atomic int quit;
static uint64_t deadline;

/* The helper: at each go, arrive (the clock read before the lock call), lock, note the time. */
static void *helper(void *arg)
{
	uint64_t seen = 0, g;

	(void)arg;
	rt_busy = 1;
	for (;;) {
		while ((g = atomic_load(&go)) == seen)
			if (atomic_load(&quit))
				return NULL;
		seen = g;
		atomic_store(&arrived, rt_now());
		cal_lock(&cal_mutex);
		atomic_store(&holds, rt_now());
		cal_unlock(&cal_mutex);
		atomic_store(&done_trial, g);
	}
}

/* Spin until *p is non-zero (or, with want, equals it); 0 when the budget ran out. A trial
 * that the helper's or this thread's preemption stretched is kept: the medians and majorities
 * of many trials take it. */
static uint64_t wait_for(_Atomic uint64_t *p, uint64_t want)
{
	uint64_t v;

	while (!(v = atomic_load(p)) || (want && v != want))
		if (rt_now() > deadline)
			return 0;
	return v;
}

/* One trial: release `delay` ticks after the helper's arrival; its d and latency (ticks). */
static int trial(uint64_t delay, uint64_t *d, uint64_t *lat)
{
	uint64_t g, a, rel, h, t;

	cal_lock(&cal_mutex);
	atomic_store(&arrived, 0);
	atomic_store(&holds, 0);
	g = atomic_fetch_add(&go, 1) + 1;
	a = wait_for(&arrived, 0);
	if (a)
		while (rt_now() - a < delay)
			;
	rel = rt_now();
	cal_unlock(&cal_mutex);
	h = wait_for(&holds, 0);
	if (!a || !h || !wait_for(&done_trial, g))
		return -1;
	*d = rel - a;
	*lat = h - rel;
	t = rt_now();
	while (rt_now() - t < (uint64_t)(GAP_NS * rt_ticks_per_ns()))
		;
	return 0;
}

RT_INSERTION_SORT(sort_u64, uint64_t)

/* n trials at one delay: the medians of d and of the latency, and how many latencies were
 * above mid (a wake-up from sleep, when mid is set). */
static int point(uint64_t delay, int n, uint64_t mid, uint64_t *d_med, uint64_t *lat_med,
		 int *slept)
{
	uint64_t d[TRIALS_END], lat[TRIALS_END];
	int i;

	*slept = 0;
	for (i = 0; i < n; i++) {
		if (trial(delay, &d[i], &lat[i]) != 0)
			return -1;
		*slept += mid && lat[i] > mid;
	}
	sort_u64(d, n);
	sort_u64(lat, n);
	*d_med = d[n / 2];
	*lat_med = lat[n / 2];
	return 0;
}

/*
 * The measurement proper: c and l at the two ends; unless a wake-up costs at least twice a
 * collision (no step worth the rule), the delay at which half the trials slept, by bisection;
 * s is the median d of the trials there (d counts the time the release took to see the arrival).
 */
static int measure(void)
{
	uint64_t far = (uint64_t)(FAR_NS * rt_ticks_per_ns()), lo = 0, hi = far, mid, d, c, l, x;
	int i, slept;

	if (point(0, TRIALS_END, 0, &d, &c, &slept) || point(far, TRIALS_END, 0, &x, &l, &slept))
		return -1;
	mid = sync_collide_mid(c, l);
	if (!mid)
		return 1;
	for (i = 0; i < STEPS; i++) {
		uint64_t at = (lo + hi) / 2;

		if (point(at, TRIALS_STEP, mid, &d, &x, &slept))
			return -1;
		if (2 * slept > TRIALS_STEP)
			hi = at;
		else
			lo = at;
	}
	rt_sync_collide_s = d;
	rt_sync_collide_c = c;
	rt_sync_collide_l = l;
	return 0;
}

/* A CPU of this thread's set other than the one it runs on, or -1. */
static int other_cpu(void)
{
	cpu_set_t set;
	int i, here = sched_getcpu();

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -1;
	for (i = 0; i < CPU_SETSIZE; i++)
		if (i != here && CPU_ISSET(i, &set))
			return i;
	return -1;
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*join_fn)(pthread_t, void **);

static int calibrate(void)
{
	create_fn create = (create_fn)rt_next_symbol("pthread_create");
	join_fn join = (join_fn)rt_next_symbol("pthread_join");
	int cpu = other_cpu(), r;
	pthread_attr_t attr;
	sigset_t all, old;
	cpu_set_t set;
	pthread_t th;

	cal_lock = (lock_fn)rt_next_symbol("pthread_mutex_lock");
	cal_unlock = (lock_fn)rt_next_symbol("pthread_mutex_unlock");
	if (cpu < 0 || !create || !join || !cal_lock || !cal_unlock)
		return -1;
	deadline = rt_now() + (uint64_t)(BUDGET_NS * rt_ticks_per_ns());
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = create(&th, &attr, helper, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r != 0)
		return -1;
	r = measure();
	atomic_store(&quit, 1);
	join(th, NULL);
	return r;
}

static void log_ns(const char *what, uint64_t ticks, char **e, char *end)
{
	*e = rt_stpcpy(*e, what, end);
	*e = rt_utoa(*e, rt_ticks_to_ns(ticks), end);
	*e = rt_stpcpy(*e, " ns", end);
}

/* At start-up, after the clock's calibration: SONDE_SYNC_RULE (woken, the default, or collide). */
void rt_sync_collide_init(void)
{
	const char *v = getenv("SONDE_SYNC_RULE");
	char line[256], *e = line, *end = line + sizeof(line);
	int r, saved;

	if (!v || !*v || !strcmp(v, "woken"))
		return;
	if (strcmp(v, "collide") != 0) {
		rt_log("--sync: SONDE_SYNC_RULE is neither woken nor collide: the rule woken");
		return;
	}
	rt_sync_collide_on = 1;
	saved = errno; /* the program's errno is its own, even before main */
	r = calibrate();
	errno = saved;
	e = rt_stpcpy(e, "--sync: rule collide: ", end);
	if (r < 0) {
		rt_stpcpy(e, "no collision measured (one CPU, or a loaded machine): s = 0, the rule "
			  "woken", end);
	} else if (r > 0) {
		rt_stpcpy(e, "a wake-up costs less than twice a collision: s = 0, the rule woken",
			  end);
	} else {
		log_ns("s ", rt_sync_collide_s, &e, end);
		log_ns(", c ", rt_sync_collide_c, &e, end);
		log_ns(", l ", rt_sync_collide_l, &e, end);
	}
	rt_log(line);
}

/* A mutex wait decided by sync_rule_collide: counted by case, with what the case changed, and
 * by where the release fell after the arrival unmeasured (d_c, ticks). */
void rt_sync_collide_count(int k, int64_t x_new, int64_t x_woken, int64_t d_c)
{
	uint64_t ns = d_c > 0 ? rt_ticks_to_ns((uint64_t)d_c) : 0;
	int i = 0;

	atomic_fetch_add_explicit(&cases[k], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&cases_ns[k], x_new - x_woken, memory_order_relaxed);
	if (d_c <= 0)
		return;
	while (i < D_CLASSES - 1 && ns >= (250ull << i))
		i++;
	atomic_fetch_add_explicit(&d_classes[i], 1, memory_order_relaxed);
}

/* A forked child counts its own waits (its profile starts afresh); the calibration holds. */
void rt_sync_collide_after_fork(void)
{
	int k;

	for (k = 0; k < 4; k++) {
		atomic_store(&cases[k], 0);
		atomic_store(&cases_ns[k], 0);
	}
	for (k = 0; k < D_CLASSES; k++)
		atomic_store(&d_classes[k], 0);
}

/* With the profile: the waits of each case and how much delay each case gave back (ns). */
void rt_sync_collide_log(void)
{
	static const char *const names[] = { "free ", ", followed ", ", slept ", ", would sleep " };
	char line[400], *e = line, *end = line + sizeof(line);
	int k;

	if (!rt_sync_collide_on)
		return;
	e = rt_stpcpy(e, "--sync: rule collide: mutex waits ", end);
	for (k = 0; k < 4; k++) {
		int64_t ns = atomic_load(&cases_ns[k]);

		e = rt_stpcpy(e, names[k], end);
		e = rt_utoa(e, atomic_load(&cases[k]), end);
		e = rt_stpcpy(e, ns < 0 ? " (-" : " (+", end);
		e = rt_utoa(e, rt_ticks_to_ns((uint64_t)(ns < 0 ? -ns : ns)), end);
		e = rt_stpcpy(e, " ns)", end);
	}
	e = rt_stpcpy(e, "; d_c from 0, 250 ns, then x2:", end);
	for (k = 0; k < D_CLASSES; k++) {
		e = rt_stpcpy(e, " ", end);
		e = rt_utoa(e, atomic_load(&d_classes[k]), end);
	}
	rt_log(line);
}
