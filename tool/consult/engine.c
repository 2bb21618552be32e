/* SPDX-License-Identifier: MIT */
/*
 * The W3 search engine (engine.h). Each step: the source's sample period, phase boundaries,
 * the data of every pair measured, then every node that holds data is evaluated on its
 * cumulative averages, and the best waiting refinements are started as the cost budget allows.
 *
 * A node under test concludes true when its test holds after the minimum observation time and
 * a minimum fraction of its interval observed; false when the test fails and no possible rest
 * of the interval could change that (known only when the source knows when the interval ends:
 * post mortem); otherwise it is given up (never concluded) once the sufficient observation
 * time has passed with the test failing. A true node stays measured until its interval ends:
 * with hysteresis (appendix A) it turns false below hyst x threshold, and true again above it.
 */
#include "engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const state_names[CS_STATE_COUNT] = {
	"untested", "testing", "true", "false", "deferred", "never-concluded", "unavailable",
};

const char *cs_state_name(enum cs_state s)
{
	return s < CS_STATE_COUNT ? state_names[s] : "?";
}

const char *cs_axis_name(enum cs_axis a)
{
	static const char *const n[] = { "root", "why", "where", "when" };

	return a <= CS_WHEN ? n[a] : "?";
}

void cs_params_default(struct cs_params *p)
{
	*p = (struct cs_params){ .min_obs = 0.25, .suff_obs = 1.0, .min_fraction = 0.20,
				 .hyst = 0.9, .budget = 0.10, .load_comp = 1 };
}

/* ---- evaluation: interval arithmetic over the possible cumulative averages ---- */

struct range {
	double lo, hi;
};

enum tri { T_FALSE, T_TRUE, T_UNKNOWN };

struct evalctx {
	const struct hyp_lib *lib;
	const struct hypothesis *h;
	const struct range *terms; /* per metric of h */
	double load;   /* thresholds are multiplied by it */
	double hyst;   /* < 1 relaxes comparisons toward keeping a true node true */
	int relax;
};

static struct range rmake(double lo, double hi)
{
	return (struct range){ lo, hi };
}

static double fmin4(double a, double b, double c, double d)
{
	return fmin(fmin(a, b), fmin(c, d));
}

static double fmax4(double a, double b, double c, double d)
{
	return fmax(fmax(a, b), fmax(c, d));
}

/* 0 x inf counts as 0: a metric that cannot grow times anything. */
static double mul0(double a, double b)
{
	return a == 0 || b == 0 ? 0 : a * b;
}

static struct range eval_num(const struct evalctx *c, const struct hx_expr *x)
{
	struct range a, b;
	uint32_t i;

	switch (x->op) {
	case HX_NUM:
		return rmake(x->num, x->num);
	case HX_THRESHOLD: {
		const struct hyp_threshold *t = &c->lib->thresholds[x->ref];
		double v = t->fixed ? t->value : t->value * c->load;

		return rmake(v, v);
	}
	case HX_METRIC:
		for (i = 0; i < c->h->nmetrics; i++)
			if (c->h->metrics[i] == x->ref)
				return c->terms[i];
		return rmake(NAN, NAN);
	case HX_NEG:
		a = eval_num(c, x->a);
		return rmake(-a.hi, -a.lo);
	default:
		break;
	}
	a = eval_num(c, x->a);
	b = eval_num(c, x->b);
	switch (x->op) {
	case HX_ADD:
		return rmake(a.lo + b.lo, a.hi + b.hi);
	case HX_SUB:
		return rmake(a.lo - b.hi, a.hi - b.lo);
	case HX_MUL:
		return rmake(fmin4(mul0(a.lo, b.lo), mul0(a.lo, b.hi), mul0(a.hi, b.lo),
				   mul0(a.hi, b.hi)),
			     fmax4(mul0(a.lo, b.lo), mul0(a.lo, b.hi), mul0(a.hi, b.lo),
				   mul0(a.hi, b.hi)));
	case HX_DIV:
		if (a.lo == a.hi && b.lo == b.hi)
			return rmake(a.lo / b.lo, a.lo / b.lo); /* x/0: NaN or inf, as C says */
		if (!(b.lo > 0) && !(b.hi < 0))
			return rmake(-INFINITY, INFINITY);
		return rmake(fmin4(a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi),
			     fmax4(a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi));
	default:
		return rmake(NAN, NAN);
	}
}

/* a > b: true when it holds for every value in the ranges, false when for none. With the
 * relaxation of a true node, a > b is read as a > hyst·b and a < b as hyst·a < b. */
static enum tri compare(const struct evalctx *c, const struct hx_expr *x)
{
	struct range a = eval_num(c, x->a), b = eval_num(c, x->b);
	double k = c->relax ? c->hyst : 1;

