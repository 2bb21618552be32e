/* SPDX-License-Identifier: MIT */
/* The text report: what was run and what measuring it cost, the flat table, the call paths. */
#include <stdlib.h>
#include <string.h>

#include "model_io.h"
#include "report.h"
#include "term.h"
#include "util.h"

static const char *const end_names[] = { "exit", "signal", "exec", "detach" };

const char *fmt_time(char *buf, size_t cap, double ns)
{
	if (ns < 1e3)
		snprintf(buf, cap, "%.1f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, cap, "%.2f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, cap, "%.3f ms", ns / 1e6);
	else
		snprintf(buf, cap, "%.3f s", ns / 1e9);
	return buf;
}

static const struct model *sort_model;

static int by_key(const struct m_func *f, const struct m_func *g, enum report_sort s)
{
	double a = s == SORT_EXCL ? f->excl_c : s == SORT_INCL ? f->incl_c : (double)f->calls;
	double b = s == SORT_EXCL ? g->excl_c : s == SORT_INCL ? g->incl_c : (double)g->calls;

	if (a != b)
		return a < b ? 1 : -1;
	return strcmp(f->resource, g->resource);
}

static enum report_sort sort_key;

static int cmp_func(const void *x, const void *y)
{
	return by_key(&sort_model->funcs[*(const uint32_t *)x],
		      &sort_model->funcs[*(const uint32_t *)y], sort_key);
}

uint32_t *report_order(const struct model *m, enum report_sort sort)
{
	uint32_t *idx = xmalloc((m->nfuncs ? m->nfuncs : 1) * sizeof(*idx)), i;

	for (i = 0; i < m->nfuncs; i++)
		idx[i] = i;
	sort_model = m;
	sort_key = sort;
	qsort(idx, m->nfuncs, sizeof(*idx), cmp_func);
	return idx;
}

static void print_process(FILE *out, const struct m_process *p)
{
	const struct sprof_calib *c = &p->calib;
	char a[32], b[32], d[32], e[32];
	double removed = p->t_m - p->t_a;

	fprintf(out, "process %u  %s  (ended by %s", p->pid, p->cmdline,
		end_names[p->end_reason < 4 ? p->end_reason : 0]);
	if (p->end_reason == 1)
		fprintf(out, " %u", p->end_signal);
	fprintf(out, ")\n");
	if (!p->probes && !(c->o_full > 0)) { /* sampled only (sonde run --sample): no probes */
		fprintf(out, "  clock %s: read %.1f ns, period %.1f ns;  no probes;  T_m %s\n",
			c->clock_kind == SPROF_CLOCK_TSC ? "tsc" : "monotonic", c->clock_ns, c->dt_ns,
			fmt_time(a, sizeof(a), p->t_m));
		return;
	}
	fprintf(out, "  clock %s: read %.1f ns, period %.1f ns;  probes (in vitro%s): o_in %.1f±%.1f ns, "
		     "o_full %.1f±%.1f ns, unmeasured call %.1f±%.1f ns\n",
		c->clock_kind == SPROF_CLOCK_TSC ? "tsc" : "monotonic", c->clock_ns, c->dt_ns,
		p->run_flags & SPROF_RUN_DYNAMIC ? ", through the trampolines" : "",
		c->o_in, c->o_in_sd, c->o_full, c->o_full_sd, c->o_skip, c->o_skip_sd);
	fprintf(out, "  T_m %s   T_a %s ± %s   (%llu probe pairs, %llu unmeasured; removed %s = "
		     "%.1f %%)\n",
		fmt_time(a, sizeof(a), p->t_m), fmt_time(b, sizeof(b), p->t_a),
		fmt_time(e, sizeof(e), M_COMP_UNCERTAINTY * removed),
		(unsigned long long)p->probes, (unsigned long long)p->unmeasured,
		fmt_time(d, sizeof(d), removed), p->t_m > 0 ? 100.0 * removed / p->t_m : 0.0);
}

static void print_threads(FILE *out, const struct model *m)
{
	char a[32], b[32];
	uint32_t i;

	if (m->nthreads < 2)
		return;
	fprintf(out, "  threads:   pid  index      tid         T_m         T_a       probes\n");
	for (i = 0; i < m->nthreads; i++) {
		const struct m_thread *t = &m->threads[i];

		fprintf(out, "          %6u %6u %8u %11s %11s %12llu\n", t->pid, t->index, t->tid,
			fmt_time(a, sizeof(a), t->t_m), fmt_time(b, sizeof(b), t->t_a),
			(unsigned long long)t->probes);
	}
}

static void print_header(FILE *out, const struct model *m)
{
	uint32_t i;

	fprintf(out, "sonde report %s: %u process%s, %u thread%s\n", m->dir, m->nprocs,
		m->nprocs == 1 ? "" : "es", m->nthreads, m->nthreads == 1 ? "" : "s");
	for (i = 0; i < m->nprocs; i++)
		print_process(out, &m->procs[i]);
	print_threads(out, m);
}

