/* SPDX-License-Identifier: MIT */
/*
 * Dynamic instrumentation inside the target (docs/dynamic.md, docs/runtime.md): the point
 * table, primitives, predicates, per-thread timers and shadow stacks, the sampler and the
 * control server.
 *
 * Everything a trampoline reaches (sonde__dyn_entry, sonde__dyn_exit) is compiled with
 * -mgeneral-regs-only, calls no libc function (runtime/dyn/sys.h has the system calls), takes
 * no lock and allocates nothing but per-thread memory straight from mmap. It is
 * async-signal-safe: a signal handler may run instrumented code on top of any of it.
 */
#ifndef SONDE_DYN_H
#define SONDE_DYN_H

#include "../rt.h"
#include "../../format/protocol.h"
#include "sys.h"

/* ---- the trampoline ABI (docs/dynamic.md) ---- */

/*
 * What the entry trampoline pushed, lowest address first. `rflags` holds the flags only where
 * the patcher found them possibly live at the site; elsewhere the slot holds a copy of rax
 * (push rax stands in for pushfq). Nothing here reads it.
 */
struct sonde_regs {
	uint64_t rdi, rsi, rdx, rcx, r8, r9, rax, r10, r11, rflags;
};

/* What sonde__dyn_ret_tramp saved: the return value, and where the stack was. */
struct sonde_retregs {
	uint64_t rax, rdx;
	uint64_t sp;  /* the stack pointer after the return: the return address was at sp - 8 */
	uint64_t pad;
	uint64_t xmm0[2], xmm1[2];
};

RT_EXPORT void sonde__dyn_entry(uint32_t point, struct sonde_regs *regs, uint64_t *ret_slot);
RT_EXPORT uint64_t sonde__dyn_exit(struct sonde_retregs *r);
/*
 * An unwinder (a C++ exception, pthread_exit's forced unwinding) passes the return trampoline
 * of the hooked call whose return address was at `slot`: that call and the newer ones end
 * (unwind.c, the trampoline's personality routine).
 */
void dyn_unwound(uint64_t *slot);
/* A call already running when its point got actions: see entry.c (catch-up). */
RT_EXPORT int sonde__dyn_catch_up(const struct sproto_point_set *ps, uint64_t *slot,
				  const uint64_t *args);
RT_EXPORT void sonde__dyn_ret_tramp(void);
RT_EXPORT int sonde__attach(const char *ctl_dir);

/* ---- limits ---- */
#define DYN_POINTS SPROTO_MAX_POINTS
/*
 * The point table has room above the protocol's ids for the calibration's own points
 * (calib_dyn.c), which no tool can set or clear; ids are masked with the table's size.
 */
#define DYN_POINT_SLOTS (2 * DYN_POINTS)
#define DYN_CALIB_POINT DYN_POINTS /* the first of DYN_CALIB_FNS */
#define DYN_CALIB_FNS 3
#define DYN_COUNTERS SPROTO_MAX_COUNTERS
#define DYN_TIMERS SPROTO_MAX_TIMERS
#define DYN_TCOUNTERS SPROTO_MAX_TCOUNTERS
#define DYN_SHADOW 4096 /* calls with exit actions open at once, per thread */

/* ---- points and their actions (point.c) ---- */

/* One primitive with its predicate; indices are masked when used, never trusted. */
struct dyn_action {
	uint8_t prim, pred, op, arg; /* SPROTO_*; arg: the argument register of PRED_ARG */
	uint32_t target;             /* counter, timer or thread counter */
	uint32_t pred_counter;       /* (thread) counter of PRED_COUNTER, PRED_TCOUNTER */
	uint32_t pad;
	int64_t value, pred_value;
};

/* A point's actions: immutable once published; entry actions first, then exit actions. */
struct dyn_prog {
	uint8_t n_entry, n_exit;
	uint8_t needs_thread; /* timers or exit actions: per-thread state is needed */
	uint8_t size_class;
	uint8_t one_add;      /* the whole list is one unconditional ADD at entry */
	uint8_t one_tadd;     /* ... or one unconditional TADD at entry */
	uint16_t gen;         /* which list this is (a count of POINT_SETs): a frame keeps it */
	struct dyn_prog *next; /* free or retired list (control thread) */
	uint64_t retired_ns;
	struct dyn_action act[];
};

struct dyn_counter {
	_Atomic int64_t v;
} __attribute__((aligned(64))); /* one per cache line: threads counting apart never share */

extern _Atomic(const struct dyn_prog *) dyn_points[DYN_POINT_SLOTS];
extern struct dyn_counter dyn_counters[DYN_COUNTERS];
extern _Atomic int dyn_paused;

/* PROFILE actions reach the profile runtime (set while a profile is being made). */
extern _Atomic int dyn_profile_live;

int dyn_point_set(const struct sproto_point_set *ps, const char **why);
/*
 * The tool's sessions, counted (a client connected, or its session ended): point ids are
 * reused by the next session, so a frame hooked in an earlier one is told apart by this.
 */
