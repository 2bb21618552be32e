/* SPDX-License-Identifier: MIT */
/* The instrumentation cost model (cost.h). Installed points are kept in a plain array. */
#include "cost.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

struct cost_point {
	char *module, *name, *callee;
	uint64_t addr;
	enum mdl_point point;
	double freq;     /* executions per second: observed, else static */
	double act_ns;   /* the installed actions' cost per execution */
	uint64_t count;  /* executions observed */
	uint32_t refs;   /* plans with actions here */
	int observed;
};

struct cost_model {
	struct cost_params c;
	struct cost_point *pts;
	uint32_t n;
};

void cost_defaults(struct cost_params *c)
{
	static const double prim[MDL_PRIM_COUNT] = {
		[MDL_SET] = 2, [MDL_ADD] = 3, [MDL_SUB] = 3,
		[MDL_START_WALL] = 18, [MDL_STOP_WALL] = 22,       /* a clock read: 16 ns here */
		[MDL_START_CPU] = 250, [MDL_STOP_CPU] = 260,       /* the thread CPU clock: a syscall */
	};

	memset(c, 0, sizeof(*c));
	memcpy(c->prim_ns, prim, sizeof(prim));
	c->pred_ns = 1;
	c->tramp_ns[MDL_ENTRY] = 10;
	c->tramp_ns[MDL_EXIT] = 15;
	c->tramp_ns[MDL_CALL] = 10;
	c->freq_user = 1000;
	c->freq_library = 100;
	c->wildcard_procs = 100;
	c->defer_at = 0.10;
	c->alarm_at = 0.20;
}

double cost_actions_ns(const struct cost_params *c, const struct mdl_request *r)
{
	double ns = 0;
	uint32_t i;

	for (i = 0; i < r->nact; i++)
		ns += c->prim_ns[r->act[i].prim] +
		      (r->act[i].pred.opd != MDL_OPD_NONE ? c->pred_ns : 0);
	return ns;
}

double cost_point_ns(const struct cost_params *c, const struct mdl_request *r)
{
	return c->tramp_ns[r->point] + cost_actions_ns(c, r);
}

double cost_static_freq(const struct cost_params *c, const struct mdl_request *r)
{
	double f = r->library ? c->freq_library : c->freq_user;

	return strcmp(r->name, "*") ? f : f * c->wildcard_procs;
}

struct cost_model *cost_model_new(const struct cost_params *c)
{
	struct cost_model *m = xcalloc(1, sizeof(*m));

	if (c)
		m->c = *c;
	else
		cost_defaults(&m->c);
	return m;
}

void cost_model_free(struct cost_model *m)
{
	uint32_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++) {
		free(m->pts[i].module);
		free(m->pts[i].name);
		free(m->pts[i].callee);
	}
	free(m->pts);
	free(m);
}

static int same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static struct cost_point *find(const struct cost_model *m, const struct mdl_request *r)
{
	uint32_t i;

	for (i = 0; i < m->n; i++) {
		struct cost_point *p = &m->pts[i];

		if (p->point == r->point && p->addr == r->addr && !strcmp(p->name, r->name) &&
		    same(p->module, r->module) && same(p->callee, r->callee))
			return p;
	}
	return NULL;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static struct cost_point *add_point(struct cost_model *m, const struct mdl_request *r)
{
	struct cost_point *p;

	m->pts = xrealloc(m->pts, (m->n + 1) * sizeof(*m->pts));
	p = &m->pts[m->n++];
	memset(p, 0, sizeof(*p));
	p->module = dup_or_null(r->module);
	p->name = xstrdup(r->name);
	p->callee = dup_or_null(r->callee);
	p->addr = r->addr;
	p->point = r->point;
	p->freq = cost_static_freq(&m->c, r);
	return p;
}

double cost_predict(const struct cost_model *m, const struct mdl_plan *p)
{
	double ns = 0;
	uint32_t i;

	for (i = 0; i < p->nreq; i++) {
		const struct mdl_request *r = &p->req[i];
		const struct cost_point *pt = find(m, r);
		double freq = pt ? pt->freq : cost_static_freq(&m->c, r);

		ns += freq * (cost_actions_ns(&m->c, r) + (pt ? 0 : m->c.tramp_ns[r->point]));
	}
	return ns;
}

double cost_total(const struct cost_model *m)
{
	double ns = 0;
	uint32_t i;

	for (i = 0; i < m->n; i++)
		ns += m->pts[i].freq * (m->c.tramp_ns[m->pts[i].point] + m->pts[i].act_ns);
	return ns / 1e9;
}

enum cost_decision cost_admit(struct cost_model *m, const struct mdl_plan *p, double *predicted)
{
	double ns = cost_predict(m, p);
	uint32_t i;

	if (predicted)
		*predicted = ns;
	if (ns > 0 && cost_total(m) + ns / 1e9 > m->c.defer_at)
		return COST_DEFER;
	for (i = 0; i < p->nreq; i++) {
		struct cost_point *pt = find(m, &p->req[i]);

		pt = pt ? pt : add_point(m, &p->req[i]);
		pt->refs++;
		pt->act_ns += cost_actions_ns(&m->c, &p->req[i]);
	}
	return COST_INSTALL;
}

void cost_release(struct cost_model *m, const struct mdl_plan *p)
{
	uint32_t i;

	for (i = 0; i < p->nreq; i++) {
		struct cost_point *pt = find(m, &p->req[i]);

		if (!pt)
			continue;
		pt->act_ns -= cost_actions_ns(&m->c, &p->req[i]);
		if (--pt->refs)
			continue;
		free(pt->module);
		free(pt->name);
		free(pt->callee);
		*pt = m->pts[--m->n];
	}
}

int cost_observe(struct cost_model *m, const struct mdl_request *r, uint64_t count,
		 double elapsed_ns)
{
	struct cost_point *pt = find(m, r);

	if (!pt)
		return -1;
	pt->count = count;
	if (elapsed_ns > 0) {
		pt->freq = (double)count / elapsed_ns * 1e9;
		pt->observed = 1;
	}
	return 0;
}

double cost_observed_ns(const struct cost_model *m)
{
	double ns = 0;
	uint32_t i;

	for (i = 0; i < m->n; i++)
		ns += (double)m->pts[i].count * (m->c.tramp_ns[m->pts[i].point] + m->pts[i].act_ns);
	return ns;
}

int cost_alarm(const struct cost_model *m, double observed_ns, double elapsed_ns,
	       double *fraction)
{
	double f = elapsed_ns > 0 ? observed_ns / elapsed_ns : 0;

	if (fraction)
		*fraction = f;
	return f > m->c.alarm_at;
}