static const char *flags_of(const struct m_func *f)
{
	if (f->flags & SPROF_FN_THROTTLED)
		return f->unreliable ? "~T" : "T";
	return f->unreliable ? "~" : "";
}

/* "name  (file:line)", elided in the middle to what is left of the terminal's width. */
static void print_name(FILE *out, const char *name, const char *file, int line, int used)
{
	char full[1024], buf[1024];
	int cols = term_columns(out);

	snprintf(full, sizeof(full), "%s  (%s:%d)", name, file, line);
	fprintf(out, "%s\n", cols ? term_elide(buf, sizeof(buf), full,
					       (size_t)(cols - used > 8 ? cols - used : 8)) : full);
}

/*
 * Below this many columns the flat table leaves out the measured (uncompensated) times and the
 * time per call: the compensated ones and the name matter most.
 */
#define WIDE_TABLE 110

static void print_flat_row(FILE *out, const struct m_func *f, double total, int cpu,
			   const struct term_style *ts, int narrow)
{
	char e[32], ec[32], in[32], ic[32], pc[32], ce[32], ci[32];
	int used = 0;

	if (cpu && !narrow) /* CPU time is shown as measured: its probes' cost is not calibrated apart */
		used += fprintf(out, "%11s %11s ", fmt_time(ce, sizeof(ce), f->cpu_excl),
				fmt_time(ci, sizeof(ci), f->cpu_incl));
	if (narrow)
		used += fprintf(out, "%6.1f%% %11s %11s %10llu ", 100.0 * f->excl_c / total,
				fmt_time(ec, sizeof(ec), f->excl_c),
				fmt_time(ic, sizeof(ic), f->incl_c), (unsigned long long)f->calls);
	else
		used += fprintf(out, "%6.1f%% %11s %11s %11s %11s %10llu %11s ",
				100.0 * f->excl_c / total, fmt_time(ec, sizeof(ec), f->excl_c),
				fmt_time(e, sizeof(e), f->excl), fmt_time(ic, sizeof(ic), f->incl_c),
				fmt_time(in, sizeof(in), f->incl), (unsigned long long)f->calls,
				fmt_time(pc, sizeof(pc), f->calls ? f->incl_c / (double)f->calls : 0));
	fprintf(out, "%s%-2s%s ", f->unreliable ? ts->red : "", flags_of(f),
		f->unreliable ? ts->off : "");
	print_name(out, f->name, f->file, f->line, used + 3);
}

static void print_flat_head(FILE *out, int cpu, int narrow)
{
	if (cpu && !narrow)
		fprintf(out, "%11s %11s ", "cpu excl", "cpu incl");
	if (narrow)
		fprintf(out, "%7s %11s %11s %10s %-2s %s\n", "excl%", "excl(c)", "incl(c)", "calls",
			"", "function  (file:line)");
	else
		fprintf(out, "%7s %11s %11s %11s %11s %10s %11s %-2s %s\n", "excl%", "excl(c)",
			"excl", "incl(c)", "incl", "calls", "call(c)", "", "function  (file:line)");
}

static void print_notes(FILE *out, const struct model *m)
{
	char t[32];
	uint32_t i;

	for (i = 0; i < m->nfuncs; i++) {
		const struct m_func *f = &m->funcs[i];

		if (f->flags & SPROF_FN_THROTTLED)
			fprintf(out, "  T %s: throttled at %s after %llu calls (later calls not "
				     "measured)\n",
				f->name, fmt_time(t, sizeof(t), (double)f->throttled_at),
				(unsigned long long)f->throttled_calls);
		if (f->flags & SPROF_FN_EXCLUDED)
			fprintf(out, "  excluded: %s\n", f->name);
	}
	fprintf(out, "  ~ not reliably measurable: time per call below the probe's cost or the clock "
		     "period, or mostly probe cost\n");
	fprintf(out, "  (c) values are uncertain by about %.0f %% of what was removed (in-situ vs "
		     "calibrated probe cost)\n", 100 * M_COMP_UNCERTAINTY);
}

static void print_flat(FILE *out, const struct model *m, const struct report_opts *o)
{
	const char *keys[] = { "exclusive time", "inclusive time", "calls" };
	uint32_t *idx = report_order(m, o->sort), i, shown = 0;
	double total = model_total_t_a(m);
	struct term_style ts = term_style(out);
	int cols = term_columns(out), narrow = cols && cols < WIDE_TABLE;

	fprintf(out, "\n%sFlat profile by %s; (c) = compensated, overhead removed%s%s\n", ts.bold,
		keys[o->sort], ts.off, narrow ? " (narrow terminal: measured times left out)" : "");
	print_flat_head(out, m->has_cpu, narrow);
	for (i = 0; i < m->nfuncs && (!o->limit || shown < (uint32_t)o->limit); i++) {
		const struct m_func *f = &m->funcs[idx[i]];

		if (!f->calls)
			continue;
		print_flat_row(out, f, total, m->has_cpu, &ts, narrow);
		shown++;
	}
	print_notes(out, m);
	free(idx);
}

#define MAX_INDENT 30

