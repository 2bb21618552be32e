/* SPDX-License-Identifier: MIT */
/*
 * Per-thread state of dynamic instrumentation: timers, thread counters and the shadow stack,
 * one mmap'd record per thread, found through an initial-exec thread-local pointer. Records go
 * on a push-only list and are never unmapped: the sampler reads them at any time. The sweep (the
 * control thread, once a second) finds the records of threads that ended and moves their values
 * to the departed sums; the next new thread takes such a record over from zero, so the list
 * grows with the threads alive at once, not with every thread made.
 *
 * dyn_thread_new runs on the entry path (a thread's first timer or exit): system calls only.
 */
#include "dyn.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

RT_TLS struct dyn_thread *dyn_self;
static uint64_t departed_wall[DYN_TIMERS], departed_cpu[DYN_TIMERS]; /* control thread */
static int64_t departed_tcounters[DYN_TCOUNTERS];
_Atomic(struct dyn_thread *) dyn_threads;
_Atomic uint64_t dyn_lost_nothread; /* calls not hooked: a thread's state could not be mapped */

/* A record whose thread ended (the sweep moved its values to the departed sums). */
static struct dyn_thread *take_free(void)
{
	struct dyn_thread *t;

	for (t = atomic_load(&dyn_threads); t; t = t->next) {
		int expect = DYN_T_FREE;

		if (atomic_load_explicit(&t->state, memory_order_relaxed) == DYN_T_FREE &&
		    atomic_compare_exchange_strong(&t->state, &expect, DYN_T_CLAIMED))
			return t;
	}
	return NULL;
}

/*
 * A new thread may run on the stack of one that ended (glibc reuses them), whose record the
 * sweep has not yet retired (or never will: a forked child has no sweep, and the records of its
 * parent's other threads stay live). Frames such a record still lists (left by a longjmp, or
 * closed by an unwinding) would name this thread's return slots to an unwinder looking for them
 * by address (the return trampoline's unwind information, dyn_ret.S): forget them. System calls
 * only, once per thread.
 */
static void forget_gone_frames(void)
{
	long pid = dyn_sys6(SYS_getpid, 0, 0, 0, 0, 0, 0);
	struct dyn_thread *t;

	for (t = atomic_load(&dyn_threads); t; t = t->next)
		if (t->depth && atomic_load_explicit(&t->state, memory_order_relaxed) == DYN_T_LIVE &&
		    dyn_sys6(SYS_tgkill, pid, t->tid, 0, 0, 0, 0) == -ESRCH)
			t->depth = 0;
}

void dyn_threads_after_fork(void)
{
	if (dyn_self)
		dyn_self->tid = dyn_sys_gettid();
}

struct dyn_thread *dyn_thread_new(void)
{
	struct dyn_thread *t;

	forget_gone_frames();
	t = take_free();
	if (t) { /* the sweep leaves it alone until its new tid is in */
		t->depth = t->hiwater = 0;
		t->tid = dyn_sys_gettid();
		atomic_store(&t->state, DYN_T_LIVE);
		dyn_self = t;
		return t;
	}
	t = dyn_sys_map(sizeof(*t));
	if (!t)
		return NULL;
	t->tid = dyn_sys_gettid();
	atomic_store_explicit(&t->state, DYN_T_LIVE, memory_order_relaxed);
	t->next = atomic_load(&dyn_threads);
	while (!atomic_compare_exchange_weak(&dyn_threads, &t->next, t))
		;
	dyn_self = t;
	return t;
}

/* Ordered: not before the loads ahead of it, not after the load of seq behind it. */
static uint64_t clock_read(int cpu, int tid)
{
	struct timespec ts;
	uint64_t t;

	if (cpu) {
		if (clock_gettime(dyn_thread_cpu_clock(tid), &ts) != 0)
			return 0; /* the thread is gone: its time stays as it was */
		return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	if (!rt_clock_tsc)
		return rt_mono_ns();
	__asm__ volatile("lfence" ::: "memory");
	t = rt_rdtsc();
	__asm__ volatile("lfence" ::: "memory");
	return t;
}

uint64_t dyn_timer_value(const struct dyn_timer *tm, int cpu, int tid)
{
	uint64_t total = 0, start, now = 0;
	uint32_t s1, s2, depth;
	int tries;

	for (tries = 0; tries < 1000; tries++) {
		s1 = __atomic_load_n(&tm->seq, __ATOMIC_ACQUIRE);
		depth = __atomic_load_n(&tm->depth, __ATOMIC_RELAXED);
		start = __atomic_load_n(&tm->start, __ATOMIC_RELAXED);
		total = __atomic_load_n(&tm->total, __ATOMIC_RELAXED);
		if (depth && !(s1 & 1))
			now = clock_read(cpu, tid);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&tm->seq, __ATOMIC_RELAXED);
		if (s1 == s2 && !(s1 & 1))
			return depth && now > start ? total + (now - start) : total;
		__asm__ volatile("pause");
	}
	return total;
}

/* A timer of a thread that is gone: stopped (at `now` for wall time; CPU time froze), its
 * total moved to what departed threads left, so a new thread taking the record starts at 0. */
