/* SPDX-License-Identifier: MIT */
/*
 * Interposed pthread and semaphore functions (`sonde run --sync`, docs/runtime.md). Each calls
 * the real function (dlsym RTLD_NEXT; the condition variables' current version with dlvsym)
 * and returns exactly what it returned, with errno as it left it; cancellation points stay
 * cancellation points (the real call is where the thread blocks). Without --sync, or while the
 * runtime itself runs, they go straight through.
 *
 * No clock is read on the uncontended path: a mutex or a spinlock whose lock word is free is
 * taken with the real lock call and only counted; one whose word is taken is timed around the
 * real call (a lock that becomes taken between the look and the call is timed as uncontended:
 * its wait is missed, not invented). rwlocks and semaphores try first and time only when the
 * try fails. Hold times are measured on a random sample of about one acquisition in 32 (two
 * clock reads would cost more than the whole lock/unlock pair) and scaled by the tool. A call
 * that waited reads the clock once more at its end: its bookkeeping after the wait adds to the
 * thread's delay (rt_sync_own), since no calibrated cost covers it.
 */
#include "rt.h"
#include "sync_inline.h"
#include "sync_rule.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <time.h>

#define SITE ((uintptr_t)__builtin_return_address(0))
#define RELAXED memory_order_relaxed

/* ---- the real functions ---- */

#define REAL_DECL(name) static __typeof__(name) *real_##name
REAL_DECL(pthread_mutex_init);
REAL_DECL(pthread_mutex_lock);
REAL_DECL(pthread_mutex_trylock);
REAL_DECL(pthread_mutex_timedlock);
REAL_DECL(pthread_mutex_clocklock);
REAL_DECL(pthread_mutex_unlock);
REAL_DECL(pthread_rwlock_init);
REAL_DECL(pthread_rwlock_rdlock);
REAL_DECL(pthread_rwlock_tryrdlock);
REAL_DECL(pthread_rwlock_timedrdlock);
REAL_DECL(pthread_rwlock_clockrdlock);
REAL_DECL(pthread_rwlock_wrlock);
REAL_DECL(pthread_rwlock_trywrlock);
REAL_DECL(pthread_rwlock_timedwrlock);
REAL_DECL(pthread_rwlock_clockwrlock);
REAL_DECL(pthread_rwlock_unlock);
REAL_DECL(pthread_spin_init);
REAL_DECL(pthread_spin_lock);
REAL_DECL(pthread_spin_trylock);
REAL_DECL(pthread_spin_unlock);
REAL_DECL(pthread_cond_init);
REAL_DECL(pthread_cond_wait);
REAL_DECL(pthread_cond_timedwait);
REAL_DECL(pthread_cond_clockwait);
REAL_DECL(pthread_cond_signal);
REAL_DECL(pthread_cond_broadcast);
REAL_DECL(pthread_barrier_init);
REAL_DECL(pthread_barrier_wait);
REAL_DECL(sem_init);
REAL_DECL(sem_wait);
REAL_DECL(sem_trywait);
REAL_DECL(sem_timedwait);
REAL_DECL(sem_clockwait);
REAL_DECL(sem_post);

/* Condition variables have two versions; the program links against the current one. */
static void *lookup(const char *name)
{
	int saved = errno;
	void *p = NULL;

	rt_busy++; /* the loader's lock is a pthread_mutex_lock: not the program's (rt_next_symbol) */
	if (name[8] == 'c' && name[9] == 'o') /* pthread_cond_* */
		p = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.2");
	if (!p)
		p = dlsym(RTLD_NEXT, name);
	rt_busy--;
	errno = saved;
	return p;
}

