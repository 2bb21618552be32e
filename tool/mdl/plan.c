/* SPDX-License-Identifier: MIT */
/*
 * Plans: a metric and a focus become instrumentation requests (seed 003 §5.3.1, the Metric
 * Manager). For each resource of the focus below its hierarchy's root, the metric's first
 * constraint matching it is taken: a select constraint picks the thread's or process's
 * streams, a flag constraint adds a counter guarding the base's "constrained" requests, a
 * replace constraint is instantiated instead of the base. $constraint is the focus's procedure
 * or its module's procedures, $procedures the program's own; with the program's symbols the
 * sets become concrete procedures, without them they stay wildcards for the session to expand.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mdl.h"
#include "mdl_int.h"
#include "util.h"

#define MAX_LOOPS 16
#define MAX_NAME 256
#define MAX_PATH_LEN 4096
#define NCHOSEN 4 /* code, thread, process, sync object or file */

struct target {
	const char *module, *name; /* module NULL: wherever the name is */
	uint64_t addr;
	int library;
	uint32_t proc; /* index + 1 in the program's procedures; 0: none */
};

struct focus {
	int code; /* 0: the whole program, 1: a module, 2: a procedure */
	char module[MAX_NAME], proc[MAX_NAME];
	char code_path[2 * MAX_NAME + 8], thread_path[64], pid_path[64];
	long thread, pid;
	/* a sync object (depth 1: its kind, 2: its name) or a file */
	enum mdl_res res;
	int res_depth;
	char kind[MAX_NAME], object[MAX_PATH_LEN];
	char res_path[MAX_PATH_LEN + 16];   /* the resource: "/SyncObject/mutex/hot_lock" */
	char match_path[MAX_PATH_LEN + 16]; /* what constraints' paths match (a file: one name) */
};

struct binding {
	const char *var;
	struct target t;
};

/* The plan's requests by (procedure, point, callee). */
struct req_index {
	uint32_t *slot; /* request index + 1; 0: empty */
	uint32_t cap;   /* a power of two, at least twice the requests */
};

struct ctx {
	const struct mdl_lib *lib;
	const struct mdl_metric *m;
	const struct mdl_program *prog;
	struct focus f;
	struct mdl_plan *plan;
	const struct mdl_constraint *cons; /* whose body is being instantiated; NULL: the base */
	uint32_t cons_var;                 /* a flag constraint's counter */
	uint32_t guard, nguards;           /* flag counters guarding constrained requests */
	struct binding loops[MAX_LOOPS];
	int nloops;
	struct req_index index;
	char *err;
	size_t cap;
};

