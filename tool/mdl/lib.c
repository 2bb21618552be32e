/* SPDX-License-Identifier: MIT */
/*
 * The metric library: its definitions, finding them, loading files (the built-in
 * share/sonde/metrics.mdl first, then a user's), names of the enums, one-line descriptions.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mdl.h"
#include "mdl_int.h"
#include "util.h"

#define MAX_FILE (16u << 20)

struct mdl_lib *mdl_lib_new(void)
{
	return xcalloc(1, sizeof(struct mdl_lib));
}

/* Append a zeroed element of 'size' bytes to an array of pointers. */
static void *push(void *arr, uint32_t *n, size_t size)
{
	void ***a = arr;

	*a = xrealloc(*a, (*n + 1) * sizeof(**a));
	(*a)[*n] = xcalloc(1, size);
	return (*a)[(*n)++];
}

struct mdl_units *mdl_add_units(struct mdl_lib *lib)
{
	return push(&lib->units, &lib->nunits, sizeof(struct mdl_units));
}

struct mdl_list *mdl_add_list(struct mdl_lib *lib)
{
	return push(&lib->lists, &lib->nlists, sizeof(struct mdl_list));
}

struct mdl_constraint *mdl_add_constraint(struct mdl_lib *lib)
{
	return push(&lib->cons, &lib->ncons, sizeof(struct mdl_constraint));
}

struct mdl_metric *mdl_add_metric(struct mdl_lib *lib)
{
	return push(&lib->metrics, &lib->nmetrics, sizeof(struct mdl_metric));
}

const char *mdl_add_file(struct mdl_lib *lib, const char *name)
{
	lib->files = xrealloc(lib->files, (lib->nfiles + 1) * sizeof(*lib->files));
	lib->files[lib->nfiles] = xstrdup(name);
	return lib->files[lib->nfiles++];
}

void mdl_stmt_free(struct mdl_stmt *s)
{
	uint32_t i;

	for (i = 0; i < s->nbody; i++)
		mdl_stmt_free(&s->body[i]);
	for (i = 0; i < s->ncalls; i++) {
		free(s->calls[i].var);
		free(s->calls[i].cond.counter);
	}
	free(s->body);
	free(s->calls);
	free(s->var);
	free(s->set.name);
	free(s->callee);
}

static void free_cons(struct mdl_constraint *c)
{
	uint32_t i;

	for (i = 0; i < c->npaths; i++)
		free(c->paths[i]);
	free(c->paths);
	mdl_stmt_free(&c->body);
	free(c->name);
	free(c);
}

static void free_metric(struct mdl_metric *m)
{
	mdl_stmt_free(&m->body);
	free(m->cons);
	free(m->name);
	free(m->title);
	free(m->external);
	free(m);
}

static void free_units(struct mdl_units *u)
{
	free(u->name);
	free(u->text);
	free(u);
}

static void free_list(struct mdl_list *l)
{
	uint32_t i;

	for (i = 0; i < l->n; i++)
		free(l->items[i]);
	free(l->items);
	free(l->name);
	free(l);
}

void mdl_lib_truncate(struct mdl_lib *lib, const struct mdl_counts *keep)
{
	while (lib->nunits > keep->units)
		free_units(lib->units[--lib->nunits]);
	while (lib->nlists > keep->lists)
		free_list(lib->lists[--lib->nlists]);
	while (lib->ncons > keep->cons)
		free_cons(lib->cons[--lib->ncons]);
	while (lib->nmetrics > keep->metrics)
		free_metric(lib->metrics[--lib->nmetrics]);
}

void mdl_lib_free(struct mdl_lib *lib)
{
	uint32_t i;

	if (!lib)
		return;
	mdl_lib_truncate(lib, &(struct mdl_counts){ 0, 0, 0, 0 });
	for (i = 0; i < lib->nfiles; i++)
		free(lib->files[i]);
	free(lib->units);
	free(lib->lists);
	free(lib->cons);
	free(lib->metrics);
	free(lib->files);
	free(lib);
}

/* ---- look-ups (a name may be half-defined after a failed load: skip NULL names) ---- */

#define FIND(arr, n, name)                                              \
	do {                                                            \
		uint32_t i_;                                            \
		for (i_ = 0; i_ < (n); i_++)                            \
			if ((arr)[i_]->name && !strcmp((arr)[i_]->name, name)) \
				return (arr)[i_];                       \
		return NULL;                                            \
	} while (0)

const struct mdl_metric *mdl_find_metric(const struct mdl_lib *lib, const char *name)
{
	FIND(lib->metrics, lib->nmetrics, name);
}

const struct mdl_constraint *mdl_find_constraint(const struct mdl_lib *lib, const char *name)
{
	FIND(lib->cons, lib->ncons, name);
}

const struct mdl_list *mdl_find_list(const struct mdl_lib *lib, const char *name)
{
	FIND(lib->lists, lib->nlists, name);
}

const struct mdl_units *mdl_find_units(const struct mdl_lib *lib, const char *name)
{
	FIND(lib->units, lib->nunits, name);
}

/* ---- loading ---- */