/* The real function, looked up on first use (a call may come before our constructor). */
#define REAL(name)                                                                                 \
	({                                                                                         \
		if (unlikely(!real_##name))                                                        \
			real_##name = lookup(#name);                                               \
		real_##name;                                                                       \
	})

/* ---- common bookkeeping ---- */

/* A synchronization event, when tracing (sync_trace.c). */
#define TRACE(t, o, type, seq)                                                                     \
	do {                                                                                       \
		if (unlikely(rt_trace_on))                                                         \
			rt_sync_trace(t, o, type, seq);                                            \
	} while (0)

static inline uint64_t ld(_Atomic uint64_t *p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

static RT_COLD struct rt_thread *attach_slow(void)
{
	if (!atomic_load(&rt_ready))
		return NULL;
	return rt_thread_attach();
}

/* The calling thread's state when this call is to be measured, else NULL. */
static inline struct rt_thread *measuring(void)
{
	struct rt_thread *t;

	if (likely(!rt_sync_on) || unlikely(rt_busy))
		return NULL;
	t = rt_self;
	return likely(t) ? t : attach_slow();
}

/* Plain read-modify-write of a field only the lock's holder changes. */
static inline void own_add(_Atomic uint64_t *p, uint64_t v)
{
	atomic_store_explicit(p, atomic_load_explicit(p, RELAXED) + v, RELAXED);
}

static inline void add(_Atomic uint64_t *p, uint64_t v)
{
	atomic_fetch_add_explicit(p, v, RELAXED);
}

static void note_wait(struct rt_sync_obj *o, uint64_t w)
{
	uint64_t m = atomic_load_explicit(&o->wait_max, RELAXED);

	add(&o->wait, w);
	while (w > m && !atomic_compare_exchange_weak_explicit(&o->wait_max, &m, w, RELAXED,
							       RELAXED))
		;
}

/* An exclusive acquisition (mutex, spinlock, write lock): the caller holds the lock now. */
static inline void excl_acquired(struct rt_thread *t, struct rt_sync_obj *o)
{
	t->sync.ops++;
	own_add(&o->acquires, 1);
	if (o->depth++ == 0 && unlikely(rt_sync_hold_sample(t)))
		o->hold_start = rt_now();
}

/* At a release that may wake a waiter: when, for the waiter's rule (sync_rule_woken). */
static inline uint64_t stamp_release(struct rt_sync_obj *o)
{
	uint64_t now = rt_now();

	atomic_store_explicit(&o->released, now, RELAXED);
	return now;
}

/* The real call of a release that wakes a sleeper, timed: the in-situ windows keep its system
 * call's time out (insitu.c, window_ns), as they price the probes, not the kernel's wake-ups,
 * whose cost moves with the sleeper's CPU (an idle vCPU must be woken). */
#define WAKE_TIMED(t, call)                                                                        \
	({                                                                                         \
		uint64_t a_ = rt_now();                                                            \
		int r_ = (call);                                                                   \
		(t)->sync.wake_ticks += rt_now() - a_;                                             \
		r_;                                                                                \
	})

/* The time from t0 to the object's last stamped release when that fell within the wait (t0, t1],
 * else the whole wait (no release time: sync_rule_woken is then sync_rule_wait). */
static uint64_t release_after(struct rt_sync_obj *o, uint64_t t0, uint64_t t1)
{
	uint64_t rel = atomic_load_explicit(&o->released, RELAXED);

	return rel > t0 && rel <= t1 ? rel - t0 : t1 - t0;
}

/* After waiting w ticks for an exclusive lock: the wait, and the releaser's delay. */
static void excl_waited(struct rt_thread *t, struct rt_sync_obj *o, uint64_t w)
{
	TRACE(t, o, STRC_SYNC_DONE, ld(&o->releases));
	own_add(&o->contended, 1);
	note_wait(o, w);
	rt_sync_inherit(t, w, atomic_load_explicit(&o->x, RELAXED),
			atomic_load_explicit(&o->xq, RELAXED), 0);
}

/*
 * After a mutex wait from t0 to t1: the same, with the time of the unlock that woke it when the
 * releaser noted one within the wait (mutex_released), so that a waiter that would have found
 * the lock free without measurement does not keep its wake-up latency (sync_rule_woken).
 */
static void mutex_waited(struct rt_thread *t, struct rt_sync_obj *o, uint64_t t0, uint64_t t1)
{
	TRACE(t, o, STRC_SYNC_DONE, ld(&o->releases));
	own_add(&o->contended, 1);
	note_wait(o, t1 - t0);
	rt_sync_mutex_woken(t, t1 - t0, release_after(o, t0, t1),
			    atomic_load_explicit(&o->x, RELAXED), atomic_load_explicit(&o->xq, RELAXED));
}

/* An exclusive release, still holding the lock; `count`: an unlock (not a condition wait). */
static inline void excl_release(struct rt_thread *t, struct rt_sync_obj *o, int count)
{
	t->sync.ops++;
	if (count) {
		own_add(&o->releases, 1);
		TRACE(t, o, STRC_SYNC_RELEASE, ld(&o->releases));
	}
	if (o->depth && --o->depth == 0 && unlikely(o->hold_start)) {
		own_add(&o->hold, rt_now() - o->hold_start);
		own_add(&o->hold_samples, 1);
		o->hold_start = 0;
	}
	atomic_store_explicit(&o->x, rt_sync_delay(t), RELAXED);
	atomic_store_explicit(&o->xq, rt_sync_delay_q(t), RELAXED);
}

/* A shared or signalling release (rdlock unlock, sem_post, cond signal): others may race. */
static void shared_release(struct rt_thread *t, struct rt_sync_obj *o, _Atomic uint64_t *count)
{
	t->sync.ops++;
	add(count, 1);
	atomic_store_explicit(&o->x, rt_sync_delay(t), RELAXED);
	atomic_store_explicit(&o->xq, rt_sync_delay_q(t), RELAXED);
	TRACE(t, o, STRC_SYNC_RELEASE, ld(&o->releases) + ld(&o->broadcasts));
}

/* A blocking call (rwlock, semaphore) that waited from t0 to t1 and succeeded, counted
 * atomically: the releaser's delay, by the time of its release (sync_rule_woken). */
static void shared_waited(struct rt_thread *t, struct rt_sync_obj *o, uint64_t t0, uint64_t t1)
{
	TRACE(t, o, STRC_SYNC_DONE, ld(&o->releases) + ld(&o->broadcasts));
	add(&o->contended, 1);
	note_wait(o, t1 - t0);
	rt_sync_woken(t, t1 - t0, release_after(o, t0, t1), atomic_load_explicit(&o->x, RELAXED),
		      atomic_load_explicit(&o->xq, RELAXED));
}

static void timed_out(struct rt_sync_obj *o, uint64_t w)
{
	add(&o->timeouts, 1);
	note_wait(o, w);
}

static void init_site(const void *obj, uint32_t kind, uintptr_t site)
{
	struct rt_thread *t = measuring();

	if (t)
		rt_sync_set_init_site(rt_sync_get(obj, kind, site), site);
}

/* ---- mutexes ---- */

/* glibc's lock word is the mutex's first int: 0 when free, for every mutex type. */
static inline int word_taken(const void *lock)
{
	return __atomic_load_n((const int *)lock, __ATOMIC_RELAXED) != 0;
}

/* Whether a held mutex may have sleepers: 2 for the plain types, the FUTEX_WAITERS bit for the
 * robust and priority-inheriting ones (their word is the owner's TID). */
static inline int word_waiters(const void *lock)
{
	unsigned v = (unsigned)__atomic_load_n((const int *)lock, __ATOMIC_RELAXED);

	return v == 2 || (v & 0x80000000u);
}

RT_EXPORT int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
	init_site(m, SPROF_SYNC_MUTEX, SITE);
	return REAL(pthread_mutex_init)(m, a);
}

/* A mutex waiter about to block at t0: its approximated arrival, for the release that will wake
 * it (mutex_wake); returned, for arrival_done. */
static int64_t note_arrival(struct rt_thread *t, struct rt_sync_obj *o, uint64_t t0)
{
	int64_t arr = (int64_t)t0 - rt_sync_x(t);

	atomic_store_explicit(&o->arrival, arr, RELAXED);
	return arr;
}

/* The waiter has the lock (or gave up): its note, when no release took it (the lock came free
 * before it slept, a timeout), must not stand for the next waiter's. */
static void arrival_done(struct rt_sync_obj *o, int64_t arr)
{
	atomic_compare_exchange_strong_explicit(&o->arrival, &arr, SYNC_NO_ARRIVAL, RELAXED,
						RELAXED);
}

/*
 * An unlock that will wake a sleeper: the real call timed (WAKE_TIMED), and when the waiter's
 * noted arrival says it would have found the lock free without measurement, the wake-up's time
 * goes into this thread's delay (sync_rule_wake_unneeded; docs/measurement.md, "Wake-ups").
 */
static RT_COLD int mutex_wake(struct rt_thread *t, struct rt_sync_obj *o, pthread_mutex_t *m)
{
	uint64_t rel = stamp_release(o), before = t->sync.wake_ticks;
	/* a recursive mutex still held (depth left) wakes nobody: the note stays for its release */
	int64_t arr = o->depth ? SYNC_NO_ARRIVAL
			       : atomic_exchange_explicit(&o->arrival, SYNC_NO_ARRIVAL, RELAXED);
	int64_t x_s = atomic_load_explicit(&o->x, RELAXED); /* ours: read while we hold it */
	int r = WAKE_TIMED(t, REAL(pthread_mutex_unlock)(m));

	if (sync_rule_wake_unneeded(arr, rel, x_s)) {
		t->sync.shift -= (int64_t)(t->sync.wake_ticks - before);
		t->sync.wakes_unneeded++;
	}
	return r;
}

static RT_COLD int mutex_lock_wait(struct rt_thread *t, pthread_mutex_t *m, uintptr_t site)
{
	struct rt_sync_obj *o = rt_sync_get(m, SPROF_SYNC_MUTEX, site);
	uint64_t t0, t1;
	int64_t arr;
	int r;

	TRACE(t, o, STRC_SYNC_WAIT, 0);
	t0 = rt_now();
	arr = note_arrival(t, o, t0);
	r = real_pthread_mutex_lock(m);
	t1 = rt_now();
	arrival_done(o, arr);
	if (r == 0 || r == EOWNERDEAD) {
		excl_acquired(t, o);
		mutex_waited(t, o, t0, t1);
	}
	rt_sync_own(t, t1);
	return r;
}

RT_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	struct rt_thread *t = measuring();
	int r;

	if (!t)
		return REAL(pthread_mutex_lock)(m);
	if (unlikely(word_taken(m)))
		return mutex_lock_wait(t, m, SITE);
	r = real_pthread_mutex_lock(m);
	if (likely(r == 0) || r == EOWNERDEAD)
		excl_acquired(t, rt_sync_get(m, SPROF_SYNC_MUTEX, SITE));
	return r;
}

RT_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
	struct rt_thread *t = measuring();
	int r = REAL(pthread_mutex_trylock)(m);

	if (!t)
		return r;
	if (r == 0 || r == EOWNERDEAD)
		excl_acquired(t, rt_sync_get(m, SPROF_SYNC_MUTEX, SITE));
	else if (r == EBUSY)
		add(&rt_sync_get(m, SPROF_SYNC_MUTEX, SITE)->failed, 1);
	return r;
}

