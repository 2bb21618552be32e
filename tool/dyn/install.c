/* SPDX-License-Identifier: MIT */
/*
 * What to patch and in which order (dyn.h). Inserting: every trampoline is written before any
 * site, so a thread that reaches a new jump finds its target complete; a stopped thread whose PC
 * lies in replaced bytes is moved to the relocated copy. Removing: while some thread is caught in
 * the middle of a handler call's register save or restore, the process is let run a moment and
 * looked at again, nothing moved; then, in one stop, the threads inside a trampoline are moved
 * back to the original code and the original bytes are written. (A thread moved out of a
 * relocated copy lands inside the site's bytes: run before they are restored, it would execute
 * the middle of the jump.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dyn.h"
#include "symbols.h"
#include "util.h"

#define TWO_GB (INT64_C(1) << 31)

int dyn_add(struct dyn_set *s, const char *name, uint64_t addr, uint64_t size, int kind,
	    uint64_t call, uint32_t area)
{
	struct dyn_func *f;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct dyn_func *p = realloc(s->f, cap * sizeof(*p));

		if (!p)
			return -1;
		s->f = p;
		s->cap = cap;
	}
	f = &s->f[s->n++];
	memset(f, 0, sizeof(*f));
	f->name = strdup(name);
	f->addr = addr;
	f->size = size;
	f->kind = kind;
	f->call = call;
	f->area = area;
	return f->name ? 0 : -1;
}

uint32_t dyn_add_area(struct dyn_set *s, uint64_t lo, uint64_t hi)
{
	struct dyn_area *a = realloc(s->areas, (s->nareas + 1) * sizeof(*a));

	if (!a) {
		fputs("sonde: out of memory\n", stderr);
		exit(1);
	}
	s->areas = a;
	s->areas[s->nareas] = (struct dyn_area){ lo, hi, 0, 0 };
	return (uint32_t)s->nareas++;
}

/* The C runtime's own start-up and tear-down code, and compiler-split cold parts. */
static int boilerplate(const char *name)
{
	return (name[0] == '_' && name[1] != 'Z') || strstr(name, ".cold") != NULL;
}

static int listed(const char *const *only, const char *name)
{
	for (; *only; only++)
		if (strcmp(*only, name) == 0)
			return 1;
	return 0;
}

struct collect_ctx {
	struct dyn_set *s;
	const char *const *only;
	int failed;
};

static int collect_one(const char *name, uint64_t vaddr, uint64_t size, void *arg)
{
	struct collect_ctx *c = arg;

	if (size < 1 || boilerplate(name) || (c->only && !listed(c->only, name)))
		return 0;
	if (dyn_add(c->s, name, vaddr + c->s->bias, size, PATCH_ENTRY, 0, 0) != 0) {
		c->failed = 1;
		return 1;
	}
	return 0;
}

int dyn_collect(struct target *t, const struct target_module *m, const char *const *only,
		struct dyn_set *s, char *err, size_t n)
{
	struct symtab *st = symtab__new();
	struct collect_ctx c = { s, only, 0 };

	(void)t;
	memset(s, 0, sizeof(*s));
	snprintf(s->module, sizeof(s->module), "%s", m->path);
	s->bias = m->bias;
	dyn_add_area(s, m->text_start, m->text_end);
	if (!st) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	if (symtab__foreach_sized(st, m->path, collect_one, &c) != 0 || c.failed) {
		symtab__delete(st);
		snprintf(err, n, "cannot read the function symbols of %s", m->path);
		return -1;
	}
	symtab__delete(st);
	return 0;
}

/*
 * Trampoline memory within +-2 GB of every function of an area (a module): tried below the
 * code, then above, 16 MiB further each time. Areas of earlier sessions stay mapped (a thread
 * may still return through one), so a process instrumented many times needs many tries (up to
 * 1 GiB away).
 */
#define TRAMP_TRIES 128
static int map_area(struct target *t, struct dyn_set *s, uint32_t a, size_t npoints, char *err,
		    size_t n)
{
	struct dyn_area *ar = &s->areas[a];
	uint64_t lo = ar->lo ? ar->lo : UINT64_MAX, hi = ar->hi, size, hint, got = 0;
	size_t i;
	int k;

	for (i = 0; i < s->n; i++) {
		if (s->f[i].area != a)
			continue;
		lo = s->f[i].addr < lo ? s->f[i].addr : lo;
		hi = s->f[i].addr + s->f[i].size > hi ? s->f[i].addr + s->f[i].size : hi;
	}
	size = ((uint64_t)npoints * PATCH_TRAMP_MAX + 4095) & ~(uint64_t)4095;
	for (k = 0; k < TRAMP_TRIES; k++) {
		uint64_t step = (uint64_t)(k / 2 + 1) << 24; /* 16 MiB, 32 MiB, ... from the code */

		hint = k % 2 == 0 ? ((lo - step - size) & ~(uint64_t)4095) : ((hi + step) & ~(uint64_t)4095);
		if (target_mmap(t, hint, size, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
				&got) != 0)
			continue;
		if ((int64_t)(got + size - lo) < TWO_GB && (int64_t)(hi - got) < TWO_GB)
			break;
		target_munmap(t, got, size);
		got = 0;
	}
	if (!got) {
		for (i = 0; i < s->n; i++)
			if (s->f[i].area == a) {
				snprintf(err, n, "no memory for trampolines within 2 GB of %s",
					 s->f[i].name);
				break;
			}
		return -1;
	}
	ar->addr = got;
	ar->size = size;
	return 0;
}

