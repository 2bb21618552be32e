/* SPDX-License-Identifier: MIT */
/*
 * What the trampolines call: sonde__dyn_entry at a point, sonde__dyn_exit from the return
 * trampoline (docs/dynamic.md). Primitives, predicates and the per-thread shadow stack of
 * replaced return addresses.
 *
 * An inactive point costs one load and a branch. An active one without timers or exit actions
 * touches no per-thread state. Nothing here calls libc, takes a lock or allocates, except the
 * first timer or exit of a thread, which maps its state with a system call.
 */
#include "dyn.h"

#include <signal.h>

/* ---- primitives and predicates ---- */

static inline int compare(int64_t x, unsigned op, int64_t k)
{
	switch (op) {
	case SPROTO_EQ: return x == k;
	case SPROTO_NE: return x != k;
	case SPROTO_LT: return x < k;
	case SPROTO_LE: return x <= k;
	case SPROTO_GT: return x > k;
	case SPROTO_GE: return x >= k;
	default: return 0;
	}
}

/*
 * regs: the arguments (entry; NULL at exit), retval: rax (exit; NULL when the call ended by an
 * unwinding: it returned no value); t: NULL if none.
 */
static inline int pred_holds(const struct dyn_action *a, const struct dyn_thread *t,
			     const struct sonde_regs *regs, const int64_t *retval)
{
	const uint64_t *args = regs ? &regs->rdi : NULL;
	int64_t x;

	switch (a->pred) {
	case SPROTO_PRED_NONE:
		return 1;
	case SPROTO_PRED_COUNTER:
		x = atomic_load_explicit(&dyn_counters[a->pred_counter % DYN_COUNTERS].v,
					 memory_order_relaxed);
		break;
	case SPROTO_PRED_ARG:
		if (!args)
			return 0;
		x = (int64_t)args[a->arg % 6];
		break;
	case SPROTO_PRED_RETVAL:
		if (!retval)
			return 0;
		x = *retval;
		break;
	case SPROTO_PRED_TCOUNTER:
		if (!t)
			return 0;
		x = t->tcounters[a->pred_counter % DYN_TCOUNTERS];
		break;
	default:
		return 0;
	}
	return compare(x, a->op, a->pred_value);
}

static inline void counter_op(const struct dyn_action *a)
{
	_Atomic int64_t *c = &dyn_counters[a->target % DYN_COUNTERS].v;

	if (a->prim == SPROTO_ADD)
		atomic_fetch_add_explicit(c, a->value, memory_order_relaxed);
	else if (a->prim == SPROTO_SUB)
		atomic_fetch_sub_explicit(c, a->value, memory_order_relaxed);
	else
		atomic_store_explicit(c, a->value, memory_order_relaxed);
}

/* Primitives on the thread's own state: timers and thread counters. */
static void thread_op(const struct dyn_action *a, struct dyn_thread *t)
{
	uint32_t i = a->target % DYN_TIMERS;
	int64_t *c;

	if (!t)
		return;
	c = &t->tcounters[a->target % DYN_TCOUNTERS];
	switch (a->prim) {
	case SPROTO_TSET: __atomic_store_n(c, a->value, __ATOMIC_RELAXED); break;
	case SPROTO_TADD: dyn_tcounter_add(c, a->value); break;
	case SPROTO_TSUB: dyn_tcounter_add(c, -a->value); break;
	case SPROTO_START_WALL: dyn_timer_start(&t->wall[i], 0); break;
	case SPROTO_START_WALL_IF: /* the guard: counter, comparison, constant (SPROTO_GUARD) */
		if (compare(t->tcounters[((uint64_t)a->value & 0xffff) % DYN_TCOUNTERS],
			    (unsigned)(a->value >> 16 & 0xff), a->value >> 24))
			dyn_timer_start(&t->wall[i], 0);
		break;
	case SPROTO_STOP_WALL: dyn_timer_stop(&t->wall[i], 0); break;
	case SPROTO_START_CPU: dyn_timer_start(&t->cpu[i], 1); break;
	case SPROTO_STOP_CPU: dyn_timer_stop(&t->cpu[i], 1); break;
	default: break;
	}
}

/* Bytes read or written: the return value, when it is not an error (exit actions only). */
static __attribute__((noinline)) void retval_op(const struct dyn_action *a, struct dyn_thread *t,
					      int64_t retval)
{
	if (retval <= 0)
		return;
	if (a->prim == SPROTO_ADD_RET)
		atomic_fetch_add_explicit(&dyn_counters[a->target % DYN_COUNTERS].v, retval,
					  memory_order_relaxed);
	else if (t)
		dyn_tcounter_add(&t->tcounters[a->target % DYN_TCOUNTERS], retval);
}

