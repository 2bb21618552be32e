/* SPDX-License-Identifier: MIT */
/*
 * Load a library into the stopped target: dlopen(path, RTLD_NOW) on one thread, then the
 * library's entry point. That thread must not be inside the dynamic loader or libc's malloc
 * family (it would wait for a lock it holds itself, forever); the others run meanwhile, so
 * that a lock one of them holds is released as usual. The check is cheap and partial
 * (tool/inject/README.md): the PC, and return addresses near the top of the thread's stack.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define RTLD_NOW_ 2
#define RTLD_DLOPEN_ 0x80000000u	/* __libc_dlopen_mode's flag for a dlopen-like load */
#define STACK_SCAN 256			/* bytes above the stack pointer searched for callers */
#define CALL_STACK (256u << 10)		/* stack that dlopen and the runtime's start may use */

static const char *const libc_names[] = { "libc.so.", "libc-2.", NULL };
static const char *const ld_names[] = { "ld-linux-x86-64.so.", "ld-linux.so.", "ld-2.", NULL };
static const char *const libdl_names[] = { "libdl.so.", "libdl-2.", NULL };

/* What the injection calls, then libc functions that hold the malloc or loader locks while
 * they run (a thread inside one of them makes dlopen unsafe). */
static const char *const libc_syms[] = {
	"__errno_location", "dlopen", "dlerror", "__libc_dlopen_mode",
	"malloc", "free", "calloc", "realloc", "reallocarray", "memalign", "posix_memalign",
	"aligned_alloc", "valloc", "pvalloc", "malloc_trim", "malloc_usable_size", "malloc_info",
	"malloc_stats", "mallinfo", "mallinfo2", "mallopt", "__libc_malloc", "__libc_free",
	"__libc_calloc", "__libc_realloc", "__libc_memalign", "cfree", "fork", "_Fork",
	"dl_iterate_phdr", "dlclose", "dlsym", "dlvsym", "dlmopen", "dladdr", "dladdr1", "dlinfo",
	"__libc_dlsym", "__libc_dlclose",
};
enum { S_ERRNO, S_DLOPEN, S_DLERROR, S_LIBC_DLOPEN, S_BUSY = S_DLOPEN };
#define NSYMS (int)(sizeof(libc_syms) / sizeof(libc_syms[0]))

struct busy_range {
	uint64_t lo, hi;
	const char *what;
	int scan;	/* also a return address into it near the top of the stack */
};

struct target_libc {
	uint64_t libc_bias, libc_text, ld_text; /* to tell whether they are still the same */
	uint64_t dlopen, dlerror, errno_loc;
	int libc_mode;	/* dlopen is glibc's private __libc_dlopen_mode */
	struct busy_range busy[NSYMS + 1];
	int nbusy;
};

static void add_busy(struct target_libc *f, uint64_t lo, uint64_t hi, const char *what, int scan)
{
	if (lo < hi && f->nbusy < NSYMS + 1)
		f->busy[f->nbusy++] = (struct busy_range){ lo, hi, what, scan };
}

/* dlopen: libc's (glibc >= 2.34), else libdl's, else __libc_dlopen_mode; dlerror likewise. */
static int pick_dlopen(struct target *t, struct target_libc *f, const uint64_t *a,
		       const struct target_module *dl)
{
	static const char *const dl_syms[] = { "dlopen", "dlerror" };
	uint64_t d[2] = { 0, 0 }, size[2];

	f->dlopen = a[S_DLOPEN];
	f->dlerror = a[S_DLERROR];
	if (!f->dlopen && dl->path[0] && target_module_symbols(t, dl, dl_syms, 2, d, size) == 0) {
		f->dlopen = d[0];
		f->dlerror = d[1];
	}
	if (!f->dlopen) {
		f->dlopen = a[S_LIBC_DLOPEN];
		f->libc_mode = 1;
	}
	if (!f->dlopen)
		return tgt_fail(t, "no dlopen in process %d (neither in libc nor in libdl)", t->pid);
	return 0;
}

static int resolve(struct target *t, struct target_libc *f)
{
	static const char *const *const sets[] = { libc_names, ld_names, libdl_names };
	struct target_module m[3];
	uint64_t a[NSYMS], size[NSYMS];
	int i;

	memset(f, 0, sizeof(*f));
	if (tgt_find_modules(t, sets, 3, m) != 0)
		return -1;
	if (!m[0].path[0])
		return tgt_fail(t, "process %d has no glibc (libc.so.6) loaded (yet?): cannot load "
				"the runtime into it", t->pid);
	f->libc_bias = m[0].bias;
	f->libc_text = m[0].text_start;
	f->ld_text = m[1].text_start;
	if (target_module_symbols(t, &m[0], libc_syms, NSYMS, a, size) != 0)
		return -1;
	f->errno_loc = a[S_ERRNO];
	if (!f->errno_loc)
		return tgt_fail(t, "%s has no __errno_location", m[0].path);
	if (m[1].path[0])
		add_busy(f, m[1].text_start, m[1].text_end, "the dynamic loader", 0);
	for (i = S_BUSY; i < NSYMS; i++)
		if (a[i] && size[i])
			add_busy(f, a[i], a[i] + size[i], libc_syms[i], 1);
	return pick_dlopen(t, f, a, &m[2]);
}