/*
 * A timed wait's deadline: abstime on CLOCK_REALTIME (the timed* calls, clk < 0) or on clock clk
 * (the clock* calls of glibc 2.30).
 */
struct deadline {
	int clk;
	const struct timespec *abstime;
};

#define TIMED(abstime) ((struct deadline){ -1, abstime })
#define CLOCKED(clk, abstime) ((struct deadline){ clk, abstime })

static int mutex_timed_real(pthread_mutex_t *m, struct deadline d)
{
	if (d.clk < 0)
		return REAL(pthread_mutex_timedlock)(m, d.abstime);
	return REAL(pthread_mutex_clocklock)(m, (clockid_t)d.clk, d.abstime);
}

/* Try first; when busy, the timed call between two clock reads. Another error of the try
 * (a bad mutex) is the timed call's to report, as is a bad clock or deadline. */
static int mutex_timed(struct rt_thread *t, pthread_mutex_t *m, struct deadline d, uintptr_t site)
{
	struct rt_sync_obj *o;
	uint64_t t0, t1;
	int64_t arr;
	int r = REAL(pthread_mutex_trylock)(m);

	if (r != EBUSY && r != 0 && r != EOWNERDEAD)
		return mutex_timed_real(m, d);
	o = rt_sync_get(m, SPROF_SYNC_MUTEX, site);
	if (r != EBUSY) {
		excl_acquired(t, o);
		return r;
	}
	TRACE(t, o, STRC_SYNC_WAIT, 0);
	t0 = rt_now();
	arr = note_arrival(t, o, t0);
	r = mutex_timed_real(m, d);
	t1 = rt_now();
	arrival_done(o, arr);
	if (r == 0 || r == EOWNERDEAD) {
		excl_acquired(t, o);
		mutex_waited(t, o, t0, t1);
	} else if (r == ETIMEDOUT) {
		timed_out(o, t1 - t0);
	}
	rt_sync_own(t, t1);
	return r;
}

