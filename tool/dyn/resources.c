/* SPDX-License-Identifier: MIT */
/*
 * /SyncObject and /Files resources of a running process (resources.h): sync objects from the
 * DWARF and symbols of its modules (sync_vars.c), files from /proc/PID/fd.
 */
#include "resources.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../inject/target.h"
#include "sync_vars.h"
#include "util.h"

#define MAX_ELEMS 256 /* elements of one array listed (all can be named in a focus) */

static const char *const kind_names[] = { "mutex", "rwlock", "cond", "barrier", "sem", "file" };

const char *dyn_res_kind_name(enum dyn_res_kind k)
{
	return (unsigned)k <= DYN_RES_FILE ? kind_names[k] : NULL;
}

int dyn_res_kind_of(const char *name)
{
	int k;

	for (k = 0; k <= DYN_RES_FILE; k++)
		if (!strcmp(name, kind_names[k]))
			return k;
	return -1;
}

void dyn_resources_free(struct dyn_resources *r)
{
	size_t i;

	for (i = 0; r && i < r->n; i++) {
		free(r->v[i].path);
		free(r->v[i].module);
	}
	if (r) {
		free(r->v);
		r->v = NULL;
		r->n = 0;
	}
}

static void push(struct dyn_resources *r, enum dyn_res_kind kind, char *path, const char *module,
		 int64_t value)
{
	if (r->n % 64 == 0)
		r->v = xrealloc(r->v, (r->n + 64) * sizeof(*r->v));
	r->v[r->n++] = (struct dyn_resource){ kind, path, module ? xstrdup(module) : NULL, value };
}

/* ---- the modules holding data: what target_list_modules finds, less the loader and us ---- */

static int left_out(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "libsonde", 8) || !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld64.so", 7);
}

/* The module's file as the tool can open it (through /proc/PID/root when it can). */
static void module_file(pid_t pid, const char *path, char *out, size_t cap)
{
	snprintf(out, cap, "/proc/%d/root%s", (int)pid, path);
	if (access(out, R_OK) != 0)
		snprintf(out, cap, "%s", path);
}

typedef int (*module_fn)(void *arg, struct sync_file *f, const struct target_module *m);

/* Each module of the process that can be read, executable first (as /proc/PID/maps lists). */
static int each_module(pid_t pid, module_fn fn, void *arg, char *err, size_t n)
{
	struct target_module *mods = NULL;
	struct sync_file *f;
	char file[4200];
	int nmods = 0, i, r = 0;

	if (target_list_modules(pid, &mods, &nmods, err, n) != 0)
		return -1;
	for (i = 0; r == 0 && i < nmods; i++) {
		if (left_out(mods[i].path))
			continue;
		module_file(pid, mods[i].path, file, sizeof(file));
		if (!(f = sync_file_open(file)))
			continue;
		r = fn(arg, f, &mods[i]);
		sync_file_close(f);
	}
	free(mods);
	return r < 0 ? -1 : 0;
}

/* ---- listing ---- */

static char *sync_path(int kind, const char *name, int64_t index)
{
	char buf[600];

	if (index < 0)
		snprintf(buf, sizeof(buf), "/SyncObject/%s/%s", kind_names[kind], name);
	else
		snprintf(buf, sizeof(buf), "/SyncObject/%s/%s[%" PRId64 "]", kind_names[kind], name,
			 index);
	return xstrdup(buf);
}

static int list_module(void *arg, struct sync_file *f, const struct target_module *m)
{
	struct dyn_resources *r = arg;
	struct sync_var *v;
	size_t n = sync_file_vars(f, &v), i;
	uint32_t e;

	for (i = 0; i < n; i++) {
		if (!v[i].count)
			push(r, v[i].kind, sync_path(v[i].kind, v[i].name, -1), m->path,
			     (int64_t)(v[i].vaddr + m->bias));
		for (e = 0; e < v[i].count && e < MAX_ELEMS; e++)
			push(r, v[i].kind, sync_path(v[i].kind, v[i].name, e), m->path,
			     (int64_t)(v[i].vaddr + m->bias + e * v[i].elem));
	}
	sync_vars_free(v, n);
	return 0;
}

static int by_path(const void *a, const void *b)
{
	const struct dyn_resource *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	return c ? c : (x->value > y->value) - (x->value < y->value);
}

/* Each descriptor of an absolute path: fn(arg, fd, target). */
static int each_fd(pid_t pid, void (*fn)(void *, int, const char *), void *arg)
{
	char dir[64], link[340], target[PATH_MAX];
	struct dirent *d;
	ssize_t k;
	DIR *dp;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	if (!(dp = opendir(dir)))
		return -1;
	while ((d = readdir(dp))) {
		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, d->d_name);
		k = readlink(link, target, sizeof(target) - 1);
		if (k <= 0 || target[0] != '/')
			continue;
		target[k] = 0;
		fn(arg, atoi(d->d_name), target);
	}
	closedir(dp);
	return 0;
}

static void list_fd(void *arg, int fd, const char *target)
{
	char *path = xmalloc(strlen(target) + 8);

	sprintf(path, "/Files%s", target);
	push(arg, DYN_RES_FILE, path, NULL, fd);
}