	if (isnan(a.lo) || isnan(a.hi) || isnan(b.lo) || isnan(b.hi))
		return T_FALSE; /* 0/0: nothing measured, nothing to conclude from */
	if (x->op == HX_GT || x->op == HX_GE) {
		b = rmake(mul0(b.lo, k), mul0(b.hi, k));
		if (x->op == HX_GT ? a.lo > b.hi : a.lo >= b.hi)
			return T_TRUE;
		return (x->op == HX_GT ? a.hi <= b.lo : a.hi < b.lo) ? T_FALSE : T_UNKNOWN;
	}
	a = rmake(mul0(a.lo, k), mul0(a.hi, k));
	if (x->op == HX_LT ? a.hi < b.lo : a.hi <= b.lo)
		return T_TRUE;
	return (x->op == HX_LT ? a.lo >= b.hi : a.lo > b.hi) ? T_FALSE : T_UNKNOWN;
}

static enum tri eval_bool(const struct evalctx *c, const struct hx_expr *x)
{
	enum tri a, b;

	switch (x->op) {
	case HX_NOT:
		a = eval_bool(c, x->a);
		return a == T_UNKNOWN ? T_UNKNOWN : a == T_TRUE ? T_FALSE : T_TRUE;
	case HX_AND:
		a = eval_bool(c, x->a);
		b = eval_bool(c, x->b);
		if (a == T_FALSE || b == T_FALSE)
			return T_FALSE;
		return a == T_TRUE && b == T_TRUE ? T_TRUE : T_UNKNOWN;
	case HX_OR:
		a = eval_bool(c, x->a);
		b = eval_bool(c, x->b);
		if (a == T_TRUE || b == T_TRUE)
			return T_TRUE;
		return a == T_FALSE && b == T_FALSE ? T_FALSE : T_UNKNOWN;
	default:
		return compare(c, x);
	}
}

/* ---- nodes ---- */

static const struct hypothesis *hyp_of(const struct cs_engine *e, const struct cs_node *n)
{
	return &e->lib->hyps[n->hyp];
}

void cs_node_interval(const struct cs_engine *e, const struct cs_node *n, uint64_t *start,
		      uint64_t *end)
{
	if (n->phase >= 0) {
		*start = e->phases[n->phase].start;
		*end = e->phases[n->phase].end;
	} else {
		*start = 0;
		*end = e->done ? e->now : 0;
	}
}

static int matches(const char *pattern, const struct cs_engine *e, const struct cs_node *n)
{
	size_t k = strlen(pattern);
	int h;

	if (!strcmp(pattern, hyp_of(e, n)->name))
		return 1;
	for (h = 0; h < H_COUNT; h++)
		if (n->focus.part[h] && !strncmp(n->focus.part[h], pattern, k) &&
		    (n->focus.part[h][k] == 0 || n->focus.part[h][k] == '/'))
			return 1;
	return 0;
}

/* Priority (0), normal (1) or ignored (2): ignored refinements are tested last (seed 003
 * §8.1), and so are refinements to threads, as Paradyn did for processes, unless preferred. */
static int rank_of(const struct cs_engine *e, const struct cs_node *n)
{
	uint32_t i;

	for (i = 0; i < e->par.npriority; i++)
		if (matches(e->par.priority[i], e, n))
			return 0;
	for (i = 0; i < e->par.nignore; i++)
		if (matches(e->par.ignore[i], e, n))
			return 2;
	return n->focus.part[H_THREADS] ? 2 : 1;
}

static void add_edge(struct cs_engine *e, uint32_t parent, uint32_t child)
{
	struct cs_node *p = &e->nodes[parent], *c = &e->nodes[child];
	uint32_t i;

	for (i = 0; i < c->nparents; i++)
		if (c->parents[i] == parent)
			return;
	c->parents = xrealloc(c->parents, (c->nparents + 1) * sizeof(uint32_t));
	c->parents[c->nparents++] = parent;
	p->kids = xrealloc(p->kids, (p->nkids + 1) * sizeof(uint32_t));
	p->kids[p->nkids++] = child;
}

static int find_node(const struct cs_engine *e, uint32_t hyp, const struct cs_focus *f,
		     int phase)
{
	uint32_t i;

	for (i = 0; i < e->nnodes; i++)
		if (e->nodes[i].hyp == hyp && e->nodes[i].phase == phase &&
		    cs_focus_equal(&e->nodes[i].focus, f))
			return (int)i;
	return -1;
}