static int fail(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, c->cap, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- the focus ---- */

static int numeric(const char *s, long *out)
{
	char *end;

	if (!*s)
		return -1;
	*out = strtol(s, &end, 10);
	return *end || *out < 0 ? -1 : 0;
}

static int focus_code(struct ctx *c, const char *comp, int depth)
{
	struct focus *f = &c->f;

	if (depth > 2)
		return fail(c, "focus %s: /Code has modules and procedures, nothing below", c->plan->focus);
	snprintf(depth == 1 ? f->module : f->proc, MAX_NAME, "%s", comp);
	f->code = depth;
	snprintf(f->code_path, sizeof(f->code_path), f->code == 1 ? "/Code/%s" : "/Code/%s/%s",
		 f->module, f->proc);
	return 0;
}

static int focus_number(struct ctx *c, const char *root, const char *comp, int depth)
{
	struct focus *f = &c->f;
	int threads = !strcmp(root, "Threads");
	long v;

	if (depth > 1 || numeric(comp, &v))
		return fail(c, "focus %s: /%s takes a number, as in /%s/2", c->plan->focus, root,
			    root);
	*(threads ? &f->thread : &f->pid) = v;
	snprintf(threads ? f->thread_path : f->pid_path, 64, "/%s/%ld", root, v);
	return 0;
}

static const char *const sync_kinds[] = { "mutex", "rwlock", "cond", "barrier", "sem" };

/* /SyncObject/KIND/NAME: the kind, then the object (a symbol, "name[i]" or an address). */
static int focus_sync(struct ctx *c, const char *comp, int depth)
{
	struct focus *f = &c->f;
	size_t i;

	if (depth == 1) {
		for (i = 0; i < sizeof(sync_kinds) / sizeof(sync_kinds[0]); i++)
			if (!strcmp(comp, sync_kinds[i]))
				break;
		if (i == sizeof(sync_kinds) / sizeof(sync_kinds[0]))
			return fail(c, "focus %s: no sync object kind '%s' (mutex, rwlock, cond, "
				    "barrier, sem)", c->plan->focus, comp);
		snprintf(f->kind, sizeof(f->kind), "%s", comp);
	} else if (depth == 2) {
		snprintf(f->object, sizeof(f->object), "%s", comp);
	} else {
		return fail(c, "focus %s: /SyncObject has kinds and objects, nothing below",
			    c->plan->focus);
	}
	f->res = MDL_RES_SYNC;
	f->res_depth = depth;
	snprintf(f->res_path, sizeof(f->res_path), depth == 1 ? "/SyncObject/%s"
			: "/SyncObject/%s/%s", f->kind, f->object);
	snprintf(f->match_path, sizeof(f->match_path), "%s", f->res_path);
	return 0;
}

/* One component of the focus, below the hierarchy 'root' at 'depth' (the root is 0). */
static int focus_comp(struct ctx *c, const char **root, const char *comp, int *depth)
{
	static const char *const roots[] = { "Code", "Threads", "Process", "SyncObject", "Machine" };
	size_t i;

	for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (!strcmp(comp, roots[i])) {
			if (i >= 4)
				return fail(c, "focus %s: resources under /%s are not supported yet",
					    c->plan->focus, comp);
			if (c->f.res && i == 3)
				return fail(c, "focus %s: one sync object or file at a time",
					    c->plan->focus);
			*root = roots[i];
			*depth = 0;
			return 0;
		}
	if (!*root)
		return fail(c, "focus %s: a focus starts with /Code, /Threads, /Process, "
			    "/SyncObject or /Files", c->plan->focus);
	++*depth;
	if (!strcmp(*root, "SyncObject"))
		return focus_sync(c, comp, *depth);
	return !strcmp(*root, "Code") ? focus_code(c, comp, *depth)
				      : focus_number(c, *root, comp, *depth);
}

/*
 * /Files/PATH: the rest of the focus up to a comma is the file's absolute path. Constraints
 * match it as /Files/ANY: a file is one resource below /Files, whatever its directories.
 */
static int focus_file(struct ctx *c, const char *path, size_t n)
{
	struct focus *f = &c->f;

	if (f->res)
		return fail(c, "focus %s: one sync object or file at a time", c->plan->focus);
	while (n > 1 && path[n - 1] == '/') /* /Files/tmp/x.dat/ */
		n--;
	if (n >= sizeof(f->object))
		return fail(c, "focus %s: a path longer than %d bytes", c->plan->focus,
			    MAX_PATH_LEN - 1);
	if (n < 2 || path[0] != '/')
		return fail(c, "focus %s: /Files takes a file's absolute path, as in "
			    "/Files/tmp/x.dat", c->plan->focus);
	memcpy(f->object, path, n);
	f->object[n] = 0;
	f->res = MDL_RES_FILE;
	f->res_depth = 1;
	snprintf(f->res_path, sizeof(f->res_path), "/Files%s", f->object);
	snprintf(f->match_path, sizeof(f->match_path), "/Files/file");
	return 0;
}

static int parse_focus(struct ctx *c, const char *focus)
{
	const char *p = focus, *root = NULL;
	char comp[MAX_NAME];
	int depth = 0;

	c->f.thread = c->f.pid = -1;
	while (*p) {
		size_t n = strcspn(p, "/,");

		if (n == 5 && !strncmp(p, "Files", 5) && (p == focus || p[-1] == '/') &&
		    (p[5] == '/' || !p[5] || p[5] == ',')) {
			p += 5;
			n = strcspn(p, ",");
			if (n && focus_file(c, p, n))
				return -1;
			p += n + (p[n] != 0);
			root = NULL;
			continue;
		}
		if (n >= sizeof(comp))
			return fail(c, "focus %s: a name longer than %d bytes", focus, MAX_NAME - 1);
		if (n) {
			memcpy(comp, p, n);
			comp[n] = 0;
			if (focus_comp(c, &root, comp, &depth))
				return -1;
		}
		p += n + (p[n] != 0);
	}
	return 0;
}

/* ---- choosing the constraints ---- */

static int path_match(const char *pattern, const char *path)
{
	while (*pattern == '/' && *path == '/') {
		size_t a = strcspn(pattern + 1, "/"), b = strcspn(path + 1, "/");

		if (!(a == 1 && pattern[1] == '*') && (a != b || strncmp(pattern + 1, path + 1, a)))
			return 0;
		pattern += a + 1;
		path += b + 1;
	}
	return !*pattern && !*path;
}

static const struct mdl_constraint *constraint_for(const struct mdl_metric *m, const char *path)
{
	uint32_t i, j;

	for (i = 0; i < m->ncons; i++)
		for (j = 0; j < m->cons[i]->npaths; j++)
			if (path_match(m->cons[i]->paths[j], path))
				return m->cons[i];
	return NULL;
}

/* The constraints the focus needs, by resource: code, thread, process, object. */
static int choose(struct ctx *c, const struct mdl_constraint *chosen[NCHOSEN])
{
	const char *paths[NCHOSEN] = { c->f.code ? c->f.code_path : NULL,
				       c->f.thread >= 0 ? c->f.thread_path : NULL,
				       c->f.pid >= 0 ? c->f.pid_path : NULL,
				       c->f.res ? c->f.match_path : NULL };
	int i, replace = 0;

	for (i = 0; i < NCHOSEN; i++) {
		chosen[i] = paths[i] ? constraint_for(c->m, paths[i]) : NULL;
		if (paths[i] && !chosen[i])
			return fail(c, "metric '%s' cannot be constrained to %s (none of its "
				    "constraints matches)", c->m->name,
				    i == 3 ? c->f.res_path : paths[i]);
		if (chosen[i] && chosen[i]->kind == MDL_CONS_REPLACE && replace++)
			return fail(c, "focus %s: two constraints would replace the base of '%s'",
				    c->plan->focus, c->m->name);
	}
	return 0;
}

/* ---- procedure sets ---- */

typedef int (*target_fn)(struct ctx *c, const struct target *t, const void *arg);

static int module_is(const char *have, const char *want)
{
	const char *slash = have ? strrchr(have, '/') : NULL;
	size_t n = strlen(want);

	if (!have)
		return 0;
	have = slash ? slash + 1 : have;
	return !strncmp(have, want, n) && (have[n] == 0 || have[n] == '.');
}

static struct target target_of(const struct ctx *c, const struct mdl_proc *p)
{
	return (struct target){ p->module, p->name, p->addr, p->library,
				(uint32_t)(p - c->prog->procs) + 1 };
}

static int by_name(struct ctx *c, const char *name, target_fn fn, const void *arg)
{
	struct target t = { NULL, name, 0, 0, 0 };
	uint32_t i, n = 0;

	if (!c->prog)
		return fn(c, &t, arg);
	for (i = 0; i < c->prog->n; i++)
		if (!strcmp(c->prog->procs[i].name, name)) {
			n++;
			t = target_of(c, &c->prog->procs[i]);
			if (fn(c, &t, arg))
				return -1;
		}
	c->plan->missing += !n;
	return 0;
}

/* $procedures: the program's own procedures (not its libraries'). */
static int all_procs(struct ctx *c, target_fn fn, const void *arg)
{
	struct target t = { "*", "*", 0, 0, 0 };
	uint32_t i;

	if (!c->prog)
		return fn(c, &t, arg);
	for (i = 0; i < c->prog->n; i++) {
		t = target_of(c, &c->prog->procs[i]);
		if (!t.library && fn(c, &t, arg))
			return -1;
	}
	return 0;
}

/* $constraint: the focus's procedure, or every procedure of its module. */
static int focus_procs(struct ctx *c, target_fn fn, const void *arg)
{
	const struct mdl_proc *p;
	struct target t = { c->f.module, c->f.code == 2 ? c->f.proc : "*", 0, 0, 0 };
	uint32_t i, n = 0;

	if (!c->f.code)
		return fail(c, "constraint '%s': $constraint has no procedures for this focus",
			    c->cons ? c->cons->name : "?");
	if (!c->prog)
		return fn(c, &t, arg);
	for (i = 0; i < c->prog->n; i++) {
		p = &c->prog->procs[i];
		if (!module_is(p->module, c->f.module) || (c->f.code == 2 && strcmp(p->name, c->f.proc)))
			continue;
		n++;
		t = target_of(c, p);
		if (fn(c, &t, arg))
			return -1;
	}
	if (!n && c->f.code == 2)
		return fail(c, "no procedure '%s' in module '%s'", c->f.proc, c->f.module);
	return n ? 0 : fail(c, "no module '%s' in the program", c->f.module);
}

static int each_target(struct ctx *c, const struct mdl_set *s, target_fn fn, const void *arg)
{
	const struct mdl_list *l;
	uint32_t i;
	int k;

	switch (s->kind) {
	case MDL_SET_PROCEDURES:
		return all_procs(c, fn, arg);
	case MDL_SET_CONSTRAINT:
		return focus_procs(c, fn, arg);
	case MDL_SET_NAME:
		return by_name(c, s->name, fn, arg);
	case MDL_SET_LIST:
		l = mdl_find_list(c->lib, s->name);
		for (i = 0; l && i < l->n; i++)
			if (by_name(c, l->items[i], fn, arg))
				return -1;
		return 0;
	case MDL_SET_LOOPVAR:
		for (k = c->nloops - 1; k >= 0; k--)
			if (!strcmp(c->loops[k].var, s->name))
				return fn(c, &c->loops[k].t, arg);
	}
	return fail(c, "internal: '%s' is not bound", s->name ? s->name : "?");
}

/* ---- requests: one per (procedure, point, callee), found through a hash of their keys ---- */

static int same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull;
}