/*
 * Where a thread is busy: the range holding its PC, or for libc's functions a return address
 * near the top of its stack (a thread waiting for an arena lock sits in a futex call made by
 * malloc). A function's first byte is a function pointer, not a return address. The loader
 * is judged by the PC alone: the stack of a thread that once resolved a symbol lazily keeps
 * stale return addresses into it, and a thread holding the loader's lock runs the loader's
 * own code or malloc. The window is short for the same reason: stale values mislead.
 */
static const char *busy_in(struct target *t, const struct target_libc *f,
			   const struct target_thread *th)
{
	uint64_t stack[STACK_SCAN / 8];
	int i, k, nwords = 0;

	if (target_read(t, th->regs.rsp, stack, sizeof(stack)) == 0)
		nwords = STACK_SCAN / 8;
	for (i = 0; i < f->nbusy; i++) {
		const struct busy_range *b = &f->busy[i];

		if (th->regs.rip >= b->lo && th->regs.rip < b->hi)
			return b->what;
		for (k = 0; b->scan && k < nwords; k++)
			if (stack[k] > b->lo && stack[k] < b->hi)
				return b->what;
	}
	return NULL;
}

struct busy_probe {
	const struct target_libc *f;
	pid_t tid;		/* the first thread found busy, and where */
	const char *what;
};

static int not_busy(struct target *t, const struct target_thread *th, void *arg)
{
	struct busy_probe *p = arg;
	const char *what = busy_in(t, p->f, th);

	if (what && !p->what) {
		p->what = what;
		p->tid = th->tid;
	}
	return !what;
}

/* With the world held during the calls, every thread must be out of the loader and malloc. */
static int world_safe(struct target *t, struct busy_probe *p)
{
	int i;

	for (i = 0; i < t->nthreads; i++)
		if (!not_busy(t, &t->threads[i], p))
			return 1;
	return tgt_choose_call_thread(t, CALL_STACK, NULL, NULL);
}

static int no_call_thread(struct target *t, const struct busy_probe *p, int tries)
{
	if (!p->what)
		return tgt_fail(t, "no thread of process %d has %u KiB of stack to spare for the "
				"remote calls (all on small signal stacks?)", t->pid, CALL_STACK >> 10);
	return tgt_fail(t, "thread %d of process %d is inside %s each time it is stopped (%d "
			"tries), and no other thread will do: loading the runtime now could "
			"deadlock the program; try again", p->tid, t->pid, p->what, tries);
}

/* The thread for the remote calls: out of the loader and malloc, with stack to spare. While
 * there is none, let the process run a little (1, 3, 5... ms) and look again. */
static int find_call_thread(struct target *t, const struct target_libc *f,
			    const struct target_inject_opts *o)
{
	int i, r, retries = o->retries > 0 ? o->retries : 10;

	for (i = 0;; i++) {
		struct busy_probe p = { f, 0, NULL };

		r = o->hold_world ? world_safe(t, &p) : tgt_choose_call_thread(t, CALL_STACK,
										 not_busy, &p);
		if (r <= 0)
			return r;
		if (i >= retries)
			return no_call_thread(t, &p, i + 1);
		r = target_run_for(t, 1u + 2u * (unsigned)i, NULL);
		t->busy_waits++;
		if (r == 1)
			return tgt_fail(t, "process %d exited", t->pid);
		if (r != 0)
			return -1;
	}
}

static void read_string(struct target *t, uint64_t addr, char *out, size_t cap)
{
	size_t i;

	for (i = 0; i + 1 < cap; i++)
		if (target_read(t, addr + i, &out[i], 1) != 0 || !out[i])
			break;
	out[i] = 0;
}

static int dlopen_failed(struct target *t, const struct target_libc *f, const char *lib)
{
	uint64_t msg = 0;
	char text[400] = "";

	if (f->dlerror && target_call(t, f->dlerror, NULL, 0, &msg) == 0 && msg)
		read_string(t, msg, text, sizeof(text));
	return tgt_fail(t, "dlopen(%s) in process %d failed: %s", lib, t->pid,
			text[0] ? text : "(no message from dlerror)");
}

/* The library's entry in the target: its ELF vaddr plus the load bias from the handle (a
 * glibc dlopen handle is the struct link_map, whose first member is l_addr). */
