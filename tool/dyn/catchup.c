/* SPDX-License-Identifier: MIT */
/*
 * Paradyn's catch-up (catchup.h): stop the world, unwind each thread with libdw, and for every
 * frame of a procedure being caught up call the runtime's sonde__dyn_catch_up on that thread
 * with the frame's return slot and what is known of its arguments.
 */
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "catchup.h"
#include "../inject/target.h"

#define MAX_FRAMES 256 /* deeper stacks: their outermost calls are not caught up */
#define DWARF_SP 7 /* x86-64 DWARF register number of rsp */

struct frame {
	uint64_t pc; /* as unwound: a return address, except an activation's */
	uint64_t sp; /* the stack pointer in the frame: the callee's CFA */
	int activation;
};

struct frames {
	struct frame f[MAX_FRAMES];
	int n;
};

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct frames *fs = arg;
	struct frame *f = &fs->f[fs->n];
	Dwarf_Addr pc;
	Dwarf_Word sp;
	bool act;

	if (!dwfl_frame_pc(state, &pc, &act) || dwfl_frame_reg(state, DWARF_SP, &sp) != 0)
		return DWARF_CB_ABORT;
	f->pc = pc;
	f->sp = sp;
	f->activation = act;
	return ++fs->n < MAX_FRAMES ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static Dwfl *report(pid_t pid, char *err, size_t n)
{
	static char *debuginfo_path;
	static const Dwfl_Callbacks cb = {
		.find_elf = dwfl_linux_proc_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.debuginfo_path = &debuginfo_path,
	};
	Dwfl *d = dwfl_begin(&cb);

	if (!d || dwfl_linux_proc_report(d, pid) != 0 || dwfl_report_end(d, NULL, NULL) != 0) {
		snprintf(err, n, "catch-up: cannot read the modules of process %d: %s", (int)pid,
			 dwfl_errmsg(-1));
		dwfl_end(d);
		return NULL;
	}
	return d;
}

uint32_t dyn_catchup_obj_size(const char *proc)
{
	static const struct {
		const char *prefix;
		uint32_t size;
	} kinds[] = {
		{ "pthread_mutex_", 40 }, { "pthread_rwlock_", 56 }, { "pthread_cond_", 48 },
		{ "pthread_barrier_", 32 }, { "sem_", 32 },
	};
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strncmp(proc, kinds[i].prefix, strlen(kinds[i].prefix)))
			return kinds[i].size;
	return 0;
}

static int starts(const struct sproto_action *a)
{
	return a->prim == SPROTO_START_WALL || a->prim == SPROTO_START_WALL_IF ||
	       a->prim == SPROTO_START_CPU || a->prim == SPROTO_PROFILE;
}

/* A flag: raised at the entry (ADD, SET) and lowered at the exit, in the same counter. */
static int lowers(const struct sproto_action *up, const struct sproto_action *down)
{
	int shared = up->prim == SPROTO_ADD || up->prim == SPROTO_SET;

	if (down->when != SPROTO_AT_EXIT || down->target != up->target)
		return 0;
	return shared ? down->prim == SPROTO_SUB || down->prim == SPROTO_SET
		      : down->prim == SPROTO_TSUB || down->prim == SPROTO_TSET;
}

int dyn_catchup_wanted(const struct sproto_point_set *ps)
{
	uint16_t i, j;

	for (i = 0; i < ps->n; i++) {
		const struct sproto_action *a = &ps->act[i];

		if (a->when != SPROTO_AT_ENTRY)
			continue;
		if (starts(a))
			return 1;
		if (a->prim == SPROTO_ADD || a->prim == SPROTO_SET || a->prim == SPROTO_TADD ||
		    a->prim == SPROTO_TSET)
			for (j = 0; j < ps->n; j++)
				if (lowers(a, &ps->act[j]))
					return 1;
	}
	return 0;
}

static int has_arg_pred(const struct sproto_point_set *ps)
{
	uint16_t i;

	for (i = 0; i < ps->n; i++)
		if (ps->act[i].when == SPROTO_AT_ENTRY && ps->act[i].pred == SPROTO_PRED_ARG)
			return 1;
	return 0;
}