static uint64_t key_hash(const char *module, const char *name, uint64_t addr, enum mdl_point pt,
			 const char *callee)
{
	uint64_t h = hash_str(hash_str(hash_str(0xcbf29ce484222325ull, module), name), callee);

	return (h ^ addr ^ (uint64_t)pt) * 0x9e3779b97f4a7c15ull;
}

static int req_is(const struct mdl_request *r, const struct target *t, enum mdl_point pt,
		  const char *callee)
{
	return r->point == pt && r->addr == t->addr && same(r->module, t->module) &&
	       !strcmp(r->name, t->name) && same(r->callee, callee);
}

static void index_put(struct req_index *x, const struct mdl_request *r, uint32_t i)
{
	uint32_t h = (uint32_t)key_hash(r->module, r->name, r->addr, r->point, r->callee);

	while (x->slot[h & (x->cap - 1)])
		h++;
	x->slot[h & (x->cap - 1)] = i + 1;
}

static void index_grow(struct req_index *x, const struct mdl_plan *p)
{
	uint32_t i;

	if (2 * (p->nreq + 1) <= x->cap)
		return;
	free(x->slot);
	x->cap = x->cap ? 2 * x->cap : 64;
	x->slot = xcalloc(x->cap, sizeof(*x->slot));
	for (i = 0; i < p->nreq; i++)
		index_put(x, &p->req[i], i);
}