/* Every area with points gets its memory before any code is written: the remote mmap runs a
 * `syscall` found in libc's text, which a patch could have replaced. */
static int map_trampolines(struct target *t, struct dyn_set *s, char *err, size_t n)
{
	uint32_t a;
	size_t i, k;

	for (a = 0; a < s->nareas; a++) {
		for (i = 0, k = 0; i < s->n; i++)
			k += s->f[i].area == a;
		if (k && !s->areas[a].addr && map_area(t, s, a, k, err, n) != 0)
			return -1;
	}
	return 0;
}

struct read_ctx {
	struct target *t;
};

static int read_target(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return target_read(((struct read_ctx *)ctx)->t, addr, buf, len);
}

/* Decode one function; its jump tables are read from the target. NULL: refused (f->why). */
static struct patch_fn *analyze(struct target *t, struct dyn_func *f, uint8_t **code)
{
	struct patch_fn *fn = calloc(1, sizeof(*fn));
	struct read_ctx rc = { t };

	*code = malloc(f->size);
	if (!fn || !*code || target_read(t, f->addr, *code, f->size) != 0) {
		snprintf(f->why, sizeof(f->why), "cannot read its code");
		goto fail;
	}
	if (patch_analyze(*code, f->size, f->addr, fn, f->why, sizeof(f->why)) != 0)
		goto fail;
	if (patch_read_tables(fn, read_target, &rc, f->why, sizeof(f->why)) != 0) {
		patch_fn_free(fn);
		goto fail;
	}
	return fn;
fail:
	free(fn);
	free(*code);
	*code = NULL;
	return NULL;
}

static int plan_point(struct dyn_func *f, const struct patch_fn *fn, const uint8_t *code,
		      uint64_t tramp, const struct tramp_spec *spec)
{
	if (f->kind == PATCH_CALLSITE)
		return patch_plan_callsite(fn, code, f->call, tramp, spec, &f->plan, f->why,
					   sizeof(f->why));
	return patch_plan_entry(fn, code, tramp, spec, &f->plan, f->why, sizeof(f->why));
}

/* Two points of one function (an entry and a call site near it) cannot share bytes. */
static void refuse_overlaps(struct dyn_set *s)
{
	size_t i, j;

	for (i = 1; i < s->n; i++)
		for (j = i; j-- > 0 && s->f[j].addr == s->f[i].addr;)
			if (s->f[i].state == DYN_PLANNED && s->f[j].state == DYN_PLANNED &&
			    patch_plans_overlap(&s->f[i].plan, &s->f[j].plan)) {
				s->f[i].state = DYN_REFUSED;
				snprintf(s->f[i].why, sizeof(s->f[i].why), "its bytes overlap those "
					 "of the %s point", s->f[j].kind == PATCH_ENTRY ? "entry"
					 : "call site");
				break;
			}
}

int dyn_plan(struct target *t, struct dyn_set *s, uint64_t handler, char *err, size_t n)
{
	uint32_t *slot;
	size_t i;

	if (!s->n)
		return 0;
	if (map_trampolines(t, s, err, n) != 0)
		return -1;
	slot = calloc(s->nareas, sizeof(*slot));
	if (!slot)
		return snprintf(err, n, "out of memory"), -1;
	for (i = 0; i < s->n; i++) {
		struct dyn_func *f = &s->f[i];
		struct tramp_spec spec = { handler, s->first_id + (uint32_t)i };
		uint64_t tramp = s->areas[f->area].addr + slot[f->area]++ * PATCH_TRAMP_MAX;
		struct patch_fn *fn;
		uint8_t *code;

		if (f->state == DYN_REFUSED && f->why[0])
			continue; /* refused before planning (an IFUNC resolver...) */
		f->state = DYN_REFUSED;
		fn = analyze(t, f, &code);
		if (!fn)
			continue;
		if (plan_point(f, fn, code, tramp, &spec) == 0)
			f->state = DYN_PLANNED;
		patch_fn_free(fn);
		free(fn);
		free(code);
	}
	free(slot);
	refuse_overlaps(s);
	return 0;
}

/* Where a stopped thread goes when p is inserted: pc itself, or 0 when it lies in the replaced
 * bytes at no instruction of them (it could not run on once they are replaced). */
