/* SPDX-License-Identifier: MIT */
/*
 * The probes' price in situ (`sonde run --insitu`, SONDE_INSITU=1; docs/measurement.md).
 *
 * Per thread, the first measured leaf node to reach 2^16 calls is the hot one. Its periodic
 * check (probe.c: every W = 2^k calls of a node; W = 1024 with --insitu, init.c) drives a cycle:
 * after period - 2 idle stretches of W calls (PERIOD_FAST, then PERIOD: below), W calls
 * measured as usual (window A, timed from one periodic check to the next), then W calls taken
 * unmeasured (window B: the node is turned off on this thread alone, so its calls take the skip
 * path, as an excluded function's; the skip exit ends B when the thread's skip count reaches its
 * mark). Each boundary reads the thread's
 * CPU time (the windows' measure) and the clock here, in the slow path, and each pair's ends its
 * involuntary context switches (counted, not rejected: insitu_est.h); the probes' fast path
 * does nothing new, and the skip exit compares one counter. insitu_est.h turns the pairs into
 * a price.
 *
 * B windows are 1/PERIOD_FAST of the node's calls after it became hot until the price is usable
 * (so that short runs gather enough pairs), then 1/PERIOD: their time goes to the caller, their
 * count to its `skipped`, as an excluded function's. A leaf is chosen so that no callee changes
 * its call path in B.
 */
#include "rt.h"
#include "insitu_est.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>

#define HOT_CALLS (1u << 16)
#define PERIOD 32     /* one B window per PERIOD windows of the hot node's calls, price usable */
#define PERIOD_FAST 8 /* ... and per PERIOD_FAST until then */
#define MAX_REJECTED 256

enum { IDLE, WIN_A, WIN_B, WIN_BARE };

int rt_insitu_on;
static double start_o_full, start_o_skip; /* the start-up calibration's prices */

void rt_insitu_init(void)
{
	const char *v = getenv("SONDE_INSITU");

	rt_insitu_on = v && *v && *v != '0' && !rt_trace_on;
	start_o_full = rt_calib.o_full;
	start_o_skip = rt_calib.o_skip;
}

/*
 * Calls that make a leaf the thread's hot one: 2^16, or with the throttle on few enough that the
 * node is chosen, and holds its function's throttle (hold_update), before the throttle's count
 * of calls, summed over all threads, can be reached (a sixteenth of it: 16 threads in step; two
 * windows' calls at the least).
 */
static uint64_t hot_calls(void)
{
	uint64_t c = rt_cfg.throttle_calls / 16, least = 2 * rt_probe_window();

	if (!rt_cfg.throttle_calls || c >= HOT_CALLS)
		return HOT_CALLS;
	return c > least ? c : least; /* two windows' calls at least */
}

static int eligible(const struct rt_node *n)
{
	return n->calls >= hot_calls() && !n->first_child && !n->off &&
	       n->func->kind == SPROF_FUNC;
}

/*
 * Until the thread's price is usable, its hot function's throttle waits (probe.c): throttled at
 * once, its calls would take the skip path before enough pairs could price them, and the
 * thread's pairs and skipped calls would all be priced by the calibration (in a latency-bound
 * leaf 4 to 25 times what they cost there: docs/measurement.md, "The throttle and `--insitu`").
 * The hold is taken when the node is chosen and given back once the price is usable, the windows
 * are done, the node has made RT_INSITU_HOLD_TIMES times the throttle's count, or the thread
 * ends; a forked child starts without any (rt_insitu_after_fork). The throttle itself waits no
 * longer than that count over all threads, so that a holder which stopped calling the function
 * (it waits, it works elsewhere) cannot keep the other threads' calls measured.
 */
static void hold_release(struct rt_insitu *s)
{
	if (s->holding) {
		s->holding = 0;
		atomic_fetch_sub_explicit(&s->node->func->insitu_hold, 1, memory_order_relaxed);
	}
}

static void hold_update(struct rt_insitu *s)
{
	if (!rt_cfg.throttle_calls || s->status == SPROF_INSITU_USED || s->done ||
	    s->node->calls >= RT_INSITU_HOLD_TIMES * rt_cfg.throttle_calls) {
		hold_release(s);
		return;
	}
	if (!s->holding) {
		s->holding = 1;
		atomic_fetch_add_explicit(&s->node->func->insitu_hold, 1, memory_order_relaxed);
	}
}

static long involuntary_switches(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}

/* The thread's synchronization counters that a pair's windows must match (insitu_pair_clean). */
static struct insitu_sync sync_now(const struct rt_thread *t)
{
	return (struct insitu_sync){ t->sync.ops, t->sync.waits };
}

static struct insitu_sync sync_since(const struct rt_thread *t, struct insitu_sync from)
{
	struct insitu_sync now = sync_now(t);