static struct mdl_request *request_for(struct ctx *c, const struct target *t, enum mdl_point pt,
				       const char *callee)
{
	struct mdl_plan *p = c->plan;
	struct req_index *x = &c->index;
	struct mdl_request *r;
	uint32_t h;

	index_grow(x, p);
	h = (uint32_t)key_hash(t->module, t->name, t->addr, pt, callee);
	for (; x->slot[h & (x->cap - 1)]; h++)
		if (req_is(&p->req[x->slot[h & (x->cap - 1)] - 1], t, pt, callee))
			return &p->req[x->slot[h & (x->cap - 1)] - 1];
	p->req = xrealloc(p->req, (p->nreq + 1) * sizeof(*p->req));
	r = &p->req[p->nreq];
	memset(r, 0, sizeof(*r));
	r->module = t->module ? xstrdup(t->module) : NULL;
	r->name = xstrdup(t->name);
	r->addr = t->addr;
	r->library = t->library;
	r->proc = t->proc;
	r->point = pt;
	r->callee = callee ? xstrdup(callee) : NULL;
	index_put(x, r, p->nreq++);
	return r;
}

/* ---- instantiating statements ---- */

/* The parser allowed only the constraint's own counter in a flag's body, $metric elsewhere. */
static uint32_t var_index(const struct ctx *c)
{
	return c->cons && c->cons->kind == MDL_CONS_FLAG ? c->cons_var : 0;
}

