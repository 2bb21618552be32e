/* SPDX-License-Identifier: MIT */
/*
 * The hypothesis language (docs/consult.md): recursive descent with the MDL's lexer in
 * expression mode (reals, + - * / && || !). Names are checked as they are read: a parent is a
 * hypothesis defined before, an identifier in an expression is a threshold when one of that
 * name is defined, else a metric (the data source says later whether it can measure it).
 */
#include "hyp.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mdl/mdl_lex.h"
#include "util.h"

#define MAX_FILE (1u << 20)
#define MAX_DEPTH 64

static const char *const hier_names[H_COUNT] = { "Code", "SyncObject", "Files", "Machine",
						 "Process", "Communicator", "Peer", "Tag",
						 "Threads" };

const char *cs_hier_name(int h)
{
	return h >= 0 && h < H_COUNT ? hier_names[h] : "?";
}

int cs_hier_of(const char *name)
{
	int h;

	for (h = 0; h < H_COUNT; h++)
		if (!strcmp(name, hier_names[h]))
			return h;
	return -1;
}

struct hparser {
	struct lexer lx;
	struct hyp_lib *lib;
	const char *file;
	int depth;
};

static struct mdl_loc here(const struct hparser *p)
{
	return (struct mdl_loc){ p->file, p->lx.tline, p->lx.tcol };
}

static int fail(struct hparser *p, struct mdl_loc at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct hparser *p, struct mdl_loc at, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return lex_error_at(&p->lx, at.line, at.col, "%s", msg);
}

static int expected(struct hparser *p, const char *what)
{
	return lex_expected(&p->lx, what);
}

static int next(struct hparser *p)
{
	return lex_next(&p->lx);
}

static int expect(struct hparser *p, enum tok t, const char *what)
{
	return lex_expect(&p->lx, t, what);
}

static int is_word(const struct hparser *p, const char *w)
{
	return lex_is(&p->lx, T_IDENT, w);
}

static char *text(const struct hparser *p)
{
	char *s = xmalloc(p->lx.len + 1);

	memcpy(s, p->lx.start, p->lx.len);
	s[p->lx.len] = 0;
	return s;
}

static const char *file_of(struct hyp_lib *lib, const char *name)
{
	uint32_t i;

	for (i = 0; i < lib->nfiles; i++)
		if (!strcmp(lib->files[i], name))
			return lib->files[i];
	lib->files = xrealloc(lib->files, (lib->nfiles + 1) * sizeof(char *));
	return lib->files[lib->nfiles++] = xstrdup(name);
}

int hyp_find(const struct hyp_lib *lib, const char *name)
{
	uint32_t i;

	for (i = 0; i < lib->nhyps; i++)
		if (!strcmp(lib->hyps[i].name, name))
			return (int)i;
	return -1;
}

int hyp_find_threshold(const struct hyp_lib *lib, const char *name)
{
	uint32_t i;

	for (i = 0; i < lib->nthresholds; i++)
		if (!strcmp(lib->thresholds[i].name, name))
			return (int)i;
	return -1;
}

static uint32_t metric_ref(struct hyp_lib *lib, const char *name)
{
	uint32_t i;

	for (i = 0; i < lib->nmetrics; i++)
		if (!strcmp(lib->metrics[i], name))
			return i;
	lib->metrics = xrealloc(lib->metrics, (lib->nmetrics + 1) * sizeof(char *));
	lib->metrics[lib->nmetrics] = xstrdup(name);
	return lib->nmetrics++;
}

/* ---- expressions ---- */

static void hx_free(struct hx_expr *e)
{
	if (!e)
		return;
	hx_free(e->a);
	hx_free(e->b);
	free(e);
}

static int is_bool(const struct hx_expr *e)
{
	return e->op >= HX_LT;
}

static struct hx_expr *node(enum hx_op op, struct mdl_loc at, struct hx_expr *a,
			    struct hx_expr *b)
{
	struct hx_expr *e = xcalloc(1, sizeof(*e));

