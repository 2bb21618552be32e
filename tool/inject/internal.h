/* SPDX-License-Identifier: MIT */
/* Helpers shared by the files of tool/inject/ (not an API: see target.h and session.h). */
#ifndef SONDE_INJECT_INTERNAL_H
#define SONDE_INJECT_INTERNAL_H

#include "target.h"

#define TGT_STOP_TIMEOUT_MS 2000	/* a thread that does not stop in this time: give up */

/* Fill t->err (one line); returns -1. */
int tgt_fail(struct target *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t tgt_now_ns(void);

/* The next state change of tid within timeout_ms: 0 and *status, 1 on timeout, -1 (errno). */
int tgt_wait(pid_t tid, int *status, unsigned timeout_ms);
/* Waiting for the call thread while the others run: their stops are passed through. */
int tgt_wait_serving(struct target *t, pid_t tid, int *status, unsigned timeout_ms);
void tgt_pass_stops(struct target *t, pid_t skip);
/* Keep a signal that the tracer took from a thread, to give it back on release. */
void tgt_keep_signal(struct target_thread *th);
void tgt_remove_thread(struct target *t, struct target_thread *th);
/* A thread that has exited, or is no more. */
int tgt_thread_is_zombie(pid_t pid, pid_t tid);

/* Checks before seizing: the process exists, is ours to trace, is a dynamic x86-64 program. */
int tgt_preflight(struct target *t);
/* Why PTRACE_SEIZE of the process failed with errno err (EPERM: owner, Yama, dumpable). */
int tgt_explain_seize(struct target *t, int err);

/* /proc/PID/status fields. */
struct proc_status {
	char name[64];
	char state;
	pid_t tgid, tracer;
	unsigned uid[4];	/* real, effective, saved, filesystem */
};
int tgt_proc_status(pid_t pid, struct proc_status *st);

/* Modules by sets of base name prefixes, in one pass over the maps (at most 8); a module
 * that is not there has an empty path. */
int tgt_find_modules(struct target *t, const char *const *const *sets, int n,
		     struct target_module *out);

/* ELF files, through libelf. */
int tgt_elf_symbols(const char *file, const char *const *names, int n, uint64_t *vals,
		    uint64_t *sizes);
/* Page-aligned vaddr of the PT_LOAD that maps file offset 0. */
int tgt_elf_base_vaddr(const char *file, uint64_t *vaddr);
/* The file of a module as the tool can open it (through /proc/PID/root). */
void tgt_module_file(const struct target *t, const struct target_module *m, char *out,
		     size_t cap);

/* Remote calls go to a thread with min_room bytes of stack below its red zone (not one on a
 * small signal stack) for which usable() says yes: the main thread if it can. 0 chosen, 1 no
 * thread will do, -1 error. */
int tgt_choose_call_thread(struct target *t, uint64_t min_room,
			   int (*usable)(struct target *, const struct target_thread *, void *),
			   void *arg);

/* Where the call thread may put a `syscall` instruction: found in libc's text. */
int tgt_find_syscall_insn(struct target *t);

#endif
