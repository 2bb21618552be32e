/* SPDX-License-Identifier: MIT */
/*
 * The target's memory (/proc/PID/mem) and remote execution on its call thread: a function call
 * under the System V ABI that returns to address 0 (the fault tells us it returned), and a
 * system call executed by single-stepping a `syscall` instruction found in libc's text.
 * The thread's general registers and its x87/SSE/AVX state are put back exactly.
 */
#include "internal.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define RED_ZONE 128
#define SCRATCH_MAX 65536
#define XSTATE_MAX 32768
#define FLAG_TF 0x100
#define FLAG_DF 0x400

int target_read(struct target *t, uint64_t addr, void *buf, size_t len)
{
	size_t done = 0;

	if (t->mem_fd < 0)
		return tgt_fail(t, "not attached");
	while (done < len) {
		ssize_t n = pread(t->mem_fd, (char *)buf + done, len - done, (off_t)(addr + done));

		if (n <= 0)
			return tgt_fail(t, "cannot read %zu bytes at 0x%llx in process %d: %s", len,
					(unsigned long long)addr, t->pid,
					n < 0 ? strerror(errno) : "unmapped");
		done += (size_t)n;
	}
	return 0;
}

int target_write(struct target *t, uint64_t addr, const void *buf, size_t len)
{
	size_t done = 0;

	if (t->mem_fd < 0)
		return tgt_fail(t, "not attached");
	while (done < len) {
		ssize_t n = pwrite(t->mem_fd, (const char *)buf + done, len - done,
				   (off_t)(addr + done));

		if (n <= 0)
			return tgt_fail(t, "cannot write %zu bytes at 0x%llx in process %d: %s", len,
					(unsigned long long)addr, t->pid,
					n < 0 ? strerror(errno) : "unmapped");
		done += (size_t)n;
	}
	return 0;
}

static struct target_thread *call_thread(struct target *t)
{
	struct target_thread *th;

	if (!t->attached || t->call >= t->nthreads) {
		tgt_fail(t, "not attached");
		return NULL;
	}
	th = &t->threads[t->call];
	if (!th->stopped) {
		tgt_fail(t, "thread %d is not stopped", th->tid);
		return NULL;
	}
	return th;
}

int target_scratch(struct target *t, const void *data, size_t len, uint64_t *addr)
{
	struct target_thread *th = call_thread(t);
	uint64_t need = ((uint64_t)len + 15) & ~15ull;

	if (!th)
		return -1;
	if (t->scratch + need > SCRATCH_MAX)
		return tgt_fail(t, "more than %d bytes of data for remote calls", SCRATCH_MAX);
	t->scratch += need;
	*addr = ((th->regs.rsp - RED_ZONE) & ~15ull) - t->scratch;
	return target_write(t, *addr, data, len);
}

void target_scratch_reset(struct target *t)
{
	t->scratch = 0;
}

/* The thread's vector state (XSAVE area, else the legacy FXSAVE one). */
struct fpstate {
	int xsave;
	struct iovec iov;
	struct user_fpregs_struct fx;
};

static int save_fp(struct target *t, pid_t tid, struct fpstate *fp)
{
	fp->iov.iov_base = xmalloc(XSTATE_MAX);
	fp->iov.iov_len = XSTATE_MAX;
	fp->xsave = ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &fp->iov) == 0;
	if (fp->xsave)
		return 0;
	free(fp->iov.iov_base);
	fp->iov.iov_base = NULL;
	if (ptrace(PTRACE_GETFPREGS, tid, 0, &fp->fx) == 0)
		return 0;
	return tgt_fail(t, "cannot read the vector registers of thread %d: %s", tid,
			strerror(errno));
}

/* Registers and vector state back as they were before the remote execution. */
static int restore(struct target *t, struct target_thread *th, struct fpstate *fp)
{
	int r = 0;

	if (th->stopped) {
		if (fp && fp->xsave)
			r |= ptrace(PTRACE_SETREGSET, th->tid, (void *)NT_X86_XSTATE, &fp->iov);
		else if (fp)
			r |= ptrace(PTRACE_SETFPREGS, th->tid, 0, &fp->fx);
		r |= ptrace(PTRACE_SETREGS, th->tid, 0, &th->regs);
	}
	if (fp)
		free(fp->iov.iov_base);
	if (r)
		return tgt_fail(t, "cannot restore the registers of thread %d: %s", th->tid,
				strerror(errno));
	return 0;
}

static int is_fault(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
	       sig == SIGTRAP;
}

