/* SPDX-License-Identifier: MIT */
/*
 * Thread creation and joining, interposed in trace mode: they are the happens-before edges the
 * event-based analysis follows (docs/format-trace.md). The creator records CREATE(e) just before
 * the thread exists; the new thread records THREAD_BEGIN(e) first thing; a thread's stream ends
 * with THREAD_END(its pthread_t), and the joiner records JOIN(pthread_t) once the join returned.
 * With --sync, a new thread starts with its creator's delay and a join takes the joined
 * thread's (sync_comp.c). With sampling (sample.c) the new thread starts through the
 * trampoline too, which arms its CPU-time timer first thing. Without any of them, both calls
 * go straight through.
 */
#include "rt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*join_fn)(pthread_t, void **);
typedef int (*timedjoin_fn)(pthread_t, void **, const struct timespec *);
typedef int (*clockjoin_fn)(pthread_t, void **, clockid_t, const struct timespec *);

static _Atomic uint64_t next_edge = 1;

struct start {
	void *(*routine)(void *);
	void *arg;
	uint64_t edge;
	int64_t x0, x0q; /* the creator's delay and its probe-cost part (sync_comp.c) */
};

/* The new thread's first code: its stream begins before the program's routine runs. */
static void *trampoline(void *p)
{
	struct start s = *(struct start *)p;

	free(p);
	rt_sample_thread_start();
	if (rt_trace_on)
		rt_trace_set_edge(s.edge);
	if (!(rt_trace_on || rt_sync_on))
		return s.routine(s.arg);
	if (!rt_self && !rt_busy)
		rt_thread_attach();
	if (rt_self)
		rt_sync_thread_start(rt_self, s.x0, s.x0q);
	return s.routine(s.arg);
}

RT_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
			     void *(*routine)(void *), void *arg)
{
	static create_fn real;
	struct rt_thread *t = rt_self;
	struct start *s;
	uint64_t edge;
	int ret;

	if (!real)
		real = (create_fn)rt_next_symbol("pthread_create");
	/* not a probe: pthread_create allocates too; on failure the thread just goes untracked */
	if (!(rt_trace_on || rt_sync_on || rt_sample_on) || rt_busy || !atomic_load(&rt_ready) ||
	    !(s = malloc(sizeof(*s))))
		return real(thread, attr, routine, arg);
	edge = rt_trace_on ? atomic_fetch_add(&next_edge, 1) : 0;
	*s = (struct start){ routine, arg, edge, 0, 0 };
	if (!(rt_trace_on || rt_sync_on))
		goto create;
	if (!t)
		t = rt_thread_attach();
	*s = (struct start){ routine, arg, edge, t && rt_sync_on ? rt_sync_x(t) : 0,
			     t && rt_sync_on ? rt_sync_xq(t) : 0 };
	if (t && rt_trace_on)
		rt_trace_record(t, STRC_CREATE, STRC_ID_NONE, &edge, 1);
create:
	ret = real(thread, attr, trampoline, s);
	if (ret != 0)
		free(s);
	return ret;
}

/* After a join of any kind returned ret: the joined thread's delay (--sync), the JOIN event. */
static void joined(pthread_t thread, int ret, uint64_t t0)
{
	uint64_t who = (uint64_t)thread;

	if (ret != 0)
		return;
	if (rt_sync_on && rt_self && !rt_busy)
		rt_sync_join(rt_self, who, t0, rt_now());
	if (rt_trace_on && rt_self)
		rt_trace_record(rt_self, STRC_JOIN, STRC_ID_NONE, &who, 1);
}

/* The real function, looked up on first use. */
#define REAL_JOIN(name, type)                                                                      \
	({                                                                                         \
		static type real_;                                                                 \
		if (!real_)                                                                        \
			real_ = (type)rt_next_symbol(#name);                                       \
		real_;                                                                             \
	})

RT_EXPORT int pthread_join(pthread_t thread, void **retval)
{
	uint64_t t0 = rt_sync_on ? rt_now() : 0;
	int ret = REAL_JOIN(pthread_join, join_fn)(thread, retval);

	joined(thread, ret, t0);
	return ret;
}

/* The non-blocking and timed joins of glibc: the same edge when they return 0 (a thread that
 * has not ended yet, EBUSY or ETIMEDOUT, changes nothing). */
RT_EXPORT int pthread_tryjoin_np(pthread_t thread, void **retval)
{
	uint64_t t0 = rt_sync_on ? rt_now() : 0;
	int ret = REAL_JOIN(pthread_tryjoin_np, join_fn)(thread, retval);

	joined(thread, ret, t0);
	return ret;
}

RT_EXPORT int pthread_timedjoin_np(pthread_t thread, void **retval, const struct timespec *abstime)
{
	uint64_t t0 = rt_sync_on ? rt_now() : 0;
	int ret = REAL_JOIN(pthread_timedjoin_np, timedjoin_fn)(thread, retval, abstime);

	joined(thread, ret, t0);
	return ret;
}

RT_EXPORT int pthread_clockjoin_np(pthread_t thread, void **retval, clockid_t clk,
				   const struct timespec *abstime)
{
	uint64_t t0 = rt_sync_on ? rt_now() : 0;
	int ret = REAL_JOIN(pthread_clockjoin_np, clockjoin_fn)(thread, retval, clk, abstime);

	joined(thread, ret, t0);
	return ret;
}
