/* SPDX-License-Identifier: MIT */
/* The profile tables: functions measured (measured and compensated side by side) and sampled. */
#include <stdlib.h>

#include "html.h"
#include "report.h"
#include "sample_model.h"
#include "util.h"

static uint32_t measured_funcs(const struct model *m)
{
	uint32_t i, n = 0;

	for (i = 0; i < m->nfuncs; i++)
		n += m->funcs[i].calls > 0;
	return n;
}

static void flags(FILE *out, const struct m_func *f)
{
	fputs("<td>", out);
	if (f->unreliable)
		fputs("<span class=\"unrel\" title=\"below the probe's cost or the clock's period, "
		      "or mostly probe cost: not reliable\">~</span> ", out);
	if (f->flags & SPROF_FN_THROTTLED)
		fputs("<span title=\"throttled: later calls not measured\">T</span> ", out);
	if (f->flags & SPROF_FN_EXCLUDED)
		fputs("excluded", out);
	fputs("</td>", out);
}

static void func_row(FILE *out, const struct m_func *f, double total, int cpu)
{
	fputs("<tr><td class=\"name\" title=\"", out);
	html_attr(out, f->resource);
	fputs("\">", out);
	html_text(out, f->name);
	fputs("</td><td class=\"name\">", out);
	html_text(out, f->file);
	fprintf(out, ":%d</td>", f->line);
	html_td_u(out, f->calls);
	html_td_ns(out, f->excl);
	html_td_ns(out, f->excl_c);
	html_td_f(out, 100.0 * f->excl_c / total, 2);
	html_td_ns(out, f->incl);
	html_td_ns(out, f->incl_c);
	html_td_ns(out, f->calls ? f->incl_c / (double)f->calls : 0);
	if (cpu) {
		html_td_ns(out, f->cpu_excl);
		html_td_ns(out, f->cpu_incl);
	}
	flags(out, f);
	fputs("</tr>\n", out);
}

void html_func_table(FILE *out, const struct model *m, const char *id, int limit)
{
	static const char *const cols[] = { "function", "file:line", "#calls", "#excl",
					    "#excl (c)", "#excl (c) %", "#incl", "#incl (c)",
					    "#incl (c) per call", "#cpu excl", "#cpu incl" };
	static const char *const flag_col[] = { "flags" };
	uint32_t *idx = report_order(m, SORT_EXCL), i, shown = 0, n = measured_funcs(m);
	double total = model_total_t_a(m);

	fprintf(out, "<table class=\"sortable\" id=\"%s\">\n<thead><tr>", id);
	for (i = 0; i < (m->has_cpu ? 11u : 9u); i++) {
		int num = cols[i][0] == '#';

		fprintf(out, "<th%s title=\"click to sort\">%s</th>",
			num ? " data-t=\"n\" class=\"n\"" : "", cols[i] + num);
	}
	fprintf(out, "<th>%s</th></tr></thead>\n<tbody>\n", flag_col[0]);
	for (i = 0; i < m->nfuncs && shown < (uint32_t)limit; i++) {
		const struct m_func *f = &m->funcs[idx[i]];

		if (!f->calls)
			continue;
		func_row(out, f, total, m->has_cpu);
		shown++;
	}
	html_table_end(out);
	html_cut_note(out, shown, n, "functions (by compensated exclusive time)");
	free(idx);
}

static int by_self(const void *x, const void *y, void *arg)
{
	const struct m_samples *s = arg;
	uint64_t a = s->funcs[*(const uint32_t *)x].self, b = s->funcs[*(const uint32_t *)y].self;
	uint64_t ta = s->funcs[*(const uint32_t *)x].total, tb = s->funcs[*(const uint32_t *)y].total;

	if (a != b)
		return a < b ? 1 : -1;
	return ta < tb ? 1 : ta > tb ? -1 : 0;
}

static void sampled(FILE *out, const struct model *m, int limit)
{
	static const char *const cols[] = { "function", "file:line", "#samples (self)", "#self %",
					    "#± err %", "#total", "#total %", "#measured incl %" };
	const struct m_samples *s = m->samples;
	double stored = (double)(s->stored_periods ? s->stored_periods : 1);
	double mt = sample_measured_total(m);
	uint32_t i, k, rows = 0, n = 0, *idx;

	fprintf(out, "<h3>Sampled profile</h3>\n<p class=\"note\">%llu samples of %.3f ms of a "
		     "thread's CPU time (%u Hz; %llu signals, %llu dropped). &plusmn; err: the "
		     "binomial standard error of self %%. Measured incl: the inclusive share of %s."
		     "</p>\n",
		(unsigned long long)s->periods, (double)s->period_ns / 1e6, s->hz,
		(unsigned long long)s->signals, (unsigned long long)s->dropped,
		m->has_cpu ? "CPU time (--cpu)" : "compensated wall time");
	html_table(out, "sampled", cols, 8);
	idx = xmalloc((s->nfuncs ? s->nfuncs : 1) * sizeof(*idx));
	for (i = 0; i < s->nfuncs && i < m->nfuncs; i++)
		if (s->funcs[i].total)
			idx[n++] = i;
	qsort_r(idx, n, sizeof(*idx), by_self, (void *)(uintptr_t)s);
	for (k = 0; k < n; k++) {
		const struct ms_func *sf = &s->funcs[idx[k]];
		const struct m_func *f = &m->funcs[idx[k]];
		double p = (double)sf->self / stored;

		if (rows >= (uint32_t)limit)
			break;
		rows++;
		fputs("<tr><td class=\"name\">", out);
		html_text(out, f->name);
		fputs("</td><td class=\"name\">", out);
		html_text(out, f->file);
		fprintf(out, ":%d</td>", f->line);
		html_td_u(out, sf->self);
		html_td_f(out, 100 * p, 2);
		html_td_f(out, 100 * sample_stderr(p, s->signals), 2);
		html_td_u(out, sf->total);
		html_td_f(out, 100.0 * (double)sf->total / stored, 2);
		if (f->calls)
			html_td_f(out, 100.0 * sample_measured_incl(m, f) / mt, 2);
		else
			fputs("<td class=\"n\" data-v=\"-1\">-</td>", out);
		fputs("</tr>\n", out);
	}
	html_table_end(out);
	html_cut_note(out, rows, n, "sampled functions");
	free(idx);
}

void html_profile(FILE *out, const struct model *m, const struct html_opts *o)
{
	html_section(out, "profile", "Profile: functions, all threads merged");
	if (measured_funcs(m)) {
		fprintf(out, "<p class=\"note\">Sorted by compensated exclusive time; click a header "
			     "to sort by it. <b>(c)</b>: compensated, uncertain by about %.0f %% of "
			     "what was removed. <span class=\"unrel\">~</span>: not reliably "
			     "measurable.</p>\n", 100 * m->err_ratio);
		html_func_table(out, m, "functions", o->limit);
	} else {
		fputs("<p class=\"note\">No function was measured by probes in this run.</p>\n",
		      out);
	}
	if (m->samples)
		sampled(out, m, o->limit);
	html_section_end(out);
}