/* The node (hyp, focus, phase), made on first sight, as a refinement of parent (or root). */
static uint32_t add_node(struct cs_engine *e, int parent, uint32_t hyp,
			 const struct cs_focus *f, int phase, enum cs_axis axis, int hier,
			 int order)
{
	int k = find_node(e, hyp, f, phase);
	struct cs_node *n;
	uint32_t i;

	if (k >= 0) {
		if (parent >= 0)
			add_edge(e, (uint32_t)parent, (uint32_t)k);
		return (uint32_t)k;
	}
	if (e->nnodes == e->capnodes) {
		e->capnodes = e->capnodes ? e->capnodes * 2 : 64;
		e->nodes = xrealloc(e->nodes, e->capnodes * sizeof(*e->nodes));
	}
	n = &e->nodes[e->nnodes];
	*n = (struct cs_node){ .id = e->nnodes, .hyp = hyp, .phase = phase, .axis = axis,
			       .hier = hier, .order = order, .share = -1 };
	cs_focus_copy(&n->focus, f);
	for (i = 0; i < CS_MAX_TERMS; i++)
		n->term_req[i] = -1;
	n->rank = rank_of(e, n);
	e->nnodes++;
	if (parent >= 0)
		add_edge(e, (uint32_t)parent, e->nnodes - 1);
	return e->nnodes - 1;
}

/* ---- requests ---- */

static int find_req(struct cs_engine *e, uint32_t metric, const struct cs_focus *f)
{
	uint32_t i;

	for (i = 0; i < e->nreqs; i++)
		if (e->reqs[i].metric == metric && cs_focus_equal(&e->reqs[i].focus, f))
			return (int)i;
	e->reqs = xrealloc(e->reqs, (e->nreqs + 1) * sizeof(*e->reqs));
	e->reqs[e->nreqs] = (struct cs_req){ .metric = metric, .src = -1 };
	cs_focus_copy(&e->reqs[e->nreqs].focus, f);
	e->st.foci_used++;
	return (int)e->nreqs++;
}

static double pending_cost(struct cs_engine *e, const struct cs_node *n)
{
	const struct hypothesis *h = hyp_of(e, n);
	double c = 0;
	uint32_t i;

	for (i = 0; i < h->nmetrics && i < CS_MAX_TERMS; i++) {
		const char *m = e->lib->metrics[h->metrics[i]];
		uint32_t k;
		int held = 0;

		for (k = 0; k < e->nreqs; k++)
			if (e->reqs[k].src >= 0 && e->reqs[k].metric == h->metrics[i] &&
			    cs_focus_equal(&e->reqs[k].focus, &n->focus))
				held = 1;
		if (!held)
			c += e->src->ops->cost(e->src, m, &n->focus);
	}
	return c;
}

static void hold(struct cs_engine *e, struct cs_node *n)
{
	const struct hypothesis *h = hyp_of(e, n);
	uint32_t i;

	for (i = 0; i < h->nmetrics && i < CS_MAX_TERMS; i++) {
		int k = find_req(e, h->metrics[i], &n->focus);
		struct cs_req *r = &e->reqs[k];

		if (r->src < 0) {
			r->src = e->src->ops->request(e->src, e->lib->metrics[r->metric], &r->focus);
			r->slow = 0;
			r->wait = 0;
			r->current = 1;
			r->cost = e->src->ops->cost(e->src, e->lib->metrics[r->metric], &r->focus);
			r->made = e->launches;
			e->st.cost_now += r->cost;
			e->st.requests++;
		}
		/* made in this launch (this node's or another's): in place within the next step */
		n->settling |= e->src->late_start && r->made == e->launches;
		r->users++;
		n->term_req[i] = k;
		n->term_base[i] = r->total;
	}
	if (e->st.cost_now > e->st.cost_max)
		e->st.cost_max = e->st.cost_now;
	n->observed = n->load_obs = 0;
	n->t_start = e->now;
}

/* The step in which a node's new requests were put in (source.h late_start): dropped, its
 * data and observed time begin at the step's end (a new request read nothing before it was
 * in, and the step's time would count as observed: under load, most of the minimum
 * observation time). Its t_start stays when its requests were made. */
static void settle(struct cs_engine *e, struct cs_node *n)
{
	uint32_t k;

	for (k = 0; k < CS_MAX_TERMS; k++)
		if (n->term_req[k] >= 0)
			n->term_base[k] = e->reqs[n->term_req[k]].total;
	n->settling = 0;
}

static void release(struct cs_engine *e, struct cs_node *n)
{
	uint32_t i;

	for (i = 0; i < CS_MAX_TERMS; i++) {
		struct cs_req *r;

		if (n->term_req[i] < 0)
			continue;
		r = &e->reqs[n->term_req[i]];
		if (--r->users == 0 && r->src >= 0) {
			e->src->ops->cancel(e->src, r->src);
			r->src = -1;
			e->st.cost_now -= r->cost;
		}
		n->term_req[i] = -1;
	}
	n->t_end = e->now;
}

static int holding(const struct cs_node *n)
{
	return n->term_req[0] >= 0;
}

static int interval_over(const struct cs_engine *e, const struct cs_node *n);

/* ---- refinements ---- */

