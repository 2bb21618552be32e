/* SPDX-License-Identifier: MIT */
/*
 * Time histograms as inline SVG bar charts: CPU time, page faults and context switches per
 * interval of `sonde run --os` (Paradyn's time histograms), the time in each phase, the I/O and
 * the CPU of each phase; from traces, chosen metrics (metric_hist.c). At most HIST_MAX_BARS bars:
 * more intervals are summed in pairs, fours...
 */
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "model_io.h"
#include "report.h"
#include "util.h"

#define HIST_MAX_BARS 400
#define HIST_MAX_PROCS 4
#define CH_W 1000.0
#define CH_H 160.0
#define CH_LEFT 70.0
#define CH_TOP 24.0

static const char *const stack_colour[] = { "#4e79a7", "#f28e2b", "#59a14f", "#e15759" };

static void value_str(char *buf, size_t cap, double v, const char *unit)
{
	if (!strcmp(unit, "ns"))
		fmt_time(buf, cap, v);
	else if (unit[0] == '/') /* a rate: its metric per second */
		snprintf(buf, cap, "%.3g %s", v, unit);
	else
		snprintf(buf, cap, "%.0f %s", v, unit);
}

static double bar_total(const struct html_bars *b, uint32_t i)
{
	double s = 0;
	uint32_t k;

	for (k = 0; k < b->nstack; k++)
		s += b->v[i * b->nstack + k];
	return s;
}

static void legend(FILE *out, const struct html_bars *b)
{
	uint32_t k;

	if (b->nstack < 2 || !b->stack_names)
		return;
	fputs("<p class=\"legend note\">", out);
	for (k = 0; k < b->nstack && k < 4; k++)
		fprintf(out, "<span style=\"background:%s\"></span>%s", stack_colour[k],
			b->stack_names[k]);
	fputs("</p>\n", out);
}

static void one_bar(FILE *out, const struct html_bars *b, uint32_t i, double x, double w,
		    double max)
{
	double y = CH_TOP + CH_H;
	char v[32];
	uint32_t k;

	fputs("<g><title>", out);
	if (b->labels)
		html_text(out, b->labels[i]);
	else
		fprintf(out, "%.1f ms to %.1f ms", b->x0_ms + (b->x1_ms - b->x0_ms) * i / b->n,
			b->x0_ms + (b->x1_ms - b->x0_ms) * (i + 1) / b->n);
	for (k = 0; k < b->nstack; k++) {
		value_str(v, sizeof(v), b->v[i * b->nstack + k], b->unit);
		fprintf(out, "\n%s%s%s", b->stack_names ? b->stack_names[k] : "",
			b->stack_names ? ": " : "", v);
	}
	fputs("</title>", out);
	for (k = 0; k < b->nstack && k < 4; k++) {
		double h = b->v[i * b->nstack + k] / max * CH_H;

		if (h <= 0)
			continue;
		y -= h;
		fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
			     "fill=\"%s\"/>", x, y, w > 1.5 ? w - 0.5 : w, h, stack_colour[k]);
	}
	fputs("</g>\n", out);
}