	e->op = op;
	e->loc = at;
	e->a = a;
	e->b = b;
	return e;
}

static int parse_or(struct hparser *p, struct hx_expr **out);

/* Operands must be numbers for arithmetic and comparisons, booleans for && || !. */
static int want(struct hparser *p, const struct hx_expr *e, int boolean)
{
	if (is_bool(e) == boolean)
		return 0;
	return fail(p, e->loc, boolean ? "expected a comparison here, found a number"
				       : "expected a number here, found a comparison");
}

static int parse_primary(struct hparser *p, struct hx_expr **out)
{
	struct mdl_loc at = here(p);
	int t;
	char *name;

	if (p->lx.t == T_INT || p->lx.t == T_REAL) {
		*out = node(HX_NUM, at, NULL, NULL);
		(*out)->num = p->lx.dval;
		return next(p);
	}
	if (p->lx.t == T_LPAREN) {
		if (++p->depth > MAX_DEPTH)
			return fail(p, at, "expression nested too deeply");
		if (next(p) || parse_or(p, out))
			return -1;
		p->depth--;
		return expect(p, T_RPAREN, "')'");
	}
	if (p->lx.t != T_IDENT)
		return expected(p, "a number, a metric or a threshold");
	name = text(p);
	t = hyp_find_threshold(p->lib, name);
	*out = node(t >= 0 ? HX_THRESHOLD : HX_METRIC, at, NULL, NULL);
	(*out)->ref = t >= 0 ? (uint32_t)t : metric_ref(p->lib, name);
	free(name);
	return next(p);
}

static int parse_unary(struct hparser *p, struct hx_expr **out)
{
	struct mdl_loc at = here(p);
	struct hx_expr *a = NULL;

	if (p->lx.t != T_MINUS)
		return parse_primary(p, out);
	if (++p->depth > MAX_DEPTH)
		return fail(p, at, "expression nested too deeply");
	if (next(p) || parse_unary(p, &a) || want(p, a, 0))
		return hx_free(a), -1;
	p->depth--;
	*out = node(HX_NEG, at, a, NULL);
	return 0;
}

/* A left-associative level: operands from sub, operators from the table. */
struct level {
	int (*sub)(struct hparser *, struct hx_expr **);
	int boolean; /* operands are booleans */
	struct { enum tok t; enum hx_op op; } ops[4];
	int nops;
};

static int parse_level(struct hparser *p, const struct level *lv, struct hx_expr **out)
{
	struct hx_expr *a = NULL, *b = NULL;
	int i, found;

	if (lv->sub(p, &a))
		return hx_free(a), -1;
	for (;;) {
		struct mdl_loc at = here(p);

		for (i = 0, found = -1; i < lv->nops; i++)
			if (p->lx.t == lv->ops[i].t)
				found = i;
		if (found < 0)
			break;
		if (want(p, a, lv->boolean) || next(p) || lv->sub(p, &b) ||
		    want(p, b, lv->boolean)) {
			hx_free(a);
			hx_free(b);
			return -1;
		}
		a = node(lv->ops[found].op, at, a, b);
		b = NULL;
	}
	*out = a;
	return 0;
}

static int parse_term(struct hparser *p, struct hx_expr **out)
{
	static const struct level lv = { parse_unary, 0,
					 { { T_STAR, HX_MUL }, { T_SLASH, HX_DIV } }, 2 };
	return parse_level(p, &lv, out);
}

static int parse_sum(struct hparser *p, struct hx_expr **out)
{
	static const struct level lv = { parse_term, 0,
					 { { T_PLUS, HX_ADD }, { T_MINUS, HX_SUB } }, 2 };
	return parse_level(p, &lv, out);
}

