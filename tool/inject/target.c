/* SPDX-License-Identifier: MIT */
/*
 * Stop the world: seize every thread of a process with PTRACE_SEIZE, interrupt each and wait
 * until all are in a ptrace-stop; resume, re-stop and detach them. A signal that arrives while
 * the tracer holds a thread is taken from it (signal-delivery-stop) and given back when the
 * thread is let go, so the process sees every signal it was sent.
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

const char *target_error(const struct target *t)
{
	return t->err;
}

int tgt_fail(struct target *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->err, sizeof(t->err), fmt, ap);
	va_end(ap);
	return -1;
}

uint64_t tgt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* SIGCHLD is blocked while attached: a tracee's stop makes it pending, which wakes us.
 * With t, the stops of its running threads (other than tid) are passed through meanwhile. */
static int wait_one(struct target *t, pid_t tid, int *status, unsigned timeout_ms)
{
	uint64_t end = tgt_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);
		uint64_t now, left;
		struct timespec ts;

		if (r == tid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
		if (t && !t->stopped)
			tgt_pass_stops(t, tid);
		now = tgt_now_ns();
		if (now >= end)
			return 1;
		left = end - now < 10000000ull ? end - now : 10000000ull;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)left;
		sigtimedwait(&chld, NULL, &ts);
	}
}

int tgt_wait(pid_t tid, int *status, unsigned timeout_ms)
{
	return wait_one(NULL, tid, status, timeout_ms);
}

int tgt_wait_serving(struct target *t, pid_t tid, int *status, unsigned timeout_ms)
{
	return wait_one(t, tid, status, timeout_ms);
}

struct target_thread *target_thread_by_tid(struct target *t, pid_t tid)
{
	int i;

	for (i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid)
			return &t->threads[i];
	return NULL;
}

void tgt_remove_thread(struct target *t, struct target_thread *th)
{
	int i = (int)(th - t->threads);

	memmove(th, th + 1, (size_t)(t->nthreads - i - 1) * sizeof(*th));
	t->nthreads--;
	if (t->call > i || t->call >= t->nthreads)
		t->call = t->call > 0 ? t->call - 1 : 0;
}

void tgt_keep_signal(struct target_thread *th)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (ptrace(PTRACE_GETSIGINFO, th->tid, 0, &si) != 0)
		return;
	if (th->nsig < TARGET_MAX_SIGS)
		th->sig[th->nsig++] = si;
	/* more than TARGET_MAX_SIGS while held: standard signals would have merged anyway */
}

static struct target_thread *add_thread(struct target *t, pid_t tid)
{
	struct target_thread *th;

	if (t->nthreads == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 16;
		t->threads = xrealloc(t->threads, (size_t)t->cap * sizeof(*t->threads));
	}
	th = &t->threads[t->nthreads++];
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	return th;
}

int tgt_thread_is_zombie(pid_t pid, pid_t tid)
{
	char path[64], buf[256], *p;
	FILE *f;
	int z = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return 1; /* gone */
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) && p[1] == ' ')
		z = p[2] == 'Z' || p[2] == 'X';
	fclose(f);
	return z;
}

/* Seize and interrupt one thread: 1 seized, 0 gone or a zombie, -1 error. */
static int seize_one(struct target *t, pid_t tid)
{
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0) {
		int e = errno;

		if (e == ESRCH || (e == EPERM && tgt_thread_is_zombie(t->pid, tid)))
			return 0;
		if (tid == t->pid || t->nthreads == 0)
			return tgt_explain_seize(t, e);
		return tgt_fail(t, "cannot seize thread %d of process %d: %s", tid, t->pid,
				strerror(e));
	}
	add_thread(t, tid);
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 && errno != ESRCH)
		return tgt_fail(t, "cannot interrupt thread %d: %s", tid, strerror(errno));
	return 1;
}

/* Seize the threads listed in /proc/PID/task that are not held yet; the number seized. */
static int seize_new(struct target *t)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int n = 0, r = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
	d = opendir(path);
	if (!d)
		return tgt_fail(t, "process %d is gone", t->pid);
	while (r >= 0 && (de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);

		if (tid <= 0 || target_thread_by_tid(t, tid))
			continue;
		r = seize_one(t, tid);
		n += r > 0;
	}
	closedir(d);
	return r < 0 ? -1 : n;
}

/* What a wait status means for a held thread: 0 stopped, 1 gone. */
static int note_stop(struct target_thread *th, int status)
{
	if (!WIFSTOPPED(status))
		return 1;
	th->stopped = 1;
	th->sigstop = (status >> 16) == 0;
	if (th->sigstop)
		tgt_keep_signal(th);
	return 0;
}

