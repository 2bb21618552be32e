/* SPDX-License-Identifier: MIT */
/*
 * The program a session plans against (session_int.h): the ELF modules mapped in the process
 * (/proc/PID/maps) and their function symbols. Modules of the executable's functions are their
 * source files (DWARF; the file's name without), a shared library's functions are in a module
 * named like the library's file (libc.so.6). Left out: the dynamic loader (it runs the loading
 * of the runtime itself, and lazy binding on the way to any function) and libsonde.so (the
 * runtime must never run its own points). Of the aliases at one address (glibc's
 * pthread_mutex_lock, __pthread_mutex_lock, __GI___pthread_mutex_lock...), the names that do
 * not start with '_' are procedures (only the first name when all do); sites.c patches an
 * address once, so one call is never counted twice. Call sites match a callee by any name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session_int.h"
#include "symbols.h"
#include "util.h"

static const char *base_of(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* The loader and the runtime are never instrumented. */
static int left_out(const char *path)
{
	const char *b = base_of(path);

	return !strncmp(b, "libsonde", 8) || !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld64.so", 7);
}

void dyn_module_file(const struct dyn_session *s, uint32_t mod, char *out, size_t cap)
{
	snprintf(out, cap, "/proc/%d/root%s", (int)s->pid, s->mods[mod].path);
	if (access(out, R_OK) != 0)
		snprintf(out, cap, "%s", s->mods[mod].path);
}

struct raw_sym {
	char *name;
	uint64_t vaddr, size;
	int ifunc;
};

struct read_ctx {
	struct dyn_session *s;
	uint32_t mod;
	struct raw_sym *v;
	size_t n, cap;
};

/* A symbol; with its version cut off (a full symbol table names pthread_mutex_lock@@GLIBC_2.2.5). */
static int take_sym(const char *versioned, uint64_t vaddr, uint64_t size, int ifunc, void *arg)
{
	struct read_ctx *c = arg;
	char name[512];

	snprintf(name, sizeof(name), "%.*s", (int)strcspn(versioned, "@"), versioned);
	if (!name[0])
		return 0;

	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 256;
		c->v = xrealloc(c->v, c->cap * sizeof(*c->v));
	}
	c->v[c->n++] = (struct raw_sym){ xstrdup(name), vaddr, size, ifunc };
	callees_add_func(c->s->callees, vaddr + c->s->mods[c->mod].bias, name);
	return 0;
}

static int by_vaddr(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;

	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	if ((x->name[0] == '_') != (y->name[0] == '_'))
		return (x->name[0] == '_') - (y->name[0] == '_'); /* the public name first */
	return strcmp(x->name, y->name); /* one name's versions next to each other */
}

static void add_proc(struct dyn_session *s, struct symtab *st, const char *file, uint32_t mod,
		     const struct raw_sym *r)
{
	struct sym_info si;
	const char *module = base_of(s->mods[mod].path);

	if (s->nprocs % 256 == 0) {
		s->procs = xrealloc(s->procs, (s->nprocs + 256) * sizeof(*s->procs));
		s->pinfo = xrealloc(s->pinfo, (s->nprocs + 256) * sizeof(*s->pinfo));
	}
	if (!strcmp(s->mods[mod].path, s->exe)) {
		symtab__resolve(st, file, r->vaddr, &si);
		module = si.file;
	}
	s->procs[s->nprocs] = (struct mdl_proc){ xstrdup(module), xstrdup(r->name), r->vaddr,
						 strcmp(s->mods[mod].path, s->exe) != 0 };
	s->pinfo[s->nprocs++] = (struct dyn_sproc){ mod, r->size, r->ifunc };
}

static int read_module(struct dyn_session *s, struct symtab *st, uint32_t mod, char *err,
		       size_t n)
{
	struct read_ctx c = { s, mod, NULL, 0, 0 };
	char file[4200];
	size_t i;
	int r;

	dyn_module_file(s, mod, file, sizeof(file));
	r = symtab__foreach_func(st, file, take_sym, &c);
	if (r == 0)
		callees_add_slots(s->callees, file, s->mods[mod].bias);
	qsort(c.v, c.n, sizeof(*c.v), by_vaddr);
	/* the public names, or the first; a name once, however many versions it has
	 * (pthread_rwlock_rdlock@GLIBC_2.2.5 and @@GLIBC_2.34 are one procedure) */
	for (i = 0; r == 0 && i < c.n; i++)
		if (!i || c.v[i].vaddr != c.v[i - 1].vaddr ||
		    (c.v[i].name[0] != '_' && strcmp(c.v[i].name, c.v[i - 1].name)))
			add_proc(s, st, file, mod, &c.v[i]);
	for (i = 0; i < c.n; i++)
		free(c.v[i].name);
	free(c.v);
	if (r != 0 && !strcmp(s->mods[mod].path, s->exe))
		return snprintf(err, n, "cannot read the symbols of %s", s->exe), -1;
	return 0; /* a library without symbols has no procedures */
}

int dyn_program_read(struct dyn_session *s, char *err, size_t n)
{
	struct symtab *st = symtab__new();
	int i, k = 0, exe = 0, r = 0;

	if (!st)
		return snprintf(err, n, "out of memory"), -1;
	if (target_list_modules(s->pid, &s->mods, &s->nmods, err, n) != 0) {
		symtab__delete(st);
		return -1;
	}
	for (i = 0; i < s->nmods; i++) /* the loader and the runtime go */
		if (!left_out(s->mods[i].path))
			s->mods[k++] = s->mods[i];
	s->nmods = k;
	s->callees = callees_new();
	for (i = 0; r == 0 && i < s->nmods; i++) {
		exe |= !strcmp(s->mods[i].path, s->exe);
		r = read_module(s, st, (uint32_t)i, err, n);
	}
	symtab__delete(st);
	callees_seal(s->callees);
	if (r == 0 && !exe)
		return snprintf(err, n, "%s is not mapped in process %d", s->exe, (int)s->pid), -1;
	return r;
}

int dyn_program_check(const struct dyn_session *s, char *err, size_t n)
{
	struct target_module *now = NULL;
	int nnow = 0, i, j, r = 0;
	uint32_t k;

	if (target_list_modules(s->pid, &now, &nnow, err, n) != 0)
		return -1;
	for (k = 0; r == 0 && k < s->plan->nreq; k++) {
		uint32_t p = s->plan->req[k].proc;

		if (!p)
			continue;
		i = (int)s->pinfo[p - 1].mod;
		for (j = 0; j < nnow && (strcmp(now[j].path, s->mods[i].path) ||
					 now[j].bias != s->mods[i].bias); j++)
			;
		if (j == nnow) {
			snprintf(err, n, "%s was unloaded or moved in process %d since the plan",
				 s->mods[i].path, (int)s->pid);
			r = -1;
		}
	}
	free(now);
	return r;
}

uint64_t dyn_proc_addr(const struct dyn_session *s, uint32_t i)
{
	return s->procs[i].addr + s->mods[s->pinfo[i].mod].bias;
}

void dyn_program_free(struct dyn_session *s)
{
	uint32_t i;

	for (i = 0; i < s->nprocs; i++) {
		free((char *)(uintptr_t)s->procs[i].module);
		free((char *)(uintptr_t)s->procs[i].name);
	}
	free(s->procs);
	free(s->pinfo);
	free(s->mods);
	callees_free(s->callees);
	s->procs = NULL;
	s->pinfo = NULL;
	s->mods = NULL;
	s->callees = NULL;
	s->nprocs = 0;
	s->nmods = 0;
}