/* One comparison at most: a < b < c means nothing here. */
static int parse_cmp(struct hparser *p, struct hx_expr **out)
{
	static const struct { enum tok t; enum hx_op op; } rel[] = {
		{ T_LT, HX_LT }, { T_LE, HX_LE }, { T_GT, HX_GT }, { T_GE, HX_GE },
	};
	struct hx_expr *a = NULL, *b = NULL;
	struct mdl_loc at;
	size_t i;

	if (parse_sum(p, &a))
		return hx_free(a), -1;
	at = here(p);
	for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++)
		if (p->lx.t == rel[i].t)
			break;
	if (i == sizeof(rel) / sizeof(rel[0])) {
		if (p->lx.t == T_EQ || p->lx.t == T_NE)
			return hx_free(a), fail(p, at, "== and != compare nothing measured: use < <= > >=");
		*out = a;
		return 0;
	}
	if (want(p, a, 0) || next(p) || parse_sum(p, &b) || want(p, b, 0)) {
		hx_free(a);
		hx_free(b);
		return -1;
	}
	*out = node(rel[i].op, at, a, b);
	return 0;
}

static int parse_not(struct hparser *p, struct hx_expr **out)
{
	struct mdl_loc at = here(p);
	struct hx_expr *a = NULL;

	if (p->lx.t != T_NOT)
		return parse_cmp(p, out);
	if (++p->depth > MAX_DEPTH)
		return fail(p, at, "expression nested too deeply");
	if (next(p) || parse_not(p, &a) || want(p, a, 1))
		return hx_free(a), -1;
	p->depth--;
	*out = node(HX_NOT, at, a, NULL);
	return 0;
}

static int parse_and(struct hparser *p, struct hx_expr **out)
{
	static const struct level lv = { parse_not, 1, { { T_ANDAND, HX_AND } }, 1 };
	return parse_level(p, &lv, out);
}

static int parse_or(struct hparser *p, struct hx_expr **out)
{
	static const struct level lv = { parse_and, 1, { { T_OROR, HX_OR } }, 1 };
	return parse_level(p, &lv, out);
}

/* ---- definitions ---- */

static int take_string(struct hparser *p, const char *what, char **out)
{
	if (p->lx.t != T_STRING)
		return expected(p, what);
	free(*out);
	*out = xstrdup(p->lx.sval);
	return next(p);
}

/* threshold NAME = NUMBER [fixed] [STRING] ; — a name defined before gets the new value. */
static int parse_threshold(struct hparser *p)
{
	struct hyp_lib *lib = p->lib;
	struct mdl_loc at;
	char *name;
	int i;
	double v;

	if (next(p))
		return -1;
	at = here(p);
	if (p->lx.t != T_IDENT)
		return expected(p, "a threshold's name");
	name = text(p);
	if (hyp_find(lib, name) >= 0) {
		fail(p, at, "'%s' is a hypothesis", name);
		return free(name), -1;
	}
	if (next(p) || expect(p, T_ASSIGN, "'='"))
		return free(name), -1;
	if (p->lx.t != T_INT && p->lx.t != T_REAL) {
		free(name);
		return expected(p, "a number");
	}
	v = p->lx.dval;
	if (!isfinite(v) || v < 0) {
		free(name);
		return fail(p, here(p), "a threshold is a finite number >= 0");
	}
	if (next(p))
		return free(name), -1;
	i = hyp_find_threshold(lib, name);
	if (i < 0) {
		lib->thresholds = xrealloc(lib->thresholds,
					   (lib->nthresholds + 1) * sizeof(*lib->thresholds));
		i = (int)lib->nthresholds++;
		lib->thresholds[i] = (struct hyp_threshold){ .name = name, .loc = at };
	} else {
		free(name);
	}
	lib->thresholds[i].value = v;
	lib->thresholds[i].fixed = 0;
	if (is_word(p, "fixed")) {
		lib->thresholds[i].fixed = 1;
		if (next(p))
			return -1;
	}
	if (p->lx.t == T_STRING && take_string(p, "", &lib->thresholds[i].text))
		return -1;
	return expect(p, T_SEMI, "';'");
}

