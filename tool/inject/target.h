/* SPDX-License-Identifier: MIT */
/*
 * Process control of a running target (docs/dynamic.md, tool/inject/README.md): stop every
 * thread with ptrace, read and write its memory, call functions and system calls in it, load
 * a library into it, and let it go exactly as it was.
 *
 * Functions return 0 (or a value) on success and -1 on failure, with a one-line reason in
 * target_error() (no "sonde:" prefix: the caller adds its own context).
 */
#ifndef SONDE_INJECT_TARGET_H
#define SONDE_INJECT_TARGET_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#define TARGET_MAX_SIGS 8	/* signals a thread may have intercepted between resumes */
#define TARGET_ERR 512

/* One thread of the target, while the target is stopped. */
struct target_thread {
	pid_t tid;
	struct user_regs_struct regs;	/* as it stopped (target_set_pc changes rip) */
	int stopped;			/* in a ptrace-stop */
	int sigstop;			/* that stop is a signal-delivery-stop (a signal can be given) */
	int nsig;			/* signals taken from it while traced: given back on release */
	siginfo_t sig[TARGET_MAX_SIGS];
};

/* A module (executable or library) mapped in the target. */
struct target_module {
	char path[4096];		/* as /proc/PID/maps names it */
	uint64_t bias;			/* load bias: runtime address = ELF vaddr + bias */
	uint64_t text_start, text_end;	/* lowest and highest address of its executable mappings */
};

struct target {
	pid_t pid;
	char proc[48];			/* "/proc/PID", or a live thread's dir if the leader exited */
	int mem_fd;			/* /proc/PID/mem, read-write */
	int attached;			/* threads are seized */
	int stopped;			/* every seized thread is in a ptrace-stop */
	struct target_thread *threads;
	int nthreads, cap;
	int call;			/* index of the thread that runs remote calls */
	uint64_t scratch;		/* bytes reserved below the call thread's red zone */
	uint64_t syscall_insn;		/* address of a `syscall` (0f 05) in the target, 0: unknown */
	uint64_t stop_ns;		/* when the current stop began (CLOCK_MONOTONIC) */
	uint64_t paused_ns;		/* total time the threads were held stopped */
	unsigned call_timeout_ms;	/* a remote call that does not return in time fails */
	int busy_waits;			/* brief resumes target_inject needed (a thread was busy) */
	pid_t load_tid;			/* target_inject: the thread that loaded the library, */
	uint64_t load_ns;		/* for this long (the others running unless hold_world) */
	sigset_t old_mask;		/* the tool's signal mask before attaching */
	char err[TARGET_ERR];
};

/* Why the last call failed (one line). */
const char *target_error(const struct target *t);

/*
 * Seize every thread of process pid (re-reading /proc/PID/task until no new thread appears),
 * interrupt each and wait until all are stopped; read their registers. The process must be
 * a dynamically linked x86-64 process that nobody else traces; PID 1 is refused. On failure
 * nothing stays attached and err holds the reason (e.g. ptrace not permitted and why).
 */
int target_attach(struct target *t, pid_t pid, char *err, size_t errlen);
/* Let every thread run on, still traced (signals are passed through by target_run_for). */
int target_resume(struct target *t);
/* Let every thread but the call thread run: remote calls then wait for no lock that a
 * stopped thread holds; the others' signals are passed through while a call runs. */
int target_resume_others(struct target *t);
/* Stop every thread again (threads created meanwhile are seized too). */
int target_stop(struct target *t);
/*
 * Resume for ms milliseconds, passing signals through to the threads, then stop again.
 * 0 after the time; 1 when the process ended meanwhile (nothing is held any more); 2 when one
 * of the signals in wake (blocked by the caller, may be NULL) came to the tool first.
 */
int target_run_for(struct target *t, unsigned ms, const sigset_t *wake);
/* Let go of every thread: registers as last set, intercepted signals given back. Running
 * threads are stopped one by one and let go at once (the world need not be stopped). */
int target_detach(struct target *t);