static void refine_why(struct cs_engine *e, uint32_t id)
{
	const struct hypothesis *h = &e->lib->hyps[e->nodes[id].hyp];
	uint32_t i;

	for (i = 0; i < h->nchildren; i++) {
		struct cs_focus f;

		cs_focus_copy(&f, &e->nodes[id].focus);
		add_node(e, (int)id, h->children[i], &f, e->nodes[id].phase, CS_WHY, -1, 1);
		cs_focus_free(&f);
	}
}

static int supported(struct cs_engine *e, const struct cs_node *n);
static int supported_at(struct cs_engine *e, uint32_t hyp, const struct cs_focus *f);

/* Magnify along one hierarchy: the node's hypothesis at each child of its focus there that
 * the source can measure it at (CPU time is not per lock: no such refinement is made). */
static void refine_where(struct cs_engine *e, uint32_t id, int hier, int order)
{
	char **kids = NULL;
	uint32_t nk, i;

	nk = e->src->ops->children(e->src, &e->nodes[id].focus, hier, &kids);
	/* one thread is no refinement; one module, procedure or call path still says where */
	for (i = 0; i < nk; i++) {
		struct cs_focus f;

		if (hier != H_THREADS || nk > 1) {
			cs_focus_copy(&f, &e->nodes[id].focus);
			free(f.part[hier]);
			f.part[hier] = xstrdup(kids[i]);
			if (supported_at(e, e->nodes[id].hyp, &f))
				add_node(e, (int)id, e->nodes[id].hyp, &f, e->nodes[id].phase,
					 CS_WHERE, hier, order);
			cs_focus_free(&f);
		}
		free(kids[i]);
	}
	free(kids);
}

/* Whether a node is the end of its why chain: its hypothesis has no refinement of its own
 * that the source can measure at its focus (one rank alone has no WaitAtCollective: its
 * ExcessiveMPISyncWait is magnified along where instead). */
static int why_leaf(struct cs_engine *e, uint32_t id)
{
	const struct hypothesis *h = &e->lib->hyps[e->nodes[id].hyp];
	uint32_t i;

	if (!h->test)
		return 0;
	for (i = 0; i < h->nchildren; i++)
		if (supported_at(e, h->children[i], &e->nodes[id].focus))
			return 0;
	return 1;
}

/* Why first; a hypothesis with no refinement of its own is magnified along where, the
 * hierarchy its hint names first. (When: each phase refines the root, cs_phase_begin.) */
static void refine(struct cs_engine *e, uint32_t id)
{
	const struct hypothesis *h = &e->lib->hyps[e->nodes[id].hyp];
	int hier;

	refine_why(e, id);
	if (!why_leaf(e, id))
		return;
	if (h->hint >= 0)
		refine_where(e, id, h->hint, 0);
	for (hier = 0; hier < H_COUNT; hier++)
		if (hier != h->hint)
			refine_where(e, id, hier, 2 + hier);
}

/* Resources appeared (a procedure first called, a thread started): true nodes that were
 * magnified get refinements to the new children too (known ones are found, not added). */
static void grow(struct cs_engine *e)
{
	uint64_t g = e->src->ops->generation(e->src);
	uint32_t i, n = e->nnodes;
	int hier;

	if (g == e->generation)
		return;
	e->generation = g;
	for (i = 0; i < n; i++) {
		const struct hypothesis *h = &e->lib->hyps[e->nodes[i].hyp];

		if (!e->nodes[i].was_true || !why_leaf(e, i) || interval_over(e, &e->nodes[i]))
			continue;
		if (h->hint >= 0)
			refine_where(e, i, h->hint, 0);
		for (hier = 0; hier < H_COUNT; hier++)
			if (hier != h->hint)
				refine_where(e, i, hier, 2 + hier);
	}
}

/* ---- tests ---- */

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

/*
 * Each metric's possible cumulative average at the end of the node's interval: what is known
 * (S over O seconds observed) plus R seconds to come at any rate from 0 to the metric's
 * maximum; R = 0 gives the average now, R = INFINITY any average the metric can reach.
 */
static void term_ranges(struct cs_engine *e, const struct cs_node *n, double R,
			struct range *out)
{
	const struct hypothesis *h = hyp_of(e, n);
	uint32_t i;

	for (i = 0; i < h->nmetrics && i < CS_MAX_TERMS; i++) {
		const struct cs_req *r = &e->reqs[n->term_req[i]];
		double S = r->total - n->term_base[i], O = n->observed;
		double M = e->src->ops->max_rate(e->src, e->lib->metrics[h->metrics[i]], &n->focus);

		if (R == 0)
			out[i] = rmake(S / O, S / O);
		else if (isinf(R))
			out[i] = rmake(0, M);
		else
			out[i] = rmake(S / (O + R), isinf(M) ? (double)INFINITY : (S + M * R) / (O + R));
	}
}