static int guard(struct ctx *c, const struct mdl_stmt *s, struct mdl_action *a)
{
	if (!s->constrained || !c->nguards)
		return 0;
	if (c->nguards > 1)
		return fail(c, "%s:%d:%d: a constrained request of '%s' would test %u flag "
			    "constraints; the runtime tests one predicate per primitive",
			    s->loc.file, s->loc.line, s->loc.col, c->m->name, c->nguards);
	if (a->pred.opd != MDL_OPD_NONE)
		return fail(c, "%s:%d:%d: a constrained request with a predicate of its own would "
			    "test two; the runtime tests one per primitive", s->loc.file,
			    s->loc.line, s->loc.col);
	a->pred = (struct mdl_pred){ MDL_OPD_COUNTER, c->guard, 0, MDL_GT, 0, 0 };
	return 0;
}

/* The copies of a call: one per value of $object when its predicate tests it (at least one). */
static uint32_t copies(const struct ctx *c, const struct mdl_call *k)
{
	return k->cond.object && c->plan->nobjects ? c->plan->nobjects : 1;
}

static int make_action(struct ctx *c, const struct mdl_stmt *s, const struct mdl_call *k,
		       uint32_t copy, struct mdl_action *a)
{
	memset(a, 0, sizeof(*a));
	a->prim = k->prim;
	a->var = var_index(c);
	a->value = k->value;
	a->from_return = k->from_return;
	a->pred.opd = k->cond.opd;
	a->pred.counter = k->cond.opd == MDL_OPD_COUNTER ? var_index(c) : 0;
	a->pred.arg = k->cond.arg;
	a->pred.op = k->cond.op;
	a->pred.k = k->cond.k;
	a->pred.object = k->cond.object;
	if (k->cond.object) /* Paradyn's resource constraint: a predicate on the object */
		a->pred.k = c->plan->nobjects ? c->plan->objects[copy] : MDL_NO_OBJECT;
	if (k->cond.object && c->plan->any_object) /* every object of the kind */
		memset(&a->pred, 0, sizeof(a->pred));
	return guard(c, s, a);
}

/* A request statement at one procedure: its actions first (prepend) or last (append). */
static int add_actions(struct ctx *c, const struct target *t, const void *arg)
{
	const struct mdl_stmt *s = arg;
	struct mdl_request *r;
	uint32_t i, j, at, n = 0;

	for (i = 0; i < s->ncalls; i++)
		n += copies(c, &s->calls[i]);
	if (!n)
		return 0;
	r = request_for(c, t, s->point, s->callee);
	r->act = xrealloc(r->act, (r->nact + n) * sizeof(*r->act));
	at = s->prepend ? 0 : r->nact;
	memmove(r->act + at + n, r->act + at, (r->nact - at) * sizeof(*r->act));
	r->nact += n;
	for (i = 0; i < s->ncalls; i++)
		for (j = 0; j < copies(c, &s->calls[i]); j++)
			if (make_action(c, s, &s->calls[i], j, &r->act[at++]))
				return -1;
	return 0;
}

static int run_stmt(struct ctx *c, const struct mdl_stmt *s);

static int bind_and_run(struct ctx *c, const struct target *t, const void *arg)
{
	const struct mdl_stmt *s = arg;
	int rc;

	if (c->nloops == MAX_LOOPS)
		return fail(c, "foreach nested too deep");
	c->loops[c->nloops++] = (struct binding){ s->var, *t };
	rc = run_stmt(c, &s->body[0]);
	c->nloops--;
	return rc;
}

static int run_stmt(struct ctx *c, const struct mdl_stmt *s)
{
	uint32_t i;

	switch (s->kind) {
	case MDL_STMT_FOREACH:
		return each_target(c, &s->set, bind_and_run, s);
	case MDL_STMT_REQUEST:
		return each_target(c, &s->set, add_actions, s);
	case MDL_STMT_BLOCK:
		break;
	}
	for (i = 0; i < s->nbody; i++)
		if (run_stmt(c, &s->body[i]))
			return -1;
	return 0;
}

