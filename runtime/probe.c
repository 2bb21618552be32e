/* SPDX-License-Identifier: MIT */
/*
 * The probes: compiler hooks (-finstrument-functions) and the regions of the public API.
 *
 * Fast path of an enter: one check of the thread's slow flags, the callee looked up in the
 * current node's direct-mapped child cache, a frame pushed, the TSC read last. Of an exit: the
 * TSC read first, the frame popped, calls and inclusive ticks added to the node. Exclusive time
 * is not kept: the writer derives it (inclusive minus the children's inclusive). No malloc, no
 * locks, no libc calls; every unusual case (first call of a path, unmeasured functions, longjmp,
 * the depth limit, CPU time, no TSC) goes through the out-of-line general path.
 */
#include "rt.h"
#define SONDE_RUNTIME
#include "sonde.h"

RT_TLS struct rt_thread *rt_self;
RT_TLS int rt_busy;
static uint64_t periodic_mask = 4095; /* periodic work when (calls & mask) == 0 */
uint32_t rt_sample_every = 16;
int rt_precise; /* exits read the TSC with rdtscp */

static inline uintptr_t stack_address(void)
{
	uintptr_t sp;

	__asm__("mov %%rsp, %0" : "=r"(sp));
	return sp;
}

static void slow_clear(struct rt_thread *t, uint32_t bits)
{
	atomic_fetch_and_explicit(&t->slow, ~bits, memory_order_relaxed);
}

static void slow_set(struct rt_thread *t, uint32_t bits)
{
	atomic_fetch_or_explicit(&t->slow, bits, memory_order_relaxed);
}

/*
 * After a longjmp through a buffer whose setjmp we did not see (wrap.c handles the others), pop
 * the frames it left behind: those whose probe ran deeper in the stack than this one, and of
 * those at the same depth — functions inlined into one stack frame — the newest instance of
 * this function and what is above it. Only after a jump: comparing stack addresses on every
 * call would pop live callers that inlined their callees.
 */
static void unwind_sp(struct rt_thread *t, uintptr_t sp, uintptr_t fn)
{
	struct rt_frame *f = t->top, *g;

	slow_clear(t, RT_SLOW_JUMPED);
	while (f > t->frames && f->sp < sp)
		f--;
	for (g = f; g > t->frames && g->sp == sp; g--)
		if (g->fn == fn || g->fn == (fn ^ RT_FN_SKIP)) {
			f = g - 1;
			break;
		}
	if (f == t->top)
		return;
	t->overflow = 0;
	slow_clear(t, RT_SLOW_OVERFLOW);
	rt_unwind_to(t, f, rt_now());
}

/* Bring the nodes' copies of their function's `off` up to date (after a throttle). */
static void refresh_nodes(struct rt_thread *t)
{
	const struct rt_chunk *c;
	uint32_t i;

	slow_clear(t, RT_SLOW_REFRESH);
	for (c = t->chunks; c; c = rt_chunk_next(c))
		for (i = 0; i < rt_chunk_used(c); i++) {
			struct rt_node *n = (struct rt_node *)(uintptr_t)rt_chunk_node(c, i);

			n->off = atomic_load_explicit(&n->func->off, memory_order_relaxed);
		}
}

/* The child of `parent` for `fn`, cached in its slot, made on first sight. */
static RT_COLD struct rt_node *find_child(struct rt_thread *t, struct rt_node *parent,
					  uintptr_t fn, int kind, const char *name)
{
	struct rt_node *n;

	for (n = parent->first_child; n; n = n->next_sibling)
		if (n->fn == fn)
			break;
	if (!n)
		n = rt_node_child(t, parent, fn, kind, name);
	if (n)
		parent->kids[RT_KID_SLOT(fn)] = n;
	return n;
}

/* Push a frame; the caller sets its start time (last, to leave the push out of the call). */
static inline __attribute__((always_inline)) struct rt_frame *push(struct rt_thread *t,
								   struct rt_node *n,
								   uintptr_t fn, uintptr_t sp)
{
	struct rt_frame *f = t->top + 1;

	f->node = n;
	f->fn = fn;
	f->sp = sp;
	t->top = f;
	return f;
}

/* A call that is not measured still keeps the stack balanced; its probe cost is counted. */
static void push_skip(struct rt_thread *t, uintptr_t fn, uintptr_t sp)
{
	push(t, t->top->node, fn ^ RT_FN_SKIP, sp);
}

/*
 * An unmeasured call's exit. With --insitu, the one that ends an unmeasured window
 * (insitu.c); insitu_until is 0 otherwise, which the incremented count never equals.
 */
static inline __attribute__((always_inline)) void count_skip(struct rt_thread *t)
{
	if (unlikely(++t->skips == t->insitu_until))
		rt_insitu_b_end(t);
}

