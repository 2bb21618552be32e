/* SPDX-License-Identifier: MIT */
/*
 * The probes: compiler hooks (-finstrument-functions) and the regions of the public API.
 *
 * Hot path of an enter: find the callee among the current node's children (pointer chase, no
 * hashing), read the clock as late as possible, push a frame. Of an exit: read the clock first,
 * pop the frame, add to the node. No malloc, no locks, no libc calls; the slow cases (first call
 * of a path, unmeasured functions, frames left behind by longjmp, deep stacks) are out of line.
 */
#include "rt.h"
#define SONDE_RUNTIME
#include "sonde.h"

RT_TLS struct rt_thread *rt_self;
RT_TLS int rt_busy;
static uint64_t throttle_mask = ~0ull; /* check the throttle when (calls & mask) == 0 */

/*
 * After a longjmp, pop the frames it left behind: those whose probe ran at or below the stack
 * address of this probe. Only then: an inlined function's probe runs in its caller's stack
 * frame, so comparing stack addresses on every call would pop live callers.
 */
static RT_COLD void unwind_sp(struct rt_thread *t, uintptr_t sp)
{
	struct rt_frame *f = t->top;

	t->jumped = 0;
	while (f > t->frames && f->sp <= sp)
		f--;
	rt_unwind_to(t, f, rt_now());
}

/* A call that is not measured still keeps the stack balanced; its probe cost is counted. */
static RT_COLD void push_skip(struct rt_thread *t, uintptr_t fn, uintptr_t sp)
{
	struct rt_frame *f = t->top + 1;

	f->node = t->top->node;
	f->fn = fn;
	f->sp = sp;
	f->child = 0;
	f->cpu_child = 0;
	f->skip = 1;
	t->top = f;
}

static RT_COLD void enter_cpu(struct rt_frame *f)
{
	f->cpu_start = rt_thread_cpu_ns();
	f->cpu_child = 0;
}

/* Enter a function or region. Inlined into each exported entry point. */
static inline __attribute__((always_inline)) void enter(struct rt_thread *t, uintptr_t fn,
							 uintptr_t sp, int kind, const char *name)
{
	struct rt_frame *top = t->top;
	struct rt_node *n;

	if (unlikely(t->jumped)) {
		unwind_sp(t, sp);
		top = t->top;
	}
	if (unlikely(top == t->limit || t->overflow)) {
		t->overflow++;
		return;
	}
	for (n = top->node->first_child; n; n = n->next_sibling)
		if (n->fn == fn)
			break;
	if (unlikely(!n)) {
		n = rt_node_child(t, top->node, fn, kind, name);
		if (!n) {
			t->overflow++;
			t->lost_calls++;
			return;
		}
	}
	if (unlikely(atomic_load_explicit(&n->func->off, memory_order_relaxed))) {
		push_skip(t, fn, sp);
		return;
	}
	top++;
	top->node = n;
	top->fn = fn;
	top->sp = sp;
	top->skip = 0;
	top->child = 0;
	t->top = top;
	if (unlikely(t->cpu))
		enter_cpu(top);
	top->start = rt_now();
}

void rt_enter(struct rt_thread *t, uintptr_t fn, uintptr_t sp, int kind, const char *name)
{
	enter(t, fn, sp, kind, name);
}

/* TAU's throttle: a function called very often for very little time stops being measured. */
static RT_COLD void throttle_check(struct rt_thread *t, struct rt_node *n, uint64_t now)
{
	struct rt_func *f = n->func;
	uint64_t dc = n->calls - n->throttle_calls, dt = n->incl - n->throttle_ticks;
	uint64_t calls, ticks;
	uint8_t on = 0;

	n->throttle_calls = n->calls;
	n->throttle_ticks = n->incl;
	calls = atomic_fetch_add(&f->seen_calls, dc) + dc;
	ticks = atomic_fetch_add(&f->seen_ticks, dt) + dt;
	if (!rt_cfg.throttle_calls || calls <= rt_cfg.throttle_calls ||
	    ticks >= calls * rt_cfg.throttle_ticks || f->kind != SPROF_FUNC)
		return;
	if (atomic_compare_exchange_strong(&f->off, &on, 1)) {
		f->throttled_at = now - rt_start_ticks;
		f->throttled_calls = calls;
		f->flags |= SPROF_FN_THROTTLED;
	}
	(void)t;
}

static RT_COLD void exit_cpu(struct rt_frame *f, struct rt_node *n)
{
	uint64_t d = rt_thread_cpu_ns() - f->cpu_start;

	n->cpu_incl += d;
	n->cpu_excl += d - f->cpu_child;
	f[-1].cpu_child += d;
}