static char *read_file(const char *path, char *err, size_t cap)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	if (!f) {
		snprintf(err, cap, "%s: %s", path, strerror(errno));
		return NULL;
	}
	buf = xmalloc(MAX_FILE + 1);
	n = fread(buf, 1, MAX_FILE + 1, f);
	if (ferror(f) || n > MAX_FILE) {
		snprintf(err, cap, "%s: %s", path, ferror(f) ? strerror(errno) : "file too large");
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	buf[n] = 0;
	if (memchr(buf, 0, n)) {
		snprintf(err, cap, "%s: not a text file (NUL byte)", path);
		free(buf);
		return NULL;
	}
	return buf;
}

int mdl_load_file(struct mdl_lib *lib, const char *path)
{
	char *src = read_file(path, lib->err, sizeof(lib->err));
	int rc;

	if (!src)
		return -1;
	rc = mdl_load_string(lib, path, src);
	free(src);
	return rc;
}

/* Installed: <prefix>/bin/sonde and <prefix>/share/sonde; in the tree: build/bin/sonde. */
int mdl_builtin_path(char *out, size_t cap)
{
	const char *env = getenv("SONDE_METRICS");

	if (env && *env) {
		snprintf(out, cap, "%s", env);
		return access(out, R_OK) == 0 ? 0 : -1;
	}
	snprintf(out, cap, "%s/../share/sonde/metrics.mdl", self_dir());
	if (access(out, R_OK) == 0)
		return 0;
	snprintf(out, cap, "%s/../../share/sonde/metrics.mdl", self_dir());
	return access(out, R_OK) == 0 ? 0 : -1;
}

struct mdl_lib *mdl_load_all(const char *user, char *err, size_t cap)
{
	struct mdl_lib *lib = mdl_lib_new();
	char path[PATH_MAX];

	char real[PATH_MAX];

	if (mdl_builtin_path(path, sizeof(path)) != 0) {
		snprintf(err, cap, "the built-in metrics are missing (looked for %s)", path);
		return mdl_lib_free(lib), NULL;
	}
	if (realpath(path, real))
		snprintf(path, sizeof(path), "%s", real);
	if (mdl_load_file(lib, path) != 0 || (user && mdl_load_file(lib, user) != 0)) {
		snprintf(err, cap, "%s", lib->err);
		return mdl_lib_free(lib), NULL;
	}
	return lib;
}

/* ---- names and descriptions ---- */

const char *mdl_fold_name(enum mdl_fold f)
{
	return f == MDL_FOLD_AVG ? "avg" : "sum";
}

const char *mdl_agg_name(enum mdl_agg a)
{
	static const char *const names[] = { "sum", "avg", "min", "max" };

	return (unsigned)a < 4 ? names[a] : "?";
}

const char *mdl_point_name(enum mdl_point p)
{
	static const char *const names[] = { "entry", "exit", "calls" };

	return (unsigned)p < MDL_POINT_COUNT ? names[p] : "?";
}

const char *mdl_prim_name(enum mdl_prim p)
{
	static const char *const names[] = { "setCounter", "addCounter", "subCounter",
					     "startWallTimer", "stopWallTimer",
					     "startProcessTimer", "stopProcessTimer" };

	return (unsigned)p < MDL_PRIM_COUNT ? names[p] : "?";
}

const char *mdl_relop_name(enum mdl_relop op)
{
	static const char *const names[] = { "==", "!=", "<", "<=", ">", ">=" };

	return (unsigned)op < 6 ? names[op] : "?";
}

static void describe_set(FILE *out, const struct mdl_set *s)
{
	if (s->kind == MDL_SET_PROCEDURES)
		fputs("$procedures", out);
	else if (s->kind == MDL_SET_CONSTRAINT)
		fputs("$constraint", out);
	else if (s->kind == MDL_SET_NAME)
		fprintf(out, "\"%s\"", s->name);
	else
		fputs(s->name, out);
}

/* "addCounter at $procedures->entry", one per request, separated by "; ". */
static void describe_stmt(FILE *out, const struct mdl_stmt *s, int *n)
{
	uint32_t i;
	int inner = 0;

	if (s->kind == MDL_STMT_FOREACH) {
		fprintf(out, "%sforeach %s in ", (*n)++ ? "; " : "", s->var);
		describe_set(out, &s->set);
		fputs(": ", out);
		describe_stmt(out, &s->body[0], &inner);
		return;
	}
	for (i = 0; i < s->nbody; i++)
		describe_stmt(out, &s->body[i], n);
	if (s->kind != MDL_STMT_REQUEST)
		return;
	fputs((*n)++ ? "; " : "", out);
	for (i = 0; i < s->ncalls; i++)
		fprintf(out, "%s%s%s", i ? ", " : "", s->calls[i].cond.opd ? "if(...) " : "",
			mdl_prim_name(s->calls[i].prim));
	fputs(" at ", out);
	describe_set(out, &s->set);
	fprintf(out, "->%s%s", mdl_point_name(s->point), s->constrained ? " (constrained)" : "");
}

void mdl_describe(FILE *out, const struct mdl_metric *m)
{
	static const char *const kinds[] = { "counter", "wall timer", "process timer", "timer" };
	int n = 0;

	if (m->base == MDL_BASE_EXTERNAL) {
		fprintf(out, "reads \"%s\" (no instrumentation)", m->external);
		return;
	}
	fprintf(out, "%s: ", kinds[m->var]);
	describe_stmt(out, &m->body, &n);
	if (!n)
		fputs("nothing", out);
}