static int cmp_node_incl(const void *x, const void *y, void *arg)
{
	const struct model *m = arg;
	double a = m->nodes[*(const uint32_t *)x].incl_c, b = m->nodes[*(const uint32_t *)y].incl_c;

	return a < b ? 1 : a > b ? -1 : 0;
}

struct tree_view {
	const struct report_opts *o;
	double total;
	int cols, max_indent; /* terminal columns (0: not one), levels indented at most */
};

static void print_node(FILE *out, const struct model *m, uint32_t n, int level,
		       const struct tree_view *v)
{
	const struct m_node *x = &m->nodes[n];
	const struct report_opts *o = v->o;
	uint32_t *kids, nk = 0, c, i;
	char ic[32], ec[32], buf[1024];
	int used;

	if (x->func != M_NONE) { /* deep paths stop indenting and say their level */
		used = fprintf(out, "%6.1f%% %11s %11s %10llu  %*s", 100.0 * x->incl_c / v->total,
			       fmt_time(ic, sizeof(ic), x->incl_c), fmt_time(ec, sizeof(ec), x->excl_c),
			       (unsigned long long)x->calls,
			       2 * (level < v->max_indent ? level : v->max_indent), "");
		if (level >= v->max_indent)
			used += fprintf(out, "[%d] ", level);
		fprintf(out, "%s\n", v->cols ? term_elide(buf, sizeof(buf), m->funcs[x->func].name,
							  (size_t)(v->cols - used > 8 ? v->cols - used
										      : 8))
					      : m->funcs[x->func].name);
	}
	if (o->depth && level >= o->depth)
		return;
	for (c = x->first_child; c != M_NONE; c = m->nodes[c].next_sibling)
		nk++;
	kids = xmalloc((nk ? nk : 1) * sizeof(*kids));
	nk = 0;
	for (c = x->first_child; c != M_NONE; c = m->nodes[c].next_sibling)
		if (m->nodes[c].calls || m->nodes[c].first_child != M_NONE)
			kids[nk++] = c;
	qsort_r(kids, nk, sizeof(*kids), cmp_node_incl, (void *)(uintptr_t)m);
	for (i = 0; i < nk; i++)
		print_node(out, m, kids[i], x->func == M_NONE ? level : level + 1, v);
	free(kids);
}

static void print_tree(FILE *out, const struct model *m, const struct report_opts *o)
{
	struct tree_view v = { o, model_total_t_a(m), term_columns(out), MAX_INDENT };
	struct term_style ts = term_style(out);

	/* on a terminal, the indentation leaves 16 columns for the name at least */
	if (v.cols && (v.cols - 44 - 16) / 2 < v.max_indent)
		v.max_indent = (v.cols - 44 - 16) / 2 > 1 ? (v.cols - 44 - 16) / 2 : 1;
	fprintf(out, "\n%sCall paths (all threads merged)%s\n", ts.bold, ts.off);
	fprintf(out, "%7s %11s %11s %10s  %s\n", "incl%", "incl(c)", "excl(c)", "calls", "path");
	print_node(out, m, 0, 0, &v);
}

static void print_user_data(FILE *out, const struct model *m)
{
	char a[32], b[32];
	uint32_t i;

	if (m->ncounters)
		fprintf(out, "\nCounters %28s %14s %14s %14s\n", "count", "mean", "min", "max");
	for (i = 0; i < m->ncounters; i++) {
		const struct m_counter *c = &m->counters[i];

		fprintf(out, "  %-28s %10llu %14.6g %14.6g %14.6g\n", c->name,
			(unsigned long long)c->count, c->count ? c->sum / (double)c->count : 0,
			c->min, c->max);
	}
	if (m->nphases)
		fprintf(out, "\nPhases (pid thread: name from .. to)\n");
	for (i = 0; i < m->nphases; i++) {
		const struct m_phase *p = &m->phases[i];

		fprintf(out, "  %u %u: %-24s %12s .. %s\n", p->pid, p->thread, p->name,
			fmt_time(a, sizeof(a), (double)p->start), fmt_time(b, sizeof(b), (double)p->end));
	}
}

/* Whether any function was measured by probes (a sampled-only run has none). */
static int has_measured(const struct model *m)
{
	uint32_t i;

	for (i = 0; i < m->nfuncs; i++)
		if (m->funcs[i].calls)
			return 1;
	return 0;
}

void report_text(FILE *out, const struct model *m, const struct report_opts *o)
{
	int show = has_measured(m) || !m->samples;

	print_header(out, m);
	if (o->sync_only) {
		report_sync_text(out, m, o->limit);
		return;
	}
	if (o->mpi_only) {
		report_mpi_text(out, m, o->limit);
		return;
	}
	if (o->flat && show)
		print_flat(out, m, o);
	if (o->tree && show)
		print_tree(out, m, o);
	print_user_data(out, m);
	report_sync_text(out, m, o->limit);
	report_mpi_text(out, m, o->limit);
	report_io_text(out, m);
	report_sample_text(out, m, o);
}