/* The remote code itself faulted (the kernel's signal, not one sent by someone). */
static int crashed(struct target *t, struct target_thread *th, int sig,
		   const struct user_regs_struct *r)
{
	siginfo_t si;

	if (!is_fault(sig) || ptrace(PTRACE_GETSIGINFO, th->tid, 0, &si) != 0 || si.si_code <= 0)
		return 0;
	tgt_fail(t, "the remote call crashed in process %d: %s at 0x%llx (address %p); the "
		 "thread's registers were restored", t->pid, strsignal(sig),
		 (unsigned long long)r->rip, si.si_addr);
	return 1;
}

/* It does not come back in time: interrupt it, so that the caller can restore it. */
static int timed_out(struct target *t, struct target_thread *th)
{
	int status;

	th->stopped = 0;
	if (ptrace(PTRACE_INTERRUPT, th->tid, 0, 0) == 0 &&
	    tgt_wait_serving(t, th->tid, &status, 1000) == 0 && WIFSTOPPED(status)) {
		th = &t->threads[t->call];
		th->stopped = 1;
		th->sigstop = (status >> 16) == 0;
		if (th->sigstop)
			tgt_keep_signal(th);
	}
	return tgt_fail(t, "a remote call in process %d did not return within %u ms (a deadlock "
			"in the target?): interrupted, it may have left the program inconsistent",
			t->pid, t->call_timeout_ms);
}

/* One stop of the call thread: 1 it is where we want it, 0 go on, -1 failure. */
static int judge_stop(struct target *t, struct target_thread *th, int status, int want_sig,
		      uint64_t want_pc, struct user_regs_struct *out)
{
	int sig = WSTOPSIG(status);

	th->stopped = 1;
	th->sigstop = (status >> 16) == 0;
	if (!th->sigstop)
		return 0; /* an interrupt or a group-stop: go on */
	if (ptrace(PTRACE_GETREGS, th->tid, 0, out) != 0)
		return tgt_fail(t, "cannot read the registers of thread %d", th->tid);
	if (sig == want_sig && out->rip == want_pc)
		return 1;
	if (crashed(t, th, sig, out))
		return -1;
	tgt_keep_signal(th);
	return 0;
}

/* Run the call thread (CONT or SINGLESTEP) until it stops with want_sig at want_pc; any other
 * signal on the way is kept for the thread and suppressed for now. The other threads may be
 * running meanwhile (target_resume_others): their stops are passed through. */
static int run_until(struct target *t, enum __ptrace_request how, int want_sig, uint64_t want_pc,
		     struct user_regs_struct *out)
{
	uint64_t end = tgt_now_ns() + (uint64_t)t->call_timeout_ms * 1000000ull;
	pid_t tid = t->threads[t->call].tid;
	int status, r, j = 0;

	while (j == 0) {
		uint64_t now = tgt_now_ns();

		if (ptrace(how, tid, 0, 0) != 0)
			return tgt_fail(t, "cannot run thread %d: %s", tid, strerror(errno));
		t->threads[t->call].stopped = 0;
		r = now < end ? tgt_wait_serving(t, tid, &status,
						 (unsigned)((end - now) / 1000000)) : 1;
		if (r > 0)
			return timed_out(t, &t->threads[t->call]);
		if (r < 0 || !WIFSTOPPED(status))
			return tgt_fail(t, "process %d ended during a remote call", t->pid);
		j = judge_stop(t, &t->threads[t->call], status, want_sig, want_pc, out);
	}
	return j > 0 ? 0 : -1;
}

static void set_args(struct user_regs_struct *r, const uint64_t *a, int n, int syscall)
{
	unsigned long long *slot[6] = { &r->rdi, &r->rsi, &r->rdx,
					syscall ? &r->r10 : &r->rcx, &r->r8, &r->r9 };
	int i;

	for (i = 0; i < n; i++)
		*slot[i] = a[i];
}