void html_bar_chart(FILE *out, const struct html_bars *b)
{
	double max = 0, w, height = CH_TOP + CH_H + (b->labels ? 90 : 24);
	char top[32];
	uint32_t i;

	for (i = 0; i < b->n; i++)
		if (bar_total(b, i) > max)
			max = bar_total(b, i);
	if (max <= 0)
		max = 1;
	w = (CH_W - CH_LEFT - 10) / (b->n ? b->n : 1);
	fprintf(out, "<svg class=\"chart\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		     "font-size=\"11\" font-family=\"sans-serif\" data-bars=\"%u\">\n"
		     "<text x=\"%.0f\" y=\"14\" font-size=\"13\">", CH_W, height, CH_W, height, b->n,
		CH_LEFT);
	html_text(out, b->title);
	value_str(top, sizeof(top), max, b->unit);
	fprintf(out, "</text>\n<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>"
		     "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">0</text>\n"
		     "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#888\"/>\n",
		CH_LEFT - 4, CH_TOP + 10, top, CH_LEFT - 4, CH_TOP + CH_H, CH_LEFT, CH_TOP + CH_H,
		CH_W - 10, CH_TOP + CH_H);
	for (i = 0; i < b->n; i++)
		one_bar(out, b, i, CH_LEFT + i * w, w, max);
	if (!b->labels)
		fprintf(out, "<text x=\"%.0f\" y=\"%.0f\">%.1f ms</text><text x=\"%.0f\" y=\"%.0f\" "
			     "text-anchor=\"end\">%.1f ms</text>\n", CH_LEFT, CH_TOP + CH_H + 16,
			b->x0_ms, CH_W - 10, CH_TOP + CH_H + 16, b->x1_ms);
	for (i = 0; b->labels && i < b->n; i++) {
		fprintf(out, "<text transform=\"translate(%.1f,%.0f) rotate(40)\">",
			CH_LEFT + (i + 0.5) * w, CH_TOP + CH_H + 12);
		html_text(out, b->labels[i]);
		fputs("</text>\n", out);
	}
	fputs("</svg>\n", out);
	legend(out, b);
}

/* The intervals of one process, in at most HIST_MAX_BARS bars (neighbours summed). */
static void intervals(FILE *out, const struct m_ext *x, uint32_t pid)
{
	static const char *const cpu_names[] = { "user", "system" };
	static const char *const cs_names[] = { "voluntary", "involuntary" };
	static const char *const pf_names[] = { "minor", "major" };
	uint32_t i, n = 0, per, bars;
	uint64_t t0 = UINT64_MAX, t1 = 0;
	double *cpu, *pf, *cs;
	char title[96];

	for (i = 0; i < x->nintervals; i++)
		if (x->intervals[i].pid == pid) {
			n++;
			t0 = x->intervals[i].start < t0 ? x->intervals[i].start : t0;
			t1 = x->intervals[i].end > t1 ? x->intervals[i].end : t1;
		}
	if (!n)
		return;
	per = (n + HIST_MAX_BARS - 1) / HIST_MAX_BARS;
	bars = (n + per - 1) / per;
	cpu = xcalloc(2 * bars, sizeof(double));
	pf = xcalloc(2 * bars, sizeof(double));
	cs = xcalloc(2 * bars, sizeof(double));
	for (i = 0, n = 0; i < x->nintervals; i++) {
		const struct m_interval *v = &x->intervals[i];
		uint32_t k;

		if (v->pid != pid)
			continue;
		k = n++ / per;
		cpu[2 * k] += (double)v->v.user_ns;
		cpu[2 * k + 1] += (double)v->v.sys_ns;
		pf[2 * k] += (double)v->v.minflt;
		pf[2 * k + 1] += (double)v->v.majflt;
		cs[2 * k] += (double)v->v.nvcsw;
		cs[2 * k + 1] += (double)v->v.nivcsw;
	}
	fprintf(out, "<h3>Process %u: %u intervals of sonde run --os%s</h3>\n", pid, n,
		per > 1 ? " (neighbours summed to keep the page small)" : "");
	snprintf(title, sizeof(title), "CPU time per interval (pid %u)", pid);
	html_bar_chart(out, &(struct html_bars){ title, "ns", cpu, NULL, cpu_names,
						 (double)t0 / 1e6, (double)t1 / 1e6, bars, 2 });
	snprintf(title, sizeof(title), "Page faults per interval (pid %u)", pid);
	html_bar_chart(out, &(struct html_bars){ title, "faults", pf, NULL, pf_names,
						 (double)t0 / 1e6, (double)t1 / 1e6, bars, 2 });
	snprintf(title, sizeof(title), "Context switches per interval (pid %u)", pid);
	html_bar_chart(out, &(struct html_bars){ title, "switches", cs, NULL, cs_names,
						 (double)t0 / 1e6, (double)t1 / 1e6, bars, 2 });
	free(cpu);
	free(pf);
	free(cs);
}