extern _Atomic uint8_t dyn_session;
void dyn_session_next(void);
/* A point's action list from a POINT_SET message (p has room for ps->n actions). */
void dyn_prog_fill(struct dyn_prog *p, const struct sproto_point_set *ps);
/* A forked child: its parent's points are not its own (PROFILE ones kept when keep_profile). */
void dyn_points_after_fork(int keep_profile);
void dyn_points_clear(uint32_t first, uint32_t count);
void dyn_points_reclaim(uint64_t now_ns);
void dyn_counters_reset(void);
/* A sonde.h phase marker (probe.c): its name, time and count in the runtime's own counters
 * (SPROTO_COUNTER_PHASE_*), for a tool that follows phases live (sonde consult). */
void dyn_note_phase(const char *name);

/* ---- the object table of RECORD (objects.c) ---- */
/* An object of the kind (sproto_obj_kind) at addr: a use counted, or (init) an initialisation
 * whose call returns to site (0: unknown). Async-signal-safe, lock-free, no allocation. */
void dyn_record(unsigned kind, uint64_t addr, int init, uint64_t site);
/* A session begins: the figures sent from now start at the counts now (control thread). */
void dyn_objects_reset(void);
/* A RESOURCES_REPLY of the kinds wanted (a mask) into buf: its size, 0 when it did not fit. */
size_t dyn_objects_reply(void *buf, size_t cap, uint32_t kinds);

/* ---- per-thread state: timers and the shadow stack (thread.c) ---- */

/*
 * A timer of one thread. Only its thread writes it; the sampler reads {depth, start, total}
 * consistently under seq, odd while the owner changes them (Paradyn's nesting: only the
 * outermost start reads the clock, only the matching outermost stop adds the elapsed time).
 */
struct dyn_timer {
	uint32_t seq, depth;
	uint64_t start, total; /* clock units: TSC ticks or ns (wall), ns (CPU) */
};

struct dyn_frame {
	uint64_t ret;   /* the real return address */
	uint64_t *slot; /* where it was on the stack, now holding sonde__dyn_ret_tramp */
	uint32_t point;
	uint8_t closed;  /* its exit actions ran as an unwinder passed it (dyn_unwound) */
	uint8_t session; /* dyn_session when it was hooked: a call of an earlier session's (catch-up) */
	uint16_t gen;    /* the point's list whose entry actions the call has had (catch-up) */
};

#define DYN_T_LIVE 1
#define DYN_T_FREE 2    /* its thread is gone; a new thread may take it over */
#define DYN_T_CLAIMED 3 /* being taken over */

struct dyn_thread {
	uint32_t depth;   /* frames in use */
	uint32_t hiwater; /* frames ever used: dropped frames stay readable up to here */
	int tid;
	_Atomic int state;
	uint64_t lost;    /* calls not hooked: shadow stack full (written by the owner) */
	uint32_t in_profile; /* inside a PROFILE action (nested in signal handlers: a count) */
	uint32_t pad;
	struct dyn_thread *next; /* list of every record, push-only */
	int64_t tcounters[DYN_TCOUNTERS]; /* written by the owner only */
	struct dyn_timer wall[DYN_TIMERS], cpu[DYN_TIMERS];
	struct dyn_frame frames[DYN_SHADOW];
};

extern RT_TLS struct dyn_thread *dyn_self;
extern _Atomic(struct dyn_thread *) dyn_threads;
extern _Atomic uint64_t dyn_lost_nothread;

struct dyn_thread *dyn_thread_new(void);
void dyn_threads_sweep(void);
void dyn_threads_reset(void);
/* A forked child: the forking thread's record is its (its frames are still its own). */
void dyn_threads_after_fork(void);
uint64_t dyn_lost_total(void);
/* PROFILE actions off, then wait (up to max_ms) until no other thread is inside one: after it,
 * the profile runtime's state is the writer's alone. 0, or -1 when a thread stayed inside. */
int dyn_profile_quiesce(unsigned max_ms);
/* What threads that ended left in a timer (clock units) or thread counter (by term kind). */
uint64_t dyn_departed(int kind, uint32_t index);

/* A thread counter changed in one instruction: a signal handler's change is never lost. */
static inline void dyn_tcounter_add(int64_t *c, int64_t v)
{
	__asm__ volatile("addq %1, %0" : "+m"(*c) : "r"(v) : "memory");
}