/* The general enter: everything the fast path leaves out. */
static RT_COLD void enter_slow(struct rt_thread *t, uintptr_t fn, uintptr_t sp, int kind,
			       const char *name)
{
	uint32_t slow = atomic_load_explicit(&t->slow, memory_order_relaxed);
	struct rt_frame *top;
	struct rt_node *n;

	if (slow & RT_SLOW_JUMPED)
		unwind_sp(t, sp, fn);
	if (slow & RT_SLOW_REFRESH)
		refresh_nodes(t);
	top = t->top;
	if (t->overflow || top == t->limit) {
		t->overflow++;
		slow_set(t, RT_SLOW_OVERFLOW);
		return;
	}
	n = top->node->kids[RT_KID_SLOT(fn)];
	if (!n || n->fn != fn)
		n = find_child(t, top->node, fn, kind, name);
	if (!n || n->off) {
		t->lost_calls += !n;
		push_skip(t, fn, sp);
		return;
	}
	top = push(t, n, fn, sp);
	if (slow & RT_SLOW_CPU)
		top->cpu_start = rt_thread_cpu_ns();
	top->start = rt_now();
}

static inline __attribute__((always_inline)) void enter(struct rt_thread *t, uintptr_t fn,
							 uintptr_t sp, int kind, const char *name)
{
	struct rt_frame *top = t->top;
	struct rt_node *n;

	if (unlikely(atomic_load_explicit(&t->slow, memory_order_relaxed) | (top == t->limit))) {
		enter_slow(t, fn, sp, kind, name);
		return;
	}
	n = top->node->kids[RT_KID_SLOT(fn)];
	if (unlikely(!n || n->fn != fn)) {
		enter_slow(t, fn, sp, kind, name);
		return;
	}
	if (unlikely(n->off)) { /* throttled or excluded: no clock, just keep the stack */
		push_skip(t, fn, sp);
		return;
	}
	push(t, n, fn, sp)->start = rt_rdtsc();
}

/* Tell every thread to refresh its nodes' copies of `off` at its next probe. */
void rt_threads_refresh(void)
{
	struct rt_thread *t;

	for (t = atomic_load(&rt_threads); t; t = t->next)
		slow_set(t, RT_SLOW_REFRESH);
	if (rt_self)
		slow_set(rt_self, RT_SLOW_REFRESH);
}

/* TAU's throttle: a function called very often for very little time stops being measured. */
static void throttle_check(struct rt_node *n, uint64_t now)
{
	struct rt_func *f = n->func;
	uint64_t dc = n->calls - n->throttle_calls, dt = n->incl - n->throttle_ticks;
	uint64_t calls, ticks;
	uint8_t on = 0;

	n->throttle_calls = n->calls;
	n->throttle_ticks = n->incl;
	if (!rt_cfg.throttle_calls || f->kind != SPROF_FUNC)
		return;
	calls = atomic_fetch_add(&f->seen_calls, dc) + dc;
	ticks = atomic_fetch_add(&f->seen_ticks, dt) + dt;
	if (calls <= rt_cfg.throttle_calls || ticks >= calls * rt_cfg.throttle_ticks)
		return;
	/* --insitu: a thread prices its probes in this function's code first (a holder that
	 * stopped calling it cannot keep it measured for long: the bound) */
	if (atomic_load_explicit(&f->insitu_hold, memory_order_relaxed) &&
	    calls < RT_INSITU_HOLD_TIMES * rt_cfg.throttle_calls)
		return;
	if (atomic_compare_exchange_strong(&f->off, &on, 1)) {
		f->throttled_at = now - rt_start_ticks;
		f->throttled_calls = calls;
		f->flags |= SPROF_FN_THROTTLED;
		rt_threads_refresh();
	}
}

/* Keep a batch; when the reservoir is full, keep every other one and sample half as often. */
static void keep_sample(struct rt_thread *t, double full, double in)
{
	uint32_t i;

	if (t->nsamples == RT_SAMPLES) {
		for (i = 0; i < RT_SAMPLES / 2; i++) {
			t->sample_full[i] = t->sample_full[2 * i];
			t->sample_in[i] = t->sample_in[2 * i];
		}
		t->nsamples = RT_SAMPLES / 2;
		t->sample_every *= 2;
	}
	t->sample_full[t->nsamples] = (float)full;
	t->sample_in[t->nsamples] = (float)in;
	t->nsamples++;
}

/*
 * The runtime's own work of d ticks on this thread (in-run calibration, --insitu's windows) is
 * moved out of every open interval (their starts are shifted by it), so no function and no total
 * includes it; calib_ticks keeps the sum (the process's time, the MPI and sync delays).
 */
void rt_keep_out(struct rt_thread *t, uint64_t d)
{
	struct rt_frame *f;

	for (f = t->frames; f <= t->top; f++)
		f->start += d;
	t->calib_ticks += d;
}