static int parse_parents(struct hparser *p, struct hypothesis *h, uint32_t self)
{
	do {
		struct mdl_loc at = here(p);
		char *name;
		int k;

		if (next(p))
			return -1;
		at = here(p);
		if (p->lx.t != T_IDENT)
			return expected(p, "a hypothesis");
		name = text(p);
		k = hyp_find(p->lib, name);
		if (k < 0) {
			fail(p, at, "unknown hypothesis '%s' (a parent is defined before)", name);
			return free(name), -1;
		}
		free(name);
		h->parents = xrealloc(h->parents, (h->nparents + 1) * sizeof(uint32_t));
		h->parents[h->nparents++] = (uint32_t)k;
		(void)self;
		if (next(p))
			return -1;
	} while (p->lx.t == T_COMMA);
	return expect(p, T_SEMI, "';'");
}

static void add_metrics(struct hypothesis *h, const struct hx_expr *e)
{
	uint32_t i;

	if (!e)
		return;
	if (e->op == HX_METRIC) {
		for (i = 0; i < h->nmetrics; i++)
			if (h->metrics[i] == e->ref)
				return;
		h->metrics = xrealloc(h->metrics, (h->nmetrics + 1) * sizeof(uint32_t));
		h->metrics[h->nmetrics++] = e->ref;
	}
	add_metrics(h, e->a);
	add_metrics(h, e->b);
}

static int parse_expr_item(struct hparser *p, struct hx_expr **slot, int boolean,
			   const char *what)
{
	struct mdl_loc at = here(p);

	if (*slot)
		return fail(p, at, "a second '%s'", what);
	if (next(p) || parse_or(p, slot) || want(p, *slot, boolean))
		return -1;
	return expect(p, T_SEMI, "';'");
}

static int parse_item(struct hparser *p, struct hypothesis *h, uint32_t self)
{
	struct mdl_loc at = here(p);

	if (is_word(p, "name"))
		return next(p) || take_string(p, "a string", &h->title) ||
		       expect(p, T_SEMI, "';'");
	if (is_word(p, "explain"))
		return next(p) || take_string(p, "a string", &h->explain) ||
		       expect(p, T_SEMI, "';'");
	if (is_word(p, "parent"))
		return parse_parents(p, h, self);
	if (is_word(p, "test"))
		return parse_expr_item(p, &h->test, 1, "test");
	if (is_word(p, "share"))
		return parse_expr_item(p, &h->share, 0, "share");
	if (is_word(p, "hint")) {
		char *name;

		if (next(p))
			return -1;
		at = here(p);
		if (p->lx.t != T_IDENT)
			return expected(p, "a resource hierarchy");
		name = text(p);
		h->hint = cs_hier_of(name);
		free(name);
		if (h->hint < 0)
			return fail(p, at, "unknown hierarchy (Code, SyncObject, Files, Machine, "
					   "Process, Communicator, Peer, Tag, Threads)");
		return next(p) || expect(p, T_SEMI, "';'");
	}
	return expected(p, "name, parent, test, share, hint, explain or '}'");
}

static int parse_hypothesis(struct hparser *p)
{
	struct hyp_lib *lib = p->lib;
	struct hypothesis *h;
	struct mdl_loc at;
	uint32_t self, i;
	char *name;

	if (next(p))
		return -1;
	at = here(p);
	if (p->lx.t != T_IDENT)
		return expected(p, "a hypothesis's name");
	name = text(p);
	if (hyp_find(lib, name) >= 0 || hyp_find_threshold(lib, name) >= 0) {
		fail(p, at, "'%s' is already defined", name);
		return free(name), -1;
	}
	lib->hyps = xrealloc(lib->hyps, (lib->nhyps + 1) * sizeof(*lib->hyps));
	self = lib->nhyps++;
	h = &lib->hyps[self];
	*h = (struct hypothesis){ .name = name, .loc = at, .hint = -1 };
	if (next(p) || expect(p, T_LBRACE, "'{'"))
		return -1;
	while (p->lx.t != T_RBRACE)
		if (parse_item(p, &lib->hyps[self], self))
			return -1;
	h = &lib->hyps[self];
	if (!h->test && h->nparents)
		return fail(p, at, "hypothesis '%s' has a parent but no test", h->name);
	if (h->test && !h->nparents)
		return fail(p, at, "hypothesis '%s' has a test but no parent (only the root has "
				   "none)", h->name);
	add_metrics(h, h->test);
	add_metrics(h, h->share);
	for (i = 0; i < h->nparents; i++) {
		struct hypothesis *par = &lib->hyps[h->parents[i]];

		par->children = xrealloc(par->children, (par->nchildren + 1) * sizeof(uint32_t));
		par->children[par->nchildren++] = self;
	}
	if (next(p))
		return -1;
	return p->lx.t == T_SEMI ? next(p) : 0;
}