#define dyn_barrier() __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* Wall clock: the runtime's ticks; without a TSC, CLOCK_MONOTONIC without libc. */
static inline uint64_t dyn_wall_now(void)
{
	return likely(rt_clock_tsc) ? rt_rdtsc() : dyn_sys_clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t dyn_cpu_now(void)
{
	return dyn_sys_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/*
 * seq and depth are changed with single read-modify-write instructions (no lock prefix: only
 * the owner writes), so a signal handler that starts and stops the same timer between them
 * leaves them right.
 */
static inline void dyn_seq_bump(uint32_t *seq)
{
	__asm__ volatile("addl $1, %0" : "+m"(*seq) : : "memory");
}

static inline void dyn_timer_start(struct dyn_timer *tm, int cpu)
{
	uint64_t now;

	if (tm->depth) { /* nested: counts once */
		__asm__ volatile("addl $1, %0" : "+m"(tm->depth) : : "memory");
		return;
	}
	now = cpu ? dyn_cpu_now() : dyn_wall_now();
	dyn_seq_bump(&tm->seq);
	dyn_barrier();
	__atomic_store_n(&tm->start, now, __ATOMIC_RELAXED);
	__atomic_store_n(&tm->depth, 1, __ATOMIC_RELAXED);
	dyn_barrier();
	dyn_seq_bump(&tm->seq);
}

static inline void dyn_timer_stop(struct dyn_timer *tm, int cpu)
{
	uint32_t depth = tm->depth;
	uint64_t now;

	if (depth != 1) { /* inner stop, or a stop whose start was never seen */
		if (depth)
			__asm__ volatile("subl $1, %0" : "+m"(tm->depth) : : "memory");
		return;
	}
	dyn_seq_bump(&tm->seq); /* before the clock: a reader never sees time not yet added */
	dyn_barrier();
	now = cpu ? dyn_cpu_now() : dyn_wall_now();
	if (now > tm->start)
		__atomic_store_n(&tm->total, tm->total + (now - tm->start), __ATOMIC_RELAXED);
	__atomic_store_n(&tm->depth, 0, __ATOMIC_RELAXED);
	dyn_barrier();
	dyn_seq_bump(&tm->seq);
}

/*
 * A timer's value from any thread: total, plus now - start while it runs, with `now` read
 * inside the consistent window, so the value never runs ahead of what the owner will add.
 * tid: the owner (CPU timers read its clock). When the owner keeps it busy, total alone.
 */
uint64_t dyn_timer_value(const struct dyn_timer *tm, int cpu, int tid);

/* ---- metrics and samples (metric.c) ---- */
int dyn_metric_enable(const struct sproto_metric *m);
void dyn_metric_disable(uint32_t id);
void dyn_metrics_clear(void);
uint32_t dyn_metrics_on(void);
/* A SAMPLE message of every enabled metric into buf: its size, 0 when none is enabled (and it
 * is not an answer). how: DYN_SAMPLE_LAST the process is ending (SPROTO_S_LAST),
 * DYN_SAMPLE_ANSWER a BUCKET_REPLY (sent even with no metric); after_ns: the end of the SAMPLE
 * sent before on the connection (0: none), from which its start is given. */
#define DYN_SAMPLE_LAST 0x1
#define DYN_SAMPLE_ANSWER 0x2
size_t dyn_sample(void *buf, size_t cap, uint64_t after_ns, uint64_t start_ns, uint64_t end_ns,
		  int how, uint64_t asked_ns);
/* A new connection: its SAMPLEs refer to none before (version 9: the context of the previous
 * one's metrics and each metric's last delta starts empty, as the tool's does). */
void dyn_sample_reset(void);
int64_t dyn_metric_value(uint32_t id); /* tests */

/* ---- the control server (server.c, list.c) ---- */
int dyn_server_running(void);
/* A forked child: the parent's server, sockets and session are not its own. */
void dyn_server_after_fork(void);
int dyn_private_dir(const char *dir, const char **why);
size_t dyn_list_reply(void *buf, size_t cap);
uint64_t dyn_mono_ns(void);

/* ---- the return trampoline's address (arch/x86_64/dyn_ret.S), hidden: no GOT ---- */
extern char dyn_ret_tramp_local[] __attribute__((visibility("hidden")));
void dyn_call_keeping_vectors(void (*fn)(void *, void *), void *arg)
	__attribute__((visibility("hidden")));

/* ---- the calibration's code (arch/x86_64/dyn_calib_code.c) ---- */
#define DYN_CALIB_SITES 8
struct dyn_calib_fns {
	void (*plain)(void);              /* an empty function on its NOP sled */
	void (*fn[DYN_CALIB_FNS])(void);  /* the same, patched: point DYN_CALIB_POINT + i */
	/*
	 * Functions calling plain, or fn[i], DYN_CALIB_SITES times from as many call sites: the
	 * returns of a patched function go to varied places, as in a program, not to one place
	 * that the branch predictors learn in a loop.
	 */
	void (*plain_sites)(void);
	void (*sites[DYN_CALIB_FNS])(void);
};
/* Made once, in a page of their own; 0, or -1 when no executable page could be had. */
int dyn_calib_code(struct dyn_calib_fns *out);
/* A sled trampoline's register save, handler call and restore (the patcher's bytes). */
size_t dyn_calib_emit_save(uint8_t *buf, uint32_t point, uint64_t handler);

/* ---- in-process calibration (runtime/calib_dyn.c) ---- */
/* What the primitives and trampolines cost here (the control thread, before serving). */
void dyn_calibrate_costs(struct sproto_costs *out);

/* The profile runtime's probes (probe.c), for SPROTO_PROFILE. */
void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);

#endif
