/* SPDX-License-Identifier: MIT */
/*
 * The MDL parser: recursive descent over the grammar of docs/mdl.md, one token of look-ahead.
 * Names are checked as they are read (definitions come before their use): counters and timers,
 * lists, constraints, units, $arg only at entry and call points, $return only at exits, a
 * timer used as wall or process timer but not both. The first error stops the load and is
 * kept as "file:line:column: message" in lib->err.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mdl.h"
#include "mdl_int.h"
#include "mdl_lex.h"
#include "util.h"

#define MAX_LOOPS 16
#define MAX_METRIC_CONS 32

struct parser {
	struct lexer lx;
	struct mdl_lib *lib;
	const char *file;
	struct mdl_constraint *cons; /* the constraint whose body is being read */
	struct mdl_metric *metric;   /* the metric whose body is being read */
	const char *loops[MAX_LOOPS];
	int nloops;
	enum mdl_point point; /* of the request being read */
};

static const char *const reserved[] = {
	"aggregateOperator", "aggregationOperator", "append", "at", "base", "constraint",
	"constrained", "foldOperator", "foreach", "if", "in", "is", "metric", "name", "prepend",
	"replace", "units",
};

static struct mdl_loc here(const struct parser *p)
{
	return (struct mdl_loc){ p->file, p->lx.tline, p->lx.tcol };
}