/*
 * The call's arguments, where they can be known (1), from the system call its thread is in:
 * the object holding the futex word (obj_size), or the procedure's own system call (frame 0).
 */
static int call_args(const struct target_thread *th, const struct dyn_catchup_proc *p, int k,
		     uint64_t args[6])
{
	const struct user_regs_struct *r = &th->regs;
	int in_syscall = (int64_t)r->orig_rax >= 0;
	uint16_t i;

	memset(args, 0, 6 * sizeof(*args));
	if (in_syscall && p->obj_size && r->orig_rax == SYS_futex) {
		args[0] = r->rdi;
		for (i = 0; i < p->ps->n; i++) {
			const struct sproto_action *a = &p->ps->act[i];
			uint64_t v = (uint64_t)a->pred_value;

			if (a->pred == SPROTO_PRED_ARG && a->pred_index == 0 && r->rdi >= v &&
			    r->rdi - v < p->obj_size)
				args[0] = v;
		}
		return 1;
	}
	if (in_syscall && k == 0) {
		args[0] = r->rdi, args[1] = r->rsi, args[2] = r->rdx;
		args[3] = r->r10, args[4] = r->r8, args[5] = r->r9;
		return 1;
	}
	return 0;
}

static const struct dyn_catchup_proc *proc_at(const struct dyn_catchup_proc *procs, size_t n,
					      uint64_t pc)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (pc >= procs[i].lo && pc < procs[i].hi)
			return &procs[i];
	return NULL;
}

/* One frame's call caught up on its thread (the call thread now): -1 when the remote call
 * failed, else 0 with sonde__dyn_catch_up's answer in *said. */
static int catch_call(struct target *t, uint64_t fn, const struct dyn_catchup_proc *p,
		      uint64_t slot, const uint64_t args[6], int *said)
{
	uint64_t a[3], ret = 0;

	target_scratch_reset(t);
	if (target_scratch(t, p->ps, sizeof(*p->ps), &a[0]) != 0 ||
	    target_scratch(t, args, 6 * sizeof(*args), &a[2]) != 0)
		return -1;
	a[1] = slot;
	if (target_call(t, fn, a, 3, &ret) != 0)
		return -1;
	*said = (int)ret;
	return 0;
}

/* The thread's frames of the procedures, each caught up; -1 when a remote call failed. */
static int catch_thread(struct target *t, uint64_t fn, const struct frames *fs,
			const struct dyn_catchup_proc *procs, size_t n,
			struct dyn_catchup_stats *st)
{
	const struct target_thread *th = &t->threads[t->call];
	uint64_t args[6], at_slot;
	int k, said;

	for (k = fs->n - 2; k >= 0; k--) { /* outermost first: PROFILE enters nest in order */
		const struct frame *f = &fs->f[k];
		const struct dyn_catchup_proc *p = proc_at(procs, n, f->activation ? f->pc
										   : f->pc - 1);
		uint64_t slot = fs->f[k + 1].sp - 8;

		if (!p)
			continue;
		if (!call_args(th, p, k, args) && has_arg_pred(p->ps))
			continue; /* whether its predicates hold cannot be known */
		if (target_read(t, slot, &at_slot, sizeof(at_slot)) != 0 ||
		    at_slot != fs->f[k + 1].pc) {
			st->refused++; /* the unwinding and the stack disagree */
			continue;
		}
		if (catch_call(t, fn, p, slot, args, &said) != 0)
			return -1;
		st->calls += said == 0;
		st->refused += said < 0; /* 1: it began under these actions already */
	}
	return 0;
}

/* Where the runtime's code is; its return trampoline, a hooked call's return address. */
struct runtime_code {
	uint64_t lo, hi, tramp, catch_up;
};