static int entry_address(struct target *t, uint64_t handle, uint64_t vaddr, uint64_t *addr)
{
	uint64_t l_addr;

	if (target_read(t, handle, &l_addr, sizeof(l_addr)) != 0)
		return -1;
	*addr = l_addr + vaddr;
	return 0;
}

static int load_and_enter(struct target *t, const struct target_libc *f,
			  const struct target_inject_opts *o, uint64_t entry_vaddr, int *ret)
{
	uint64_t a[2], handle = 0, entry, rv;

	if (target_scratch(t, o->lib, strlen(o->lib) + 1, &a[0]) != 0)
		return -1;
	a[1] = RTLD_NOW_ | (f->libc_mode ? RTLD_DLOPEN_ : 0);
	if (target_call(t, f->dlopen, a, 2, &handle) != 0)
		return -1;
	if (!handle)
		return dlopen_failed(t, f, o->lib);
	if (entry_address(t, handle, entry_vaddr, &entry) != 0)
		return -1;
	if (target_scratch(t, o->arg ? o->arg : "", strlen(o->arg ? o->arg : "") + 1, &a[0]))
		return -1;
	if (target_call(t, entry, a, 1, &rv) != 0)
		return -1;
	*ret = (int)(int32_t)rv;
	return 0;
}

/* The entry must exist before the library is loaded: a wrong file must not run anything. */
static int entry_vaddr(struct target *t, const struct target_inject_opts *o, uint64_t *vaddr)
{
	uint64_t size;

	if (o->lib[0] != '/')
		return tgt_fail(t, "%s: the library's path must be absolute", o->lib);
	if (tgt_elf_symbols(o->lib, &o->entry, 1, vaddr, &size) != 0)
		return tgt_fail(t, "%s is not a readable ELF file", o->lib);
	if (!*vaddr)
		return tgt_fail(t, "%s has no %s (a runtime too old for attaching?)", o->lib,
				o->entry);
	return 0;
}

/* The call thread's errno is the program's: dlopen and dlerror must not change it. */
static int load_keeping_errno(struct target *t, const struct target_libc *f,
			      const struct target_inject_opts *o, uint64_t vaddr, int *ret)
{
	uint64_t err_addr = 0;
	int saved = 0, r;
	char why[TARGET_ERR];

	if (target_call(t, f->errno_loc, NULL, 0, &err_addr) != 0 ||
	    target_read(t, err_addr, &saved, sizeof(saved)) != 0)
		return -1;
	r = load_and_enter(t, f, o, vaddr, ret);
	memcpy(why, t->err, sizeof(why));
	if (target_write(t, err_addr, &saved, sizeof(saved)) != 0 && r == 0)
		return -1;
	if (r != 0)
		memcpy(t->err, why, sizeof(why)); /* the first failure is the one to tell */
	return r;
}

struct target_libc *target_libc_resolve(pid_t pid, char *err, size_t errlen)
{
	struct target_libc *f = xcalloc(1, sizeof(*f));
	struct target t;

	memset(&t, 0, sizeof(t));
	t.pid = pid;
	t.mem_fd = -1;
	if (tgt_preflight(&t) == 0 && resolve(&t, f) == 0)
		return f;
	snprintf(err, errlen, "%s", t.err);
	free(f);
	return NULL;
}

void target_libc_free(struct target_libc *f)
{
	free(f);
}

/* Resolved before the stop: still the same libc and loader? (an exec changes them) */
static int still_valid(struct target *t, const struct target_libc *f)
{
	static const char *const *const sets[] = { libc_names, ld_names };
	struct target_module m[2];

	return f && tgt_find_modules(t, sets, 2, m) == 0 && m[0].bias == f->libc_bias &&
	       m[0].text_start == f->libc_text && m[1].text_start == f->ld_text;
}

int target_inject(struct target *t, const struct target_inject_opts *o, int *entry_ret)
{
	struct target_libc own;
	const struct target_libc *f = still_valid(t, o->libc) ? o->libc : &own;
	uint64_t vaddr, t0;
	int r;

	t->busy_waits = 0;
	if (entry_vaddr(t, o, &vaddr) != 0 || (f == &own && resolve(t, &own) != 0) ||
	    find_call_thread(t, f, o) != 0)
		return -1;
	t->load_tid = t->threads[t->call].tid;
	t0 = tgt_now_ns();
	if (!o->hold_world && target_resume_others(t) != 0)
		return -1;
	target_scratch_reset(t);
	r = load_keeping_errno(t, f, o, vaddr, entry_ret);
	target_scratch_reset(t);
	t->load_ns = tgt_now_ns() - t0;
	if (!o->hold_world && !o->leave_running && target_stop(t) != 0 && r == 0)
		r = -1; /* the world stopped again, as the caller left it */
	return r;
}