/*
 * The profile runtime measures the call as if the compiler had put its hooks there. The thread
 * says it is inside (in_profile, counted: a signal handler may nest) before it looks whether
 * the profile is live, so that dyn_profile_quiesce, which turns it off and then waits for
 * every thread to be outside, never writes a profile that a thread is still changing.
 */
static void profile_op(const struct dyn_action *a, struct dyn_thread *t, int at_exit)
{
	void *fn = (void *)(uintptr_t)a->value;

	if (unlikely(!t))
		return;
	__asm__ volatile("addl $1, %0" : "+m"(t->in_profile) : : "memory");
	if (likely(atomic_load_explicit(&dyn_profile_live, memory_order_relaxed))) {
		if (at_exit)
			dyn_call_keeping_vectors(rt_probe_exit, fn);
		else
			dyn_call_keeping_vectors(rt_probe_enter, fn);
	}
	__asm__ volatile("subl $1, %0" : "+m"(t->in_profile) : : "memory");
}

/* The first argument, an object's address, into the object table (entry actions only). */
static __attribute__((noinline)) void record_op(const struct dyn_action *a,
					       const struct sonde_regs *regs, uint64_t site)
{
	if (regs)
		dyn_record(a->target, regs->rdi, a->value == SPROTO_RECORD_INIT, site);
}

/* An argument (value: its index) of the call, plus one, into the thread's counter (entry). */
static __attribute__((noinline)) void tset_arg_op(const struct dyn_action *a, struct dyn_thread *t,
						 const struct sonde_regs *regs)
{
	const uint64_t *args = regs ? &regs->rdi : NULL;

	if (t && args)
		__atomic_store_n(&t->tcounters[a->target % DYN_TCOUNTERS],
				 (int64_t)(args[(uint64_t)a->value % 6] + 1), __ATOMIC_RELAXED);
}

/*
 * At entry: regs, the arguments, and site, where the call returns (0 at a call site); at exit:
 * retval (NULL: none, the call was unwound).
 */
static inline void run_actions(const struct dyn_action *a, unsigned n, struct dyn_thread *t,
			       const struct sonde_regs *regs, const int64_t *retval, int at_exit,
			       uint64_t site)
{
	for (; n; n--, a++) {
		if (a->pred != SPROTO_PRED_NONE && !pred_holds(a, t, regs, retval))
			continue;
		if (likely(a->prim <= SPROTO_SUB))
			counter_op(a);
		else if (a->prim == SPROTO_PROFILE)
			profile_op(a, t, at_exit);
		else if (unlikely(a->prim == SPROTO_RECORD))
			record_op(a, regs, site);
		else if (unlikely(a->prim == SPROTO_TSET_ARG))
			tset_arg_op(a, t, regs);
		else if (unlikely(a->prim == SPROTO_ADD_RET || a->prim == SPROTO_TADD_RET))
			retval_op(a, t, at_exit && retval ? *retval : 0);
		else
			thread_op(a, t);
	}
}

/* ---- the shadow stack ---- */

static inline uint64_t ret_tramp(void)
{
	return (uint64_t)(uintptr_t)dyn_ret_tramp_local;
}

/* Where the thread's alternate signal stack is, when it is running on it. */
static int on_altstack(uintptr_t *lo, uintptr_t *hi)
{
	stack_t ss;

	if (dyn_sys2(SYS_sigaltstack, 0, (long)&ss) != 0 || !(ss.ss_flags & SS_ONSTACK))
		return 0;
	*lo = (uintptr_t)ss.ss_sp;
	*hi = *lo + ss.ss_size;
	return 1;
}

/*
 * Frames at or below this call's return slot were left by a longjmp (or an exception that
 * skipped their returns): drop them. Not the frame of a function that tail-called this one
 * (same slot, already holding the return trampoline), and, on an alternate signal stack,
 * nothing outside it: the interrupted code's frames are alive wherever that stack lies.
 */
static RT_COLD void drop_stale(struct dyn_thread *t, uint64_t *slot)
{
	uintptr_t lo = 0, hi = 0;
	int alt = -1;

	while (t->depth) {
		struct dyn_frame *f = &t->frames[t->depth - 1];

		if (f->slot > slot || (f->slot == slot && *slot == ret_tramp()))
			return;
		if (alt < 0)
			alt = on_altstack(&lo, &hi);
		if (alt && ((uintptr_t)f->slot < lo || (uintptr_t)f->slot >= hi))
			return;
		t->depth--;
	}
}