static double load_factor(const struct cs_engine *e, const struct cs_node *n)
{
	if (!e->par.load_comp || n->observed <= 0)
		return 1;
	return n->load_obs / n->observed;
}

static enum tri test(struct cs_engine *e, struct cs_node *n, double R, int relax)
{
	const struct hypothesis *h = hyp_of(e, n);
	struct range terms[CS_MAX_TERMS];
	struct evalctx c = { e->lib, h, terms, load_factor(e, n), e->par.hyst, relax };

	term_ranges(e, n, R, terms);
	return eval_bool(&c, h->test);
}

/* The values shown: each metric's average, the share, the test's left side. */
static void record_values(struct cs_engine *e, struct cs_node *n)
{
	const struct hypothesis *h = hyp_of(e, n);
	struct range terms[CS_MAX_TERMS];
	struct evalctx c = { e->lib, h, terms, load_factor(e, n), 1, 0 };
	const struct hx_expr *lhs = h->test;
	uint32_t i;

	term_ranges(e, n, 0, terms);
	for (i = 0; i < h->nmetrics && i < CS_MAX_TERMS; i++)
		n->values[i] = terms[i].lo;
	n->share = h->share ? eval_num(&c, h->share).lo : -1;
	while (lhs && (lhs->op == HX_AND || lhs->op == HX_OR || lhs->op == HX_NOT))
		lhs = lhs->a;
	n->value = lhs ? eval_num(&c, lhs->a).lo : 0;
}

/* The seconds left in the node's interval, when the source knows; INFINITY otherwise. */
static double remaining(struct cs_engine *e, const struct cs_node *n)
{
	uint64_t end;

	if (n->phase >= 0)
		end = e->phases[n->phase].end ? e->phases[n->phase].end
					       : e->src->ops->phase_end(e->src,
									e->phases[n->phase].start);
	else
		end = e->src->ops->run_end(e->src);
	if (!end)
		return INFINITY;
	return end > e->now ? secs(end - e->now) : 0;
}

static void flip(struct cs_engine *e, struct cs_node *n, int to_true)
{
	if (n->nflips < CS_MAX_FLIPS)
		n->flips[n->nflips++] = (struct cs_flip){ e->now, to_true };
	n->transitions++;
	n->state = to_true ? CS_TRUE : CS_FALSE;
	if (!n->t_decided)
		n->t_decided = e->now;
}

static void become_true(struct cs_engine *e, uint32_t id)
{
	struct cs_node *n = &e->nodes[id];
	int first = !n->was_true;

	n->was_true = 1;
	flip(e, n, 1);
	if (first)
		refine(e, id);
}

static int enough(const struct cs_engine *e, const struct cs_node *n)
{
	uint64_t start, end;
	double elapsed;

	cs_node_interval(e, n, &start, &end);
	elapsed = secs(e->now > start ? e->now - start : 0);
	return n->observed + 1e-9 >= e->par.min_obs &&
	       n->observed + 1e-9 >= e->par.min_fraction * elapsed;
}

static void evaluate(struct cs_engine *e, uint32_t id)
{
	struct cs_node *n = &e->nodes[id];

	if (n->observed <= 0)
		return;
	record_values(e, n);
	switch (n->state) {
	case CS_TESTING:
		if (test(e, n, 0, 0) == T_TRUE && enough(e, n)) {
			become_true(e, id);
		} else if (n->observed + 1e-9 >= e->par.min_obs &&
			   test(e, n, remaining(e, n), 0) == T_FALSE) {
			n->why = "no rest of its interval could make it true";
			flip(e, n, 0);
			release(e, n);
		} else if (n->observed + 1e-9 >= e->par.suff_obs && test(e, n, 0, 0) != T_TRUE) {
			n->state = CS_NEVER;
			n->why = "sufficient observation time passed";
			release(e, n);
		}
		break;
	case CS_TRUE:
		if (test(e, n, 0, 1) != T_TRUE)
			flip(e, n, 0);
		break;
	case CS_FALSE:
		if (n->was_true && test(e, n, 0, 0) == T_TRUE)
			flip(e, n, 1);
		break;
	default:
		break;
	}
}

/* The node's interval is over: a last evaluation on all its data, then its data is let go. */
static void conclude(struct cs_engine *e, uint32_t id)
{
	struct cs_node *n = &e->nodes[id];

	if (n->state == CS_UNTESTED || n->state == CS_DEFERRED) {
		n->state = CS_NEVER;
		n->why = "its interval ended before it was tested";
		return;
	}
	if (!holding(n))
		return;
	if (n->state == CS_TESTING) {
		if (n->observed > 0)
			record_values(e, n);
		if (n->observed > 0 && test(e, n, 0, 0) == T_TRUE && enough(e, n)) {
			become_true(e, id);
		} else if (n->observed > 0 && enough(e, n)) {
			n->why = "false over its interval";
			flip(e, &e->nodes[id], 0);
		} else {
			n->state = CS_NEVER;
			n->why = "its interval ended with too little of it observed";
		}
	}
	release(e, &e->nodes[id]);
}

