/* SPDX-License-Identifier: MIT */
/*
 * Per-thread state: the frame stack and the call-path tree, both in memory of the thread's own
 * (mmap, never malloc). Thread states are pushed on a global lock-free list and never freed
 * while the process runs, so the writer can read them at exit or from a signal handler.
 */
#include "rt.h"

#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NODES_PER_CHUNK 16384
#define MAX_NODES (1u << 24)

struct rt_chunk {
	struct rt_node nodes[NODES_PER_CHUNK]; /* first: the mapping's alignment is theirs */
	struct rt_chunk *next;
	uint32_t used;
};
_Static_assert(sizeof(struct rt_node) == 128, "a node is two cache lines");

_Atomic(struct rt_thread *) rt_threads;
static _Atomic uint32_t thread_count;
static pthread_key_t exit_key;
static int exit_key_ok;

/* Another chunk of nodes for this thread's tree. */
static struct rt_chunk *chunk_new(struct rt_thread *t)
{
	struct rt_chunk *c = t->chunk_last ? t->chunk_last->next : NULL; /* a restart's */

	if (c)
		c->used = 0;
	else if (!(c = rt_map(sizeof(*c))))
		return NULL;
	else if (t->chunk_last)
		t->chunk_last->next = c;
	else
		t->chunks = c;
	t->chunk_last = c;
	t->free = c->nodes;
	t->free_end = c->nodes + NODES_PER_CHUNK;
	return c;
}

static struct rt_node *node_alloc(struct rt_thread *t)
{
	struct rt_node *n;

	if (t->free == t->free_end && (t->nnodes >= MAX_NODES || !chunk_new(t)))
		return NULL;
	n = t->free++;
	t->chunk_last->used++;
	*n = (struct rt_node){ 0 }; /* a restarted tree reuses memory (inlined: no libc) */
	n->index = t->nnodes++;
	return n;
}

const struct rt_chunk *rt_chunk_next(const struct rt_chunk *c)
{
	return c->next;
}

uint32_t rt_chunk_used(const struct rt_chunk *c)
{
	return c->used;
}

const struct rt_node *rt_chunk_node(const struct rt_chunk *c, uint32_t i)
{
	return &c->nodes[i];
}

/* A new child of `parent` for the function at `fn`; linked first among its siblings. */
struct rt_node *rt_node_child(struct rt_thread *t, struct rt_node *parent, uintptr_t fn, int kind,
			      const char *name)
{
	struct rt_func *f;
	struct rt_node *n;

	rt_busy++;
	f = rt_func_get(fn, kind, name);
	n = f ? node_alloc(t) : NULL;
	if (n) {
		uint32_t seen = 0, me = t->index + 1;

		if (!atomic_compare_exchange_strong(&f->caller, &seen, me) && seen != me)
			atomic_store(&f->caller, RT_FUNC_MANY); /* insitu_bare.c: no bare windows */
		n->fn = fn;
		n->func = f;
		n->off = atomic_load(&f->off);
		n->parent = parent;
		n->next_sibling = parent->first_child;
		parent->first_child = n;
	}
	rt_busy--;
	return n;
}

/* Close every frame above `keep`, as if their exits had run at `now`. */
void rt_unwind_to(struct rt_thread *t, struct rt_frame *keep, uint64_t now)
{
	uint64_t cpu_now = rt_thread_cpu(t) ? rt_thread_cpu_ns() : 0;

	while (t->top > keep)
		rt_close_frame(t, now, cpu_now);
}

static void frames_init(struct rt_thread *t)
{
	size_t depth = rt_cfg.depth ? rt_cfg.depth : 1;

	t->frames_cap = depth + 2;
	t->frames = rt_map(t->frames_cap * sizeof(struct rt_frame));
	if (!t->frames)
		return;
	t->limit = t->frames + depth;
	t->top = t->frames;
	t->frames[0].node = t->root;
	t->frames[0].sp = UINTPTR_MAX;
	t->frames[0].fn = 0;
}

/* A fresh thread state; `publish` puts it on the list the writer reads. */
struct rt_thread *rt_thread_new(int publish)
{
	struct rt_thread *t = rt_map(sizeof(*t));

	if (!t)
		return NULL;
	atomic_store(&t->slow, (rt_cfg.cpu ? RT_SLOW_CPU : 0u) | (rt_clock_tsc ? 0u : RT_SLOW_MONO));
	t->root = node_alloc(t);
	if (!t->root)
		goto out_free;
	t->root->func = &rt_root_func;
	frames_init(t);
	if (!t->frames)
		goto out_free;
	t->tid = (pid_t)syscall(SYS_gettid);
	t->start = rt_now();
	t->frames[0].start = t->start;
	t->sample_every = rt_sample_every;
	if (publish) {
		t->index = atomic_fetch_add(&thread_count, 1);
		t->next = atomic_load(&rt_threads);
		while (!atomic_compare_exchange_weak(&rt_threads, &t->next, t))
			;
	}
	return t;
out_free:
	rt_thread_release(t);
	return NULL;
}