RT_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
	struct rt_thread *t = measuring();

	if (!t)
		return REAL(pthread_mutex_timedlock)(m, abstime);
	return mutex_timed(t, m, TIMED(abstime), SITE);
}

/*
 * A clock glibc does not accept for a mutex (only CLOCK_REALTIME and CLOCK_MONOTONIC) gets its
 * EINVAL from the real call before any try could take the lock.
 */
static int clock_ok(clockid_t clk)
{
	return clk == CLOCK_REALTIME || clk == CLOCK_MONOTONIC;
}

RT_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clk,
				      const struct timespec *abstime)
{
	struct rt_thread *t = measuring();

	if (!t || !clock_ok(clk))
		return REAL(pthread_mutex_clocklock)(m, clk, abstime);
	return mutex_timed(t, m, CLOCKED(clk, abstime), SITE);
}

RT_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
	struct rt_thread *t = measuring();

	if (t) {
		struct rt_sync_obj *o = rt_sync_get(m, SPROF_SYNC_MUTEX, SITE);

		excl_release(t, o, 1);
		/* one that will wake a sleeper reads the clock (beside the system call that wakes,
		 * 20 ns are nothing), for the waiter's rule (mutex_waited) and the windows */
		if (unlikely(word_waiters(m)))
			return mutex_wake(t, o, m);
	}
	return REAL(pthread_mutex_unlock)(m);
}

/* ---- spinlocks ---- */

/* x86-64 glibc's spinlock word is 1 when free, 0 or below when taken. */
static inline int spin_taken(pthread_spinlock_t *l)
{
	return __atomic_load_n((const int *)(uintptr_t)l, __ATOMIC_RELAXED) <= 0;
}

RT_EXPORT int pthread_spin_init(pthread_spinlock_t *l, int pshared)
{
	init_site((const void *)(uintptr_t)l, SPROF_SYNC_SPIN, SITE);
	return REAL(pthread_spin_init)(l, pshared);
}

RT_EXPORT int pthread_spin_lock(pthread_spinlock_t *l)
{
	struct rt_thread *t = measuring();
	struct rt_sync_obj *o;
	uint64_t t0 = 0, t1;
	int r, waited;

	if (!t)
		return REAL(pthread_spin_lock)(l);
	waited = spin_taken(l);
	if (unlikely(waited)) {
		TRACE(t, rt_sync_get((const void *)(uintptr_t)l, SPROF_SYNC_SPIN, SITE),
		      STRC_SYNC_WAIT, 0);
		t0 = rt_now();
	}
	r = real_pthread_spin_lock(l);
	if (r != 0)
		return r;
	o = rt_sync_get((const void *)(uintptr_t)l, SPROF_SYNC_SPIN, SITE);
	excl_acquired(t, o);
	if (unlikely(waited)) {
		t1 = rt_now();
		excl_waited(t, o, t1 - t0);
		rt_sync_own(t, t1);
	}
	return r;
}

RT_EXPORT int pthread_spin_trylock(pthread_spinlock_t *l)
{
	struct rt_thread *t = measuring();
	int r = REAL(pthread_spin_trylock)(l);

	if (!t)
		return r;
	if (r == 0)
		excl_acquired(t, rt_sync_get((const void *)(uintptr_t)l, SPROF_SYNC_SPIN, SITE));
	else if (r == EBUSY)
		add(&rt_sync_get((const void *)(uintptr_t)l, SPROF_SYNC_SPIN, SITE)->failed, 1);
	return r;
}

RT_EXPORT int pthread_spin_unlock(pthread_spinlock_t *l)
{
	struct rt_thread *t = measuring();

	if (t)
		excl_release(t, rt_sync_get((const void *)(uintptr_t)l, SPROF_SYNC_SPIN, SITE), 1);
	return REAL(pthread_spin_unlock)(l);
}

/* ---- rwlocks ---- */

RT_EXPORT int pthread_rwlock_init(pthread_rwlock_t *l, const pthread_rwlockattr_t *a)
{
	init_site(l, SPROF_SYNC_RWLOCK, SITE);
	return REAL(pthread_rwlock_init)(l, a);
}

static void rw_acquired(struct rt_thread *t, struct rt_sync_obj *o, int write)
{
	if (write) {
		excl_acquired(t, o);
		o->owner = t;
	} else {
		t->sync.ops++;
		add(&o->shared, 1);
	}
}

static int rw_try_real(pthread_rwlock_t *l, int write)
{
	return write ? REAL(pthread_rwlock_trywrlock)(l) : REAL(pthread_rwlock_tryrdlock)(l);
}

/* The blocking call: plain without a deadline (d.abstime NULL), else timed or clocked. */
static int rw_block_real(pthread_rwlock_t *l, int write, struct deadline d)
{
	if (!d.abstime)
		return write ? REAL(pthread_rwlock_wrlock)(l) : REAL(pthread_rwlock_rdlock)(l);
	if (d.clk < 0)
		return write ? REAL(pthread_rwlock_timedwrlock)(l, d.abstime)
			     : REAL(pthread_rwlock_timedrdlock)(l, d.abstime);
	return write ? REAL(pthread_rwlock_clockwrlock)(l, (clockid_t)d.clk, d.abstime)
		     : REAL(pthread_rwlock_clockrdlock)(l, (clockid_t)d.clk, d.abstime);
}