/* ---- scheduling ---- */

static int waiting(const struct cs_node *n)
{
	return n->state == CS_UNTESTED || n->state == CS_DEFERRED;
}

static int before(const struct cs_node *a, const struct cs_node *b)
{
	if (a->rank != b->rank)
		return a->rank < b->rank;
	if (a->order != b->order)
		return a->order < b->order;
	return a->id < b->id;
}

static int supported_at(struct cs_engine *e, uint32_t hyp, const struct cs_focus *f)
{
	const struct hypothesis *h = &e->lib->hyps[hyp];
	uint32_t i;

	if (h->nmetrics > CS_MAX_TERMS)
		return 0;
	for (i = 0; i < h->nmetrics; i++)
		if (!e->src->ops->supports(e->src, e->lib->metrics[h->metrics[i]], f))
			return 0;
	return 1;
}

static int supported(struct cs_engine *e, const struct cs_node *n)
{
	return supported_at(e, n->hyp, &n->focus);
}

static int interval_over(const struct cs_engine *e, const struct cs_node *n)
{
	return n->phase >= 0 && e->phases[n->phase].end;
}

static const struct cs_engine *sort_engine;

static int cmp_waiting(const void *a, const void *b)
{
	const struct cs_node *x = &sort_engine->nodes[*(const uint32_t *)a];
	const struct cs_node *y = &sort_engine->nodes[*(const uint32_t *)b];

	return before(x, y) ? -1 : before(y, x) ? 1 : 0;
}

/* Try one waiting refinement: 1 when it started. */
static int try_start(struct cs_engine *e, uint32_t id, uint32_t testing, uint32_t busy_normal)
{
	struct cs_node *n = &e->nodes[id];
	double cost;

	if (!supported(e, n)) {
		n->state = CS_UNAVAILABLE;
		n->why = "the data source cannot measure a metric of its test here";
		return 0;
	}
	if (n->rank == 2 && busy_normal) {
		n->state = CS_DEFERRED;
		n->why = "ignored: tested after the other refinements";
		return 0;
	}
	cost = pending_cost(e, n);
	if (cost >= CS_COST_NO_ROOM) {
		n->state = CS_DEFERRED;
		n->why = "no room for its instrumentation (points full of other requests' actions)";
		return 0;
	}
	if (testing && e->st.cost_now + cost > e->par.budget + 1e-12) {
		n->state = CS_DEFERRED;
		n->why = "the cost budget is used up";
		return 0;
	}
	n->state = CS_TESTING;
	n->why = NULL;
	hold(e, n);
	return 1;
}

/*
 * Start waiting refinements in order while the budget allows (one always, when nothing is
 * under test: the search must go on). Ignored ones (rank 2) start only when nothing else
 * waits or is under test.
 */
static void launch(struct cs_engine *e)
{
	uint32_t testing = 0, busy_normal = 0, nw = 0, i, nn = e->nnodes;
	uint32_t *w = xmalloc((nn ? nn : 1) * sizeof(uint32_t));

	e->launches++;
	for (i = 0; i < nn; i++) {
		const struct cs_node *n = &e->nodes[i];

		if (n->state == CS_TESTING)
			testing++;
		if ((n->state == CS_TESTING || waiting(n)) && n->rank < 2)
			busy_normal++;
		if (waiting(n))
			w[nw++] = i;
	}
	sort_engine = e;
	qsort(w, nw, sizeof(uint32_t), cmp_waiting);
	for (i = 0; i < nw; i++) {
		if (interval_over(e, &e->nodes[w[i]])) {
			conclude(e, w[i]);
		} else if (try_start(e, w[i], testing, busy_normal)) {
			testing++;
		} else if (e->nodes[w[i]].state == CS_UNAVAILABLE && e->nodes[w[i]].rank < 2) {
			busy_normal--;
		}
	}
	free(w);
}

/* ---- time ---- */

static void phase_close(struct cs_engine *e, uint64_t t)
{
	struct cs_phase *p;
	uint32_t i;

	if (e->cur_phase < 0)
		return;
	p = &e->phases[e->cur_phase];
	p->end = t > p->start ? t : p->start + 1;
	for (i = 0; i < e->nnodes; i++)
		if (e->nodes[i].phase == e->cur_phase)
			conclude(e, i);
	e->cur_phase = -1;
}