/* Close the top frame at time `now`: the accounting shared by exits and unwinding. */
void rt_close_frame(struct rt_thread *t, uint64_t now, uint64_t cpu_now)
{
	struct rt_frame *f = t->top;
	struct rt_node *n = f->node;
	uint64_t d = now - f->start;

	t->top = f - 1;
	if (f->skip) {
		f[-1].child += f->child;
		f[-1].cpu_child += f->cpu_child;
		n->skipped++;
		return;
	}
	n->calls++;
	n->incl += d;
	n->excl += d - f->child;
	f[-1].child += d;
	if (t->cpu) {
		d = cpu_now - f->cpu_start;
		n->cpu_incl += d;
		n->cpu_excl += d - f->cpu_child;
		f[-1].cpu_child += d;
	}
}

/* Exits that do not match the top frame: beyond the depth limit, skipped calls, longjmp. */
static RT_COLD void exit_slow(struct rt_thread *t, uintptr_t fn, uint64_t now)
{
	struct rt_frame *f;

	if (t->overflow) {
		t->overflow--;
		t->top->node->skipped++;
		t->depth_skips++;
		return;
	}
	for (f = t->top; f > t->frames; f--)
		if (f->fn == fn)
			break;
	if (f == t->frames)
		return; /* entered before we were watching: nothing to close */
	rt_unwind_to(t, f, now);
	rt_close_frame(t, now, t->cpu ? rt_thread_cpu_ns() : 0);
}

static inline __attribute__((always_inline)) void leave(struct rt_thread *t, uintptr_t fn)
{
	uint64_t now = rt_now();
	struct rt_frame *top = t->top;
	struct rt_node *n = top->node;
	uint64_t d;

	if (unlikely(top->fn != fn || top->skip || t->overflow)) {
		exit_slow(t, fn, now);
		return;
	}
	if (unlikely(t->cpu))
		exit_cpu(top, n);
	d = now - top->start;
	n->calls++;
	n->incl += d;
	n->excl += d - top->child;
	top[-1].child += d;
	t->top = top - 1;
	if (unlikely((n->calls & throttle_mask) == 0))
		throttle_check(t, n, now);
}

void rt_exit(struct rt_thread *t, uintptr_t fn, uintptr_t sp)
{
	(void)sp;
	leave(t, fn);
}

/* The first probe of a thread (or one that fires while the runtime is busy) comes here. */
static RT_COLD struct rt_thread *self_slow(void)
{
	if (rt_busy || !atomic_load(&rt_ready))
		return NULL;
	return rt_thread_attach();
}

static inline struct rt_thread *self(void)
{
	struct rt_thread *t = rt_self;

	return likely(t) ? t : self_slow();
}

void rt_probe_set_throttle_mask(uint64_t mask)
{
	throttle_mask = mask;
}

RT_EXPORT void __cyg_profile_func_enter(void *fn, void *site)
{
	struct rt_thread *t = self();

	(void)site;
	if (likely(t))
		enter(t, (uintptr_t)fn, (uintptr_t)__builtin_frame_address(0), SPROF_FUNC, NULL);
}

RT_EXPORT void __cyg_profile_func_exit(void *fn, void *site)
{
	struct rt_thread *t = rt_self;

	(void)site;
	if (likely(t))
		leave(t, (uintptr_t)fn);
}

/* ---- public API (include/sonde.h) ---- */

RT_EXPORT void sonde__region_begin(const char *name)
{
	struct rt_thread *t = self();

	if (t && name)
		enter(t, (uintptr_t)name, (uintptr_t)__builtin_frame_address(0), SPROF_REGION, name);
}

RT_EXPORT void sonde__region_end(const char *name)
{
	struct rt_thread *t = rt_self;

	if (t && name)
		leave(t, (uintptr_t)name);
}

/* A phase marker ends the thread's current phase and starts the named one (NULL: none). */
RT_EXPORT void sonde__phase(const char *name)
{
	struct rt_thread *t = self();
	uint64_t now = rt_now();

	if (!t)
		return;
	if (t->nphases && !t->phases[t->nphases - 1].end)
		t->phases[t->nphases - 1].end = now;
	if (!name || t->nphases == RT_MAX_PHASES)
		return;
	t->phases[t->nphases].name = name;
	t->phases[t->nphases].start = now;
	t->phases[t->nphases].end = 0;
	t->nphases++;
}

static int same_name(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/* User counters: per thread, found by the name's address first, then by its text. */
RT_EXPORT void sonde__counter(const char *name, double value)
{
	struct rt_thread *t = self();
	struct rt_counter *c;
	uint32_t i;

	if (!t || !name)
		return;
	for (i = 0; i < t->ncounters; i++)
		if (t->counters[i].name == name || same_name(t->counters[i].name, name))
			break;
	if (i == t->ncounters) {
		if (i == RT_MAX_COUNTERS)
			return;
		t->counters[i].name = name;
		t->counters[i].min = value;
		t->counters[i].max = value;
		t->ncounters++;
	}
	c = &t->counters[i];
	c->count++;
	c->sum += value;
	if (value < c->min)
		c->min = value;
	if (value > c->max)
		c->max = value;
}