static int by_fd(const void *a, const void *b)
{
	const struct dyn_resource *x = a, *y = b;

	return (x->value > y->value) - (x->value < y->value);
}

int dyn_resources_list(pid_t pid, unsigned want, struct dyn_resources *out, char *err, size_t n)
{
	size_t first_file;

	memset(out, 0, sizeof(*out));
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return snprintf(err, n, "no process %d", (int)pid), -1;
	if ((want & DYN_RES_WANT_SYNC) && each_module(pid, list_module, out, err, n) != 0)
		return dyn_resources_free(out), -1;
	qsort(out->v, out->n, sizeof(*out->v), by_path);
	first_file = out->n;
	if ((want & DYN_RES_WANT_FILES) && each_fd(pid, list_fd, out) != 0) {
		dyn_resources_free(out);
		return snprintf(err, n, "cannot read /proc/%d/fd: %s", (int)pid, strerror(errno)), -1;
	}
	if (out->n > first_file)
		qsort(out->v + first_file, out->n - first_file, sizeof(*out->v), by_fd);
	return 0;
}

/* ---- refinements ---- */

static const char *const kind_paths[] = { "/SyncObject/mutex", "/SyncObject/rwlock",
					  "/SyncObject/cond", "/SyncObject/barrier",
					  "/SyncObject/sem" };

static int listed(const char **out, size_t n, const char *path)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(out[i], path))
			return 1;
	return 0;
}

size_t dyn_resources_below(const struct dyn_resources *r, const char *parent, const char **out,
			   size_t cap)
{
	size_t i, n = 0, len = strlen(parent);
	const char *p;

	for (i = 0; i < r->n && n < cap; i++) {
		if (!strcmp(parent, "/SyncObject") && r->v[i].kind < DYN_RES_SYNC_KINDS)
			p = kind_paths[r->v[i].kind];
		else if (!strncmp(r->v[i].path, parent, len) && r->v[i].path[len] == '/' &&
			 (r->v[i].kind == DYN_RES_FILE || !strchr(r->v[i].path + len + 1, '/')))
			p = r->v[i].path; /* a file is one level below /Files, whatever its path */
		else
			continue;
		if (!listed(out, n, p))
			out[n++] = p;
	}
	return n;
}

/* ---- files: the descriptors open on a path ---- */

struct fd_match {
	const char *path, *real;
	int64_t *fds;
	uint32_t cap, n;
};

static void match_fd(void *arg, int fd, const char *target)
{
	struct fd_match *m = arg;

	if (strcmp(target, m->path) && (!m->real || strcmp(target, m->real)))
		return;
	if (m->n < m->cap)
		m->fds[m->n] = fd;
	m->n++;
}