/*
 * Every rwlock acquisition: try first; when busy, the blocking call between two clock reads.
 * Another error of the try is the blocking call's to report.
 */
static int rw_lock(struct rt_thread *t, pthread_rwlock_t *l, int write, struct deadline d,
		   uintptr_t site)
{
	struct rt_sync_obj *o;
	uint64_t t0, t1;
	int r = rw_try_real(l, write);

	if (r != 0 && r != EBUSY)
		return rw_block_real(l, write, d);
	o = rt_sync_get(l, SPROF_SYNC_RWLOCK, site);
	if (r == 0) {
		rw_acquired(t, o, write);
		return 0;
	}
	TRACE(t, o, STRC_SYNC_WAIT, 0);
	t0 = rt_now();
	r = rw_block_real(l, write, d);
	t1 = rt_now();
	if (r == 0) {
		rw_acquired(t, o, write);
		shared_waited(t, o, t0, t1);
	} else if (r == ETIMEDOUT) {
		timed_out(o, t1 - t0);
	}
	rt_sync_own(t, t1);
	return r;
}

RT_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	struct rt_thread *t = measuring();

	if (!t)
		return REAL(pthread_rwlock_rdlock)(l);
	return rw_lock(t, l, 0, TIMED(NULL), SITE);
}

RT_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	struct rt_thread *t = measuring();

	if (!t)
		return REAL(pthread_rwlock_wrlock)(l);
	return rw_lock(t, l, 1, TIMED(NULL), SITE);
}

/*
 * glibc rejects a deadline whose nanoseconds are out of range, or a clock other than
 * CLOCK_REALTIME and CLOCK_MONOTONIC, with EINVAL before it looks at an rwlock or a semaphore
 * (a mutex only when it would block): such calls go straight to the real function, which a
 * try first must not pre-empt by taking the lock.
 */
static int deadline_ok(struct deadline d)
{
	return d.abstime && d.abstime->tv_nsec >= 0 && d.abstime->tv_nsec < 1000000000 &&
	       (d.clk < 0 || clock_ok((clockid_t)d.clk));
}

RT_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
	struct rt_thread *t = measuring();

	if (!t || !deadline_ok(TIMED(abstime)))
		return REAL(pthread_rwlock_timedrdlock)(l, abstime);
	return rw_lock(t, l, 0, TIMED(abstime), SITE);
}

RT_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
	struct rt_thread *t = measuring();

	if (!t || !deadline_ok(TIMED(abstime)))
		return REAL(pthread_rwlock_timedwrlock)(l, abstime);
	return rw_lock(t, l, 1, TIMED(abstime), SITE);
}

RT_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clk,
					 const struct timespec *abstime)
{
	struct rt_thread *t = measuring();

	if (!t || !deadline_ok(CLOCKED(clk, abstime)))
		return REAL(pthread_rwlock_clockrdlock)(l, clk, abstime);
	return rw_lock(t, l, 0, CLOCKED(clk, abstime), SITE);
}

RT_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clk,
					 const struct timespec *abstime)
{
	struct rt_thread *t = measuring();

	if (!t || !deadline_ok(CLOCKED(clk, abstime)))
		return REAL(pthread_rwlock_clockwrlock)(l, clk, abstime);
	return rw_lock(t, l, 1, CLOCKED(clk, abstime), SITE);
}

static int rw_try(pthread_rwlock_t *l, int write, uintptr_t site)
{
	struct rt_thread *t = measuring();
	int r = rw_try_real(l, write);

	if (!t)
		return r;
	if (r == 0)
		rw_acquired(t, rt_sync_get(l, SPROF_SYNC_RWLOCK, site), write);
	else if (r == EBUSY)
		add(&rt_sync_get(l, SPROF_SYNC_RWLOCK, site)->failed, 1);
	return r;
}

RT_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
	return rw_try(l, 0, SITE);
}

RT_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
	return rw_try(l, 1, SITE);
}

/* The writer's release if this thread holds it for writing (no reader can then), else a
 * reader's. */
RT_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
	struct rt_thread *t = measuring();

	if (t) {
		struct rt_sync_obj *o = rt_sync_get(l, SPROF_SYNC_RWLOCK, SITE);

		if (o->owner == t) {
			o->owner = NULL;
			excl_release(t, o, 1);
		} else {
			shared_release(t, o, &o->releases);
		}
		stamp_release(o); /* whether it wakes anyone, glibc's rwlock does not say simply */
	}
	return REAL(pthread_rwlock_unlock)(l);
}

/* ---- condition variables ---- */

RT_EXPORT int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a)
{
	init_site(c, SPROF_SYNC_COND, SITE);
	return REAL(pthread_cond_init)(c, a);
}

/* Whether a condition variable has waiters: glibc counts them in __wrefs from bit 3 (its
 * pthread_cond_signal returns at once without). Only decides whether a signal reads the clock. */
static inline int cond_waiters(pthread_cond_t *c)
{
	return (__atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED) >> 3) != 0;
}

/*
 * After a condition wait from t0 to t1 that returned 0. The signal (its time and its signaller's
 * delay in oc) woke the waiter, which then took the mutex again inside the real call: when an
 * unlock that found waiters came after the signal within the wait (the signaller's, typically,
 * still holding the mutex as it signalled), the waiter needed both, and runs after the later of
 * the two approximated releases (sync_rule_then). Then the wake-up rule, as for a mutex.
 */
