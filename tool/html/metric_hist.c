/* SPDX-License-Identifier: MIT */
/*
 * Time histograms of chosen metrics (Paradyn's: a metric at a focus over time), from a trace:
 * the post-mortem source of the Performance Consultant (tool/consult/trace_source.c) measures
 * each chosen (metric, focus) pair, step by step of 50 ms, over the whole run; each bar is the
 * metric's increase per second of its step. `--hist METRIC[@FOCUS]` chooses (FOCUS as in
 * sonde consult: "/Code/app.c/solve", "/Threads/1", parts joined by ','); without it, the whole
 * program's cpu_time and active_threads, and sync_wait_time when the trace has --sync.
 */
#include <stdlib.h>
#include <string.h>

#include "consult/trace_source.h"
#include "html.h"
#include "trace_read.h"
#include "util.h"

#define MH_PERIOD_NS 50000000ull
#define MH_MAX_BARS 400

static const char *const defaults[] = { "cpu_time", "active_threads", "sync_wait_time" };

struct series {
	const char *spec; /* as chosen: "cpu_time@/Code/app.c/solve" */
	char *metric;
	struct cs_focus focus;
	int req;          /* the source's request, -1: not measurable here */
	double *rate, total;
};

int html_hist_parse(const char *spec, char **metric, struct cs_focus *f)
{
	const char *at = strchr(spec, '@');
	size_t n = at ? (size_t)(at - spec) : strlen(spec);

	*metric = NULL;
	if (!n)
		return -1;
	*metric = xmalloc(n + 1);
	memcpy(*metric, spec, n);
	(*metric)[n] = 0;
	memset(f, 0, sizeof(*f));
	if (cs_focus_parse(f, at ? at + 1 : "/") != 0) {
		free(*metric);
		*metric = NULL;
		return -1;
	}
	return 0;
}

/* One chart: the steps averaged into at most MH_MAX_BARS bars. */
static void chart(FILE *out, const struct series *s, uint32_t steps, uint64_t run_ns,
		  const char *trace)
{
	uint32_t per = (steps + MH_MAX_BARS - 1) / MH_MAX_BARS, bars, i;
	char focus[4096], title[600];
	double *v;

	per = per ? per : 1;
	bars = (steps + per - 1) / per;
	v = xcalloc(bars ? bars : 1, sizeof(*v));
	for (i = 0; i < steps; i++)
		v[i / per] += s->rate[i] / per;
	cs_focus_str(focus, sizeof(focus), &s->focus);
	snprintf(title, sizeof(title), "%s at %.300s, per second (%.200s)", s->metric, focus, trace);
	fputs("<div class=\"metric-hist\" data-metric=\"", out);
	html_attr(out, s->metric);
	fputs("\" data-focus=\"", out);
	html_attr(out, focus);
	fprintf(out, "\" data-steps=\"%u\" data-total=\"%.9g\">\n", steps, s->total);
	html_bar_chart(out, &(struct html_bars){ title, "/s", v, NULL, NULL, 0,
						 (double)run_ns / 1e6, bars, 1 });
	fputs("</div>\n", out);
	free(v);
}

/* Every chosen pair measured over the run; steps counted in *steps. */
static void measure(struct cs_source *src, struct series *s, uint32_t ns, uint32_t *steps)
{
	struct cs_step st;
	uint32_t cap = 0, i;

	*steps = 0;
	while (src->ops->step(src, &st) == 0) {
		double dt = (double)(st.t1 - st.t0) / 1e9;

		if (*steps == cap) {
			cap = cap ? 2 * cap : 256;
			for (i = 0; i < ns; i++)
				s[i].rate = xrealloc(s[i].rate, cap * sizeof(double));
		}
		for (i = 0; i < ns; i++) {
			double x = s[i].req >= 0 ? src->ops->read(src, s[i].req) : 0;

			s[i].total += x;
			s[i].rate[*steps] = dt > 0 ? x / dt : 0;
		}
		(*steps)++;
		html_progress("chosen metrics over time");
		if (st.last)
			break;
	}
}