static inline int shadow_room(struct dyn_thread *t, uint64_t *slot)
{
	if (unlikely(t->depth && t->frames[t->depth - 1].slot <= slot))
		drop_stale(t, slot);
	return t->depth < DYN_SHADOW;
}

/*
 * Write the frame, publish it, then check it: a signal handler that ran instrumented code in
 * between used the same slot. Only then is the return address replaced.
 */
static inline void shadow_push(struct dyn_thread *t, uint32_t point, uint16_t gen,
			       uint64_t *slot)
{
	uint32_t i = t->depth;
	volatile struct dyn_frame *f = &t->frames[i];
	uint64_t ret = *slot;
	uint8_t session = atomic_load_explicit(&dyn_session, memory_order_relaxed);

	f->ret = ret;
	f->slot = slot;
	f->point = point;
	f->closed = 0;
	f->session = session;
	f->gen = gen;
	dyn_barrier();
	t->depth = i + 1;
	dyn_barrier();
	if (unlikely(f->ret != ret || f->slot != slot || f->point != point || f->closed ||
		     f->session != session || f->gen != gen)) {
		f->ret = ret;
		f->slot = slot;
		f->point = point;
		f->closed = 0;
		f->session = session;
		f->gen = gen;
	}
	if (t->hiwater <= i)
		t->hiwater = i + 1;
	dyn_barrier();
	*slot = ret_tramp();
}

/* Last resort: a frame dropped by mistake is still there above the top, unless reused. */
static RT_COLD int shadow_recover(struct dyn_thread *t, uint64_t *slot, struct dyn_frame *out)
{
	uint32_t i;

	for (i = t->hiwater; i > t->depth; i--)
		if (t->frames[i - 1].slot == slot) {
			*out = t->frames[i - 1];
			return 0;
		}
	return -1;
}

/*
 * The frame of the call returning now: the newest with its slot (sp - 8). Every frame above it
 * was pushed after that call began and is finished or abandoned (longjmp, also out of a signal
 * handler on an alternate stack, wherever that lies): they go too.
 */
static inline int shadow_pop(struct dyn_thread *t, uint64_t *slot, struct dyn_frame *out)
{
	uint32_t i = t->depth;

	while (i && t->frames[i - 1].slot != slot)
		i--;
	if (unlikely(!i))
		return shadow_recover(t, slot, out);
	out->ret = t->frames[i - 1].ret;
	out->point = t->frames[i - 1].point;
	out->closed = t->frames[i - 1].closed;
	dyn_barrier();
	t->depth = i - 1;
	return 0;
}

/* ---- the entry points ---- */

/* Where the call returns: its caller (0 at a call site, or when a hooked call tail-called this
 * one: its slot holds the return trampoline already). */
static inline uint64_t caller_of(const uint64_t *ret_slot)
{
	uint64_t ret = ret_slot ? *ret_slot : 0;

	return ret == ret_tramp() ? 0 : ret;
}

static RT_COLD struct dyn_thread *self_slow(void)
{
	struct dyn_thread *t = dyn_thread_new();

	if (!t)
		atomic_fetch_add_explicit(&dyn_lost_nothread, 1, memory_order_relaxed);
	return t;
}

/* Out of line: the inactive path saves no register (sonde__dyn_entry jumps here). */
static RT_HOT __attribute__((noinline)) void
entry_active(const struct dyn_prog *p, uint32_t point, const struct sonde_regs *regs,
	     uint64_t *ret_slot)
{
	struct dyn_thread *t = NULL;
	int hook;

	if (unlikely(rt_busy | atomic_load_explicit(&dyn_paused, memory_order_relaxed)))
		return;
	hook = p->n_exit && ret_slot;
	if (p->needs_thread) {
		t = dyn_self;
		if (unlikely(!t) && !(t = self_slow()))
			return;
		if (hook && unlikely(!shadow_room(t, ret_slot))) {
			t->lost++; /* the call is not measured: its timers stay balanced */
			return;
		}
	}
	run_actions(p->act, p->n_entry, t, regs, NULL, 0, caller_of(ret_slot));
	if (hook && likely(t)) /* exit actions make needs_thread: t is there */
		shadow_push(t, point, p->gen, ret_slot);
}