/* A phase refines the root along "when": the search starts again inside it. */
static void phase_open(struct cs_engine *e, const char *name, uint64_t t)
{
	struct cs_focus whole = { { NULL } };
	uint32_t id;

	e->phases = xrealloc(e->phases, (e->nphases + 1) * sizeof(*e->phases));
	e->phases[e->nphases] = (struct cs_phase){ .name = xstrdup(name), .start = t };
	e->cur_phase = (int)e->nphases++;
	id = add_node(e, 0, 0, &whole, e->cur_phase, CS_WHEN, -1, 0);
	e->phases[e->cur_phase].root = id;
	e->nodes[id].t_start = t;
	become_true(e, id);
}

static void finish(struct cs_engine *e)
{
	uint32_t i;

	phase_close(e, e->now);
	e->done = 1;
	for (i = 0; i < e->nnodes; i++)
		conclude(e, i);
}

static void collect(struct cs_engine *e, const struct cs_step *st)
{
	double dt = secs(st->t1 - st->t0);
	uint32_t i, k;

	for (i = 0; i < e->nreqs; i++) {
		int got;

		if (e->reqs[i].src < 0)
			continue;
		e->reqs[i].total += e->src->ops->read(e->src, e->reqs[i].src);
		e->reqs[i].secs += dt;
		got = !e->src->ops->fresh || e->src->ops->fresh(e->src, e->reqs[i].src);
		e->reqs[i].samples += (uint64_t)got;
		e->st.samples += (uint64_t)got;
		e->reqs[i].retest_samples += (uint64_t)(got && e->reqs[i].slow);
		e->st.retest_samples += (uint64_t)(got && e->reqs[i].slow);
		e->st.settled_samples += (uint64_t)(got && e->st.settled_s > 0);
		e->reqs[i].fresh = got;
		e->reqs[i].current = !e->src->ops->current ||
				     e->src->ops->current(e->src, e->reqs[i].src);
	}
	for (i = 0; i < e->nnodes; i++) {
		struct cs_node *n = &e->nodes[i];

		if (!holding(n) || n->t_start > st->t0)
			continue;
		if (n->settling) {
			settle(e, n);
			continue;
		}
		n->observed += dt;
		n->load_obs += st->load * dt;
		for (k = 0; k < CS_MAX_TERMS; k++)
			n->samples += n->term_req[k] >= 0 && e->reqs[n->term_req[k]].fresh;
	}
}

/* Its data is complete: no metric of its test waits for a lump (source.h: current). */
static int current(const struct cs_engine *e, const struct cs_node *n)
{
	uint32_t k;

	for (k = 0; k < CS_MAX_TERMS; k++)
		if (n->term_req[k] >= 0 && !e->reqs[n->term_req[k]].current)
			return 0;
	return 1;
}

/* The pairs no node under test reads (only concluded ones being re-tested: true, or true
 * once and false now) are slow: the source may deliver them in lumps, as far apart as
 * CS_RETEST_FRACTION of the shortest observation of the nodes that read them. */
static void pace_reqs(struct cs_engine *e)
{
	uint8_t *busy = xcalloc(e->nreqs + 1, 1);
	double *wait = xmalloc((e->nreqs + 1) * sizeof(double));
	uint32_t i, k;

	for (i = 0; i < e->nreqs; i++)
		wait[i] = INFINITY;
	for (i = 0; i < e->nnodes; i++) {
		const struct cs_node *n = &e->nodes[i];

		for (k = 0; k < CS_MAX_TERMS; k++) {
			int q = n->term_req[k];

			if (q < 0)
				continue;
			busy[q] |= n->state == CS_TESTING;
			if (CS_RETEST_FRACTION * n->observed < wait[q])
				wait[q] = CS_RETEST_FRACTION * n->observed;
		}
	}
	for (i = 0; i < e->nreqs; i++) {
		struct cs_req *r = &e->reqs[i];
		double w = busy[i] ? 0 : wait[i] > 1e-3 ? wait[i] : 1e-3;

		if (r->src >= 0 && (r->slow != !busy[i] || r->wait != w)) {
			r->slow = !busy[i];
			r->wait = w;
			e->src->ops->pace_req(e->src, r->src, w);
		}
	}
	free(busy);
	free(wait);
}

/* Every node measured is a true one being re-tested: nothing under test, nothing waiting. Then
 * the seconds the re-tests can wait: CS_RETEST_FRACTION of the shortest observation among the
 * nodes measured (INFINITY when none is); else 0. */
static double settled(const struct cs_engine *e)
{
	double wait = INFINITY;
	uint32_t i;

	for (i = 0; i < e->nnodes; i++) {
		const struct cs_node *n = &e->nodes[i];

		if (n->state == CS_TESTING || waiting(n))
			return 0;
		if (holding(n) && CS_RETEST_FRACTION * n->observed < wait)
			wait = CS_RETEST_FRACTION * n->observed;
	}
	return wait > 1e-3 ? wait : 1e-3;
}