/* In-run calibration: now and then, measure the probes again on this thread, as the machine's
 * speed is now. */
static void sample_costs(struct rt_thread *t)
{
	uint64_t begin = rt_now();
	double full, in;

	if (!t->calib) {
		t->calib = rt_thread_new(0);
		if (!t->calib)
			return;
		t->calib->scratch = 1;
	}
	if (rt_calib_sample(t->calib, &full, &in) == 0)
		keep_sample(t, full, in);
	rt_keep_out(t, rt_now() - begin);
}

/* Every 2^k calls of a call path: the throttle, and in-run calibration now and then. */
static RT_COLD void periodic(struct rt_thread *t, struct rt_node *n, uint64_t now, uintptr_t ret)
{
	/* a calibration's stand-ins are called in batches of thousands: throttled, a small
	 * --throttle count made them time the skip path (o_full 3.7 ns against 17.5) */
	if (!t->scratch)
		throttle_check(n, now);
	if (rt_insitu_on)
		rt_insitu_tick(t, n, now, ret);
	if (t->scratch || ++t->sample_tick < t->sample_every)
		return;
	t->sample_tick = 0;
	sample_costs(t);
}

/* Close the top frame at time `now`: the accounting shared by exits and unwinding. */
void rt_close_frame(struct rt_thread *t, uint64_t now, uint64_t cpu_now)
{
	struct rt_frame *f = t->top;
	struct rt_node *n = f->node;

	t->top = f - 1;
	if (f->fn != n->fn) { /* an unmeasured call */
		n->skipped++;
		count_skip(t);
		return;
	}
	n->calls++;
	t->probes++;
	n->incl += now - f->start;
	if (atomic_load_explicit(&t->slow, memory_order_relaxed) & RT_SLOW_CPU)
		n->cpu_incl += cpu_now - f->cpu_start;
	if (unlikely((n->calls & periodic_mask) == 0))
		periodic(t, n, now, 0);
}

/* The general exit: the depth limit, unmeasured calls, longjmp, CPU time, no TSC. */
static RT_COLD void exit_slow(struct rt_thread *t, uintptr_t fn, uintptr_t ret)
{
	uint32_t slow = atomic_load_explicit(&t->slow, memory_order_relaxed);
	uint64_t now, cpu_now;
	struct rt_frame *f;

	if (t->overflow) {
		if (!--t->overflow)
			slow_clear(t, RT_SLOW_OVERFLOW);
		t->top->node->skipped++;
		t->depth_skips++;
		count_skip(t);
		return;
	}
	if (t->top->fn == (fn ^ RT_FN_SKIP)) { /* the usual unmeasured call: no clock needed */
		t->top--;
		t->top[1].node->skipped++;
		count_skip(t);
		return;
	}
	now = rt_now();
	for (f = t->top; f > t->frames; f--)
		if (f->fn == fn || f->fn == (fn ^ RT_FN_SKIP))
			break;
	if (f == t->frames) { /* entered before we were watching: nothing to close */
		if (rt_insitu_on)
			rt_insitu_stray_exit(t, fn, ret);
		return;
	}
	cpu_now = slow & RT_SLOW_CPU ? rt_thread_cpu_ns() : 0;
	while (t->top > f)
		rt_close_frame(t, now, cpu_now);
	rt_close_frame(t, now, cpu_now);
}

/*
 * The TSC is read after the frame check: rdtsc does not wait for the loads before it, so this
 * costs the measured interval nothing, and an unmeasured call's exit reads no clock at all.
 * ret: where the exit probe returns in the function (--insitu's bare windows learn the exit
 * call sites from it); only the cold paths read it.
 */
static inline __attribute__((always_inline)) void leave(struct rt_thread *t, uintptr_t fn,
							 uintptr_t ret)
{
	struct rt_frame *top = t->top;
	struct rt_node *n = top->node;
	uint64_t now;

	if (unlikely((top->fn != fn) | atomic_load_explicit(&t->slow, memory_order_relaxed))) {
		if (top->fn == (fn ^ RT_FN_SKIP) && !t->overflow) {
			t->top = top - 1;
			n->skipped++;
			count_skip(t);
			return;
		}
		exit_slow(t, fn, ret);
		return;
	}
	now = likely(!rt_precise) ? rt_rdtsc() : rt_rdtscp();
	n->calls++;
	n->incl += now - top->start;
	t->top = top - 1;
	t->probes++;
	if (unlikely((n->calls & periodic_mask) == 0))
		periodic(t, n, now, ret);
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
	periodic_mask = mask;
}

uint64_t rt_probe_window(void)
{
	return periodic_mask + 1;
}