/* The chosen pairs (or the defaults) of one trace. */
static void one_trace(FILE *out, const char *path, const struct html_opts *o)
{
	uint32_t n = o->nhist ? o->nhist : sizeof(defaults) / sizeof(defaults[0]), ns = 0, i, steps;
	struct series *s = xcalloc(n, sizeof(*s));
	struct trace_source_info ti;
	struct strc_file *f;
	struct cs_source *src;
	char err[256];

	if (strc_read_file(path, &f, err, sizeof(err)) != 0)
		goto out_free;
	src = trace_source_new(f, MH_PERIOD_NS, err, sizeof(err));
	if (!src) {
		strc_free(f);
		goto out_free;
	}
	trace_source_info(src, &ti);
	for (i = 0; i < n; i++) {
		struct series *x = &s[ns];

		x->spec = o->nhist ? o->hist[i] : defaults[i];
		if (html_hist_parse(x->spec, &x->metric, &x->focus) != 0)
			continue;
		x->req = src->ops->supports(src, x->metric, &x->focus)
				 ? src->ops->request(src, x->metric, &x->focus) : -1;
		if (x->req < 0 && !o->nhist) { /* a default this trace cannot give: left out */
			free(x->metric);
			cs_focus_free(&x->focus);
			continue;
		}
		ns++;
	}
	measure(src, s, ns, &steps);
	fprintf(out, "<h3>Chosen metrics over time: <code>");
	html_text(out, path);
	fprintf(out, "</code></h3>\n<p class=\"note\">Measured from the trace as the search measures "
		     "them (%.0f ms steps%s). Choose others with <code>--hist METRIC[@FOCUS]</code>."
		     "</p>\n", MH_PERIOD_NS / 1e6, steps > MH_MAX_BARS ? ", neighbours averaged" : "");
	for (i = 0; i < ns; i++) {
		if (s[i].req < 0) {
			fputs("<p class=\"note\">Not measurable from this trace: <code>", out);
			html_text(out, s[i].spec);
			fputs("</code>.</p>\n", out);
		} else {
			chart(out, &s[i], steps, ti.run_ns, path);
		}
	}
	trace_source_free(src);
	strc_free(f);
out_free:
	for (i = 0; i < ns; i++) {
		free(s[i].metric);
		free(s[i].rate);
		cs_focus_free(&s[i].focus);
	}
	free(s);
}

int html_hist_check(const struct model *m, const struct html_opts *o)
{
	size_t n = 0, i;
	char **paths = trace_files(m->dir, o->flt.pid, &n), err[256], *metric;
	struct strc_file *f = NULL;
	struct cs_source *src = NULL;
	struct cs_focus focus;
	int rc = 0;
	uint32_t k;

	if (!o->nhist)
		goto out;
	if (!n) {
		rc = error("report: --hist: %s has no trace (record one with sonde run --trace)",
			   m->dir);
		goto out;
	}
	if (strc_read_file(paths[0], &f, err, sizeof(err)) != 0 ||
	    !(src = trace_source_new(f, MH_PERIOD_NS, err, sizeof(err)))) {
		rc = error("report: %s: %s", paths[0], err);
		goto out;
	}
	for (k = 0; k < o->nhist && !rc; k++) {
		metric = NULL;
		if (html_hist_parse(o->hist[k], &metric, &focus) != 0)
			rc = error("report: --hist %s: not METRIC[@FOCUS] (a focus like "
				   "/Code/app.c/solve or /Threads/1)", o->hist[k]);
		else if (!src->ops->supports(src, metric, &focus))
			rc = error("report: --hist %s: not a metric the trace gives at that focus "
				   "(cpu_time, calls, active_threads, ...: docs/report-html.md)",
				   o->hist[k]);
		if (metric) {
			free(metric);
			cs_focus_free(&focus);
		}
	}
out:
	if (src)
		trace_source_free(src);
	if (f)
		strc_free(f);
	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return rc;
}

void html_metric_hists(FILE *out, const struct model *m, const struct html_opts *o)
{
	size_t n = 0, i;
	char **paths = trace_files(m->dir, o->flt.pid, &n);

	for (i = 0; i < n && i < HTML_MAX_TRACES; i++)
		one_trace(out, paths[i], o);
	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}
