/* SPDX-License-Identifier: MIT */
/*
 * Internal declarations of libsonde.so, the runtime that lives inside the measured process.
 *
 * Rules for everything under runtime/: never change what the program computes or prints; no
 * malloc, stdio or locks on a probe's path (memory comes from mmap in per-thread arenas);
 * everything a signal handler may reach is async-signal-safe.
 */
#ifndef SONDE_RT_H
#define SONDE_RT_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "../format/profile.h"
#include "../format/trace.h"
#include "insitu_est.h"
#include "sync.h"

#define RT_EXPORT __attribute__((visibility("default")))
#define RT_HOT __attribute__((hot))
#define RT_COLD __attribute__((cold, noinline))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define RT_TLS __attribute__((tls_model("initial-exec"))) __thread

/* ---- clock (clock.c) ---- */
extern int rt_clock_tsc; /* 1: rdtsc, 0: CLOCK_MONOTONIC in ns */

static inline uint64_t rt_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* rdtscp waits for the instructions before it: an exit timestamp that includes all of the
 * function's work (SONDE_PRECISE), at the price of a slower read. */
static inline uint64_t rt_rdtscp(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi) : : "rcx");
	return ((uint64_t)hi << 32) | lo;
}

extern int rt_precise;
uint64_t rt_mono_ns(void);

/* The timestamp clock, in ticks: the TSC where usable, else ns of CLOCK_MONOTONIC. */
static inline uint64_t rt_now(void)
{
	return likely(rt_clock_tsc) ? rt_rdtsc() : rt_mono_ns();
}

uint64_t rt_thread_cpu_ns(void);
void rt_clock_init(void);
void rt_clock_mark_end(void);
double rt_ticks_per_ns(void);
uint64_t rt_ticks_to_ns(uint64_t ticks);

/* ---- functions and modules (func.c) ---- */
struct rt_func {
	uintptr_t addr;           /* code address, or the name pointer of a region */
	uint32_t id;              /* index in the function table, order of discovery */
	uint8_t kind;             /* SPROF_FUNC or SPROF_REGION */
	_Atomic uint8_t off;      /* 1: calls are not measured (excluded or throttled) */
	uint8_t flags;            /* SPROF_FN_* */
	int32_t module;           /* index in the module snapshot, -1 unknown */
	uint64_t vaddr;           /* addr minus the module's load bias */
	_Atomic uint64_t seen_calls, seen_ticks; /* throttle bookkeeping, all threads */
	uint64_t throttled_at, throttled_calls;
	const char *name;         /* regions only: the user's string */
	_Atomic uint8_t traced;   /* its DEF_FUNC is in the trace (trace.c) */
	_Atomic uint32_t caller;  /* the one thread (index + 1) that calls it; RT_FUNC_MANY */
	_Atomic uint32_t insitu_hold; /* --insitu: threads whose hot leaf it is and whose price
				       * is not yet usable: its throttle waits (insitu.c) */
};
#define RT_FUNC_MANY 0xffffffffu
/* --insitu: a function's throttle waits for its holders (insitu_hold) until it has made at most
 * this many times the throttle's count of calls, all threads together */
#define RT_INSITU_HOLD_TIMES 16

struct rt_module {
	uintptr_t bias, lo, hi; /* load bias and the span of its executable segments */
	char path[256];
	uint8_t build_id[32];
	uint8_t build_id_len;
};

struct rt_func *rt_func_get(uintptr_t addr, int kind, const char *name);
uint32_t rt_func_count(void);
uint32_t rt_func_capacity(void);
struct dl_phdr_info;
uint8_t rt_module_build_id(const struct dl_phdr_info *info, uint8_t *out, size_t cap);
void rt_module_path(char *out, size_t cap, const char *name);
struct rt_func *rt_func_at(uint32_t id);
void rt_modules_refresh(void);
void rt_funcs_locate(void);
uint32_t rt_module_count(void);
const struct rt_module *rt_module_at(uint32_t i);
int rt_select_load(const char *path);
int rt_func_table_init(void);
extern struct rt_func rt_root_func;

/* ---- per-thread call-path profile (thread.c) ---- */
#define RT_KIDS 4 /* direct-mapped cache of a node's children, by code address */
#define RT_KID_SLOT(fn) (((fn) >> 4) & (RT_KIDS - 1))