static void cond_waited(struct rt_thread *t, struct rt_sync_obj *oc, struct rt_sync_obj *om,
			uint64_t t0, uint64_t t1)
{
	uint64_t ds = release_after(oc, t0, t1), du = release_after(om, t0, t1), w = t1 - t0;
	int64_t x = atomic_load_explicit(&oc->x, RELAXED), xq = atomic_load_explicit(&oc->xq, RELAXED);

	if (ds < w && du < w && du > ds) {
		if (!sync_rule_then(x, du - ds, atomic_load_explicit(&om->x, RELAXED), &x))
			xq = atomic_load_explicit(&om->xq, RELAXED);
		ds = du;
	}
	rt_sync_woken(t, w, ds, x, xq);
}

/*
 * A wait releases the mutex (its hold ends, its releaser's delay is ours) and takes it again
 * before returning. Waits are counted when they begin, so a cancelled wait is counted too.
 */
static int cond_wait_real(pthread_cond_t *c, pthread_mutex_t *m, struct deadline d)
{
	if (!d.abstime)
		return REAL(pthread_cond_wait)(c, m);
	if (d.clk < 0)
		return REAL(pthread_cond_timedwait)(c, m, d.abstime);
	return REAL(pthread_cond_clockwait)(c, m, (clockid_t)d.clk, d.abstime);
}

static int cond_wait(struct rt_thread *t, pthread_cond_t *c, pthread_mutex_t *m, struct deadline d,
		     uintptr_t site)
{
	struct rt_sync_obj *oc = rt_sync_get(c, SPROF_SYNC_COND, site);
	struct rt_sync_obj *om = rt_sync_get(m, SPROF_SYNC_MUTEX, site);
	uint32_t depth;
	uint64_t t0, t1, w;
	int r;

	add(&oc->contended, 1);
	excl_release(t, om, 0);
	depth = om->depth;
	om->depth = 0;
	TRACE(t, oc, STRC_SYNC_WAIT, 0);
	t0 = rt_now();
	r = cond_wait_real(c, m, d);
	t1 = rt_now();
	w = t1 - t0;
	om->depth = depth + 1; /* ours again */
	if (r == 0) {
		TRACE(t, oc, STRC_SYNC_DONE, ld(&oc->releases) + ld(&oc->broadcasts));
		add(&oc->acquires, 1);
		note_wait(oc, w);
		cond_waited(t, oc, om, t0, t1);
	} else if (r == ETIMEDOUT) {
		timed_out(oc, w);
	}
	rt_sync_own(t, t1);
	return r;
}

RT_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	struct rt_thread *t = measuring();

	if (!t)
		return REAL(pthread_cond_wait)(c, m);
	return cond_wait(t, c, m, TIMED(NULL), SITE);
}

RT_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
				     const struct timespec *abstime)
{
	struct rt_thread *t = measuring();

	if (!t || !deadline_ok(TIMED(abstime)))
		return REAL(pthread_cond_timedwait)(c, m, abstime);
	return cond_wait(t, c, m, TIMED(abstime), SITE);
}

RT_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
				     const struct timespec *abstime)
{
	struct rt_thread *t = measuring();

	if (!t || !deadline_ok(CLOCKED(clk, abstime)))
		return REAL(pthread_cond_clockwait)(c, m, clk, abstime);
	return cond_wait(t, c, m, CLOCKED(clk, abstime), SITE);
}

RT_EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
	struct rt_thread *t = measuring();

	if (t) {
		struct rt_sync_obj *o = rt_sync_get(c, SPROF_SYNC_COND, SITE);

		shared_release(t, o, &o->releases);
		if (cond_waiters(c)) {
			stamp_release(o);
			return WAKE_TIMED(t, REAL(pthread_cond_signal)(c));
		}
	}
	return REAL(pthread_cond_signal)(c);
}

RT_EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
	struct rt_thread *t = measuring();

	if (t) {
		struct rt_sync_obj *o = rt_sync_get(c, SPROF_SYNC_COND, SITE);

		shared_release(t, o, &o->broadcasts);
		if (cond_waiters(c)) {
			stamp_release(o);
			return WAKE_TIMED(t, REAL(pthread_cond_broadcast)(c));
		}
	}
	return REAL(pthread_cond_broadcast)(c);
}

/* ---- barriers ---- */

#define GEN_SHIFT 56
#define ARRIVAL_MASK ((UINT64_C(1) << GEN_SHIFT) - 1)

RT_EXPORT int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *a,
				   unsigned count)
{
	struct rt_thread *t = measuring();

	if (t) {
		struct rt_sync_obj *o = rt_sync_get(b, SPROF_SYNC_BARRIER, SITE);

		rt_sync_set_init_site(o, SITE);
		o->barrier_count = count;
		atomic_store(&o->arrivals, 0);
	}
	return REAL(pthread_barrier_init)(b, a, count);
}

/*
 * MPI_Barrier's rule: gather, then broadcast. Without measurement the barrier opens when the
 * last thread arrives there, at A = max over threads of (arrival - delay); measured, it opened at
 * M = max of the measured arrivals, each taken as the thread enters the real call (after this
 * bookkeeping, which delays the opening too; sync_rule_barrier). A thread that leaves at t1 left t1 - M after the opening,
 * and without measurement would leave as long after A: its delay becomes M - A (the x_s of the
 * rule, which also keeps min(x + w, .)). Each generation (arrivals / count) has its two maxima in
 * cells tagged with the generation; two sets of cells suffice, since a generation starts only
 * after every thread of the one before has left and read its cells. The count comes from
 * pthread_barrier_init (without it, no compensation).
 */