RT_EXPORT RT_HOT void sonde__dyn_entry(uint32_t point, struct sonde_regs *regs,
				       uint64_t *ret_slot)
{
	const struct dyn_prog *p =
		atomic_load_explicit(&dyn_points[point % DYN_POINT_SLOTS], memory_order_acquire);

	if (likely(!p))
		return;
	if (p->one_add) { /* the usual counting point: no register saved, no thread state */
		if (likely(!(rt_busy | atomic_load_explicit(&dyn_paused, memory_order_relaxed))))
			counter_op(&p->act[0]);
		return;
	}
	if (p->one_tadd && likely(dyn_self)) { /* the same, per thread */
		if (likely(!(rt_busy | atomic_load_explicit(&dyn_paused, memory_order_relaxed))))
			dyn_tcounter_add(&dyn_self->tcounters[p->act[0].target % DYN_TCOUNTERS],
					 p->act[0].value);
		return;
	}
	entry_active(p, point, regs, ret_slot);
}

/* The return trampoline cannot go on without the real return address. */
static RT_COLD __attribute__((noreturn)) void lost_return(void)
{
	if (rt_mode != RT_MODE_ATTACHED)
		rt_log("dynamic instrumentation: a return address is not on the shadow stack "
		       "(stack switching?): aborting");
	dyn_sys6(SYS_tgkill, dyn_sys6(SYS_getpid, 0, 0, 0, 0, 0, 0), dyn_sys_gettid(), SIGABRT,
		 0, 0, 0);
	__builtin_trap();
}

/*
 * Exit actions run for every call whose entry pushed a frame, paused or not, so timers and
 * constraint counters stay balanced; they are the point's actions as they are now.
 */
RT_EXPORT RT_HOT uint64_t sonde__dyn_exit(struct sonde_retregs *r)
{
	struct dyn_thread *t = dyn_self;
	struct dyn_frame f;
	const struct dyn_prog *p;

	if (unlikely(!t) || unlikely(shadow_pop(t, (uint64_t *)(uintptr_t)(r->sp - 8), &f) != 0))
		lost_return();
	if (unlikely(f.closed))
		return f.ret;
	p = atomic_load_explicit(&dyn_points[f.point % DYN_POINT_SLOTS], memory_order_acquire);
	if (p && p->n_exit) {
		int64_t rv = (int64_t)r->rax;

		run_actions(p->act + p->n_entry, p->n_exit, t, NULL, &rv, 1, 0);
	}
	return f.ret;
}

/* A frame's exit actions, for a call that an unwinder ended: no return value. */
static void close_frame(struct dyn_thread *t, struct dyn_frame *f)
{
	const struct dyn_prog *p;

	if (f->closed)
		return;
	f->closed = 1;
	dyn_barrier();
	p = atomic_load_explicit(&dyn_points[f->point % DYN_POINT_SLOTS], memory_order_acquire);
	if (p && p->n_exit)
		run_actions(p->act + p->n_entry, p->n_exit, t, NULL, NULL, 1, 0);
}

/*
 * The call whose return was hooked at `slot` is being unwound: the newest frame with that slot
 * that is not a tail call's (a frame whose ret is the trampoline is that of a call it
 * tail-called: same slot, above it). It and those tail calls are closed, newest first, as their
 * returns would have run. Frames above them with other slots were closed when the unwinder
 * passed them, or were left by a longjmp (their exits never run, as everywhere). They all stay
 * on the shadow stack: the unwinder reads the real return address from this one right after
 * (the trampoline's unwind information, dyn_ret.S); the next entry or exit below drops them, as
 * it drops frames a longjmp left.
 */
RT_COLD void dyn_unwound(uint64_t *slot)
{
	struct dyn_thread *t = dyn_self;
	uint32_t i, j;

	if (!t)
		return;
	for (i = t->depth; i; i--)
		if (t->frames[i - 1].slot == slot && t->frames[i - 1].ret != ret_tramp())
			break;
	for (j = t->depth; i && j >= i; j--)
		if (t->frames[j - 1].slot == slot)
			close_frame(t, &t->frames[j - 1]);
}

/* ---- catch-up (docs/dynamic.md, "Calls already running") ---- */

/*
 * Put the frame of a call already running, whose return address is at slot, among the
 * thread's frames in stack order: older calls (higher slots) below it, newer ones above.
 */