static uint32_t add_var(struct mdl_plan *p, const char *name, enum mdl_var_kind kind,
			enum mdl_role role)
{
	p->vars = xrealloc(p->vars, (p->nvars + 1) * sizeof(*p->vars));
	p->vars[p->nvars] = (struct mdl_var){ name, kind, role };
	return p->nvars++;
}

static int run_constraint(struct ctx *c, const struct mdl_constraint *k)
{
	int rc;

	c->cons = k;
	if (k->kind == MDL_CONS_FLAG) {
		c->cons_var = add_var(c->plan, k->name, MDL_VAR_COUNTER, MDL_ROLE_FLAG);
		c->guard = c->cons_var;
		c->nguards++;
	}
	rc = run_stmt(c, &k->body);
	c->cons = NULL;
	return rc;
}

/* Flags in the order the metric lists its constraints, then the replacement or the base. */
static int instantiate(struct ctx *c, const struct mdl_constraint *chosen[NCHOSEN])
{
	const struct mdl_constraint *replace = NULL;
	uint32_t i;
	int k;

	for (i = 0; i < c->m->ncons; i++)
		for (k = 0; k < NCHOSEN; k++) {
			if (chosen[k] != c->m->cons[i])
				continue;
			if (chosen[k]->kind == MDL_CONS_REPLACE)
				replace = chosen[k];
			else if (chosen[k]->kind == MDL_CONS_FLAG && run_constraint(c, chosen[k]))
				return -1;
		}
	if (replace && c->nguards)
		return fail(c, "focus %s: '%s' cannot narrow '%s' and guard it with a flag too "
			    "(the runtime tests one predicate per primitive)", c->plan->focus,
			    replace->name, c->m->name);
	if (replace) {
		c->plan->vars[0].kind = replace->var;
		return run_constraint(c, replace);
	}
	if (c->m->base == MDL_BASE_EXTERNAL) {
		c->plan->external = c->m->external;
		return 0;
	}
	return run_stmt(c, &c->m->body);
}

/* ---- the focus's sync object or file: $object ---- */

static int resolve(struct ctx *c)
{
	struct mdl_plan *p = c->plan;
	uint32_t n = 0;

	p->resource = c->f.res;
	if (!c->f.res)
		return 0;
	p->object = xstrdup(c->f.res_path);
	p->any_object = c->f.res == MDL_RES_SYNC && c->f.res_depth == 1;
	if (!c->prog || !c->prog->resolve || p->any_object)
		return 0;
	p->objects = xcalloc(MDL_MAX_OBJECTS, sizeof(*p->objects));
	if (c->prog->resolve(c->prog->resolve_arg, p->object, p->objects, MDL_MAX_OBJECTS, &n,
			     c->err, c->cap))
		return -1;
	p->nobjects = n < MDL_MAX_OBJECTS ? n : MDL_MAX_OBJECTS;
	p->resolved = 1;
	return 0;
}

/* ---- plans ---- */

struct mdl_plan *mdl_plan(const struct mdl_lib *lib, const char *metric, const char *focus,
			  const struct mdl_program *prog, char *err, size_t cap)
{
	struct ctx c = { .lib = lib, .prog = prog, .err = err, .cap = cap };
	const struct mdl_constraint *chosen[NCHOSEN];
	struct mdl_plan *p;
	int rc;

	c.m = mdl_find_metric(lib, metric);
	if (!c.m)
		return fail(&c, "unknown metric '%s' ('sonde metrics' lists them)", metric), NULL;
	p = c.plan = xcalloc(1, sizeof(*p));
	p->metric = c.m;
	p->focus = xstrdup(focus ? focus : "");
	p->fold = c.m->fold;
	p->agg = c.m->agg;
	add_var(p, c.m->name, c.m->var, MDL_ROLE_VALUE);
	rc = parse_focus(&c, p->focus) || choose(&c, chosen) || resolve(&c) ||
	     instantiate(&c, chosen);
	free(c.index.slot);
	p->thread = c.f.thread;
	p->pid = c.f.pid;
	if (rc)
		return mdl_plan_free(p), NULL;
	return p;
}