static int wait_stopped(struct target *t)
{
	int i = 0, status, r;

	while (i < t->nthreads) {
		struct target_thread *th = &t->threads[i];

		if (th->stopped) {
			i++;
			continue;
		}
		r = tgt_wait(th->tid, &status, TGT_STOP_TIMEOUT_MS);
		if (r > 0)
			return tgt_fail(t, "thread %d of process %d did not stop within %d ms "
					"(in an uninterruptible system call?)", th->tid, t->pid,
					TGT_STOP_TIMEOUT_MS);
		if (r < 0 || note_stop(th, status))
			tgt_remove_thread(t, th);
		else
			i++;
	}
	if (t->nthreads == 0)
		return tgt_fail(t, "process %d exited", t->pid);
	return 0;
}

/* Wait until every held thread is stopped and a fresh look at the task list finds no more. */
static int stop_loop(struct target *t)
{
	int n, rounds;

	for (rounds = 0; rounds < 10000; rounds++) {
		if (wait_stopped(t) != 0)
			return -1;
		n = seize_new(t);
		if (n <= 0)
			return n;
	}
	return tgt_fail(t, "process %d keeps creating threads", t->pid);
}

static int read_regs(struct target *t)
{
	int i;

	for (i = 0; i < t->nthreads; i++)
		if (ptrace(PTRACE_GETREGS, t->threads[i].tid, 0, &t->threads[i].regs) != 0)
			return tgt_fail(t, "cannot read the registers of thread %d: %s",
					t->threads[i].tid, strerror(errno));
	return 0;
}

/* Remote calls run on the main thread when it is alive, else on the first one. */
static void pick_call_thread(struct target *t)
{
	struct target_thread *m = target_thread_by_tid(t, t->pid);

	t->call = m ? (int)(m - t->threads) : 0;
	t->scratch = 0;
}

static int stopped_world(struct target *t)
{
	if (stop_loop(t) != 0 || read_regs(t) != 0)
		return -1;
	pick_call_thread(t);
	t->stopped = 1;
	return 0;
}

/* Give a thread its signals back and let it run (or go): the first one injected with its
 * siginfo when the thread sits in a signal-delivery-stop, the others queued again. */
static void release_thread(struct target *t, struct target_thread *th,
			   enum __ptrace_request req)
{
	int i = 0, sig = 0;

	if (th->nsig && th->sigstop &&
	    ptrace(PTRACE_SETSIGINFO, th->tid, 0, &th->sig[0]) == 0)
		sig = th->sig[i++].si_signo;
	for (; i < th->nsig; i++) {
		siginfo_t *si = &th->sig[i];

		if (syscall(SYS_rt_tgsigqueueinfo, t->pid, th->tid, si->si_signo, si) != 0)
			syscall(SYS_tgkill, t->pid, th->tid, si->si_signo);
	}
	ptrace(req, th->tid, 0, (void *)(long)sig);
	th->nsig = 0;
	th->stopped = 0;
	th->sigstop = 0;
}

static void end_stop(struct target *t)
{
	if (t->stopped)
		t->paused_ns += tgt_now_ns() - t->stop_ns;
	t->stopped = 0;
	t->scratch = 0;
}

/* Let go of every thread, each as soon as it is stopped (a running one is interrupted: only
 * a stopped tracee can be detached). Returns the tid of one that never stopped, or 0. */
static pid_t release_all(struct target *t, unsigned wait_ms)
{
	pid_t stuck = 0;
	int i, status, r;

	for (i = 0; i < t->nthreads; i++)
		if (!t->threads[i].stopped)
			ptrace(PTRACE_INTERRUPT, t->threads[i].tid, 0, 0);
	for (i = 0; i < t->nthreads; i++) {
		struct target_thread *th = &t->threads[i];

		r = th->stopped ? 0 : tgt_wait(th->tid, &status, wait_ms);
		if (r == 0 && !th->stopped && note_stop(th, status))
			continue; /* it exited */
		if (r > 0)
			stuck = th->tid; /* traced until sonde exits, which lets it go */
		else if (r == 0)
			release_thread(t, th, PTRACE_DETACH);
	}
	end_stop(t);
	free(t->threads);
	t->threads = NULL;
	t->nthreads = t->cap = 0;
	if (t->mem_fd >= 0)
		close(t->mem_fd);
	t->mem_fd = -1;
	if (t->attached)
		sigprocmask(SIG_SETMASK, &t->old_mask, NULL);
	t->attached = 0;
	return stuck;
}

static int open_mem(struct target *t)
{
	char path[80];

	snprintf(path, sizeof(path), "%s/mem", t->proc);
	t->mem_fd = open(path, O_RDWR | O_CLOEXEC);
	if (t->mem_fd < 0)
		return tgt_fail(t, "cannot open %s: %s", path, strerror(errno));
	return 0;
}

