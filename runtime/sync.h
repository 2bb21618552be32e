/* SPDX-License-Identifier: MIT */
/*
 * Synchronization measurement (`sonde run --sync`, docs/runtime.md "Synchronization"): the
 * table of sync objects (sync_table.c), the interposed pthread and semaphore functions
 * (sync_wrap.c) and the shared-memory compensation of MODELS §2.4 (sync_comp.c).
 *
 * Included by rt.h: a thread's compensation state lives in its struct rt_thread.
 */
#ifndef SONDE_RT_SYNC_H
#define SONDE_RT_SYNC_H

#include <stdatomic.h>
#include <stdint.h>

#include "../format/profile_sync.h"
#include "sync_rule.h"

/* Per-thread state of the shared-memory compensation (all in ticks). */
struct rt_sync_thread {
	uint64_t ops;        /* wrapped calls made: each cost o_sync */
	int64_t x0;          /* delay inherited from the creator at pthread_create */
	int64_t shift;       /* sum over waits of (w' - w), less the wrappers' own time measured
			      * after waits (rt_sync_own): x = x0 + o - shift */
	int64_t x0q, shiftq; /* the parts of x0 and shift that are probe costs (xq below) */
	struct sync_pairs pairs; /* its own probe pairs' cost in the delay (sync_rule.h) */
	struct sync_pairs skips; /* ... and its unmeasured calls' (priced alike) */
	uint64_t waits;      /* waits that took a releaser's delay into account */
	uint64_t wake_ticks; /* time in the real calls of releases that woke a sleeper (a futex
			      * wake: microseconds), kept out of the in-situ windows */
	uint64_t wakes_unneeded; /* of those, wakes that measurement caused, in its delay */
	uint64_t wait;       /* their measured time */
	int64_t wait_c;      /* their approximated time (sum of w') */
	uint32_t hold_countdown; /* acquisitions until the next hold-time sample */
	uint32_t rand;       /* xorshift state for the sampling countdown */
};

/*
 * One synchronization object: a slot of the process-wide table, keyed by the object's address
 * (docs/runtime.md). Fields are atomics read and written with relaxed order: for a mutex, a
 * spinlock and a write-locked rwlock the owner updates them while it holds the lock (plain loads
 * and stores, the lock orders them); everything else adds atomically.
 */
struct rt_sync_obj {
	/* first cache line: everything an uncontended lock/unlock pair touches */
	_Atomic uintptr_t key;        /* 0 free, RT_SYNC_DEAD a calibration's, else the address */
	uint32_t depth;               /* exclusive holds open (recursive mutexes); by the owner */
	uint32_t barrier_count;       /* from pthread_barrier_init; 0 unknown */
	_Atomic uint64_t acquires, releases;
	uint64_t hold_start;          /* ticks; 0 when the current hold is not sampled */
	_Atomic int64_t x;            /* delay of the last releaser (compensation), ticks */
	_Atomic int64_t xq;           /* the part of x that is probe costs (rt_sync_delay_q) */
	const void *owner;            /* rwlock: the thread holding it for writing */
	/* the rest */
	_Atomic uint64_t contended;
	_Atomic uint32_t kind;        /* SPROF_SYNC_* */
	_Atomic uint32_t flags;       /* SPROF_SYNC_F_* */
	_Atomic uintptr_t site;       /* code address of its init or first use */
	_Atomic uint64_t shared, failed, timeouts, broadcasts;
	_Atomic uint64_t wait, wait_max, hold, hold_samples; /* ticks */
	_Atomic uint64_t arrivals;    /* barrier: calls so far (generation = arrivals / count) */
	_Atomic uint64_t late_m[2];   /* barrier: generation << 56 | latest measured arrival */
	_Atomic uint64_t late_a[2];   /* barrier: generation << 56 | latest approximated arrival */
	_Atomic int64_t late_q[2];    /* barrier: xq of the thread whose arrival is in late_a */
	_Atomic uint64_t ended;       /* thread: ticks when it ended (its delay is in x) */
	_Atomic uint64_t released;    /* ticks of the last release that may wake a waiter: an unlock
					 * that found waiters, a signal, a post, an rwlock unlock */
	_Atomic int64_t arrival;      /* mutex: the latest waiter's approximated arrival, ticks;
					 * SYNC_NO_ARRIVAL when none noted it (sync_rule_wake_unneeded) */
} __attribute__((aligned(64)));

#define RT_SYNC_DEAD ((uintptr_t)1)
#define RT_SYNC_EXITED 0x100u /* flags of a thread's object: its final delay is in x */

extern int rt_sync_on; /* SONDE_SYNC: the wrappers measure */

struct rt_thread;
struct writer;

/* sync_table.c */
int rt_sync_table_init(void);
struct rt_sync_obj *rt_sync_find(const void *addr, uint32_t kind, uintptr_t site);
void rt_sync_set_init_site(struct rt_sync_obj *o, uintptr_t site);
void rt_sync_write(struct writer *w);
void rt_sync_table_reset(void);
uint32_t rt_sync_id(const struct rt_sync_obj *o);
int32_t rt_sync_site_module(uintptr_t site, uint64_t *vaddr);

/* sync_trace.c */
void rt_sync_trace(struct rt_thread *t, struct rt_sync_obj *o, unsigned type, uint64_t seq);

/* sync_wrap.c */
void rt_sync_wrap_init(void);
int rt_sync_calibrate(struct rt_thread *scratch, double *ns);

/* sync_comp.c */
void rt_sync_init(void);
int64_t rt_sync_x(const struct rt_thread *t);
int64_t rt_sync_xq(const struct rt_thread *t);
void rt_sync_inherit(struct rt_thread *t, uint64_t w, int64_t x_s, int64_t xq_s, uint64_t g);
void rt_sync_woken(struct rt_thread *t, uint64_t w, uint64_t d, int64_t x_s, int64_t xq_s);
void rt_sync_mutex_woken(struct rt_thread *t, uint64_t w, uint64_t d, int64_t x_s,
			 int64_t xq_s);
void rt_sync_thread_start(struct rt_thread *t, int64_t x0, int64_t x0q);
void rt_sync_thread_exit(struct rt_thread *t);
void rt_sync_join(struct rt_thread *t, uint64_t thread, uint64_t t0, uint64_t t1);
void rt_sync_own(struct rt_thread *t, uint64_t t1);
void rt_sync_set_price(struct rt_thread *t, int usable, double ns);
int rt_sync_hold_sample(struct rt_thread *t);
void rt_sync_after_fork(struct rt_thread *t);
extern double rt_sync_o_ns; /* calibrated cost of one wrapped call */
extern double rt_sync_full_ns; /* the probe pair's cost the delays were computed with */
extern double rt_sync_skip_ns; /* ... and an unmeasured call's */

/* sync_collide.c: the collision rule's inputs (SONDE_SYNC_RULE=collide) */
extern int rt_sync_collide_on;
extern uint64_t rt_sync_collide_s, rt_sync_collide_c, rt_sync_collide_l; /* ticks */
void rt_sync_collide_init(void);
void rt_sync_collide_count(int which, int64_t x_new, int64_t x_woken, int64_t d_c);
void rt_sync_collide_log(void);
void rt_sync_collide_after_fork(void);

#endif
