/* SPDX-License-Identifier: MIT */
/*
 * Aggregating asynchronous sample streams (histogram.h; seed 003 §5.4): only intervals every
 * live source has reported are combined, so an emitted interval never changes afterwards.
 */
#include <stdlib.h>
#include <string.h>

#include "histogram.h"
#include "util.h"

#define AGG_MAXQ 64

struct agg *agg_new(enum mdl_agg op, agg_emit_fn emit, void *arg)
{
	struct agg *a = xcalloc(1, sizeof(*a));

	a->op = op;
	a->emit = emit;
	a->arg = arg;
	a->maxq = AGG_MAXQ;
	return a;
}

void agg_free(struct agg *a)
{
	uint32_t i;

	if (!a)
		return;
	for (i = 0; i < a->nsrc; i++)
		free(a->src[i].q);
	free(a->src);
	free(a);
}

uint32_t agg_source(struct agg *a, uint64_t start)
{
	struct agg_source *s;

	a->src = xrealloc(a->src, (a->nsrc + 1) * sizeof(*a->src));
	s = &a->src[a->nsrc];
	memset(s, 0, sizeof(*s));
	s->start = s->last_t = start;
	if (!a->nsrc || (!a->emitted && start < a->now))
		a->now = start;
	return a->nsrc++;
}

/* ---- a source's queue of pieces ---- */

static void push_piece(struct agg *a, struct agg_source *s, struct agg_piece p)
{
	if (s->nq == s->capq) {
		s->capq = s->capq ? 2 * s->capq : 8;
		s->q = xrealloc(s->q, s->capq * sizeof(*s->q));
	}
	s->q[s->nq++] = p;
	if (s->nq > a->maxq) { /* the thesis's merge: the oldest two become one sample */
		s->q[1].t0 = s->q[0].t0;
		s->q[1].v += s->q[0].v;
		memmove(s->q, s->q + 1, --s->nq * sizeof(*s->q));
	}
}

/* The share of [c0, c1) in the source's pieces (each spread evenly), removed from them. */
static double take(struct agg_source *s, uint64_t c1)
{
	double x = 0;

	while (s->nq && s->q[0].t0 < c1) {
		struct agg_piece *p = &s->q[0];
		double rest;

		if (p->t1 <= c1) {
			x += p->v;
			memmove(s->q, s->q + 1, --s->nq * sizeof(*s->q));
			continue;
		}
		rest = p->v * (double)(p->t1 - c1) / (double)(p->t1 - p->t0);
		x += p->v - rest;
		p->t0 = c1;
		p->v = rest;
		break;
	}
	return x;
}

/* A source counts in [c0, c1) from its start until its last sample once it ended. */
static int active(const struct agg_source *s, uint64_t c0, uint64_t c1)
{
	return s->start < c1 && (!s->ended || s->last_t > c0);
}

static void emit_interval(struct agg *a, uint64_t c0, uint64_t c1)
{
	double acc = 0;
	uint32_t i, n = 0;

	for (i = 0; i < a->nsrc; i++) {
		int on = active(&a->src[i], c0, c1);
		double x = take(&a->src[i], c1); /* 0 for a source not active */

		if (a->op == MDL_AGG_SUM || a->op == MDL_AGG_AVG)
			acc += x;
		else if (on && (!n || (a->op == MDL_AGG_MIN ? x < acc : x > acc)))
			acc = x;
		n += (uint32_t)on;
	}
	if (a->op == MDL_AGG_AVG && n)
		acc /= n;
	a->emitted = 1;
	a->now = c1;
	a->emit(a->arg, c0, c1, acc);
}

/* The earliest latest end over the live sources; when all ended, the latest end of all. */
static uint64_t frontier(const struct agg *a)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	uint32_t i;

	for (i = 0; i < a->nsrc; i++) {
		const struct agg_source *s = &a->src[i];

		if (!s->ended && s->last_t < lo)
			lo = s->last_t;
		if (s->last_t > hi)
			hi = s->last_t;
	}
	return lo == UINT64_MAX ? hi : lo;
}

static void advance(struct agg *a)
{
	uint64_t f = frontier(a);

	if (a->nsrc && f > a->now)
		emit_interval(a, a->now, f);
}

/* A change at a time already passed: into the latest queued piece, else lost (dropped). */
static void late_change(struct agg *a, struct agg_source *s, double delta)
{
	if (s->nq)
		s->q[s->nq - 1].v += delta;
	else
		a->dropped += delta;
}

void agg_sample(struct agg *a, uint32_t src, uint64_t t, double cumulative)
{
	struct agg_source *s;
	struct agg_piece p;

	if (src >= a->nsrc || a->src[src].ended)
		return;
	s = &a->src[src];
	p = (struct agg_piece){ s->last_t, t, cumulative - s->last_v };
	s->last_v = cumulative;
	if (t <= s->last_t || t <= a->now) {
		late_change(a, s, p.v);
		s->last_t = t > s->last_t ? t : s->last_t;
		return;
	}
	if (p.t0 < a->now) { /* a source added late: its share before 'now' is lost */
		double keep = p.v * (double)(t - a->now) / (double)(t - p.t0);

		a->dropped += p.v - keep;
		p = (struct agg_piece){ a->now, t, keep };
	}
	push_piece(a, s, p);
	s->last_t = t;
	advance(a);
}

void agg_end(struct agg *a, uint32_t src)
{
	if (src >= a->nsrc)
		return;
	a->src[src].ended = 1;
	advance(a);
}