void mdl_plan_free(struct mdl_plan *p)
{
	uint32_t i;

	if (!p)
		return;
	for (i = 0; i < p->nreq; i++) {
		free(p->req[i].module);
		free(p->req[i].name);
		free(p->req[i].callee);
		free(p->req[i].act);
	}
	free(p->req);
	free(p->vars);
	free(p->focus);
	free(p->object);
	free(p->objects);
	free(p);
}

/* ---- printing ---- */

static void print_pred(FILE *out, const struct mdl_plan *p, const struct mdl_pred *d)
{
	if (d->opd == MDL_OPD_NONE)
		return;
	fputs("if (", out);
	if (d->opd == MDL_OPD_COUNTER)
		fputs(p->vars[d->counter].name, out);
	else if (d->opd == MDL_OPD_ARG)
		fprintf(out, "$arg[%d]", d->arg);
	else
		fputs("$return", out);
	fprintf(out, " %s ", mdl_relop_name(d->op));
	if (!d->object)
		fprintf(out, "%lld) ", (long long)d->k);
	else if (!p->resolved)
		fputs("$object) ", out);
	else if (d->k == MDL_NO_OBJECT)
		fputs("$object: none open) ", out);
	else
		fprintf(out, p->resource == MDL_RES_SYNC ? "0x%llx) " : "%lld) ",
			(long long)d->k);
}

static void print_action(FILE *out, const struct mdl_plan *p, const struct mdl_action *a)
{
	print_pred(out, p, &a->pred);
	fprintf(out, "%s(%s", mdl_prim_name(a->prim), p->vars[a->var].name);
	if (a->from_return)
		fputs(", $return", out);
	else if (a->prim <= MDL_SUB)
		fprintf(out, ", %lld", (long long)a->value);
	fputc(')', out);
}

static void print_request(FILE *out, const struct mdl_plan *p, const struct mdl_request *r)
{
	uint32_t i;

	fprintf(out, "  %s%s%s", r->module ? r->module : "", r->module ? ":" : "", r->name);
	if (r->addr)
		fprintf(out, "@0x%llx", (unsigned long long)r->addr);
	fprintf(out, " %s", mdl_point_name(r->point));
	if (r->callee)
		fprintf(out, "(%s)", r->callee);
	fputs(":", out);
	for (i = 0; i < r->nact; i++) {
		fputs(i ? "; " : " ", out);
		print_action(out, p, &r->act[i]);
	}
	fputc('\n', out);
}

static void print_objects(FILE *out, const struct mdl_plan *p)
{
	uint32_t i;

	fprintf(out, "  $object %s: ", p->object);
	if (p->any_object)
		fputs("any object of the kind (its tests are left out)", out);
	else if (!p->resolved)
		fputs("resolved in the process (an address, or the open descriptors)", out);
	else if (!p->nobjects)
		fputs("not open now (the predicates hold for no call until it is)", out);
	for (i = 0; p->resolved && i < p->nobjects; i++)
		fprintf(out, p->resource == MDL_RES_SYNC ? "%s0x%llx" : "%sfd %lld", i ? ", " : "",
			(long long)p->objects[i]);
	fputc('\n', out);
}

void mdl_plan_print(FILE *out, const struct mdl_plan *p)
{
	static const char *const kinds[] = { "counter", "wall timer", "process timer", "timer" };
	uint32_t i;

	fprintf(out, "%s at %s: ", p->metric->name, *p->focus ? p->focus : "/Code");
	if (p->external)
		fprintf(out, "the reading \"%s\"", p->external);
	else
		fprintf(out, "%s %s", kinds[p->vars[0].kind], p->vars[0].name);
	if (p->thread >= 0)
		fprintf(out, " of thread %ld", p->thread);
	if (p->pid >= 0)
		fprintf(out, " of process %ld", p->pid);
	fprintf(out, "; %s over threads and processes, histogram folded by %s\n",
		mdl_agg_name(p->agg), mdl_fold_name(p->fold));
	if (p->object)
		print_objects(out, p);
	for (i = 0; i < p->nreq; i++)
		print_request(out, p, &p->req[i]);
	if (p->missing)
		fprintf(out, "  (%u named procedure%s not in the program)\n", p->missing,
			p->missing == 1 ? "" : "s");
}