static void retire_timer(struct dyn_timer *tm, uint64_t *departed, uint64_t now)
{
	if (!tm->depth && !tm->total)
		return;
	dyn_seq_bump(&tm->seq);
	if (tm->depth && now > tm->start)
		tm->total += now - tm->start;
	*departed += tm->total;
	tm->total = 0;
	tm->depth = 0;
	dyn_seq_bump(&tm->seq);
}

static void retire_record(struct dyn_thread *t)
{
	uint64_t now = dyn_wall_now();
	uint32_t i;

	for (i = 0; i < DYN_TIMERS; i++) {
		retire_timer(&t->wall[i], &departed_wall[i], now);
		retire_timer(&t->cpu[i], &departed_cpu[i], 0);
	}
	for (i = 0; i < DYN_TCOUNTERS; i++) {
		departed_tcounters[i] += t->tcounters[i];
		t->tcounters[i] = 0;
	}
	t->depth = t->hiwater = 0;
}

uint64_t dyn_departed(int kind, uint32_t index)
{
	switch (kind) {
	case SPROTO_TERM_WALL: return departed_wall[index % DYN_TIMERS];
	case SPROTO_TERM_CPU: return departed_cpu[index % DYN_TIMERS];
	case SPROTO_TERM_TCOUNTER: return (uint64_t)departed_tcounters[index % DYN_TCOUNTERS];
	default: return 0;
	}
}

static int thread_gone(int tid)
{
	return syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH;
}

/* Control thread, now and then: records of ended threads become free for new threads. */
void dyn_threads_sweep(void)
{
	struct dyn_thread *t;

	for (t = atomic_load(&dyn_threads); t; t = t->next)
		if (atomic_load(&t->state) == DYN_T_LIVE && thread_gone(t->tid)) {
			retire_record(t);
			atomic_store(&t->state, DYN_T_FREE);
		}
}

/*
 * A new session starts from zero. Called while no point is active: only calls entered in an
 * earlier session can still touch a timer, and their exits find no actions.
 */
void dyn_threads_reset(void)
{
	struct dyn_thread *t;

	for (t = atomic_load(&dyn_threads); t; t = t->next) {
		uint32_t i;

		for (i = 0; i < DYN_TIMERS; i++) {
			if (t->wall[i].total || t->wall[i].depth) {
				dyn_seq_bump(&t->wall[i].seq);
				t->wall[i].total = t->wall[i].depth = 0;
				dyn_seq_bump(&t->wall[i].seq);
			}
			if (t->cpu[i].total || t->cpu[i].depth) {
				dyn_seq_bump(&t->cpu[i].seq);
				t->cpu[i].total = t->cpu[i].depth = 0;
				dyn_seq_bump(&t->cpu[i].seq);
			}
		}
		for (i = 0; i < DYN_TCOUNTERS; i++)
			if (t->tcounters[i])
				__atomic_store_n(&t->tcounters[i], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&t->lost, 0, __ATOMIC_RELAXED);
	}
	memset(departed_wall, 0, sizeof(departed_wall));
	memset(departed_cpu, 0, sizeof(departed_cpu));
	memset(departed_tcounters, 0, sizeof(departed_tcounters));
	atomic_store(&dyn_lost_nothread, 0);
}

uint64_t dyn_lost_total(void)
{
	uint64_t n = atomic_load(&dyn_lost_nothread);
	struct dyn_thread *t;

	for (t = atomic_load(&dyn_threads); t; t = t->next)
		n += __atomic_load_n(&t->lost, __ATOMIC_RELAXED);
	return n;
}

/*
 * The asymmetric half of a Dekker handshake with profile_op (entry.c): that side pays no fence
 * (it counts itself in, then reads the flag); this side turns the flag off and makes every
 * thread of the process pass a full barrier (membarrier), after which a thread either sees the
 * flag off or is seen inside. Without membarrier, a pause long enough for any thread that read
 * the flag on to be seen inside.
 */
static void barrier_all_threads(void)
{
	struct timespec ms20 = { 0, 20000000 };

	if (dyn_sys2(SYS_membarrier, 1 << 4 /* REGISTER_PRIVATE_EXPEDITED */, 0) == 0 &&
	    dyn_sys2(SYS_membarrier, 1 << 3 /* PRIVATE_EXPEDITED */, 0) == 0)
		return;
	if (dyn_sys2(SYS_membarrier, 1 << 0 /* GLOBAL */, 0) == 0)
		return;
	nanosleep(&ms20, NULL);
}

int dyn_profile_quiesce(unsigned max_ms)
{
	struct timespec us100 = { 0, 100000 };
	uint64_t end = dyn_mono_ns() + (uint64_t)max_ms * 1000000ull;
	struct dyn_thread *t;
	int inside = 0;

	atomic_store(&dyn_profile_live, 0);
	barrier_all_threads();
	for (t = atomic_load(&dyn_threads); t; t = t->next) {
		if (t == dyn_self) /* a signal handler here may have interrupted this thread's own */
			continue;
		if (__atomic_load_n(&t->in_profile, __ATOMIC_ACQUIRE) && thread_gone(t->tid))
			continue; /* a record a fork copied from the parent */
		while (__atomic_load_n(&t->in_profile, __ATOMIC_ACQUIRE) && dyn_mono_ns() < end)
			nanosleep(&us100, NULL);
		inside |= __atomic_load_n(&t->in_profile, __ATOMIC_ACQUIRE) != 0;
	}
	return inside ? -1 : 0;
}