static int shadow_insert(struct dyn_thread *t, uint32_t point, uint16_t gen, uint64_t *slot)
{
	uint32_t i = 0, j;

	if (t->depth >= DYN_SHADOW)
		return -1;
	while (i < t->depth && t->frames[i].slot > slot)
		i++;
	if (i < t->depth && t->frames[i].slot == slot)
		return -1; /* that slot is hooked already, by another point */
	for (j = t->depth; j > i; j--)
		t->frames[j] = t->frames[j - 1];
	t->frames[i] = (struct dyn_frame){
		.ret = *slot, .slot = slot, .point = point, .gen = gen,
		.session = atomic_load_explicit(&dyn_session, memory_order_relaxed)
	};
	dyn_barrier();
	t->depth++;
	if (t->hiwater < t->depth)
		t->hiwater = t->depth;
	dyn_barrier();
	*slot = ret_tramp();
	return 0;
}

/* The frame of the hooked call whose return slot is `slot` (not a tail call's), or NULL. */
static struct dyn_frame *hooked_at(struct dyn_thread *t, const uint64_t *slot)
{
	uint32_t i;

	for (i = t->depth; i; i--)
		if (t->frames[i - 1].slot == slot && t->frames[i - 1].ret != ret_tramp())
			return &t->frames[i - 1];
	return NULL;
}

/* The frame's call was hooked for another session, or its point has no exit actions now:
 * nothing of this session's ends at its return, and a catch-up may take it over. */
static int frame_idle(const struct dyn_frame *f)
{
	const struct dyn_prog *p =
		atomic_load_explicit(&dyn_points[f->point % DYN_POINT_SLOTS], memory_order_acquire);

	return f->session != atomic_load_explicit(&dyn_session, memory_order_relaxed) || !p ||
	       !p->n_exit;
}

/*
 * Paradyn's catch-up, called by the tool on a thread of a stopped world (a remote call,
 * tool/dyn/catchup.c): the call whose return address is at `slot` began before the point
 * `ps->point` got the actions in `ps`. Their entry actions run now, as if the call had just
 * begun, with args[0..5] as its arguments, and its return is hooked (unless it is already, by
 * this point, or by an earlier session's or one with no exit actions now, which it then takes
 * over), so that the point's exit actions end what they began. 0 when done; 1 when the call
 * began under the point's present actions (its entry ran them: nothing to do); -1 when the
 * thread is inside the runtime, -2 when the call cannot be hooked, -3 bad actions. Only a
 * tool's points (the calibration's own, above DYN_POINTS, are never caught up).
 */
RT_EXPORT int sonde__dyn_catch_up(const struct sproto_point_set *ps, uint64_t *slot,
				  const uint64_t *args)
{
	_Alignas(struct dyn_prog) unsigned char
		buf[sizeof(struct dyn_prog) + SPROTO_MAX_ACTIONS * sizeof(struct dyn_action)];
	struct dyn_prog *p = (struct dyn_prog *)buf;
	struct sonde_regs regs = { .rdi = args[0], .rsi = args[1], .rdx = args[2],
				   .rcx = args[3], .r8 = args[4], .r9 = args[5] };
	uint32_t point = ps->point % DYN_POINTS;
	const struct dyn_prog *live;
	struct dyn_thread *t;
	struct dyn_frame *f;
	uint64_t site = *slot;

	if (ps->n > SPROTO_MAX_ACTIONS)
		return -3;
	if (rt_busy)
		return -1;
	t = dyn_self;
	if (!t && !(t = self_slow()))
		return -2;
	live = atomic_load_explicit(&dyn_points[point], memory_order_acquire);
	if (!live || !live->n_exit)
		return -2; /* nothing would end what the entry actions begin */
	if (site == ret_tramp()) {
		f = hooked_at(t, slot);
		if (!f || (f->point != point && !frame_idle(f)))
			return -2;
		if (f->point != point || frame_idle(f)) { /* another session's, or nothing to do */
			f->point = point;
			f->session = atomic_load_explicit(&dyn_session, memory_order_relaxed);
			f->gen = 0;
		}
		if (f->gen == live->gen)
			return 1; /* it began under these actions: its entry ran them */
		f->gen = live->gen;
		site = f->ret;
	} else if (shadow_insert(t, point, live->gen, slot) != 0) {
		t->lost++;
		return -2;
	}
	dyn_prog_fill(p, ps);
	run_actions(p->act, p->n_entry, t, &regs, NULL, 0, site);
	return 0;
}

/* The exit path's own name, hidden, for the return trampoline's direct call. */
extern __typeof__(sonde__dyn_exit) dyn_exit_local
	__attribute__((alias("sonde__dyn_exit"), visibility("hidden"), hot));