static int atomic_max_tagged(_Atomic uint64_t *cell, uint64_t gen, uint64_t v)
{
	uint64_t cur = atomic_load(cell), mine = gen << GEN_SHIFT | (v & ARRIVAL_MASK);

	while (cur >> GEN_SHIFT != gen || (cur & ARRIVAL_MASK) < (v & ARRIVAL_MASK))
		if (atomic_compare_exchange_weak(cell, &cur, mine))
			return 1;
	return 0;
}

/* The generation this arrival belongs to (its cells are index gen & 1), or -1: no count. */
static int64_t barrier_arrive(struct rt_thread *t, struct rt_sync_obj *o, uint64_t now)
{
	uint64_t full, gen;
	int64_t a;

	if (!o->barrier_count)
		return -1;
	full = atomic_fetch_add(&o->arrivals, 1) / o->barrier_count;
	gen = full & 0xff;
	TRACE(t, o, STRC_SYNC_RELEASE, full);
	a = (int64_t)(now - rt_start_ticks) - rt_sync_x(t);
	/* The latest approximated arrival's probe-cost part, for the report's pricing: two threads
	 * that raise the maximum at the same moment may store theirs in the other order, which
	 * only misprices the difference of their parts by the in-run recalibration's change. */
	if (atomic_max_tagged(&o->late_a[gen & 1], gen, (uint64_t)(a > 0 ? a : 0)))
		atomic_store_explicit(&o->late_q[gen & 1], rt_sync_xq(t), RELAXED);
	TRACE(t, o, STRC_SYNC_WAIT, 0);
	/* measured arrival: now, after this bookkeeping, as the thread enters the real call */
	atomic_max_tagged(&o->late_m[gen & 1], gen, rt_now() - rt_start_ticks);
	return (int64_t)full;
}

static void barrier_leave(struct rt_thread *t, struct rt_sync_obj *o, int64_t full, uint64_t w)
{
	uint64_t m, a, gen = (uint64_t)full & 0xff;

	if (full < 0)
		return;
	TRACE(t, o, STRC_SYNC_DONE, (uint64_t)full);
	m = atomic_load(&o->late_m[gen & 1]);
	a = atomic_load(&o->late_a[gen & 1]);
	if (m >> GEN_SHIFT == gen && a >> GEN_SHIFT == gen)
		rt_sync_inherit(t, w,
				sync_rule_barrier((int64_t)(m & ARRIVAL_MASK), (int64_t)(a & ARRIVAL_MASK)),
				atomic_load_explicit(&o->late_q[gen & 1], RELAXED), 0);
}

RT_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
	struct rt_thread *t = measuring();
	struct rt_sync_obj *o;
	uint64_t t0, t1;
	int64_t gen;
	int r;

	if (!t)
		return REAL(pthread_barrier_wait)(b);
	o = rt_sync_get(b, SPROF_SYNC_BARRIER, SITE);
	t->sync.ops++;
	t0 = rt_now();
	gen = barrier_arrive(t, o, t0);
	r = REAL(pthread_barrier_wait)(b);
	t1 = rt_now();
	add(&o->acquires, 1);
	note_wait(o, t1 - t0);
	barrier_leave(t, o, gen, t1 - t0);
	rt_sync_own(t, t1);
	return r;
}

/* ---- semaphores (errno is theirs: the try that we add leaves it as it was) ---- */

/* Whether a semaphore has sleepers: glibc's x86-64 sem_t begins with a 64-bit word whose upper
 * half counts them (SEM_NWAITERS_SHIFT). Only decides whether a post reads the clock. */
static inline int sem_waiters(sem_t *s)
{
	return (__atomic_load_n((const uint64_t *)(void *)s, __ATOMIC_RELAXED) >> 32) != 0;
}

RT_EXPORT int sem_init(sem_t *s, int pshared, unsigned value)
{
	init_site(s, SPROF_SYNC_SEM, SITE);
	return REAL(sem_init)(s, pshared, value);
}

static int sem_wait_real(sem_t *s, struct deadline d)
{
	if (!d.abstime)
		return REAL(sem_wait)(s);
	if (d.clk < 0)
		return REAL(sem_timedwait)(s, d.abstime);
	return REAL(sem_clockwait)(s, (clockid_t)d.clk, d.abstime);
}

static int sem_wait_measured(struct rt_thread *t, sem_t *s, struct deadline d, uintptr_t site)
{
	struct rt_sync_obj *o = rt_sync_get(s, SPROF_SYNC_SEM, site);
	int saved = errno, r;
	uint64_t t0, t1;

	t->sync.ops++;
	if (REAL(sem_trywait)(s) == 0) {
		errno = saved;
		add(&o->acquires, 1);
		return 0;
	}
	errno = saved;
	TRACE(t, o, STRC_SYNC_WAIT, 0);
	errno = saved;
	t0 = rt_now();
	r = sem_wait_real(s, d);
	t1 = rt_now();
	if (r == 0) {
		add(&o->acquires, 1);
		shared_waited(t, o, t0, t1);
	} else if (errno == ETIMEDOUT) {
		timed_out(o, t1 - t0);
	}
	rt_sync_own(t, t1);
	return r;
}