int target_attach(struct target *t, pid_t pid, char *err, size_t errlen)
{
	sigset_t chld;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->mem_fd = -1;
	t->call_timeout_ms = 10000;
	if (tgt_preflight(t) != 0)
		goto fail;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &t->old_mask);
	t->attached = 1;
	t->stop_ns = tgt_now_ns();
	t->stopped = 1; /* counts as paused from the first interrupt */
	if (seize_new(t) < 0 || stopped_world(t) != 0 || open_mem(t) != 0)
		goto fail_release;
	return 0;
fail_release:
	release_all(t, 100);
fail:
	snprintf(err, errlen, "%s", t->err);
	return -1;
}

/* Let the stopped threads run, all of them or all but the call thread. */
static int resume(struct target *t, int keep_call)
{
	int i;

	if (!t->attached)
		return tgt_fail(t, "not attached");
	for (i = 0; i < t->nthreads; i++)
		if (t->threads[i].stopped && !(keep_call && i == t->call))
			release_thread(t, &t->threads[i], PTRACE_CONT);
	end_stop(t);
	return 0;
}

int target_resume(struct target *t)
{
	return resume(t, 0);
}

int target_resume_others(struct target *t)
{
	return resume(t, 1);
}

int target_stop(struct target *t)
{
	int i;

	if (!t->attached)
		return tgt_fail(t, "not attached");
	if (t->stopped)
		return 0;
	t->stop_ns = tgt_now_ns();
	for (i = 0; i < t->nthreads; i++)
		if (!t->threads[i].stopped)
			ptrace(PTRACE_INTERRUPT, t->threads[i].tid, 0, 0);
	t->stopped = 1;
	if (stopped_world(t) == 0)
		return 0;
	end_stop(t);
	return -1;
}

int target_detach(struct target *t)
{
	pid_t stuck;

	if (!t->attached)
		return 0;
	stuck = release_all(t, TGT_STOP_TIMEOUT_MS);
	if (stuck)
		return tgt_fail(t, "thread %d of process %d did not stop to be let go: it stays "
				"traced until sonde exits", stuck, t->pid);
	return 0;
}

int target_set_regs(struct target *t, struct target_thread *th)
{
	if (!th->stopped)
		return tgt_fail(t, "thread %d is not stopped", th->tid);
	if (ptrace(PTRACE_SETREGS, th->tid, 0, &th->regs) != 0)
		return tgt_fail(t, "cannot set the registers of thread %d: %s", th->tid,
				strerror(errno));
	return 0;
}

int target_set_pc(struct target *t, struct target_thread *th, uint64_t pc)
{
	uint64_t old = th->regs.rip;

	th->regs.rip = pc;
	if (target_set_regs(t, th) == 0)
		return 0;
	th->regs.rip = old;
	return -1;
}

static int is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* Running traced: a signal goes on to the thread, a group-stop stays a stop (LISTEN). */
static void pass_stop(struct target *t, struct target_thread *th, int status)
{
	int ev = status >> 16, sig = WSTOPSIG(status);

	if (!WIFSTOPPED(status))
		tgt_remove_thread(t, th);
	else if (ev == 0)
		ptrace(PTRACE_CONT, th->tid, 0, (void *)(long)sig);
	else if (ev == PTRACE_EVENT_STOP && is_stop_signal(sig))
		ptrace(PTRACE_LISTEN, th->tid, 0, 0);
	else
		ptrace(PTRACE_CONT, th->tid, 0, 0);
}

/* Every state change of the running threads since the last look (each thread by its tid:
 * the tool's other children are none of our business). */
void tgt_pass_stops(struct target *t, pid_t skip)
{
	int i = 0, status;

	while (i < t->nthreads) {
		struct target_thread *th = &t->threads[i];
		pid_t r = th->stopped || th->tid == skip ? 0 :
			  waitpid(th->tid, &status, __WALL | WNOHANG);
		int n = t->nthreads;

		if (r == th->tid)
			pass_stop(t, th, status);
		else if (r < 0 && errno == ECHILD)
			tgt_remove_thread(t, th);
		i += n == t->nthreads;
	}
}

int target_run_for(struct target *t, unsigned ms, const sigset_t *wake)
{
	uint64_t end = tgt_now_ns() + (uint64_t)ms * 1000000ull, now;
	sigset_t set;
	int r = 0;

	if (target_resume(t) != 0)
		return -1;
	if (wake)
		set = *wake;
	else
		sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	while (r == 0 && (now = tgt_now_ns()) < end) {
		struct timespec ts = { (time_t)((end - now) / 1000000000ull),
				       (long)((end - now) % 1000000000ull) };
		int s = sigtimedwait(&set, NULL, &ts);

		if (s > 0 && s != SIGCHLD)
			r = 2;
		tgt_pass_stops(t, 0);
		if (t->nthreads == 0) {
			release_all(t, 0);
			return 1;
		}
	}
	if (target_stop(t) != 0)
		return -1;
	return r;
}