int hyp_load_string(struct hyp_lib *lib, const char *name, const char *src)
{
	struct hparser p = { .lib = lib };
	int rc = 0;

	lib->err[0] = 0;
	p.file = file_of(lib, name);
	lex_init(&p.lx, p.file, src, lib->err, sizeof(lib->err));
	p.lx.exprs = 1;
	if (next(&p))
		rc = -1;
	while (!rc && p.lx.t != T_EOF) {
		if (is_word(&p, "threshold"))
			rc = parse_threshold(&p);
		else if (is_word(&p, "hypothesis"))
			rc = parse_hypothesis(&p);
		else
			rc = expected(&p, "'threshold' or 'hypothesis'");
	}
	lex_done(&p.lx);
	if (!rc && lib->nhyps && lib->hyps[0].test) {
		snprintf(lib->err, sizeof(lib->err), "%s: the first hypothesis must be the root "
			 "(no parent, no test)", name);
		rc = -1;
	}
	return rc ? -1 : 0;
}

int hyp_load_file(struct hyp_lib *lib, const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;
	int rc;

	if (!f) {
		snprintf(lib->err, sizeof(lib->err), "%s: %s", path, strerror(errno));
		return -1;
	}
	buf = xmalloc(MAX_FILE + 1);
	n = fread(buf, 1, MAX_FILE + 1, f);
	if (ferror(f) || n > MAX_FILE || memchr(buf, 0, n)) {
		snprintf(lib->err, sizeof(lib->err), "%s: %s", path,
			 ferror(f) ? strerror(errno) : n > MAX_FILE ? "file too large"
								    : "not a text file");
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	buf[n] = 0;
	rc = hyp_load_string(lib, path, buf);
	free(buf);
	return rc;
}

int hyp_builtin_path(char *out, size_t cap)
{
	const char *env = getenv("SONDE_HYPOTHESES");

	if (env && *env) {
		snprintf(out, cap, "%s", env);
		return access(out, R_OK) == 0 ? 0 : -1;
	}
	snprintf(out, cap, "%s/../share/sonde/hypotheses.hyp", self_dir());
	if (access(out, R_OK) == 0)
		return 0;
	snprintf(out, cap, "%s/../../share/sonde/hypotheses.hyp", self_dir());
	return access(out, R_OK) == 0 ? 0 : -1;
}

int hyp_set_threshold(struct hyp_lib *lib, const char *assignment)
{
	const char *eq = strchr(assignment, '=');
	char name[128], *end;
	double v;
	int i;

	if (!eq || eq == assignment || (size_t)(eq - assignment) >= sizeof(name)) {
		snprintf(lib->err, sizeof(lib->err), "--threshold wants NAME=VALUE, not '%s'",
			 assignment);
		return -1;
	}
	memcpy(name, assignment, (size_t)(eq - assignment));
	name[eq - assignment] = 0;
	i = hyp_find_threshold(lib, name);
	if (i < 0) {
		snprintf(lib->err, sizeof(lib->err), "unknown threshold '%s'", name);
		return -1;
	}
	errno = 0;
	v = strtod(eq + 1, &end);
	if (errno || end == eq + 1 || *end || !isfinite(v) || v < 0) {
		snprintf(lib->err, sizeof(lib->err), "threshold %s: '%s' is not a number >= 0",
			 name, eq + 1);
		return -1;
	}
	lib->thresholds[i].value = v;
	return 0;
}

struct hyp_lib *hyp_lib_new(void)
{
	return xcalloc(1, sizeof(struct hyp_lib));
}

void hyp_lib_free(struct hyp_lib *lib)
{
	uint32_t i;

	if (!lib)
		return;
	for (i = 0; i < lib->nthresholds; i++) {
		free(lib->thresholds[i].name);
		free(lib->thresholds[i].text);
	}
	for (i = 0; i < lib->nhyps; i++) {
		struct hypothesis *h = &lib->hyps[i];

		free(h->name);
		free(h->title);
		free(h->explain);
		free(h->parents);
		free(h->children);
		free(h->metrics);
		hx_free(h->test);
		hx_free(h->share);
	}
	for (i = 0; i < lib->nmetrics; i++)
		free(lib->metrics[i]);
	for (i = 0; i < lib->nfiles; i++)
		free(lib->files[i]);
	free(lib->thresholds);
	free(lib->hyps);
	free(lib->metrics);
	free(lib->files);
	free(lib);
}

/* ---- printing ---- */

static int prec(enum hx_op op)
{
	switch (op) {
	case HX_OR:
		return 1;
	case HX_AND:
		return 2;
	case HX_NOT:
		return 3;
	case HX_LT: case HX_LE: case HX_GT: case HX_GE:
		return 4;
	case HX_ADD: case HX_SUB:
		return 5;
	case HX_MUL: case HX_DIV:
		return 6;
	case HX_NEG:
		return 7;
	default:
		return 8;
	}
}

static const char *op_text(enum hx_op op)
{
	static const char *const t[] = { [HX_ADD] = " + ", [HX_SUB] = " - ", [HX_MUL] = " * ",
					 [HX_DIV] = " / ", [HX_LT] = " < ", [HX_LE] = " <= ",
					 [HX_GT] = " > ", [HX_GE] = " >= ", [HX_AND] = " && ",
					 [HX_OR] = " || " };
	return t[op] ? t[op] : "?";
}

struct sbuf {
	char *p;
	size_t cap, n;
};

static void put(struct sbuf *b, const char *s)
{
	size_t k = strlen(s);

	if (b->n + k >= b->cap)
		k = b->cap > b->n + 1 ? b->cap - b->n - 1 : 0;
	memcpy(b->p + b->n, s, k);
	b->n += k;
	b->p[b->n] = 0;
}

static void print_rec(struct sbuf *b, const struct hyp_lib *lib, const struct hx_expr *e,
		      int outer)
{
	char num[32];
	int pr = prec(e->op), paren = pr < outer;

	if (paren)
		put(b, "(");
	switch (e->op) {
	case HX_NUM:
		snprintf(num, sizeof(num), "%g", e->num);
		put(b, num);
		break;
	case HX_METRIC:
		put(b, lib->metrics[e->ref]);
		break;
	case HX_THRESHOLD:
		put(b, lib->thresholds[e->ref].name);
		break;
	case HX_NEG:
	case HX_NOT:
		put(b, e->op == HX_NEG ? "-" : "!");
		print_rec(b, lib, e->a, pr);
		break;
	default:
		print_rec(b, lib, e->a, pr);
		put(b, op_text(e->op));
		print_rec(b, lib, e->b, pr + 1);
	}
	if (paren)
		put(b, ")");
}

void hx_print(char *buf, size_t cap, const struct hyp_lib *lib, const struct hx_expr *e)
{
	struct sbuf b = { buf, cap, 0 };

	if (!cap)
		return;
	buf[0] = 0;
	if (e)
		print_rec(&b, lib, e, 0);
	else
		put(&b, "true");
}