/*
 * 128 bytes, 64-byte aligned: the first cache line holds all that a probe touches (fn, calls,
 * incl, kids, off); the second what the slow paths and the writer use.
 */
struct rt_node {
	uintptr_t fn;                  /* key among siblings (copy of func->addr) */
	uint64_t calls, incl;          /* ticks; exclusive time is derived when writing */
	struct rt_node *kids[RT_KIDS];
	uint32_t index;                /* creation order in its thread: parents come first */
	uint8_t off;                   /* copy of func->off, refreshed on RT_SLOW_REFRESH */
	struct rt_func *func;
	struct rt_node *first_child, *next_sibling, *parent;
	uint64_t skipped;              /* unmeasured probe pairs directly inside this node */
	uint64_t cpu_incl;             /* ns, only with SONDE_CPU */
	uint64_t throttle_calls, throttle_ticks; /* values at the last throttle check */
} __attribute__((aligned(64)));

/*
 * A frame of the probe stack. An unmeasured call (excluded, throttled) keeps the enclosing
 * node and stores fn ^ RT_FN_SKIP, so that the fast exit path, comparing fn, never takes it
 * for a measured one.
 */
#define RT_FN_SKIP ((uintptr_t)1)
struct rt_frame {
	struct rt_node *node;
	uintptr_t fn;
	uintptr_t sp;         /* stack address of the probe: finds frames left by longjmp */
	uint64_t start;
	uint64_t cpu_start;
};

/* Reasons for a thread's probes to leave the fast path (rt_thread.slow). */
#define RT_SLOW_JUMPED 0x1u   /* a longjmp happened: pop the frames it skipped */
#define RT_SLOW_OVERFLOW 0x2u /* calls are open beyond the depth limit */
#define RT_SLOW_CPU 0x4u      /* CPU time is measured too */
#define RT_SLOW_MONO 0x8u     /* no usable TSC: the clock is CLOCK_MONOTONIC */
#define RT_SLOW_REFRESH 0x10u /* a function was turned off: refresh the nodes' copies */

struct rt_chunk;

/* ---- event traces: per-thread state (trace.c; the probes in probe.c) ---- */
#define RT_TCACHE 1024 /* direct-mapped cache: code address -> the id part of an event word */
#define RT_TC_SLOT(fn) (((fn) >> 4) & (RT_TCACHE - 1))
#define RT_TC_SLOW 1u  /* in a cached word: this function's events take the slow path */
#define RT_RATED_MAX 1024
#define RT_TSTACK 1024 /* open calls remembered, for a forked child's stream */

struct rt_tcache {
	uintptr_t addr;
	uint64_t word; /* strc_word(0, 1, id, 0), | RT_TC_SLOW when excluded or rate-limited */
};

struct rt_rate; /* rate throttling state of one function on one thread (trace.c) */

struct rt_trace {
	uint64_t *pos, *end;     /* records go at pos; end leaves room for the closing records */
	uint64_t last;           /* time of the thread's previous event, ticks */
	uint32_t depth;          /* ENTERs open: what setjmp remembers and UNWIND restores */
	uint32_t seq;            /* chunks taken */
	struct strc_chunk *chunk; /* the chunk records go to: bufs[cur]; NULL when none */
	uint64_t cap;            /* bytes of a buffer */
	uint64_t *bufs[2];       /* the thread's two buffers (trace_file.c) */
	_Atomic int state[2];    /* free, filling, ready for the writer, being written */
	int cur;
	uint64_t dropped;        /* events dropped, not yet written in a DROPPED record */
	uint64_t edge;           /* create edge this thread was started with */
	int ended, scratch;      /* stream closed; calibration stand-in (anonymous buffer) */
	int closing;             /* writing the closing records: the kept room is open */
	int failed;              /* no new chunk could be had: events are dropped and counted */
	uint64_t *scratch_buf;
	struct rt_rate *rate;    /* by function id, mapped when rate throttling is on */
	uint32_t nrated;
	uint32_t rated[RT_RATED_MAX]; /* ids that have had calls counted */
	struct rt_tcache cache[RT_TCACHE];
	uint64_t open[RT_TSTACK]; /* id words of the innermost open calls, by depth */
};