/* Registers: written back immediately (the thread must be stopped). */
int target_set_regs(struct target *t, struct target_thread *th);
int target_set_pc(struct target *t, struct target_thread *th, uint64_t pc);
struct target_thread *target_thread_by_tid(struct target *t, pid_t tid);

/* Memory through /proc/PID/mem (writes reach read-only text: copy-on-write for a tracer). */
int target_read(struct target *t, uint64_t addr, void *buf, size_t len);
int target_write(struct target *t, uint64_t addr, const void *buf, size_t len);

/*
 * Data for the next remote calls, copied below the call thread's red zone; *addr receives its
 * address in the target. Valid until target_scratch_reset or the next resume.
 */
int target_scratch(struct target *t, const void *data, size_t len, uint64_t *addr);
void target_scratch_reset(struct target *t);

/*
 * Call fn(args[0..nargs-1]) (System V, integer arguments, nargs <= 6) on the call thread and
 * put its rax in *ret. The thread's registers and its vector state are restored exactly after.
 * Fails if the function faults, if the process ends, or after call_timeout_ms.
 */
int target_call(struct target *t, uint64_t fn, const uint64_t *args, int nargs, uint64_t *ret);
/* A system call on the call thread; *ret is the kernel's rax (-4095..-1: -errno). */
int target_syscall(struct target *t, long nr, const uint64_t *args, int nargs, uint64_t *ret);
int target_mmap(struct target *t, uint64_t addr, uint64_t len, int prot, int flags,
		uint64_t *out);
int target_munmap(struct target *t, uint64_t addr, uint64_t len);
int target_mprotect(struct target *t, uint64_t addr, uint64_t len, int prot);

/* Modules mapped in the target (fresh from /proc/PID/maps): by base name prefix. */
int target_find_module(struct target *t, const char *const *prefixes,
		       struct target_module *out);
/* Every ELF module of process pid with executable mappings (fresh from /proc/PID/maps, no
 * ptrace needed), with its load bias and code span; *out is malloc'd. 0, or -1 with err. */
int target_list_modules(pid_t pid, struct target_module **out, int *n, char *err,
			size_t errlen);
/* A symbol's runtime address in a module: its ELF dynamic symbol table plus the bias. */
int target_module_symbol(struct target *t, const struct target_module *m, const char *name,
			 uint64_t *addr, uint64_t *size);
/* Many at once (one pass over the table); a missing symbol gets address 0. */
int target_module_symbols(struct target *t, const struct target_module *m,
			  const char *const *names, int n, uint64_t *addrs, uint64_t *sizes);

/*
 * Load a library with dlopen(path, RTLD_NOW) and call its int entry(const char *arg), on a
 * thread that is neither in the dynamic loader nor in libc's malloc family (after a few brief
 * resumes, refuses when there is none). Meanwhile the other threads run, so that dlopen waits
 * for no lock that a stopped thread holds; the world is stopped again at the end (hold_world:
 * the others stay stopped, and every thread must be out of the loader and malloc).
 * *entry_ret receives the entry's return value.
 */
struct target_libc;	/* what an injection needs of the target's libc and loader */

struct target_inject_opts {
	const struct target_libc *libc;	/* from target_libc_resolve, or NULL: resolved now */
	const char *lib;	/* absolute path, readable by the target */
	const char *entry;	/* e.g. "sonde__attach" */
	const char *arg;	/* its argument (a string copied into the target) */
	int retries;		/* brief resumes while no thread will do (default 10) */
	int hold_world;		/* keep the other threads stopped during the calls */
	int leave_running;	/* do not stop the world again after (e.g. to detach at once) */
};
int target_inject(struct target *t, const struct target_inject_opts *o, int *entry_ret);
/* Resolved before the process is stopped, the pause is shorter (ELF symbol tables of libc and
 * the loader: a few tenths of a millisecond). NULL and err on failure. */
struct target_libc *target_libc_resolve(pid_t pid, char *err, size_t errlen);
void target_libc_free(struct target_libc *l);

#endif