/*
 * Trace mode's fast path (trace.c has the rest): the function's id from the thread's cache, one
 * clock read, one 8-byte store. Any unusual case goes to rt_trace_slow.
 */
static inline __attribute__((always_inline)) void trace_event(struct rt_thread *t,
							       unsigned type, uintptr_t fn,
							       int kind, const char *name)
{
	const struct rt_tcache *c = &t->tr.cache[RT_TC_SLOT(fn)];
	uint64_t *p = t->tr.pos, now, d;

	if (unlikely((c->addr != fn) | (c->word & RT_TC_SLOW))) {
		rt_trace_slow(t, type, fn, kind, name);
		return;
	}
	now = rt_rdtsc(); /* without a TSC every cached word is marked slow (trace.c) */
	d = now - t->tr.last;
	if (unlikely((p >= t->tr.end) | (d > STRC_DELTA_MAX))) {
		rt_trace_slow(t, type, fn, kind, name);
		return;
	}
	*p = c->word | type | d << 28;
	t->tr.pos = p + 1;
	t->tr.last = now;
	if (type == STRC_ENTER || type == STRC_REGION_BEGIN)
		t->tr.open[t->tr.depth++ & (RT_TSTACK - 1)] = c->word | type;
	else
		t->tr.depth--;
}

/* Out of line, reached by a tail jump: the profile path's register saves are not paid here. */
static __attribute__((noinline)) void trace_enter(struct rt_thread *t, uintptr_t fn)
{
	trace_event(t, STRC_ENTER, fn, SPROF_FUNC, NULL);
}

static __attribute__((noinline)) void trace_exit(struct rt_thread *t, uintptr_t fn)
{
	trace_event(t, STRC_EXIT, fn, SPROF_FUNC, NULL);
}

RT_EXPORT void __cyg_profile_func_enter(void *fn, void *site)
{
	struct rt_thread *t = self();

	(void)site;
	if (unlikely(!t))
		return;
	if (unlikely(rt_trace_on))
		trace_enter(t, (uintptr_t)fn);
	else
		enter(t, (uintptr_t)fn, stack_address(), SPROF_FUNC, NULL);
}

RT_EXPORT void __cyg_profile_func_exit(void *fn, void *site)
{
	struct rt_thread *t = rt_self;

	(void)site;
	if (unlikely(!t))
		return;
	if (unlikely(rt_trace_on))
		trace_exit(t, (uintptr_t)fn);
	else
		leave(t, (uintptr_t)fn, (uintptr_t)__builtin_return_address(0));
}

/* Their names inside the library, for PROFILE points (dyn/entry.c). */
extern __typeof__(__cyg_profile_func_enter) rt_probe_enter
	__attribute__((alias("__cyg_profile_func_enter"), visibility("hidden")));
extern __typeof__(__cyg_profile_func_exit) rt_probe_exit
	__attribute__((alias("__cyg_profile_func_exit"), visibility("hidden")));

/* ---- public API (include/sonde.h) ---- */

RT_EXPORT void sonde__region_begin(const char *name)
{
	struct rt_thread *t = self();

	if (!t || !name)
		return;
	if (rt_trace_on)
		trace_event(t, STRC_REGION_BEGIN, (uintptr_t)name, SPROF_REGION, name);
	else
		enter_slow(t, (uintptr_t)name, stack_address(), SPROF_REGION, name);
}

RT_EXPORT void sonde__region_end(const char *name)
{
	struct rt_thread *t = rt_self;

	if (!t || !name)
		return;
	if (rt_trace_on)
		trace_event(t, STRC_REGION_END, (uintptr_t)name, SPROF_REGION, name);
	else
		exit_slow(t, (uintptr_t)name, 0);
}

/* A phase marker ends the thread's current phase and starts the named one (NULL: none). */
RT_EXPORT void sonde__phase(const char *name)
{
	struct rt_thread *t = self();
	uint64_t now = rt_now();

	dyn_note_phase(name); /* a live search follows phases (sonde consult -- PROGRAM) */
	if (!t)
		return;
	if (rt_trace_on) {
		rt_trace_record(t, STRC_PHASE, name ? rt_trace_name_id(name) : STRC_ID_NONE, NULL, 0);
		return;
	}
	if (t->nphases && !t->phases[t->nphases - 1].end)
		t->phases[t->nphases - 1].end = now;
	if (name && t->nphases < RT_MAX_PHASES) {
		t->phases[t->nphases].name = name;
		t->phases[t->nphases].start = now;
		t->phases[t->nphases].end = 0;
		t->nphases++;
	}
	rt_os_phase(t); /* --os: the thread's counters at the phase boundary */
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
	if (rt_trace_on) {
		uint64_t bits;

		__builtin_memcpy(&bits, &value, 8);
		rt_trace_record(t, STRC_USER, rt_trace_name_id(name), &bits, 1);
		return;
	}
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