RT_EXPORT int sem_wait(sem_t *s)
{
	struct rt_thread *t = measuring();

	if (!t)
		return REAL(sem_wait)(s);
	return sem_wait_measured(t, s, TIMED(NULL), SITE);
}

RT_EXPORT int sem_timedwait(sem_t *s, const struct timespec *abstime)
{
	struct rt_thread *t = measuring();

	if (!t || !deadline_ok(TIMED(abstime)))
		return REAL(sem_timedwait)(s, abstime);
	return sem_wait_measured(t, s, TIMED(abstime), SITE);
}

RT_EXPORT int sem_clockwait(sem_t *s, clockid_t clk, const struct timespec *abstime)
{
	struct rt_thread *t = measuring();

	if (!t || !deadline_ok(CLOCKED(clk, abstime)))
		return REAL(sem_clockwait)(s, clk, abstime);
	return sem_wait_measured(t, s, CLOCKED(clk, abstime), SITE);
}

RT_EXPORT int sem_trywait(sem_t *s)
{
	struct rt_thread *t = measuring();
	int r = REAL(sem_trywait)(s), saved = errno;

	if (!t)
		return r;
	t->sync.ops++;
	if (r == 0)
		add(&rt_sync_get(s, SPROF_SYNC_SEM, SITE)->acquires, 1);
	else if (saved == EAGAIN)
		add(&rt_sync_get(s, SPROF_SYNC_SEM, SITE)->failed, 1);
	errno = saved;
	return r;
}

RT_EXPORT int sem_post(sem_t *s)
{
	struct rt_thread *t = measuring();

	if (t) {
		struct rt_sync_obj *o = rt_sync_get(s, SPROF_SYNC_SEM, SITE);

		shared_release(t, o, &o->releases);
		if (sem_waiters(s)) {
			stamp_release(o);
			return WAKE_TIMED(t, REAL(sem_post)(s));
		}
	}
	return REAL(sem_post)(s);
}

/* ---- start-up ---- */

#define RESOLVE(name) real_##name = lookup(#name)

void rt_sync_wrap_init(void)
{
	RESOLVE(pthread_mutex_init);
	RESOLVE(pthread_mutex_lock);
	RESOLVE(pthread_mutex_trylock);
	RESOLVE(pthread_mutex_timedlock);
	RESOLVE(pthread_mutex_clocklock);
	RESOLVE(pthread_mutex_unlock);
	RESOLVE(pthread_rwlock_init);
	RESOLVE(pthread_rwlock_rdlock);
	RESOLVE(pthread_rwlock_tryrdlock);
	RESOLVE(pthread_rwlock_timedrdlock);
	RESOLVE(pthread_rwlock_clockrdlock);
	RESOLVE(pthread_rwlock_wrlock);
	RESOLVE(pthread_rwlock_trywrlock);
	RESOLVE(pthread_rwlock_timedwrlock);
	RESOLVE(pthread_rwlock_clockwrlock);
	RESOLVE(pthread_rwlock_unlock);
	RESOLVE(pthread_spin_init);
	RESOLVE(pthread_spin_lock);
	RESOLVE(pthread_spin_trylock);
	RESOLVE(pthread_spin_unlock);
	RESOLVE(pthread_cond_init);
	RESOLVE(pthread_cond_wait);
	RESOLVE(pthread_cond_timedwait);
	RESOLVE(pthread_cond_clockwait);
	RESOLVE(pthread_cond_signal);
	RESOLVE(pthread_cond_broadcast);
	RESOLVE(pthread_barrier_init);
	RESOLVE(pthread_barrier_wait);
	RESOLVE(sem_init);
	RESOLVE(sem_wait);
	RESOLVE(sem_trywait);
	RESOLVE(sem_timedwait);
	RESOLVE(sem_clockwait);
	RESOLVE(sem_post);
}

/*
 * The cost of one wrapped call, as the compensation counts it: batches of lock/unlock pairs of
 * a private mutex through the measured path and through the real functions, on a scratch
 * thread state; the slowest tenth of the batches dropped (rt_trimmed_stats), half a pair.
 * The mutex's slot is marked dead so it never appears in the profile.
 */
#define CAL_BATCHES 100
#define CAL_PAIRS 100

int rt_sync_calibrate(struct rt_thread *scratch, double *ns)
{
	static double diff[CAL_BATCHES];
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct rt_sync_obj *o = rt_sync_get(&m, SPROF_SYNC_MUTEX, 0);
	double sd;
	int b, i;

	for (b = 0; b < CAL_BATCHES; b++) {
		uint64_t t0 = rt_now(), t1, t2;

		for (i = 0; i < CAL_PAIRS; i++) {
			if (word_taken(&m) || real_pthread_mutex_lock(&m) != 0)
				return -1;
			excl_acquired(scratch, rt_sync_get(&m, SPROF_SYNC_MUTEX, 0));
			excl_release(scratch, rt_sync_get(&m, SPROF_SYNC_MUTEX, 0), 1);
			real_pthread_mutex_unlock(&m);
		}
		t1 = rt_now();
		for (i = 0; i < CAL_PAIRS; i++) {
			real_pthread_mutex_lock(&m);
			real_pthread_mutex_unlock(&m);
		}
		t2 = rt_now();
		diff[b] = ((double)(t1 - t0) - (double)(t2 - t1)) / rt_ticks_per_ns() / CAL_PAIRS / 2;
	}
	atomic_store(&o->key, RT_SYNC_DEAD);
	rt_trimmed_stats(diff, CAL_BATCHES, ns, &sd);
	if (*ns < 0)
		*ns = 0;
	return 0;
}