	return (struct insitu_sync){ now.ops - from.ops, now.waits - from.waits };
}

/* Windows per B window: fewer until the thread's price is usable. */
static uint32_t period(const struct rt_insitu *s)
{
	return s->status == SPROF_INSITU_USED ? PERIOD : PERIOD_FAST;
}

static void window_start(struct rt_thread *t, struct rt_insitu *s)
{
	s->calib0 = t->calib_ticks;
	s->wake0 = t->sync.wake_ticks;
	s->sync0 = sync_now(t);
	s->s0 = t->skips;
	s->t0 = rt_now();
	s->c0 = rt_thread_cpu_ns(); /* last: the window begins after this check's own work */
}

/* A window's CPU time in ns (cpu, read first at its end), less the in-run calibrations that
 * ran in it (probe.c) and the wake-ups its releases made (sync_wrap.c, WAKE_TIMED). */
static double window_ns(const struct rt_thread *t, const struct rt_insitu *s, uint64_t cpu)
{
	double d = (double)(cpu - s->c0),
	       c = (double)(t->calib_ticks - s->calib0 + t->sync.wake_ticks - s->wake0) /
		   rt_ticks_per_ns();

	return d > c ? d - c : 0;
}

/*
 * The windows' own work (clock reads, the code rewritten) since `begin` is kept out of the
 * program's times, as the in-run calibration's is (rt_keep_out); a window begun in it is not
 * charged it either.
 */
static void keep_out(struct rt_thread *t, uint64_t begin, uint32_t state_before)
{
	struct rt_insitu *s = &t->insitu;
	uint64_t d = rt_now() - begin;

	rt_keep_out(t, d);
	if (s->state != IDLE && s->state != state_before)
		s->calib0 += d;
}

static void node_restore(struct rt_node *n)
{
	n->off = atomic_load_explicit(&n->func->off, memory_order_relaxed);
}

/* A B window that could not end as planned: the pair is lost, the node measured again. */
static void abandon(struct rt_thread *t, struct rt_insitu *s)
{
	uint64_t skipped = t->skips - s->s0; /* the node's calls skipped so far, and any others */

	if (s->state == WIN_BARE) { /* the calls counted down, and those the stub missed */
		int64_t left = rt_bare_left();

		s->b_calls += rt_probe_window() - (uint64_t)(left > 0 ? left : 0) + s->strays;
		rt_bare_end(&s->bare);
		s->bare.state = -1;
	} else {
		s->b_calls += skipped < rt_probe_window() ? skipped : rt_probe_window();
	}
	t->insitu_until = 0;
	node_restore(s->node);
	s->state = IDLE;
	s->idle = 0;
	s->rejected++;
	s->done = s->rejected >= MAX_REJECTED;
}

static void judge(struct rt_insitu *s)
{
	float tmp[RT_INSITU_PAIRS];
	double est, spread;

	insitu_estimate(s->pairs, s->npairs, tmp, &est, &spread);
	s->status = (uint32_t)insitu_judge(s->npairs, est, spread, start_o_full);
	s->price_ns = s->status == SPROF_INSITU_USED ? insitu_used_price(est) : 0;
}

static void bare_end(void);

/* Can this window be bare (insitu_bare.c)? Only while no other thread calls the function. */
static int bare_ready(const struct rt_thread *t, struct rt_insitu *s)
{
	const struct rt_func *f = s->node->func;

	if (atomic_load_explicit(&f->caller, memory_order_relaxed) != t->index + 1)
		return 0;
	if (!s->bare.state)
		rt_bare_prepare(&s->bare, f, bare_end);
	return s->bare.state == 1;
}

/* A pair of windows, A measured, B not: its estimate (o_skip: what B's calls cost each); the
 * thread's delays (--sync) take the price as soon as it is usable. */
static void add_pair(struct rt_thread *t, struct rt_insitu *s, double a, double b, double o_skip)
{
	s->preempted += involuntary_switches() != s->ivcsw0;
	s->pairs[s->npairs++] = (float)insitu_pair_ns(a, b, (uint32_t)rt_probe_window(),
						      start_o_full, o_skip);
	s->done = s->npairs == RT_INSITU_PAIRS;
	judge(s);
	if (rt_sync_on)
		rt_sync_set_price(t, s->status == SPROF_INSITU_USED, s->price_ns);
}

/* The end of window A at `now` (the node's W-th call's exit): window B begins, bare when it
 * can be, else with the node turned off. */
static void begin_b(struct rt_thread *t, struct rt_insitu *s, uint64_t now)
{
	uint64_t cpu = rt_thread_cpu_ns(), others = t->skips - s->s0; /* as many others in B */

	s->cpu_a = window_ns(t, s, cpu);
	s->wall_a = now - s->t0;
	s->sync_a = sync_since(t, s->sync0);
	if (bare_ready(t, s) && s->bare.nexits &&
	    rt_bare_begin(&s->bare, (int64_t)rt_probe_window()) == 0) {
		s->state = WIN_BARE;
		s->strays = 0;
		window_start(t, s);
		return;
	}
	s->state = WIN_B;
	s->node->off = 1;
	window_start(t, s);
	t->insitu_until = t->skips + rt_probe_window() + others;
}