int target_call(struct target *t, uint64_t fn, const uint64_t *args, int nargs, uint64_t *ret)
{
	struct target_thread *th = call_thread(t);
	struct user_regs_struct r, out;
	struct fpstate fp;
	uint64_t sp, zero = 0;
	int rc;

	if (!th)
		return -1;
	if (nargs < 0 || nargs > 6)
		return tgt_fail(t, "remote calls take at most 6 arguments");
	if (save_fp(t, th->tid, &fp) != 0)
		return -1;
	r = th->regs;
	sp = (((th->regs.rsp - RED_ZONE) & ~15ull) - t->scratch - 64) & ~15ull;
	sp -= 8; /* the return address: as after a call, rsp + 8 is 16-byte aligned */
	rc = target_write(t, sp, &zero, sizeof(zero));
	r.rsp = sp;
	r.rip = fn;
	r.rax = 0; /* no vector arguments, for variadic functions */
	r.orig_rax = (unsigned long long)-1; /* no system call restart on the way in */
	r.eflags &= ~(unsigned long long)(FLAG_DF | FLAG_TF);
	set_args(&r, args, nargs, 0);
	if (rc == 0 && ptrace(PTRACE_SETREGS, th->tid, 0, &r) != 0)
		rc = tgt_fail(t, "cannot set the registers of thread %d: %s", th->tid,
			      strerror(errno));
	if (rc == 0)
		rc = run_until(t, PTRACE_CONT, SIGSEGV, 0, &out);
	if (restore(t, &t->threads[t->call], &fp) != 0)
		return -1;
	if (rc == 0 && ret)
		*ret = out.rax;
	return rc;
}

/* Any `0f 05` in libc's text will do: the CPU decodes from wherever rip points. */
int tgt_find_syscall_insn(struct target *t)
{
	static const char *const libc[] = { "libc.so.", "libc-2.", NULL };
	struct target_module m;
	unsigned char buf[65536];
	uint64_t a;

	if (target_find_module(t, libc, &m) != 0)
		return -1;
	for (a = m.text_start; a < m.text_end; a += sizeof(buf) - 1) {
		size_t n = m.text_end - a < sizeof(buf) ? m.text_end - a : sizeof(buf);
		unsigned char *p;

		if (target_read(t, a, buf, n) != 0)
			return -1;
		p = memmem(buf, n, "\x0f\x05", 2);
		if (p) {
			t->syscall_insn = a + (uint64_t)(p - buf);
			return 0;
		}
	}
	return tgt_fail(t, "no syscall instruction in %s", m.path);
}

int target_syscall(struct target *t, long nr, const uint64_t *args, int nargs, uint64_t *ret)
{
	struct target_thread *th = call_thread(t);
	struct user_regs_struct r, out;
	int rc = 0;

	if (!th)
		return -1;
	if (nargs < 0 || nargs > 6)
		return tgt_fail(t, "system calls take at most 6 arguments");
	if (!t->syscall_insn && tgt_find_syscall_insn(t) != 0)
		return -1;
	r = th->regs;
	r.rip = t->syscall_insn;
	r.rax = (unsigned long long)nr;
	r.orig_rax = (unsigned long long)-1;
	r.eflags &= ~(unsigned long long)FLAG_TF;
	set_args(&r, args, nargs, 1);
	if (ptrace(PTRACE_SETREGS, th->tid, 0, &r) != 0)
		rc = tgt_fail(t, "cannot set the registers of thread %d: %s", th->tid,
			      strerror(errno));
	if (rc == 0)
		rc = run_until(t, PTRACE_SINGLESTEP, SIGTRAP, t->syscall_insn + 2, &out);
	if (restore(t, &t->threads[t->call], NULL) != 0)
		return -1;
	if (rc == 0)
		*ret = out.rax;
	return rc;
}

static int sys_result(struct target *t, const char *what, uint64_t v)
{
	if (v > (uint64_t)-4096)
		return tgt_fail(t, "%s in process %d failed: %s", what, t->pid,
				strerror((int)-(int64_t)v));
	return 0;
}

int target_mmap(struct target *t, uint64_t addr, uint64_t len, int prot, int flags,
		uint64_t *out)
{
	uint64_t a[6] = { addr, len, (uint64_t)prot, (uint64_t)flags, (uint64_t)-1, 0 };

	if (target_syscall(t, SYS_mmap, a, 6, out) != 0)
		return -1;
	return sys_result(t, "mmap", *out);
}

int target_munmap(struct target *t, uint64_t addr, uint64_t len)
{
	uint64_t a[2] = { addr, len }, v;

	if (target_syscall(t, SYS_munmap, a, 2, &v) != 0)
		return -1;
	return sys_result(t, "munmap", v);
}

int target_mprotect(struct target *t, uint64_t addr, uint64_t len, int prot)
{
	uint64_t a[3] = { addr, len, (uint64_t)prot }, v;

	if (target_syscall(t, SYS_mprotect, a, 3, &v) != 0)
		return -1;
	return sys_result(t, "mprotect", v);
}
