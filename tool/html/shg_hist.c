/* SPDX-License-Identifier: MIT */
/*
 * The time histograms the search used (Paradyn's: one per metric-focus pair it measured). While
 * report --html runs the search, every step's increase of each pair measured then is kept, as
 * a rate (its metric per second of the step): what the engine itself read, nothing more, so
 * the memory is that of the samples the search used. Then, for each bottleneck, a chart per
 * metric of its test over the run: the bars of the steps while the node held orange, the
 * others blue; gaps where the pair was not measured.
 */
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "shg_hist.h"
#include "util.h"

#define HIST_BARS 200	  /* bars per chart at most (steps averaged) */
#define HIST_CHARTS 8	  /* charts in all */

struct series {
	uint64_t *t;  /* end of the step, ns */
	double *rate; /* increase per second over the step */
	double *dt;   /* the step's length, s */
	uint32_t n, cap;
	double last;  /* the pair's total at the previous step */
	int was_on;   /* measured at the previous step */
};

struct shg_rec {
	struct series *s; /* per request of the engine */
	uint32_t ns;
	uint64_t prev_now;
};

struct shg_rec *shg_rec_new(void)
{
	return xcalloc(1, sizeof(struct shg_rec));
}

void shg_rec_free(struct shg_rec *r)
{
	uint32_t i;

	if (!r)
		return;
	for (i = 0; i < r->ns; i++) {
		free(r->s[i].t);
		free(r->s[i].rate);
		free(r->s[i].dt);
	}
	free(r->s);
	free(r);
}

static void append(struct series *s, uint64_t t, double rate, double dt)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->t = xrealloc(s->t, s->cap * sizeof(*s->t));
		s->rate = xrealloc(s->rate, s->cap * sizeof(*s->rate));
		s->dt = xrealloc(s->dt, s->cap * sizeof(*s->dt));
	}
	s->t[s->n] = t;
	s->dt[s->n] = dt;
	s->rate[s->n++] = rate;
}

void shg_rec_step(struct cs_engine *e, void *arg)
{
	struct shg_rec *r = arg;
	double dt = (double)(e->now - r->prev_now) / 1e9;
	uint32_t i;

	if (e->nreqs > r->ns) {
		r->s = xrealloc(r->s, e->nreqs * sizeof(*r->s));
		memset(r->s + r->ns, 0, (e->nreqs - r->ns) * sizeof(*r->s));
		r->ns = e->nreqs;
	}
	for (i = 0; i < e->nreqs; i++) {
		struct series *s = &r->s[i];
		int on = e->reqs[i].src >= 0;

		/* a step's increase counts when the pair was measured over all of it */
		if (on && s->was_on && dt > 0)
			append(s, e->now, (e->reqs[i].total - s->last) / dt, dt);
		s->last = e->reqs[i].total;
		s->was_on = on;
	}
	r->prev_now = e->now;
	html_progress("searching the trace");
}

static int find_req(const struct cs_engine *e, uint32_t metric, const struct cs_focus *f)
{
	uint32_t i;

	for (i = 0; i < e->nreqs; i++)
		if (e->reqs[i].metric == metric && cs_focus_equal(&e->reqs[i].focus, f))
			return (int)i;
	return -1;
}

/* Whether n held at time t (its flips; the first ones only, CS_MAX_FLIPS). */
static int held_at(const struct cs_node *n, uint64_t t)
{
	uint32_t k;
	int on = 0;

	for (k = 0; k < n->nflips && n->flips[k].t < t; k++)
		on = n->flips[k].to_true;
	return on;
}

/* The mean rate over the node's (last) observation, from the steps recorded: the increase over
 * the seconds observed, as the engine's S / O. */
static double mean_over(const struct series *s, const struct cs_node *n, uint64_t end)
{
	double sum = 0, secs = 0;
	uint32_t i;

	for (i = 0; i < s->n; i++)
		if (s->t[i] > n->t_start && s->t[i] <= end) {
			sum += s->rate[i] * s->dt[i];
			secs += s->dt[i];
		}
	return secs > 0 ? sum / secs : 0;
}

static void chart(FILE *out, const struct cs_engine *e, const struct shg_rec *r,
		  const struct cs_node *n, uint32_t id, uint32_t k, uint64_t run_ns)
{
	const char *metric = e->lib->metrics[e->lib->hyps[n->hyp].metrics[k]];
	int q = find_req(e, e->lib->hyps[n->hyp].metrics[k], &n->focus);
	const struct series *s = q >= 0 && (uint32_t)q < r->ns ? &r->s[q] : NULL;
	uint32_t bars, i, b, *cnt;
	double *v;
	char focus[4096], title[400];

	if (!s || !s->n || !run_ns)
		return;
	bars = e->st.steps < HIST_BARS ? (uint32_t)e->st.steps : HIST_BARS; /* bars span the run */
	if (bars < 1)
		bars = 1;
	v = xcalloc(2 * bars, sizeof(*v));
	cnt = xcalloc(bars, sizeof(*cnt));
	for (i = 0; i < s->n; i++) { /* the steps of a bar averaged; green when it held */
		b = (uint32_t)((double)(s->t[i] - 1) / (double)run_ns * bars);
		b = b < bars ? b : bars - 1;
		v[2 * b + held_at(n, s->t[i] - 1)] += s->rate[i];
		cnt[b]++;
	}
	for (b = 0; b < bars; b++)
		if (cnt[b] > 1) {
			v[2 * b] /= cnt[b];
			v[2 * b + 1] /= cnt[b];
		}
	cs_focus_str(focus, sizeof(focus), &n->focus);
	snprintf(title, sizeof(title), "%s at %.300s, per second", metric, focus);
	fprintf(out, "<div class=\"shg-hist\" data-node=\"%u\" data-metric=\"", id);
	html_attr(out, metric);
	fprintf(out, "\" data-steps=\"%u\" data-mean=\"%.6g\">\n", s->n,
		mean_over(s, n, n->t_end ? n->t_end : e->now));
	html_bar_chart(out, &(struct html_bars){ title, "/s", v, NULL,
						 (const char *const[]){ "while it did not hold",
									"while it held" },
						 0, (double)run_ns / 1e6, bars, 2 });
	fputs("</div>\n", out);
	free(v);
	free(cnt);
}

void shg_histograms(FILE *out, const struct cs_engine *e, const struct shg_rec *r,
		    uint64_t run_ns, uint64_t period_ns)
{
	uint32_t i, k, charts = 0, want = 0;

	for (i = 0; i < e->nnodes; i++)
		want += cs_node_is_bottleneck(e, &e->nodes[i]);
	if (!want)
		return;
	fprintf(out, "<h3>Time histograms the search used</h3>\n<p class=\"note\">For each "
		     "bottleneck, the metrics of its test at its focus as the search measured them "
		     "(%.0f ms steps, averaged to at most %d bars; gaps: not measured then).</p>\n",
		(double)period_ns / 1e6, HIST_BARS);
	for (i = 0; i < e->nnodes && charts < HIST_CHARTS; i++) {
		const struct cs_node *n = &e->nodes[i];
		const struct hypothesis *h = &e->lib->hyps[n->hyp];

		if (!cs_node_is_bottleneck(e, n))
			continue;
		for (k = 0; k < h->nmetrics && k < CS_MAX_TERMS && charts < HIST_CHARTS; k++) {
			chart(out, e, r, n, i, k, run_ns);
			charts++;
		}
	}
}