/*
 * The seconds the engine can wait before its next step: the least of what the nodes under test
 * can wait (INFINITY: none is under test). One short of its minimum observation time cannot
 * conclude before it has that, and waits CS_RETEST_FRACTION of that time more at most (a node
 * true then is concluded that much later, at most). One past it concludes true when its test
 * holds, or never at its sufficient observation time: it is looked at again after
 * CS_RETEST_FRACTION of the time it has been observed (as a true node is re-tested: its
 * cumulative average cannot move by more than that share of itself in between), or its
 * minimum observation time when that is longer, and at its sufficient time (with the same
 * slack). A source need not step more often: fewer, wider buckets carry the same averages
 * (live: docs/consult.md "What is sent"); the slack lets nodes started at nearby times share
 * their steps.
 */
static double next_need(const struct cs_engine *e)
{
	double wait = INFINITY, slack = CS_RETEST_FRACTION * e->par.min_obs, w;
	uint32_t i;

	for (i = 0; i < e->nnodes; i++) {
		const struct cs_node *n = &e->nodes[i];

		if (n->state != CS_TESTING || !holding(n))
			continue;
		if (n->settling) /* its data begins after the next step: a short one */
			return 1e-3;
		if (n->observed + 1e-9 < e->par.min_obs) {
			w = e->par.min_obs - n->observed + slack;
		} else {
			w = CS_RETEST_FRACTION * n->observed;
			if (w < e->par.min_obs)
				w = e->par.min_obs;
			if (e->par.suff_obs > n->observed && e->par.suff_obs - n->observed + slack < w)
				w = e->par.suff_obs - n->observed + slack;
		}
		if (w < wait)
			wait = w;
	}
	return wait > 1e-3 ? wait : 1e-3;
}

int cs_engine_step(struct cs_engine *e)
{
	struct cs_step st;
	uint32_t i;

	if (e->done)
		return 0;
	memset(&st, 0, sizeof(st));
	if (e->src->ops->step(e->src, &st) != 0) {
		finish(e);
		return 0;
	}
	if (st.load <= 0 || st.load > 1)
		st.load = 1;
	collect(e, &st);
	e->now = st.t1;
	for (i = 0; i < e->nnodes; i++)
		if (holding(&e->nodes[i]) && current(e, &e->nodes[i])) {
			e->nodes[i].retests += e->nodes[i].state != CS_TESTING;
			evaluate(e, i);
		}
	for (i = 0; i < st.nphase && i < CS_MAX_PHASE_EVENTS; i++) {
		phase_close(e, st.phase[i].t);
		if (st.phase[i].name)
			phase_open(e, st.phase[i].name, st.phase[i].t);
	}
	grow(e);
	launch(e);
	e->st.settled_steps += e->st.settled_s > 0;
	e->st.settled_s = settled(e);
	if (e->src->ops->pace)
		e->src->ops->pace(e->src, e->st.settled_s, next_need(e));
	if (e->src->ops->pace_req)
		pace_reqs(e);
	e->st.steps++;
	e->st.t_now = e->now;
	if (e->progress)
		e->progress(e, e->progress_arg);
	if (st.last) {
		finish(e);
		return 0;
	}
	return 1;
}

void cs_engine_run(struct cs_engine *e)
{
	while (cs_engine_step(e))
		;
}

struct cs_engine *cs_engine_new(const struct hyp_lib *lib, const struct cs_params *par,
				struct cs_source *src)
{
	struct cs_engine *e = xcalloc(1, sizeof(*e));
	struct cs_focus whole = { { NULL } };

	e->lib = lib;
	e->par = *par;
	e->src = src;
	e->cur_phase = -1;
	add_node(e, -1, 0, &whole, -1, CS_ROOT, -1, 0);
	e->generation = src->ops->generation(src);
	become_true(e, 0);
	launch(e);
	return e;
}

void cs_engine_free(struct cs_engine *e)
{
	uint32_t i;

	if (!e)
		return;
	for (i = 0; i < e->nnodes; i++) {
		cs_focus_free(&e->nodes[i].focus);
		free(e->nodes[i].parents);
		free(e->nodes[i].kids);
	}
	for (i = 0; i < e->nreqs; i++)
		cs_focus_free(&e->reqs[i].focus);
	for (i = 0; i < e->nphases; i++)
		free(e->phases[i].name);
	free(e->nodes);
	free(e->reqs);
	free(e->phases);
	free(e);
}

/* True once, and no refinement of it ever was: the most specific finding on its path. */
int cs_node_is_bottleneck(const struct cs_engine *e, const struct cs_node *n)
{
	uint32_t i;

	if (!n->was_true || !e->lib->hyps[n->hyp].test)
		return 0;
	for (i = 0; i < n->nkids; i++)
		if (e->nodes[n->kids[i]].was_true)
			return 0;
	return 1;
}
