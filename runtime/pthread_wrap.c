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

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*join_fn)(pthread_t, void **);

static _Atomic uint64_t next_edge = 1;

struct start {
	void *(*routine)(void *);
	void *arg;
	uint64_t edge;
	int64_t x0; /* the creator's delay (sync_comp.c) */
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
		rt_sync_thread_start(rt_self, s.x0);
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
	*s = (struct start){ routine, arg, edge, 0 };
	if (!(rt_trace_on || rt_sync_on))
		goto create;
	if (!t)
		t = rt_thread_attach();
	*s = (struct start){ routine, arg, edge, t && rt_sync_on ? rt_sync_x(t) : 0 };
	if (t && rt_trace_on)
		rt_trace_record(t, STRC_CREATE, STRC_ID_NONE, &edge, 1);
create:
	ret = real(thread, attr, trampoline, s);
	if (ret != 0)
		free(s);
	return ret;
}

RT_EXPORT int pthread_join(pthread_t thread, void **retval)
{
	static join_fn real;
	uint64_t t0 = rt_sync_on ? rt_now() : 0;
	int ret;

	if (!real)
		real = (join_fn)rt_next_symbol("pthread_join");
	ret = real(thread, retval);
	if (ret == 0 && rt_sync_on && rt_self && !rt_busy)
		rt_sync_join(rt_self, (uint64_t)thread, t0, rt_now());
	if (ret == 0 && rt_trace_on && rt_self) {
		uint64_t who = (uint64_t)thread;

		rt_trace_record(rt_self, STRC_JOIN, STRC_ID_NONE, &who, 1);
	}
	return ret;
}