struct rt_counter {
	const char *name;
	uint64_t count;
	double sum, min, max;
};

struct rt_phase {
	const char *name;
	uint64_t start, end; /* ticks */
};

#define RT_MAX_COUNTERS 64
#define RT_JMPS 16 /* jump buffers remembered per thread (setjmp trampolines) */
#define RT_SAMPLES 128 /* in-run calibration batches kept per thread */

struct rt_jmp {
	const void *env;
	uint32_t depth;    /* frames open when setjmp ran */
	uint64_t overflow; /* calls open beyond the depth limit then */
};
#define RT_MAX_PHASES 256

/* A call of a probe in the hot function's code (insitu_bare.c): where, its length, its bytes. */
struct rt_bare_site {
	uintptr_t at;
	uint8_t len, old[7];
};

/* The hot function's probe calls, taken out of its code for bare windows (insitu_bare.c). */
#define RT_BARE_EXITS 8
struct rt_bare {
	int state;               /* 0 not tried, 1 usable (with an exit site), -1 not */
	int active;              /* the sites are rewritten now */
	uint32_t nexits;
	uintptr_t stub;          /* the counting stub the exit sites call in a bare window */
	const struct rt_module *module; /* the function's */
	double stub_ns;          /* a call of the stub in a loop of them (insitu_bare.c) */
	struct rt_bare_site enter, exits[RT_BARE_EXITS];
};

/* The probes' price in situ (insitu.c, `sonde run --insitu`): one hot leaf node per thread. */
#define RT_INSITU_PAIRS 64
struct rt_insitu {
	struct rt_node *node;    /* the hot leaf whose calls are timed; NULL until one is hot */
	uint32_t state;          /* idle, in a measured window (A), in an unmeasured one (B) */
	uint32_t idle;           /* periodic hits of the node since the last pair */
	uint64_t t0, c0, s0, calib0; /* the window's start: ticks, CPU ns, skips, calib_ticks */
	uint64_t wake0;          /* ... and the thread's wake_ticks (--sync) */
	struct insitu_sync sync0, sync_a; /* --sync's counters at the window's start, in A */
	uint64_t wall_a;         /* the measured window, ticks (a B window's time limit) */
	double cpu_a;            /* the measured window's CPU time, ns */
	long ivcsw0;             /* involuntary context switches at the pair's start */
	uint32_t npairs, rejected, status, done;
	uint32_t holding;        /* it holds its node's function's throttle (insitu_hold) */
	uint32_t preempted;      /* pairs that saw an involuntary context switch */
	uint64_t b_calls;        /* the node's calls left unmeasured in B windows */
	double price_ns;         /* the live price when judged usable, else 0 */
	float pairs[RT_INSITU_PAIRS]; /* the pairs' estimates, ns */
	uint32_t bare_pairs;     /* of them, those whose unmeasured window was bare */
	uint32_t strays;         /* exits of the function that reached the probe in a bare window */
	struct rt_bare bare;
};

struct rt_thread {
	struct rt_frame *top;    /* current frame; frames[0] is the thread's root */
	struct rt_frame *limit;  /* last usable frame (depth limit) */
	_Atomic uint32_t slow;   /* RT_SLOW_*: set by this thread, REFRESH also by others */
	struct rt_frame *frames;
	size_t frames_cap;
	struct rt_node *root;
	struct rt_node *free, *free_end; /* node arena */
	struct rt_chunk *chunks, *chunk_last; /* in allocation order */
	uint32_t nnodes;
	uint32_t index;
	pid_t tid;
	uint64_t start, end;     /* ticks */
	uint64_t cpu_end;
	uint64_t overflow;       /* calls currently open beyond the frame stack */
	uint64_t depth_skips, lost_calls;
	_Atomic int exited;
	struct rt_thread *next;  /* global list, push-only */
	uint32_t ncounters, nphases, jmp_next;
	struct rt_jmp jmps[RT_JMPS];
	/* in-run calibration (probe.c: sample_costs): batches spread over the whole run */
	int scratch;                 /* this is a calibration stand-in, not a program thread */
	struct rt_thread *calib;     /* this thread's stand-in, made on first use */
	uint64_t calib_ticks;        /* the runtime's own time (calibrating, --insitu's windows),
				      * kept out of every interval (rt_keep_out) */
	uint32_t nsamples, sample_every, sample_tick;
	float sample_full[RT_SAMPLES], sample_in[RT_SAMPLES];
	struct rt_counter counters[RT_MAX_COUNTERS];
	struct rt_phase phases[RT_MAX_PHASES];
	uint64_t probes, skips;      /* probe pairs run, measured and unmeasured (compensation) */
	uint64_t insitu_until;       /* --insitu: skips at which an unmeasured window ends; 0 none */
	struct rt_insitu insitu;
	struct rt_sync_thread sync;  /* shared-memory compensation (sync_comp.c) */
	struct rt_trace tr;
};