/* The skip exit that reached the mark: window B is over, a pair is complete. */
static void end_pair(struct rt_thread *t, struct rt_insitu *s)
{
	uint64_t cpu = rt_thread_cpu_ns();
	double a = s->cpu_a, b;

	t->insitu_until = 0;
	if (s->state != WIN_B)
		return;
	b = window_ns(t, s, cpu);
	s->b_calls += rt_probe_window();
	node_restore(s->node);
	s->state = IDLE;
	s->idle = 0;
	if (!insitu_pair_clean(a, b, s->sync_a, sync_since(t, s->sync0))) {
		s->rejected++;
		s->done = s->rejected >= MAX_REJECTED;
		return;
	}
	add_pair(t, s, a, b, start_o_skip);
}

/*
 * The bare window's W-th call has returned (the stub's counter reached 0): the pair is
 * complete. A pair during which an exit of the function reached the probe (a site not yet
 * learned: rt_insitu_stray_exit learned it) is dropped; one whose code could not be put back
 * ends the thread's bare windows.
 */
static void end_bare(struct rt_thread *t, struct rt_insitu *s)
{
	double b = window_ns(t, s, rt_thread_cpu_ns());

	rt_bare_end(&s->bare);
	s->b_calls += rt_probe_window() + s->strays; /* strays: calls that missed the stub */
	s->state = IDLE;
	s->idle = 0;
	if (s->strays || s->bare.active ||
	    !insitu_pair_clean(s->cpu_a, b, s->sync_a, sync_since(t, s->sync0))) {
		if (s->bare.active)
			s->bare.state = -1; /* the code could not be put back */
		s->rejected++;
		s->done = s->rejected >= MAX_REJECTED;
		return;
	}
	add_pair(t, s, s->cpu_a, b, 0);
	s->bare_pairs++;
}

/* Reached from the stub, as the function's exit call: the caller-saved registers are free. */
static void bare_end(void)
{
	struct rt_thread *t = rt_self;
	int saved = errno;

	if (t && t->insitu.state == WIN_BARE) {
		uint64_t begin = rt_now();

		end_bare(t, &t->insitu);
		keep_out(t, begin, WIN_BARE);
	}
	errno = saved;
}

/* An exit of the hot function reached the probe during a bare window (probe.c, ret: where
 * the probe returns): a site not yet known, learned for the next window. */
void rt_insitu_stray_exit(struct rt_thread *t, uintptr_t fn, uintptr_t ret)
{
	struct rt_insitu *s = &t->insitu;
	int saved = errno;

	if (s->state != WIN_BARE || s->node->fn != fn)
		return;
	s->strays++;
	if (rt_bare_note_exit(&s->bare, ret) < 0)
		s->bare.state = -1; /* an exit the windows cannot rewrite */
	errno = saved;
}

/* The thread ends: its function's code as it was. */
void rt_insitu_finish(struct rt_thread *t)
{
	int saved = errno;

	hold_release(&t->insitu);
	if (t->insitu.state == WIN_BARE) {
		rt_bare_end(&t->insitu.bare);
		t->insitu.state = IDLE;
	}
	errno = saved;
}

void rt_insitu_b_end(struct rt_thread *t)
{
	int saved = errno; /* the program's, whatever the system calls below do */
	uint64_t begin = rt_now();

	end_pair(t, &t->insitu);
	keep_out(t, begin, WIN_B);
	errno = saved;
}

/*
 * From the periodic check of node n (probe.c), after the exit at `now` of its call that made
 * its count a multiple of W. Not for calibration stand-ins.
 */
static void tick(struct rt_thread *t, struct rt_insitu *s, struct rt_node *n, uint64_t now,
		 uintptr_t ret)
{
	if (t->scratch)
		return;
	if (s->done) {
		hold_release(s);
		return;
	}
	if (s->node && s->node->off && s->state != WIN_B) { /* throttled or excluded since */
		s->state = IDLE;
		s->done = 1;
		hold_release(s);
		return;
	}
	if (s->state == WIN_B || s->state == WIN_BARE) {
		/* the node measured again during B (a throttle refreshed the nodes' `off`), or B
		 * lasting far longer than A: the node is no longer called as it was */
		uint64_t limit = 8 * s->wall_a + (uint64_t)(1e6 * rt_ticks_per_ns());

		if (n == s->node || now - s->t0 > limit)
			abandon(t, s);
		return;
	}
	if (!s->node) {
		if (!eligible(n))
			return;
		s->node = n;
		s->idle = PERIOD_FAST - 2; /* the first pair at once */
	}
	if (n != s->node)
		return;
	hold_update(s);
	if (ret && bare_ready(t, s))
		rt_bare_note_exit(&s->bare, ret);
	if (s->state == WIN_A) {
		begin_b(t, s, now);
		return;
	}
	if (++s->idle < period(s) - 1 || n->first_child)
		return;
	s->state = WIN_A;
	s->ivcsw0 = involuntary_switches();
	window_start(t, s);
}

