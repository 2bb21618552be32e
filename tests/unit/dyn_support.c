/* SPDX-License-Identifier: MIT */
/*
 * Support of the dynamic instrumentation tests: what the runtime's dyn code needs from the
 * rest of libsonde.so (stand-ins), the bodies of the instrumented test functions, and helpers
 * that set points and read timers without the control server.
 */
#include "dyn_test.h"

#include <string.h>
#include <time.h>

/* ---- stand-ins for the rest of the runtime ---- */
RT_TLS int rt_busy;
int rt_mode = RT_MODE_ATTACHED; /* nothing logged to files */
_Atomic int rt_ready;
struct rt_config rt_cfg;
struct sprof_calib rt_calib; /* the profile runtime's: not here */
int rt_calib_dyn;

/* The profile runtime's probes, for SPROTO_PROFILE: counted, and every vector register they
 * could use trashed, as ordinary C may. */
long profile_enters, profile_exits;
void *profile_last;

#define TRASH_VECTORS()                                                                          \
	__asm__ volatile("xorps %%xmm0, %%xmm0; xorps %%xmm1, %%xmm1; xorps %%xmm2, %%xmm2;"      \
			 "xorps %%xmm3, %%xmm3; xorps %%xmm4, %%xmm4; xorps %%xmm5, %%xmm5;"      \
			 "xorps %%xmm6, %%xmm6; xorps %%xmm7, %%xmm7"                             \
			 : : : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7")

void rt_probe_enter(void *fn, void *site)
{
	(void)site;
	profile_enters++;
	profile_last = fn;
	TRASH_VECTORS();
}

void rt_probe_exit(void *fn, void *site)
{
	(void)site;
	profile_exits++;
	profile_last = fn;
	TRASH_VECTORS();
}

/* ---- the instrumented functions' bodies ---- */
long rec_spin_ns;
jmp_buf *jump_to;
void (*hook)(long x);

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

long t_add(long a, long b);
long t_rec(long n);
double t_half(double x);
struct pair t_pair(long a, long b);
long t_jump(long depth);
long t_spin(long ns, long cpu);
long t_hook(long x);
long t_outer(long depth);

__attribute__((noinline)) long t_add(long a, long b)
{
	__asm__ volatile("" ::: "memory");
	return a + b;
}

__attribute__((noinline)) long t_rec(long n)
{
	if (n <= 0)
		return tr_spin(rec_spin_ns, 0) * 0;
	return tr_rec(n - 1) + 1;
}

__attribute__((noinline)) double t_half(double x)
{
	return x / 2;
}

__attribute__((noinline)) struct pair t_pair(long a, long b)
{
	struct pair p = { a * 10, b * 100 };

	return p;
}

__attribute__((noinline)) long t_jump(long depth)
{
	if (depth <= 0)
		longjmp(*jump_to, 1);
	return tr_jump(depth - 1) + 1;
}

__attribute__((noinline)) long t_spin(long ns, long cpu)
{
	uint64_t end = (cpu ? cpu_ns() : mono_ns()) + (uint64_t)ns;

	while ((cpu ? cpu_ns() : mono_ns()) < end)
		;
	return ns;
}

__attribute__((noinline)) long t_hook(long x)
{
	if (hook)
		hook(x);
	return x + 1;
}

__attribute__((noinline)) long t_outer(long depth)
{
	jmp_buf here, *volatile saved = jump_to;

	jump_to = &here;
	if (!setjmp(here))
		tr_jump(depth);
	jump_to = saved;
	return 7;
}

__attribute__((noinline)) long t_bench(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

/* ---- helpers ---- */

struct sproto_action act_counter(int when, int prim, uint32_t counter, int64_t value)
{
	struct sproto_action a;

	memset(&a, 0, sizeof(a));
	a.when = (uint8_t)when;
	a.prim = (uint8_t)prim;
	a.target = counter;
	a.value = value;
	return a;
}

struct sproto_action act_timer(int when, int prim, uint32_t timer)
{
	return act_counter(when, prim, timer, 0);
}

struct sproto_action with_pred(struct sproto_action a, int pred, uint32_t index, int op,
			       int64_t k)
{
	a.pred = (uint8_t)pred;
	a.pred_index = index;
	a.op = (uint8_t)op;
	a.pred_value = k;
	return a;
}

int set_point(uint32_t point, int n, const struct sproto_action *act)
{
	struct sproto_point_set ps;
	const char *why = NULL;

	memset(&ps, 0, sizeof(ps));
	ps.point = point;
	ps.n = (uint16_t)n;
	memcpy(ps.act, act, (size_t)n * sizeof(*act));
	return dyn_point_set(&ps, &why);
}

int64_t counter(uint32_t i)
{
	return atomic_load(&dyn_counters[i].v);
}

int64_t timer_ns(int kind, uint32_t index, uint32_t tid)
{
	struct sproto_metric m;
	int64_t v;

	memset(&m, 0, sizeof(m));
	m.id = SPROTO_MAX_METRICS - 1;
	m.n = 1;
	m.term[0].kind = (uint8_t)kind;
	m.term[0].index = index;
	m.term[0].tid = tid;
	dyn_metric_enable(&m);
	v = dyn_metric_value(m.id);
	dyn_metric_disable(m.id);
	return v;
}

void dyn_test_reset(void)
{
	dyn_points_clear(0, DYN_POINTS);
	dyn_metrics_clear();
	dyn_counters_reset();
	dyn_threads_reset();
	atomic_store(&dyn_paused, 0);
	hook = NULL;
}

void dyn_test_init(void)
{
	rt_clock_init();
	rt_stpcpy(rt_cfg.dir, "/nonexistent-sonde-test", rt_cfg.dir + sizeof(rt_cfg.dir));
}

/* An attached runtime's profile sessions (runtime/attached.c): not made by these tests. */
int rt_attached_profile_begin(const char *dir, const char **why)
{
	(void)dir;
	*why = "no profile runtime in this test";
	return -1;
}

int rt_attached_profile_end(int reason, int signo, const char **why)
{
	(void)reason;
	(void)signo;
	(void)why;
	return 0;
}

void rt_attached_client(int connected)
{
	(void)connected;
}

void rt_attached_after_fork(void)
{
}