/* Whether a thread measures CPU time too: its slow flags are the one place that says so. */
static inline int rt_thread_cpu(const struct rt_thread *t)
{
	return (atomic_load_explicit(&t->slow, memory_order_relaxed) & RT_SLOW_CPU) != 0;
}

extern RT_TLS struct rt_thread *rt_self;
extern RT_TLS int rt_busy; /* recursion guard while the runtime itself runs */
extern _Atomic(struct rt_thread *) rt_threads;

struct rt_thread *rt_thread_attach(void);
struct rt_thread *rt_thread_new(int publish);
void rt_thread_release(struct rt_thread *t);
void rt_thread_finish(struct rt_thread *t, uint64_t now);
void rt_thread_after_fork(void);
void rt_threads_restart(void); /* an attached runtime's next profile (attached.c) */
struct rt_node *rt_node_child(struct rt_thread *t, struct rt_node *parent, uintptr_t fn,
			      int kind, const char *name);
void rt_unwind_to(struct rt_thread *t, struct rt_frame *keep, uint64_t now);
void rt_thread_init_keys(void);
const struct rt_chunk *rt_chunk_next(const struct rt_chunk *c);
uint32_t rt_chunk_used(const struct rt_chunk *c);
const struct rt_node *rt_chunk_node(const struct rt_chunk *c, uint32_t i);

/* ---- probes (probe.c) ---- */
void rt_close_frame(struct rt_thread *t, uint64_t now, uint64_t cpu_now);
void rt_keep_out(struct rt_thread *t, uint64_t ticks); /* the runtime's own time, out */
void rt_threads_refresh(void);
void rt_probe_set_throttle_mask(uint64_t mask);
extern uint32_t rt_sample_every; /* periodic checks between two in-run calibrations */

/* ---- the probes' price in situ (insitu.c) ---- */
extern int rt_insitu_on;
void rt_insitu_init(void);
void rt_insitu_tick(struct rt_thread *t, struct rt_node *n, uint64_t now, uintptr_t ret);
void rt_insitu_b_end(struct rt_thread *t);
double rt_insitu_price(const struct rt_thread *t); /* ns per measured pair, live */
double rt_insitu_skip_price(const struct rt_thread *t); /* ns per unmeasured call, live */
double rt_insitu_final_price(const struct rt_thread *t); /* as written in INSITU, or CALIB's */
double rt_insitu_mean_price(void); /* over the threads, weighted by their measured pairs */
uint64_t rt_probe_window(void); /* calls between two periodic checks of a node */
void rt_insitu_after_fork(struct rt_thread *t);
void rt_insitu_finish(struct rt_thread *t);
void rt_insitu_stray_exit(struct rt_thread *t, uintptr_t fn, uintptr_t ret);
int rt_bare_prepare(struct rt_bare *b, const struct rt_func *f, void (*end)(void));
int rt_bare_note_exit(struct rt_bare *b, uintptr_t ret);
int rt_bare_begin(struct rt_bare *b, int64_t calls);
void rt_bare_end(struct rt_bare *b);
int64_t rt_bare_left(void);
/* The profile runtime's probes (probe.c) by their names inside the library: a runtime loaded
 * by dlopen would find glibc's empty __cyg_profile_func_* under the others. */
void rt_probe_enter(void *fn, void *site) __attribute__((visibility("hidden")));
void rt_probe_exit(void *fn, void *site) __attribute__((visibility("hidden")));
struct writer;
void rt_insitu_write(struct writer *w);