void rt_insitu_tick(struct rt_thread *t, struct rt_node *n, uint64_t now, uintptr_t ret)
{
	int saved = errno;
	uint32_t state = t->insitu.state, rejected = t->insitu.rejected;
	uint64_t begin = rt_now();

	tick(t, &t->insitu, n, now, ret);
	if (t->insitu.state != state || t->insitu.rejected != rejected)
		keep_out(t, begin, state);
	errno = saved;
}

double rt_insitu_price(const struct rt_thread *t)
{
	return t->insitu.status == SPROF_INSITU_USED ? t->insitu.price_ns : rt_calib.o_full;
}

/* ... and of an unmeasured call: scaled as the pair was (sprof_insitu_skip_price), live. */
double rt_insitu_skip_price(const struct rt_thread *t)
{
	if (t->insitu.status != SPROF_INSITU_USED)
		return rt_calib.o_skip;
	return sprof_insitu_skip_price(t->insitu.price_ns, start_o_full, start_o_skip);
}

double rt_insitu_final_price(const struct rt_thread *t)
{
	return t->insitu.status == SPROF_INSITU_USED ? t->insitu.price_ns : rt_calib.o_full;
}

/*
 * The price of a probe pair inherited from other threads (--sync: x0 and shift), at the end:
 * the threads' final prices weighted by the measured pairs each ran. Threads without a usable
 * in-situ price count at CALIB's.
 */
double rt_insitu_mean_price(void)
{
	const struct rt_thread *t;
	double sum = 0, n = 0;

	for (t = atomic_load(&rt_threads); t; t = t->next) {
		sum += (double)t->probes * rt_insitu_final_price(t);
		n += (double)t->probes;
	}
	return n > 0 ? sum / n : rt_calib.o_full;
}

/* One INSITU record per thread (format/profile_insitu.h). */
static void write_thread(struct writer *w, const struct rt_thread *t)
{
	struct sprof_buf *b = rt_writer_record(w, SPROF_REC_INSITU, SPROF_INSITU_SIZE);
	const struct rt_insitu *s = &t->insitu;
	float tmp[RT_INSITU_PAIRS];
	double est, spread;

	insitu_estimate(s->pairs, s->npairs, tmp, &est, &spread);
	sprof_put_u32(b, t->index);
	sprof_put_u32(b, s->node ? (s->npairs ? s->status : SPROF_INSITU_UNSTABLE)
				 : SPROF_INSITU_NONE);
	sprof_put_u32(b, s->node ? s->node->func->id : SPROF_INSITU_NO_FUNC);
	sprof_put_u32(b, (uint32_t)rt_probe_window());
	sprof_put_u32(b, s->npairs);
	sprof_put_u32(b, s->rejected);
	sprof_put_u32(b, period(s));
	sprof_put_u32(b, s->preempted);
	sprof_put_u64(b, s->b_calls);
	sprof_put_u64(b, s->node ? s->node->calls : 0);
	sprof_put_f64(b, insitu_used_price(est)); /* the reader refuses a negative price */
	sprof_put_f64(b, spread);
	sprof_put_f64(b, start_o_full);
	sprof_put_f64(b, start_o_skip);
	sprof_put_u32(b, s->bare_pairs);
	sprof_put_u32(b, s->bare_pairs ? s->bare.nexits : 0);
	sprof_put_f64(b, s->bare_pairs ? s->bare.stub_ns : 0);
}

void rt_insitu_write(struct writer *w)
{
	const struct rt_thread *t;

	if (!rt_insitu_on)
		return;
	for (t = atomic_load(&rt_threads); t; t = t->next)
		write_thread(w, t);
}

void rt_insitu_after_fork(struct rt_thread *t)
{
	uint32_t i;

	if (t->insitu.state == WIN_B)
		node_restore(t->insitu.node);
	if (t->insitu.state == WIN_BARE) { /* the child's copy of the code */
		int saved = errno;

		rt_bare_end(&t->insitu.bare);
		errno = saved;
	}
	t->insitu_until = 0;
	__builtin_memset(&t->insitu, 0, sizeof(t->insitu));
	for (i = 0; i < rt_func_count(); i++) /* the parent's threads' holds */
		atomic_store_explicit(&rt_func_at(i)->insitu_hold, 0, memory_order_relaxed);
}