static void os_intervals(FILE *out, const struct m_ext *x)
{
	uint32_t pids[HIST_MAX_PROCS], np = 0, i, k;

	for (i = 0; i < x->nintervals; i++) {
		for (k = 0; k < np && pids[k] != x->intervals[i].pid; k++)
			;
		if (k == np && np < HIST_MAX_PROCS)
			pids[np++] = x->intervals[i].pid;
	}
	for (k = 0; k < np; k++)
		intervals(out, x, pids[k]);
}

/* The time spent in each phase name, summed over threads and processes. */
static void phases(FILE *out, const struct model *m)
{
	const char **names = xcalloc(m->nphases, sizeof(char *));
	double *v = xcalloc(m->nphases, sizeof(double));
	uint32_t i, k, n = 0;

	for (i = 0; i < m->nphases; i++) {
		const struct m_phase *p = &m->phases[i];

		for (k = 0; k < n && strcmp(names[k], p->name); k++)
			;
		if (k == n) {
			if (n >= HIST_MAX_BARS)
				continue;
			names[n++] = p->name;
		}
		v[k] += p->end > p->start ? (double)(p->end - p->start) : 0;
	}
	html_bar_chart(out, &(struct html_bars){ "Time in each phase (threads summed)", "ns", v,
						 names, NULL, 0, 0, n, 1 });
	free(names);
	free(v);
}

static void io_phases(FILE *out, const struct m_ext *x)
{
	static const char *const names2[] = { "I/O time", "rest of the phase" };
	const char **names = xcalloc(x->niophases, sizeof(char *));
	double *v = xcalloc(2 * (size_t)x->niophases, sizeof(double));
	uint32_t i, n = x->niophases < HIST_MAX_BARS ? x->niophases : HIST_MAX_BARS;

	for (i = 0; i < n; i++) {
		const struct m_iophase *p = &x->iophases[i];

		names[i] = p->name;
		v[2 * i] = (double)p->ns;
		v[2 * i + 1] = p->span_ns > (double)p->ns ? p->span_ns - (double)p->ns : 0;
	}
	html_bar_chart(out, &(struct html_bars){ "I/O per phase (sonde run --io)", "ns", v, names,
						 names2, 0, 0, n, 2 });
	free(names);
	free(v);
}

static void os_phases(FILE *out, const struct m_ext *x)
{
	static const char *const names2[] = { "user", "system" };
	const char **names = xcalloc(x->nosphases, sizeof(char *));
	double *v = xcalloc(2 * (size_t)x->nosphases, sizeof(double));
	uint32_t i, n = x->nosphases < HIST_MAX_BARS ? x->nosphases : HIST_MAX_BARS;

	for (i = 0; i < n; i++) {
		names[i] = x->osphases[i].name;
		v[2 * i] = x->osphases[i].user_ns;
		v[2 * i + 1] = x->osphases[i].sys_ns;
	}
	html_bar_chart(out, &(struct html_bars){ "CPU time per phase (sonde run --os)", "ns", v,
						 names, names2, 0, 0, n, 2 });
	free(names);
	free(v);
}

void html_histograms(FILE *out, const struct model *m, const struct html_opts *o)
{
	const struct m_ext *x = m->ext;
	size_t ntraces = 0, i;
	char **traces = trace_files(m->dir, o->flt.pid, &ntraces);
	int any = ntraces > 0;

	for (i = 0; i < ntraces; i++)
		free(traces[i]);
	free(traces);
	html_section(out, "histograms", "Time histograms");
	if (any)
		html_metric_hists(out, m, o);
	if (x && x->nintervals) {
		os_intervals(out, x);
		any = 1;
	}
	if (m->nphases) {
		phases(out, m);
		any = 1;
	}
	if (x && x->niophases) {
		io_phases(out, x);
		any = 1;
	}
	if (x && x->nosphases) {
		os_phases(out, x);
		any = 1;
	}
	if (!any)
		fputs("<p class=\"note\">Nothing over time in this run: <code>sonde run --os</code> "
		      "records intervals, <code>SONDE_PHASE</code> phases, <code>--io</code> I/O per "
		      "phase, <code>--trace</code> chosen metrics (<code>--hist</code>); the Search "
		      "History Graph below has the search's own.</p>\n", out);
	html_section_end(out);
}