/* ---- event traces (trace.c) ---- */
extern int rt_trace_on; /* probes record events instead of profiling */
void rt_trace_init(void);
void rt_trace_thread_begin(struct rt_thread *t);
void rt_trace_thread_end(struct rt_thread *t);
int rt_trace_end(int reason, int signo, uint64_t now);
void rt_tfile_rewrite_header(void);
void rt_trace_after_fork(void);
void rt_trace_slow(struct rt_thread *t, unsigned type, uintptr_t fn, int kind, const char *name);
void rt_trace_record(struct rt_thread *t, unsigned type, uint32_t id, const uint64_t *payload,
		     unsigned nwords);
void rt_trace_record_at(struct rt_thread *t, unsigned type, uint32_t id, const uint64_t *payload,
			unsigned nwords, uint64_t now);
void rt_trace_long(struct rt_thread *t, unsigned type, const void *payload, uint32_t bytes);
uint32_t rt_trace_name_id(const char *name);
void rt_trace_unwind(struct rt_thread *t, uint32_t depth);
int rt_trace_scratch(struct rt_thread *t);
uint64_t rt_trace_exit_ticks(const struct rt_thread *t);
void rt_trace_scratch_rewind(struct rt_thread *t);
void rt_trace_release(struct rt_thread *t);
void rt_trace_set_edge(uint64_t edge);
#define RT_TRACE_CLOSING 1024 /* bytes kept free in a chunk for the records ending a stream */
int rt_tfile_open(int with_writer);
int rt_tfile_after_fork(void);
int rt_tfile_ok(void);
int rt_tchunk_next(struct rt_thread *t);
void rt_tchunk_last(struct rt_thread *t, uint32_t flags);
void rt_tfile_finish(void);

/* ---- configuration (init.c) ---- */
struct rt_config {
	char dir[512];
	uint32_t depth;           /* frames kept per thread, at most */
	uint64_t throttle_calls;  /* 0: throttling off */
	uint64_t throttle_ticks;  /* per-call inclusive time under which to throttle */
	int cpu, follow_exec, precise;
	int trace, trace_drop;
	uint64_t trace_chunk;     /* bytes per trace chunk (per-thread buffer) */
	uint64_t trace_rate;      /* events per second per function before counting; 0: off */
};
extern struct rt_config rt_cfg;
extern _Atomic int rt_ready;
extern _Atomic int rt_used; /* some probe ran: worth writing a profile */
extern pid_t rt_pid;
extern uint64_t rt_start_ticks;

/*
 * How the runtime came in (init.c). PROFILE: preloaded by `sonde run`, profiles or traces.
 * DYNAMIC: preloaded by `sonde run --dynamic` (SONDE_DYNAMIC=1): the same, and the control server
 * from the start (the tool's points feed the profile). ATTACHED: loaded by dlopen into a running
 * process (or by `sonde calibrate`): it installs no signal handler, changes no environment and
 * writes nothing on its own.
 */
#define RT_MODE_PROFILE 0
#define RT_MODE_DYNAMIC 1
#define RT_MODE_ATTACHED 2
extern int rt_mode;

/* ---- dynamic instrumentation's control server (dyn/server.c) ---- */
int dyn_server_start(const char *ctl_dir, int at_start);
void dyn_server_unlink(void);
void dyn_server_hold(unsigned seconds); /* until the tool's RESUME */
void dyn_server_final(void);            /* the process is ending: a last sample to the tool */
void dyn_server_after_fork(void);       /* in a forked child */
extern _Atomic int dyn_profile_live;    /* PROFILE actions reach the probes (dyn/point.c) */

/* ---- an attached runtime while a tool is connected (attached.c) ---- */
/* PROFILE_BEGIN: profile from now, into dir. 0, or -1 and why. */
int rt_attached_profile_begin(const char *dir, const char **why);
/* PROFILE_END, the client gone, the process ending: the profile written (reason, signo). 0 also
 * when none was being made; -1 and why when it could not be written. */
int rt_attached_profile_end(int reason, int signo, const char **why);
/* A tool connected (1) or went (0): the process's end is caught meanwhile. */
void rt_attached_client(int connected);
void rt_attached_after_fork(void);
/* At exit (the destructor): a profile being made is written. */
void rt_attached_exit(void);