/* The runtime's module (the one holding runtime_addr), and its functions there. */
static int find_runtime(struct target *t, uint64_t runtime_addr, struct runtime_code *rc,
			char *err, size_t errlen)
{
	static const char *const names[] = { "sonde__dyn_catch_up", "sonde__dyn_ret_tramp" };
	struct target_module *m = NULL;
	uint64_t addr[2], size[2];
	int n = 0, i, r = -1;

	if (target_list_modules(t->pid, &m, &n, err, errlen) != 0)
		return -1;
	for (i = 0; i < n; i++)
		if (runtime_addr >= m[i].text_start && runtime_addr < m[i].text_end)
			break;
	if (i == n)
		snprintf(err, errlen, "catch-up: the runtime's code is not mapped in process %d",
			 (int)t->pid);
	else if (target_module_symbols(t, &m[i], names, 2, addr, size) != 0)
		snprintf(err, errlen, "catch-up: %s", target_error(t));
	else if (!addr[0] || !addr[1])
		snprintf(err, errlen, "catch-up: %.300s has no %s", m[i].path, names[addr[0] != 0]);
	else
		r = 0;
	if (r == 0)
		*rc = (struct runtime_code){ m[i].text_start, m[i].text_end, addr[1], addr[0] };
	free(m);
	return r;
}

/* A thread with a frame in the runtime's code (but for a hooked call's return address: the
 * trampoline's unwind information makes it a frame of its own) is inside the runtime, maybe
 * halfway through changing its state: it is left alone. */
static int in_runtime(const struct frames *fs, const struct runtime_code *rc)
{
	int k;

	for (k = 0; k < fs->n; k++)
		if (fs->f[k].pc >= rc->lo && fs->f[k].pc < rc->hi && fs->f[k].pc != rc->tramp)
			return 1;
	return 0;
}

static int catch_all(struct target *t, Dwfl *d, uint64_t runtime_addr,
		     const struct dyn_catchup_proc *procs, size_t n, struct dyn_catchup_stats *st,
		     char *err, size_t errlen)
{
	struct runtime_code rc;
	int i;

	if (find_runtime(t, runtime_addr, &rc, err, errlen) != 0)
		return -1;
	if (dwfl_linux_proc_attach(d, t->pid, true) != 0) {
		snprintf(err, errlen, "catch-up: cannot unwind process %d: %s", (int)t->pid,
			 dwfl_errmsg(-1));
		return -1;
	}
	for (i = 0; i < t->nthreads; i++) {
		struct frames fs = { .n = 0 };

		if (!t->threads[i].stopped)
			continue;
		st->threads++;
		dwfl_getthread_frames(d, t->threads[i].tid, on_frame, &fs);
		if (!fs.n || in_runtime(&fs, &rc))
			continue;
		t->call = i;
		if (catch_thread(t, rc.catch_up, &fs, procs, n, st) != 0) {
			snprintf(err, errlen, "catch-up: thread %d: %s", t->threads[i].tid,
				 target_error(t));
			return -1;
		}
	}
	return 0;
}

static void failed(struct dyn_catchup_stats *st, const char *why)
{
	if (!st->failed++)
		snprintf(st->why, sizeof(st->why), "%.*s", (int)sizeof(st->why) - 1, why);
}

void dyn_catch_up(pid_t pid, uint64_t runtime_addr, const struct dyn_catchup_proc *procs,
		  size_t n, struct dyn_catchup_stats *st)
{
	char err[512];
	struct target t;
	Dwfl *d;
	int r;

	if (!n)
		return;
	d = report(pid, err, sizeof(err));
	if (!d) {
		failed(st, err);
		return;
	}
	if (target_attach(&t, pid, err, sizeof(err)) != 0) {
		dwfl_end(d);
		failed(st, err);
		return;
	}
	st->stops++;
	r = catch_all(&t, d, runtime_addr, procs, n, st, err, sizeof(err));
	dwfl_end(d);
	if (target_detach(&t) != 0 && r == 0) {
		snprintf(err, sizeof(err), "catch-up: letting the process go: %s", target_error(&t));
		r = -1;
	}
	st->pause_ms += (double)t.paused_ns / 1e6;
	if (r != 0)
		failed(st, err);
}