/* Give back the memory of a thread state that was never published (calibration). */
void rt_thread_release(struct rt_thread *t)
{
	struct rt_chunk *c, *next;

	for (c = t->chunks; c; c = next) {
		next = c->next;
		rt_unmap(c, sizeof(*c));
	}
	if (t->frames)
		rt_unmap(t->frames, t->frames_cap * sizeof(struct rt_frame));
	rt_trace_release(t);
	rt_unmap(t, sizeof(*t));
}

/* Stop measuring a thread: close its open frames and note when it ended. */
void rt_thread_finish(struct rt_thread *t, uint64_t now)
{
	if (atomic_exchange(&t->exited, 1))
		return;
	rt_insitu_finish(t);
	rt_unwind_to(t, t->frames, now);
	t->end = now;
	t->root->incl = now - t->frames[0].start; /* its start moved past in-run calibrations */
	if (rt_thread_cpu(t))
		t->cpu_end = rt_thread_cpu_ns();
}

/* pthread key destructor: the thread is exiting; later probes of it are ignored. */
static void on_thread_exit(void *arg)
{
	struct rt_thread *t = arg;

	rt_busy = 1;
	rt_self = NULL;
	rt_sync_thread_exit(t);
	rt_thread_finish(t, rt_now());
	rt_os_thread_end(t);
	if (rt_trace_on)
		rt_trace_thread_end(t);
}

/* First probe of a thread: make its state. */
struct rt_thread *rt_thread_attach(void)
{
	struct rt_thread *t;

	rt_busy = 1;
	t = rt_thread_new(1);
	if (t && exit_key_ok)
		pthread_setspecific(exit_key, t);
	rt_self = t;
	if (t && rt_trace_on)
		rt_trace_thread_begin(t);
	rt_busy = 0;
	atomic_store(&rt_used, 1);
	return t;
}

void rt_thread_init_keys(void)
{
	exit_key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0;
}

/* Zero the measured values of a tree, keeping its shape (a forked child starts afresh). */
static void tree_reset(struct rt_thread *t)
{
	struct rt_chunk *c;
	uint32_t i;

	for (c = t->chunks; c; c = c->next)
		for (i = 0; i < c->used; i++) {
			struct rt_node *n = &c->nodes[i];

			n->calls = n->incl = n->skipped = 0;
			n->cpu_incl = 0;
			n->throttle_calls = n->throttle_ticks = 0;
		}
}

/*
 * In a forked child only the forking thread survives. Its profile restarts at the fork: open
 * frames restart now, everything measured before belongs to the parent's profile.
 */
void rt_thread_after_fork(void)
{
	struct rt_thread *t = rt_self;
	uint64_t now = rt_now();
	struct rt_frame *f;

	atomic_store(&rt_threads, NULL);
	atomic_store(&thread_count, 0);
	if (!t)
		return;
	tree_reset(t);
	for (f = t->frames; f <= t->top; f++) {
		f->start = now;
		if (rt_thread_cpu(t))
			f->cpu_start = rt_thread_cpu_ns();
	}
	t->start = now;
	t->tid = (pid_t)syscall(SYS_gettid);
	t->depth_skips = t->lost_calls = 0;
	t->calib_ticks = 0;
	t->nsamples = t->sample_tick = 0;
	t->sample_every = rt_sample_every;
	t->nphases = t->ncounters = 0;
	t->probes = t->skips = 0;
	rt_sync_after_fork(t);
	rt_insitu_after_fork(t);
	t->next = NULL;
	t->index = atomic_fetch_add(&thread_count, 1);
	atomic_store(&rt_threads, t);
}

/* An empty tree (its memory kept): the root alone, open since now. */
static void tree_restart(struct rt_thread *t, uint64_t now)
{
	struct rt_chunk *c;

	for (c = t->chunks; c; c = c->next)
		c->used = 0;
	t->chunk_last = t->chunks;
	t->free = t->chunks->nodes;
	t->free_end = t->chunks->nodes + NODES_PER_CHUNK;
	t->nnodes = 0;
	t->root = node_alloc(t);
	t->root->func = &rt_root_func;
	t->top = t->frames;
	t->frames[0].node = t->root;
	t->frames[0].start = now;
	t->start = now;
}

/*
 * An attached runtime's next profile (attached.c) starts from nothing, now: every live thread's
 * tree emptied in place, threads that ended dropped from the list (their records stay mapped).
 * Called while no thread can be in a probe: no PROFILE action is live.
 */
void rt_threads_restart(void)
{
	struct rt_thread *t, *next, *keep = NULL;
	uint64_t now = rt_now();
	uint32_t n = 0;

	for (t = atomic_load(&rt_threads); t; t = next) { /* newest first: reversed here */
		next = t->next;
		if (atomic_load(&t->exited) || !t->chunks)
			continue;
		tree_restart(t, now);
		t->end = t->cpu_end = t->overflow = 0;
		t->depth_skips = t->lost_calls = t->calib_ticks = 0;
		t->nsamples = t->sample_tick = 0;
		t->nphases = t->ncounters = t->jmp_next = 0;
		atomic_fetch_and(&t->slow, ~(RT_SLOW_JUMPED | RT_SLOW_OVERFLOW | RT_SLOW_REFRESH));
		t->next = keep;
		keep = t;
	}
	for (t = keep; t; t = t->next) /* oldest first now: numbered in the order they came */
		t->index = n++;
	atomic_store(&thread_count, n);
	atomic_store(&rt_threads, keep);
}