static uint64_t pc_in(const struct patch_plan *p, uint64_t pc)
{
	if (pc <= p->site || pc >= p->site + p->len)
		return pc;
	return patch_map_pc_into(p, pc);
}

/* Move every stopped thread whose PC lies in the bytes this plan replaces; -1 (nothing moved)
 * when one of them cannot be moved. */
static int move_threads_in(struct target *t, const struct patch_plan *p)
{
	int i;

	for (i = 0; i < t->nthreads; i++)
		if (!pc_in(p, t->threads[i].regs.rip))
			return -1;
	for (i = 0; i < t->nthreads; i++) {
		struct target_thread *th = &t->threads[i];
		uint64_t to = pc_in(p, th->regs.rip);

		if (to != th->regs.rip && target_set_pc(t, th, to) != 0)
			return -1;
	}
	return 0;
}

int dyn_install(struct target *t, struct dyn_set *s, char *err, size_t n)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		const struct patch_plan *p = &s->f[i].plan;

		if (s->f[i].state == DYN_PLANNED &&
		    target_write(t, p->tramp, p->code, p->tramp_len) != 0) {
			snprintf(err, n, "writing a trampoline: %s", target_error(t));
			return -1;
		}
	}
	for (i = 0; i < s->n; i++) {
		struct dyn_func *f = &s->f[i];

		if (f->state != DYN_PLANNED)
			continue;
		if (move_threads_in(t, &f->plan) != 0) {
			snprintf(err, n, "patching %s: a thread stopped inside its first bytes cannot "
				 "be moved", f->name);
			return -1;
		}
		if (target_write(t, f->plan.site, f->plan.bytes, f->plan.len) != 0) {
			snprintf(err, n, "patching %s: %s", f->name, target_error(t));
			return -1;
		}
		f->state = DYN_INSTALLED;
	}
	return 0;
}

/* 1 when some thread is caught inside a save or restore: it must run on a moment. With move,
 * the others are moved back to the original code (whose bytes must then be restored before the
 * process runs again). */
static int move_threads_out(struct target *t, const struct patch_plan *p, int move)
{
	int i, busy = 0;

	for (i = 0; i < t->nthreads; i++) {
		struct target_thread *th = &t->threads[i];
		uint64_t pc = th->regs.rip, to;
		int64_t adjust = 0;

		if (pc < p->tramp || pc >= p->tramp + p->tramp_len)
			continue;
		to = patch_map_pc_out(p, pc, &adjust);
		if (!to) {
			busy = 1;
			continue;
		}
		if (!move)
			continue;
		th->regs.rsp += (uint64_t)adjust;
		th->regs.rip = to;
		target_set_regs(t, th);
	}
	return busy;
}

/*
 * How long threads caught in a handler call's register save or restore are let run before a
 * removal gives up: time, not tries, because on a loaded machine a thread let run for 1 ms may
 * not be scheduled at all in it (a `make check` under load saw 100 tries pass with a thread still inside).
 */
#define BUSY_LIMIT_NS (2 * 1000000000ull)

static int threads_busy(struct target *t, struct dyn_set *s, const uint8_t *which, int move)
{
	size_t i;
	int busy = 0;

	for (i = 0; i < s->n; i++)
		if (s->f[i].state == DYN_INSTALLED && (!which || which[i]))
			busy |= move_threads_out(t, &s->f[i].plan, move);
	return busy;
}

int dyn_remove(struct target *t, struct dyn_set *s, char *err, size_t n)
{
	return dyn_remove_some(t, s, NULL, err, n);
}

int dyn_remove_some(struct target *t, struct dyn_set *s, const uint8_t *which, char *err,
		    size_t n)
{
	size_t i;
	int tries;
	uint64_t give_up = mono_now_ns() + BUSY_LIMIT_NS;

	for (tries = 0; threads_busy(t, s, which, 0); tries++) {
		if ((tries >= 100 && mono_now_ns() > give_up) || target_run_for(t, 1, NULL) != 0) {
			snprintf(err, n, "a thread stays inside a trampoline; not removing");
			return -1;
		}
	}
	threads_busy(t, s, which, 1); /* none busy, and the world stopped since the look */
	for (i = 0; i < s->n; i++) {
		struct dyn_func *f = &s->f[i];

		if (f->state != DYN_INSTALLED || (which && !which[i]))
			continue;
		if (target_write(t, f->plan.site, f->plan.orig, f->plan.len) != 0) {
			snprintf(err, n, "restoring %s: %s", f->name, target_error(t));
			return -1;
		}
		f->state = DYN_PLANNED;
	}
	return 0;
}

size_t dyn_count(const struct dyn_set *s, int state)
{
	size_t i, k = 0;

	for (i = 0; i < s->n; i++)
		k += s->f[i].state == state;
	return k;
}

void dyn_set_free(struct dyn_set *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->f[i].name);
	free(s->f);
	free(s->areas);
	memset(s, 0, sizeof(*s));
}