static int fail_at(struct parser *p, struct mdl_loc at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail_at(struct parser *p, struct mdl_loc at, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return lex_error_at(&p->lx, at.line, at.col, "%s", msg);
}

static int expected(struct parser *p, const char *what)
{
	return lex_expected(&p->lx, what);
}

static int next(struct parser *p)
{
	return lex_next(&p->lx);
}

static int expect(struct parser *p, enum tok t, const char *what)
{
	return lex_expect(&p->lx, t, what);
}

static int is_word(const struct parser *p, const char *w)
{
	return lex_is(&p->lx, T_IDENT, w);
}

static int expect_word(struct parser *p, const char *w)
{
	char buf[64];

	if (is_word(p, w))
		return next(p);
	snprintf(buf, sizeof(buf), "'%s'", w);
	return expected(p, buf);
}

/* The current token's text, copied; the caller moves on. */
static char *text(const struct parser *p)
{
	char *s = xmalloc(p->lx.len + 1);

	memcpy(s, p->lx.start, p->lx.len);
	s[p->lx.len] = 0;
	return s;
}

/* An identifier: a copy in *out, then the next token. */
static int take_name(struct parser *p, const char *what, char **out)
{
	if (p->lx.t != T_IDENT)
		return expected(p, what);
	*out = text(p);
	return next(p);
}

static int take_string(struct parser *p, const char *what, char **out)
{
	if (p->lx.t != T_STRING)
		return expected(p, what);
	*out = xstrdup(p->lx.sval);
	return next(p);
}

static int take_int(struct parser *p, const char *what, int64_t *out)
{
	if (p->lx.t != T_INT)
		return expected(p, what);
	*out = p->lx.ival;
	return next(p);
}

/* ---- names ---- */

static const struct mdl_loc *defined_at(const struct mdl_lib *lib, const char *name)
{
	const struct mdl_list *l = mdl_find_list(lib, name);
	const struct mdl_constraint *c = mdl_find_constraint(lib, name);
	const struct mdl_metric *m = mdl_find_metric(lib, name);

	return l ? &l->loc : c ? &c->loc : m ? &m->loc : NULL;
}

/*
 * A new name at *self (the definition just added): not reserved, not taken. Lists,
 * constraints and metrics share one name space, as in the thesis; units have their own.
 */
static int define(struct parser *p, const char *name, const struct mdl_loc *self, int units)
{
	const struct mdl_units *u = units ? mdl_find_units(p->lib, name) : NULL;
	const struct mdl_loc *old = units ? (u ? &u->loc : NULL) : defined_at(p->lib, name);
	size_t i;

	for (i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (!strcmp(name, reserved[i]))
			return fail_at(p, *self, "'%s' is a reserved word", name);
	if (old && old != self)
		return fail_at(p, *self, "'%s' is already defined at %s:%d:%d", name, old->file,
			       old->line, old->col);
	return 0;
}

/* ---- procedure sets and points ---- */

static int loop_var(const struct parser *p, const char *name)
{
	int i;

	for (i = p->nloops - 1; i >= 0; i--)
		if (!strcmp(p->loops[i], name))
			return 1;
	return 0;
}

static int parse_dollar_set(struct parser *p, struct mdl_set *s)
{
	if (lex_is(&p->lx, T_DOLLAR, "$procedures")) {
		s->kind = MDL_SET_PROCEDURES;
	} else if (lex_is(&p->lx, T_DOLLAR, "$constraint")) {
		if (!p->cons)
			return fail_at(p, here(p), "$constraint is only defined in a constraint");
		if (p->cons->kind != MDL_CONS_FLAG && p->cons->kind != MDL_CONS_REPLACE)
			return fail_at(p, here(p), "$constraint has no procedures here");
		s->kind = MDL_SET_CONSTRAINT;
	} else {
		return expected(p, "$procedures or $constraint");
	}
	return next(p);
}

static int parse_set(struct parser *p, struct mdl_set *s)
{
	if (p->lx.t == T_DOLLAR)
		return parse_dollar_set(p, s);
	if (p->lx.t == T_STRING) {
		s->kind = MDL_SET_NAME;
		s->name = xstrdup(p->lx.sval);
		return next(p);
	}
	if (p->lx.t != T_IDENT)
		return expected(p, "procedures ($procedures, $constraint, a list, a name in quotes)");
	s->name = text(p);
	if (loop_var(p, s->name))
		s->kind = MDL_SET_LOOPVAR;
	else if (mdl_find_list(p->lib, s->name))
		s->kind = MDL_SET_LIST;
	else
		return fail_at(p, here(p), "unknown list or foreach variable '%s'", s->name);
	return next(p);
}

static int parse_callee(struct parser *p, struct mdl_stmt *s)
{
	if (p->lx.t != T_LPAREN)
		return 0;
	if (next(p))
		return -1;
	if (p->lx.t == T_STRING)
		s->callee = xstrdup(p->lx.sval);
	else if (p->lx.t == T_IDENT)
		s->callee = text(p);
	else
		return expected(p, "the called procedure's name");
	return next(p) || expect(p, T_RPAREN, "')'");
}

static int parse_point(struct parser *p, struct mdl_stmt *s)
{
	if (parse_set(p, &s->set) || expect(p, T_ARROW, "'->'"))
		return -1;
	if (is_word(p, "entry"))
		s->point = MDL_ENTRY;
	else if (is_word(p, "exit") || is_word(p, "return"))
		s->point = MDL_EXIT;
	else if (is_word(p, "calls"))
		s->point = MDL_CALL;
	else
		return expected(p, "a point (entry, exit, calls)");
	p->point = s->point;
	if (next(p))
		return -1;
	return s->point == MDL_CALL ? parse_callee(p, s) : 0;
}

/* ---- counters, timers and primitives ---- */

/* The kind of the counter or timer 'name' where the parser stands; NULL when unknown. */
static enum mdl_var_kind *var_kind(struct parser *p, const char *name, struct mdl_loc at)
{
	const char *owner = p->cons ? p->cons->name : p->metric->name;
	int own = !strcmp(name, owner), dollar = !strcmp(name, "$metric");

	if (p->metric && (own || dollar))
		return &p->metric->var;
	if (p->cons && dollar && p->cons->kind == MDL_CONS_REPLACE)
		return &p->cons->var;
	if (p->cons && own && p->cons->kind == MDL_CONS_FLAG)
		return &p->cons->var;
	if (dollar)
		fail_at(p, at, "$metric is only defined in a metric or a replace constraint");
	else if (own)
		fail_at(p, at, "a replace constraint works on $metric, not on '%s'", name);
	else
		fail_at(p, at, "unknown counter or timer '%s'", name);
	return NULL;
}

static const char *kind_word(enum mdl_var_kind k)
{
	return k == MDL_VAR_COUNTER ? "a counter" : k == MDL_VAR_WALL_TIMER ? "a wall timer"
		: k == MDL_VAR_CPU_TIMER ? "a process timer" : "a timer";
}

/* A primitive's variable: a counter for counter primitives, the right timer for timers. */
static int use_var(struct parser *p, const char *name, enum mdl_prim prim, struct mdl_loc at)
{
	enum mdl_var_kind *k = var_kind(p, name, at), want;

	if (!k)
		return -1;
	want = prim <= MDL_SUB ? MDL_VAR_COUNTER
		: prim <= MDL_STOP_WALL ? MDL_VAR_WALL_TIMER : MDL_VAR_CPU_TIMER;
	if (*k == MDL_VAR_TIMER && want != MDL_VAR_COUNTER)
		*k = want;
	if (*k != want)
		return fail_at(p, at, "%s needs %s; '%s' is %s", mdl_prim_name(prim),
			       kind_word(want), name, kind_word(*k));
	return 0;
}

static int parse_operand(struct parser *p, struct mdl_cond *c)
{
	struct mdl_loc at = here(p);
	enum mdl_var_kind *k;

	if (lex_is(&p->lx, T_DOLLAR, "$return")) {
		if (p->point != MDL_EXIT)
			return fail_at(p, at, "$return is only defined at an exit point");
		c->opd = MDL_OPD_RETVAL;
		return next(p);
	}
	if (lex_is(&p->lx, T_DOLLAR, "$arg")) {
		if (p->point == MDL_EXIT)
			return fail_at(p, at, "$arg is not defined at an exit point");
		c->opd = MDL_OPD_ARG;
		if (next(p) || expect(p, T_LBRACK, "'['"))
			return -1;
		at = here(p);
		if (p->lx.t == T_INT && (p->lx.ival < 0 || p->lx.ival > 5))
			return fail_at(p, at, "$arg[i] needs i from 0 to 5 (register arguments)");
		if (p->lx.t != T_INT)
			return expected(p, "an argument number");
		c->arg = (int)p->lx.ival;
		return next(p) || expect(p, T_RBRACK, "']'");
	}
	if (p->lx.t != T_IDENT && !lex_is(&p->lx, T_DOLLAR, "$metric"))
		return expected(p, "a counter, $arg[i] or $return");
	c->opd = MDL_OPD_COUNTER;
	c->counter = text(p);
	k = var_kind(p, c->counter, at);
	if (k && *k != MDL_VAR_COUNTER)
		return fail_at(p, at, "predicates test counters; '%s' is %s", c->counter,
			       kind_word(*k));
	return k ? next(p) : -1;
}

/* $object: the focus's sync object or file, in a constraint on those hierarchies only. */
static int object_defined(const struct parser *p)
{
	uint32_t i;

	if (!p->cons || !p->cons->npaths)
		return 0;
	for (i = 0; i < p->cons->npaths; i++)
		if (strncmp(p->cons->paths[i], "/SyncObject/", 12) &&
		    strncmp(p->cons->paths[i], "/Files/", 7))
			return 0;
	return 1;
}

static int parse_relop(struct parser *p, struct mdl_cond *c)
{
	static const enum tok toks[] = { T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE };
	int i;

	for (i = 0; i < 6; i++)
		if (p->lx.t == toks[i])
			break;
	if (i == 6) { /* a bare operand: true when not zero */
		c->op = MDL_NE;
		c->k = 0;
		return 0;
	}
	c->op = (enum mdl_relop)i;
	if (next(p))
		return -1;
	if (lex_is(&p->lx, T_DOLLAR, "$object")) {
		if (!object_defined(p))
			return fail_at(p, here(p), "$object is only defined in a constraint whose "
				       "paths are all under /SyncObject or /Files");
		c->object = 1;
		return next(p);
	}
	return take_int(p, "a number or $object", &c->k);
}

static int parse_cond(struct parser *p, struct mdl_cond *c)
{
	return expect(p, T_LPAREN, "'('") || parse_operand(p, c) || parse_relop(p, c) ||
	       expect(p, T_RPAREN, "')'");
}

static int prim_of(const struct lexer *lx, enum mdl_prim *out)
{
	int i;

	for (i = 0; i < MDL_PRIM_COUNT; i++)
		if (lex_is(lx, T_IDENT, mdl_prim_name((enum mdl_prim)i))) {
			*out = (enum mdl_prim)i;
			return 0;
		}
	return -1;
}

static int parse_value(struct parser *p, struct mdl_call *c)
{
	c->value = 1;
	if (p->lx.t != T_COMMA) {
		if (c->prim == MDL_SET)
			return expected(p, "',' and the value to set");
		return 0;
	}
	if (c->prim > MDL_SUB)
		return fail_at(p, here(p), "%s takes one argument, a timer", mdl_prim_name(c->prim));
	if (next(p))
		return -1;
	if (lex_is(&p->lx, T_DOLLAR, "$return")) {
		if (c->prim != MDL_ADD)
			return fail_at(p, here(p), "only addCounter adds $return");
		if (p->point != MDL_EXIT)
			return fail_at(p, here(p), "$return is only defined at an exit point");
		c->from_return = 1;
		c->value = 0;
		return next(p);
	}
	return take_int(p, "a number or $return", &c->value);
}

static int parse_call(struct parser *p, struct mdl_call *c)
{
	struct mdl_loc at;

	c->loc = here(p);
	if (p->lx.t != T_IDENT)
		return expected(p, "a primitive (addCounter, startWallTimer, ...)");
	if (prim_of(&p->lx, &c->prim))
		return fail_at(p, c->loc, "unknown primitive '%.*s'", (int)p->lx.len,
			       p->lx.start);
	if (next(p) || expect(p, T_LPAREN, "'('"))
		return -1;
	at = here(p);
	if (p->lx.t != T_IDENT && !lex_is(&p->lx, T_DOLLAR, "$metric"))
		return expected(p, "a counter or timer");
	c->var = text(p);
	if (use_var(p, c->var, c->prim, at) || next(p) || parse_value(p, c))
		return -1;
	return expect(p, T_RPAREN, "')'") || expect(p, T_SEMI, "';'");
}

static struct mdl_call *new_call(struct mdl_stmt *s)
{
	s->calls = xrealloc(s->calls, (s->ncalls + 1) * sizeof(*s->calls));
	memset(&s->calls[s->ncalls], 0, sizeof(*s->calls));
	return &s->calls[s->ncalls++];
}

/* if (cond) call;  or  if (cond) { call; call; }: each call gets the predicate. */
static int parse_guarded(struct parser *p, struct mdl_stmt *s)
{
	struct mdl_cond c = { 0 };
	struct mdl_call *call;

	if (next(p) || parse_cond(p, &c))
		return free(c.counter), -1;
	if (p->lx.t != T_LBRACE) {
		call = new_call(s);
		call->cond = c;
		return parse_call(p, call);
	}
	if (next(p))
		return free(c.counter), -1;
	while (p->lx.t != T_RBRACE && p->lx.t != T_EOF) {
		call = new_call(s);
		call->cond = c;
		call->cond.counter = c.counter ? xstrdup(c.counter) : NULL;
		if (parse_call(p, call))
			return free(c.counter), -1;
	}
	free(c.counter);
	return expect(p, T_RBRACE, "'}'");
}

static int parse_actions(struct parser *p, struct mdl_stmt *s)
{
	if (expect(p, T_LBRACK, "'[' and the instrumentation"))
		return -1;
	while (p->lx.t != T_RBRACK && p->lx.t != T_EOF) {
		int rc = is_word(p, "if") ? parse_guarded(p, s) : parse_call(p, new_call(s));

		if (rc)
			return -1;
	}
	return expect(p, T_RBRACK, "']'");
}

/* ---- statements ---- */

static int parse_stmt(struct parser *p, struct mdl_stmt *s);

static struct mdl_stmt *new_stmt(struct mdl_stmt *parent)
{
	parent->body = xrealloc(parent->body, (parent->nbody + 1) * sizeof(*parent->body));
	memset(&parent->body[parent->nbody], 0, sizeof(*parent->body));
	return &parent->body[parent->nbody++];
}

static int parse_block(struct parser *p, struct mdl_stmt *s)
{
	s->kind = MDL_STMT_BLOCK;
	s->loc = here(p);
	if (expect(p, T_LBRACE, "'{'"))
		return -1;
	while (p->lx.t != T_RBRACE && p->lx.t != T_EOF)
		if (parse_stmt(p, new_stmt(s)))
			return -1;
	return expect(p, T_RBRACE, "'}'");
}

static int parse_foreach(struct parser *p, struct mdl_stmt *s)
{
	int rc;

	s->kind = MDL_STMT_FOREACH;
	if (next(p) || take_name(p, "a variable name", &s->var) || expect_word(p, "in") ||
	    parse_set(p, &s->set))
		return -1;
	if (p->nloops == MAX_LOOPS)
		return fail_at(p, s->loc, "foreach nested too deep (%d levels)", MAX_LOOPS);
	p->loops[p->nloops++] = s->var;
	rc = parse_stmt(p, new_stmt(s));
	p->nloops--;
	return rc;
}

static int parse_request(struct parser *p, struct mdl_stmt *s)
{
	s->kind = MDL_STMT_REQUEST;
	s->prepend = is_word(p, "prepend");
	if (next(p) || expect_word(p, "at") || parse_point(p, s))
		return -1;
	if (is_word(p, "constrained")) {
		if (p->cons && p->cons->kind == MDL_CONS_FLAG)
			return fail_at(p, here(p), "a flag constraint's requests cannot be "
				       "constrained");
		s->constrained = 1;
		if (next(p))
			return -1;
	}
	return parse_actions(p, s);
}

static int parse_stmt(struct parser *p, struct mdl_stmt *s)
{
	s->loc = here(p);
	if (p->lx.t == T_LBRACE)
		return parse_block(p, s);
	if (is_word(p, "foreach"))
		return parse_foreach(p, s);
	if (is_word(p, "append") || is_word(p, "prepend"))
		return parse_request(p, s);
	return expected(p, "a statement (append, prepend, foreach or a block)");
}

/* ---- definitions ---- */

static int parse_units(struct parser *p)
{
	struct mdl_units *u = mdl_add_units(p->lib);

	u->divide = 1;
	if (next(p))
		return -1;
	u->loc = here(p);
	if (take_name(p, "a units name", &u->name) || define(p, u->name, &u->loc, 1) ||
	    expect(p, T_LBRACE, "'{'") || expect_word(p, "name") ||
	    take_string(p, "the units' text in quotes", &u->text) || expect(p, T_SEMI, "';'"))
		return -1;
	if (is_word(p, "divide")) {
		struct mdl_loc at;

		if (next(p))
			return -1;
		at = here(p);
		if (take_int(p, "a number", &u->divide) || expect(p, T_SEMI, "';'"))
			return -1;
		if (u->divide <= 0)
			return fail_at(p, at, "divide needs a positive number");
	}
	if (expect(p, T_RBRACE, "'}'"))
		return -1;
	return p->lx.t == T_SEMI ? next(p) : 0;
}

static int parse_list(struct parser *p)
{
	struct mdl_list *l = mdl_add_list(p->lib);

	l->loc = here(p);
	l->name = text(p);
	if (define(p, l->name, &l->loc, 0) || next(p) || expect(p, T_ASSIGN, "'='") ||
	    expect(p, T_LBRACE, "'{'"))
		return -1;
	while (p->lx.t != T_RBRACE) {
		if (l->n && expect(p, T_COMMA, "',' or '}'"))
			return -1;
		if (p->lx.t != T_STRING && p->lx.t != T_IDENT)
			return expected(p, "a procedure name");
		l->items = xrealloc(l->items, (l->n + 1) * sizeof(*l->items));
		l->items[l->n++] = p->lx.t == T_STRING ? xstrdup(p->lx.sval) : text(p);
		if (next(p))
			return -1;
	}
	return next(p) || expect(p, T_SEMI, "';'");
}

static int parse_path(struct parser *p, struct mdl_constraint *c)
{
	static const char *const roots[] = { "Code", "Threads", "Process", "SyncObject", "Files" };
	char path[256] = "";
	struct mdl_loc at;
	size_t i;

	if (p->lx.t != T_SLASH)
		return expected(p, "a resource path like /Code/*/*");
	if (next(p))
		return -1;
	at = here(p);
	for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (is_word(p, roots[i]))
			break;
	if (i == sizeof(roots) / sizeof(roots[0]))
		return fail_at(p, at, "expected a resource hierarchy (Code, Threads, Process, "
			       "SyncObject, Files)");
	for (;;) {
		if (p->lx.t != T_IDENT && p->lx.t != T_STAR)
			return expected(p, "a path component (a name or *)");
		if (strlen(path) + p->lx.len + 2 > sizeof(path))
			return fail_at(p, at, "resource path too long");
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%.*s",
			 (int)p->lx.len, p->lx.start);
		if (next(p))
			return -1;
		if (p->lx.t != T_SLASH)
			break;
		if (next(p))
			return -1;
	}
	c->paths = xrealloc(c->paths, (c->npaths + 1) * sizeof(*c->paths));
	c->paths[c->npaths++] = xstrdup(path);
	return 0;
}

static int parse_select(struct parser *p, struct mdl_constraint *c)
{
	uint32_t i;

	c->kind = MDL_CONS_SELECT;
	for (i = 0; i < c->npaths; i++)
		if (strcmp(c->paths[i], "/Threads/*") && strcmp(c->paths[i], "/Process/*"))
			return fail_at(p, c->loc, "a select constraint applies to /Threads/* or "
				       "/Process/*, not %s", c->paths[i]);
	return next(p) || expect(p, T_SEMI, "';'");
}

static int parse_cons_kind(struct parser *p, struct mdl_constraint *c)
{
	int rc;

	if (is_word(p, "select"))
		return parse_select(p, c);
	c->kind = is_word(p, "replace") ? MDL_CONS_REPLACE : MDL_CONS_FLAG;
	if (c->kind == MDL_CONS_REPLACE && next(p))
		return -1;
	if (is_word(p, "counter"))
		c->var = MDL_VAR_COUNTER;
	else if (is_word(p, "timer") && c->kind == MDL_CONS_REPLACE)
		c->var = MDL_VAR_TIMER;
	else
		return expected(p, c->kind == MDL_CONS_REPLACE ? "counter or timer"
				: "counter, replace or select");
	if (next(p))
		return -1;
	p->cons = c;
	rc = parse_block(p, &c->body);
	p->cons = NULL;
	if (!rc && c->var == MDL_VAR_TIMER)
		return fail_at(p, c->loc, "constraint '%s' replaces a timer but starts none",
			       c->name);
	return rc;
}

static int parse_constraint(struct parser *p)
{
	struct mdl_constraint *c = mdl_add_constraint(p->lib);

	if (next(p))
		return -1;
	c->loc = here(p);
	if (take_name(p, "a constraint name", &c->name) || define(p, c->name, &c->loc, 0))
		return -1;
	do {
		if (c->npaths && next(p))
			return -1;
		if (parse_path(p, c))
			return -1;
	} while (p->lx.t == T_COMMA);
	return expect_word(p, "is") || parse_cons_kind(p, c);
}

/* ---- metrics ---- */

struct metric_refs {
	struct mdl_loc at[MAX_METRIC_CONS]; /* where each constraint is named */
	unsigned seen;                      /* headers given: bit per header */
};

static int parse_operator(struct parser *p, int agg, int *out)
{
	static const char *const words[] = { "sum", "avg", "min", "max", "average" };
	int i;

	for (i = 0; i < 5; i++)
		if (is_word(p, words[i]))
			break;
	if (i == 4)
		i = 1;
	if (i == 5 || (!agg && i > 1))
		return expected(p, agg ? "sum, avg, min or max" : "sum or avg");
	*out = i;
	return next(p) || expect(p, T_SEMI, "';'");
}

static int parse_metric_units(struct parser *p, struct mdl_metric *m)
{
	struct mdl_loc at = here(p);
	char *name = NULL;

	if (take_name(p, "a units name", &name))
		return free(name), -1;
	m->units = mdl_find_units(p->lib, name);
	if (!m->units)
		fail_at(p, at, "unknown units '%s'", name);
	free(name);
	return m->units ? expect(p, T_SEMI, "';'") : -1;
}

static int parse_metric_cons(struct parser *p, struct mdl_metric *m, struct metric_refs *r)
{
	const struct mdl_constraint *c;
	struct mdl_loc at = here(p);
	char *name = NULL;
	uint32_t i;

	if (take_name(p, "a constraint name", &name))
		return free(name), -1;
	c = mdl_find_constraint(p->lib, name);
	if (!c)
		fail_at(p, at, "unknown constraint '%s'", name);
	free(name);
	if (!c)
		return -1;
	for (i = 0; i < m->ncons; i++)
		if (m->cons[i] == c)
			return fail_at(p, at, "constraint '%s' is listed twice", c->name);
	if (m->ncons == MAX_METRIC_CONS)
		return fail_at(p, at, "more than %d constraints", MAX_METRIC_CONS);
	r->at[m->ncons] = at;
	m->cons = xrealloc(m->cons, (m->ncons + 1) * sizeof(*m->cons));
	m->cons[m->ncons++] = c;
	return expect(p, T_SEMI, "';'");
}

static int parse_header(struct parser *p, struct mdl_metric *m, struct metric_refs *r)
{
	static const char *const words[] = { "name", "units", "foldOperator", "aggregateOperator",
					     "aggregationOperator" };
	struct mdl_loc at = here(p);
	int i, v = 0;

	if (is_word(p, "constraint"))
		return next(p) || parse_metric_cons(p, m, r);
	for (i = 0; i < 5; i++)
		if (is_word(p, words[i]))
			break;
	if (i == 5)
		return expected(p, "a header (name, units, foldOperator, aggregateOperator), "
				"a constraint or the base");
	i = i == 4 ? 3 : i;
	if (r->seen & (1u << i))
		return fail_at(p, at, "'%s' is given twice", words[i]);
	r->seen |= 1u << i;
	if (next(p))
		return -1;
	if (i == 0) {
		free(m->title);
		m->title = NULL;
		return take_string(p, "the metric's name in quotes", &m->title) ||
		       expect(p, T_SEMI, "';'");
	}
	if (i == 1)
		return parse_metric_units(p, m);
	if (parse_operator(p, i == 3, &v))
		return -1;
	if (i == 2)
		m->fold = (enum mdl_fold)v;
	else
		m->agg = (enum mdl_agg)v;
	return 0;
}

static int parse_base(struct parser *p, struct mdl_metric *m)
{
	struct mdl_loc at = here(p);
	int rc;

	if (next(p) || expect_word(p, "is"))
		return -1;
	if (is_word(p, "external")) {
		m->base = MDL_BASE_EXTERNAL;
		m->var = MDL_VAR_TIMER;
		return next(p) || take_string(p, "the reading's name in quotes", &m->external) ||
		       expect(p, T_SEMI, "';'");
	}
	if (is_word(p, "counter"))
		m->base = MDL_BASE_COUNTER, m->var = MDL_VAR_COUNTER;
	else if (is_word(p, "timer"))
		m->base = MDL_BASE_TIMER, m->var = MDL_VAR_TIMER;
	else
		return expected(p, "counter, timer or external");
	if (next(p))
		return -1;
	p->metric = m;
	rc = parse_block(p, &m->body);
	p->metric = NULL;
	if (!rc && m->var == MDL_VAR_TIMER)
		return fail_at(p, at, "the timer base of '%s' starts no timer", m->name);
	return rc;
}

/* A constraint fits the base: flags guard instrumentation; a replacement measures alike. */
static int check_cons(struct parser *p, const struct mdl_metric *m, const struct metric_refs *r)
{
	uint32_t i;

	for (i = 0; i < m->ncons; i++) {
		const struct mdl_constraint *c = m->cons[i];

		if (c->kind == MDL_CONS_FLAG && m->base == MDL_BASE_EXTERNAL)
			return fail_at(p, r->at[i], "constraint '%s' guards instrumentation, but "
				       "'%s' has none (its base is external)", c->name, m->name);
		if (c->kind == MDL_CONS_REPLACE && m->base != MDL_BASE_EXTERNAL &&
		    c->var != m->var)
			return fail_at(p, r->at[i], "constraint '%s' measures with %s, but '%s' "
				       "with %s", c->name, kind_word(c->var), m->name,
				       kind_word(m->var));
	}
	return 0;
}

static int parse_metric(struct parser *p)
{
	struct mdl_metric *m = mdl_add_metric(p->lib);
	struct metric_refs r = { .seen = 0 };

	if (next(p))
		return -1;
	m->loc = here(p);
	if (take_name(p, "a metric name", &m->name) || define(p, m->name, &m->loc, 0) ||
	    expect(p, T_LBRACE, "'{'"))
		return -1;
	m->title = xstrdup(m->name);
	while (!is_word(p, "base"))
		if (parse_header(p, m, &r))
			return -1;
	if (parse_base(p, m) || check_cons(p, m, &r) || expect(p, T_RBRACE, "'}'"))
		return -1;
	return p->lx.t == T_SEMI ? next(p) : 0;
}

/* ---- files ---- */

static int parse_file(struct parser *p)
{
	if (next(p))
		return -1;
	while (p->lx.t != T_EOF) {
		int rc;

		if (is_word(p, "units"))
			rc = parse_units(p);
		else if (is_word(p, "constraint"))
			rc = parse_constraint(p);
		else if (is_word(p, "metric"))
			rc = parse_metric(p);
		else if (p->lx.t == T_IDENT)
			rc = parse_list(p);
		else
			rc = expected(p, "a definition (units, constraint, metric or a list)");
		if (rc)
			return -1;
	}
	return 0;
}

int mdl_load_string(struct mdl_lib *lib, const char *name, const char *src)
{
	struct mdl_counts before = { lib->nunits, lib->nlists, lib->ncons, lib->nmetrics };
	struct parser p = { .lib = lib };
	int rc;

	p.file = mdl_add_file(lib, name);
	lib->err[0] = 0;
	lex_init(&p.lx, p.file, src, lib->err, sizeof(lib->err));
	rc = parse_file(&p);
	lex_done(&p.lx);
	if (rc)
		mdl_lib_truncate(lib, &before);
	return rc;
}