/* ---- calibration (calibrate.c) ---- */
extern struct sprof_calib rt_calib;
/* A pair's cost around latency-bound work (calibrate.c; batches 0 when not measured) */
#define RT_CALIB_CHAIN_STEPS 16
extern struct sprof_overlap rt_overlap;
/* rt_calib was measured through dynamic instrumentation's trampolines (sonde run --dynamic) */
extern int rt_calib_dyn;
/* calibrate.c's stand-ins through trampolines with PROFILE points (calib_dyn.c). */
struct rt_calib_dyn_fns {
	void (*measured)(void), (*excluded)(void), (*plain)(void); /* what calibrate.c calls */
	uintptr_t measured_addr, excluded_addr; /* the functions measured, inside those */
	int pairs;                              /* probe pairs (calls of them) per call */
};
int rt_calib_dyn_standins(struct rt_calib_dyn_fns *out); /* 0, or -1 */
void rt_calibrate(struct sprof_calib *out, int cpu);
void rt_calibrate_clock(struct sprof_calib *out);
void rt_calibrate_overlap(struct sprof_overlap *out);
void rt_trimmed_stats(double *v, int n, double *mean, double *sd);
int rt_calib_sample(struct rt_thread *scratch, double *full, double *in);

void rt_read_cmdline(void); /* into rt_cmdline (init.c) */

/* ---- writing the profile (writer.c) ---- */
int rt_write_profile(int end_reason, int signo);
struct sprof_buf *rt_writer_record(struct writer *w, uint32_t type, uint32_t size);
void rt_unwrite_profile(void);
void rt_writer_after_fork(void);
extern char rt_cmdline[];
extern size_t rt_cmdline_len;
extern uint64_t rt_start_unix_ns;

/* For records longer than the writer's buffer (io.c): the header alone, then the payload in
 * pieces of at most 64 KiB, each from rt_writer_room. */
void rt_writer_header(struct writer *w, uint32_t type, uint32_t size);
struct sprof_buf *rt_writer_room(struct writer *w, size_t n);

/* ---- I/O, operating system, hardware counters (io.c, os.c, hw.c; issue 5) ---- */
void rt_io_init(void);
void rt_io_write(struct writer *w);
void rt_os_init(void);
void rt_os_start(void);
void rt_os_thread_end(struct rt_thread *t);
void rt_os_phase(struct rt_thread *t);
void rt_os_end(struct rt_thread *self, uint64_t now);
void rt_os_write(struct writer *w);
void rt_hw_init(void);
void rt_hw_write(struct writer *w);
void rt_mpi_write(struct writer *w); /* the MPI wrappers' records, if loaded (mpi_link.c) */

/* ---- interposed libc functions (wrap.c, arch/x86_64/setjmp.S) ---- */
void rt_wrap_init(void);
/* dlsym(RTLD_NEXT, name) as the runtime's own work: dlsym takes the loader's lock, which is
 * libc's pthread_mutex_lock, and points there (lock_ops) must not count the runtime's calls. */
void *rt_next_symbol(const char *name);
void *rt_note_setjmp(const void *env, int which);

/* ---- small async-signal-safe helpers (util.c) ---- */
size_t rt_strlen(const char *s);
char *rt_stpcpy(char *dst, const char *src, const char *end);
char *rt_utoa(char *dst, uint64_t v, const char *end);
void *rt_map(size_t bytes);
void rt_unmap(void *p, size_t bytes);
void rt_log(const char *msg);
int rt_write_all(int fd, const void *buf, size_t n);

/* ---- statistical sampling (sample*.c; docs/runtime.md, "Sampling") ---- */
struct writer;
extern int rt_sample_on; /* sonde run --sample: per-thread CPU-time timers are armed */
int rt_sample_only(void); /* the program has no probes (SONDE_SAMPLE_ONLY): no probe calibration */
void rt_sample_init(void);
void rt_sample_thread_start(void);
void rt_sample_stop(void);
void rt_sample_resume(void);
void rt_sample_after_fork(void);
void rt_sample_write(struct writer *w);

/* runtime/dyn/point.c: a sonde.h phase marker, for a tool following phases live. */
void dyn_note_phase(const char *name);

#endif