static int by_value(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

uint32_t dyn_file_fds(pid_t pid, const char *path, int64_t *fds, uint32_t cap)
{
	char *real = realpath(path, NULL); /* the focus may say /tmp/x where /tmp is a link */
	struct fd_match m = { path, real, fds, cap, 0 };

	each_fd(pid, match_fd, &m);
	free(real);
	qsort(fds, m.n < cap ? m.n : cap, sizeof(*fds), by_value); /* readdir's order varies */
	return m.n;
}

/* ---- sync objects: a name, name[i] or an address ---- */

struct sync_query {
	int kind;
	char name[512];
	int64_t index; /* -1: none */
	int found;
	uint64_t addr;
	char *err;
	size_t cap;
	const char *path;
};

static int parse_name(struct sync_query *q, const char *obj)
{
	const char *br = strchr(obj, '[');
	char *end;
	size_t n = br ? (size_t)(br - obj) : strlen(obj);

	q->index = -1;
	if (!n || n >= sizeof(q->name))
		return snprintf(q->err, q->cap, "focus %s: no object name", q->path), -1;
	memcpy(q->name, obj, n);
	q->name[n] = 0;
	if (!br)
		return 0;
	errno = 0;
	q->index = strtoll(br + 1, &end, 10);
	if (errno || q->index < 0 || end == br + 1 || strcmp(end, "]"))
		return snprintf(q->err, q->cap, "focus %s: an element is name[INDEX]", q->path), -1;
	return 0;
}

/* One variable of the DWARF matches: of this kind, indexed within bounds. */
static int from_dwarf(struct sync_query *q, const struct sync_var *v, uint64_t bias)
{
	if (v->kind != q->kind)
		return snprintf(q->err, q->cap, "focus %s: %s is a %s, not a %s", q->path, q->name,
				kind_names[v->kind], kind_names[q->kind]), -1;
	if (q->index >= 0 && (uint64_t)q->index >= v->count)
		return snprintf(q->err, q->cap, "focus %s: %s has %u element%s", q->path, q->name,
				v->count, v->count == 1 ? "" : "s"), -1;
	if (q->index < 0 && v->count)
		return snprintf(q->err, q->cap, "focus %s: %s is an array: name one element, as "
				"in %s[0]", q->path, q->name, q->name), -1;
	q->addr = v->vaddr + bias + (q->index > 0 ? (uint64_t)q->index * v->elem : 0);
	return q->found = 1;
}

/* The sizes of the kinds on x86-64 glibc: arrays of them indexed without DWARF. */
static const uint64_t kind_size[DYN_RES_SYNC_KINDS] = { 40, 56, 48, 32, 32 };

static int from_symbol(struct sync_query *q, uint64_t vaddr, uint64_t size, uint64_t bias)
{
	uint64_t elem = kind_size[q->kind], at = q->index > 0 ? (uint64_t)q->index * elem : 0;

	if (size && at + elem > size)
		return snprintf(q->err, q->cap, "focus %s: %s holds %" PRIu64 " bytes, %" PRIu64
				" %s%s", q->path, q->name, size, size / elem, kind_names[q->kind],
				size / elem == 1 ? "" : "es"), -1;
	q->addr = vaddr + bias + at;
	return q->found = 1;
}

static int find_in_module(void *arg, struct sync_file *f, const struct target_module *m)
{
	struct sync_query *q = arg;
	struct sync_var *v;
	size_t n = sync_file_vars(f, &v), i;
	uint64_t vaddr, size;
	int r = 0;

	for (i = 0; i < n; i++)
		if (!strcmp(v[i].name, q->name)) {
			r = from_dwarf(q, &v[i], m->bias);
			break;
		}
	sync_vars_free(v, n);
	if (r == 0 && sync_file_symbol(f, q->name, &vaddr, &size) == 0)
		r = from_symbol(q, vaddr, size, m->bias);
	return r; /* 1 (found) ends the walk */
}

/* One ELF file, not loaded (sonde metrics --plan --exe): its own addresses, bias 0. */
static int in_file(const char *path, struct sync_query *q)
{
	struct target_module m = { .bias = 0 };
	struct sync_file *f = sync_file_open(path);
	int r;

	if (!f)
		return snprintf(q->err, q->cap, "cannot read %s as ELF", path), -1;
	snprintf(m.path, sizeof(m.path), "%s", path);
	r = find_in_module(q, f, &m);
	sync_file_close(f);
	return r < 0 ? -1 : 0;
}

static int sync_value(pid_t pid, const char *file, struct sync_query *q, const char *obj)
{
	char *end;

	if (!strncmp(obj, "0x", 2)) { /* a heap object: by its address */
		errno = 0;
		q->addr = strtoull(obj + 2, &end, 16);
		if (errno || *end || end == obj + 2 || !q->addr)
			return snprintf(q->err, q->cap, "focus %s: a bad address", q->path), -1;
		return 0;
	}
	if (parse_name(q, obj))
		return -1;
	if (file ? in_file(file, q) : each_module(pid, find_in_module, q, q->err, q->cap))
		return -1;
	if (!q->found && file)
		return snprintf(q->err, q->cap, "focus %s: no %s '%s' among the data of %s",
				q->path, kind_names[q->kind], q->name, file), -1;
	if (!q->found)
		return snprintf(q->err, q->cap, "focus %s: no %s '%s' among the data of process %d "
				"(sonde watch %d --resources lists them; a heap object is named by "
				"its address)", q->path, kind_names[q->kind], q->name, (int)pid,
				(int)pid), -1;
	return 0;
}

static int values(pid_t pid, const char *file, const char *path, int64_t *vals, uint32_t cap,
		  uint32_t *n, char *err, size_t errcap)
{
	struct sync_query q = { .err = err, .cap = errcap, .path = path };
	char kind[32];
	const char *obj;
	size_t k;

	*n = 0;
	if (!strncmp(path, "/Files/", 7)) {
		*n = file ? 0 : dyn_file_fds(pid, path + 6, vals, cap);
		return 0;
	}
	if (strncmp(path, "/SyncObject/", 12) || !(obj = strchr(path + 12, '/')))
		return snprintf(err, errcap, "focus %s: not a sync object or a file", path), -1;
	k = (size_t)(obj - (path + 12));
	snprintf(kind, sizeof(kind), "%.*s", (int)(k < sizeof(kind) ? k : sizeof(kind) - 1),
		 path + 12);
	q.kind = dyn_res_kind_of(kind);
	if (q.kind < 0 || q.kind >= DYN_RES_SYNC_KINDS)
		return snprintf(err, errcap, "focus %s: no sync object kind '%s'", path, kind), -1;
	if (!cap || sync_value(pid, file, &q, obj + 1) != 0)
		return -1;
	vals[0] = (int64_t)q.addr;
	*n = 1;
	return 0;
}

int dyn_resource_values(void *pidp, const char *path, int64_t *vals, uint32_t cap, uint32_t *n,
			char *err, size_t errcap)
{
	return values(*(const pid_t *)pidp, NULL, path, vals, cap, n, err, errcap);
}

int dyn_resource_values_elf(void *file, const char *path, int64_t *vals, uint32_t cap,
			    uint32_t *n, char *err, size_t errcap)
{
	return values(0, file, path, vals, cap, n, err, errcap);
}

void dyn_resources_program(struct mdl_program *prog, const pid_t *pidp)
{
	prog->resolve = dyn_resource_values;
	prog->resolve_arg = (void *)(uintptr_t)pidp;
}
