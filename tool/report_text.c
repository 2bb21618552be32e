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

/* "± e" when the truth may lie as far on either side of a value, else "+high −low". */
static const char *fmt_err(char *buf, size_t n, double high, double low)
{
	char h[32], l[32];

	if (high - low < 0.5 && low - high < 0.5)
		snprintf(buf, n, "± %s", fmt_time(h, sizeof(h), high));
	else
		snprintf(buf, n, "+%s −%s", fmt_time(h, sizeof(h), high),
			 fmt_time(l, sizeof(l), low));
	return buf;
}

static void print_process(FILE *out, const struct m_process *p)
{
	const struct sprof_calib *c = &p->calib;
	char a[32], b[32], d[32], e[64], sig[16] = "";
	double removed = p->t_m - p->t_a;

	if (p->end_reason == 1)
		snprintf(sig, sizeof(sig), " %u", p->end_signal);
	term_text(out, "process %u  %s  (ended by %s%s)", p->pid, p->cmdline,
		  end_names[p->end_reason < 4 ? p->end_reason : 0], sig);
	if (!p->probes && !(c->o_full > 0)) { /* sampled only (sonde run --sample): no probes */
		term_text(out, "  clock %s: read %.1f ns, period %.1f ns;  no probes;  T_m %s",
			  c->clock_kind == SPROF_CLOCK_TSC ? "tsc" : "monotonic", c->clock_ns,
			  c->dt_ns, fmt_time(a, sizeof(a), p->t_m));
		return;
	}
	term_text(out, "  clock %s: read %.1f ns, period %.1f ns;  probes (in vitro%s): o_in "
		       "%.1f±%.1f ns, o_full %.1f±%.1f ns, unmeasured call %.1f±%.1f ns",
		  c->clock_kind == SPROF_CLOCK_TSC ? "tsc" : "monotonic", c->clock_ns, c->dt_ns,
		  p->run_flags & SPROF_RUN_DYNAMIC ? ", through the trampolines" : "", c->o_in,
		  c->o_in_sd, c->o_full, c->o_full_sd, c->o_skip, c->o_skip_sd);
	if (p->overlap.batches)
		term_text(out, "  next to %.1f ns of dependent work (%u multiply-adds) a pair costs "
			       "%.1f±%.1f ns: up to %.1f ns of a pair can hide in a program's own work",
			  p->overlap.work_ns, p->overlap.steps, p->overlap.o_pair,
			  p->overlap.o_pair_sd,
			  c->o_full > p->overlap.o_pair ? c->o_full - p->overlap.o_pair : 0.0);
	term_text(out, "  T_m %s   T_a %s %s   (%llu probe pairs, %llu unmeasured; removed %s = "
		       "%.1f %%)",
		  fmt_time(a, sizeof(a), p->t_m), fmt_time(b, sizeof(b), p->t_a),
		  fmt_err(e, sizeof(e), p->t_a_err, p->t_a_err_low),
		  (unsigned long long)p->probes, (unsigned long long)p->unmeasured,
		  fmt_time(d, sizeof(d), removed), p->t_m > 0 ? 100.0 * removed / p->t_m : 0.0);
}

static const struct term_col thread_cols[] = {
	{ "threads:", 8, 0, TC_LEFT, 0 },  { "pid", 6, 0, 0, 0 },  { "index", 6, 1, 0, 0 },
	{ "tid", 8, 1, 0, 3 },		   { "T_m", 11, 1, 0, 0 }, { "T_a", 11, 1, 0, 0 },
	{ "probes", 12, 1, 0, 2 },
};

static void print_threads(FILE *out, const struct model *m)
{
	struct term_table t;
	char a[32], b[32];
	uint32_t i;

	if (m->nthreads < 2)
		return;
	term_table_init(&t, out, "  ", thread_cols, 7);
	term_table_head(&t);
	for (i = 0; i < m->nthreads; i++) {
		const struct m_thread *th = &m->threads[i];

		term_cell(&t, "%s", "");
		term_cell(&t, "%u", th->pid);
		term_cell(&t, "%u", th->index);
		term_cell(&t, "%u", th->tid);
		term_cell(&t, "%s", fmt_time(a, sizeof(a), th->t_m));
		term_cell(&t, "%s", fmt_time(b, sizeof(b), th->t_a));
		term_cell(&t, "%llu", (unsigned long long)th->probes);
		term_row(&t);
	}
}

static const char *const insitu_status[] = { "no hot leaf function", "used",
					       "unstable: calibrated price used",
					       "implausible: calibrated price used" };

/* `sonde run --insitu`: per thread, the probe pair's price measured in its own code. */
static void print_insitu(FILE *out, const struct model *m)
{
	uint32_t i;

	for (i = 0; i < m->nthreads; i++) {
		const struct m_thread *th = &m->threads[i];
		const struct m_insitu *s = &th->insitu;

		if (!s->has)
			continue;
		if (s->func == UINT32_MAX) {
			term_text(out, "  probes in situ, pid %u thread %u: %s; %.1f ns a pair",
				  th->pid, th->index, insitu_status[0], s->price);
			continue;
		}
		term_text(out, "  probes in situ, pid %u thread %u, in %s: %.1f ± %.1f ns a pair, "
			       "interquartile mean of %u pairs of %u-call windows (%u preempted, %u "
			       "rejected); calibrated %.1f at start-up, %.1f in CALIB; %s (%.1f ns "
			       "charged, %.2f an unmeasured call); %llu of its %llu calls left "
			       "unmeasured (1 window in %u)",
			  th->pid, th->index, m->funcs[s->func].name, s->rec.price_ns,
			  s->rec.spread_ns, s->rec.pairs, s->rec.window, s->rec.preempted,
			  s->rec.rejected, s->rec.o_full_ns, s->calib_o_full,
			  insitu_status[s->rec.status < SPROF_INSITU_STATUSES ? s->rec.status : 2],
			  s->price, s->skip_price, (unsigned long long)s->rec.b_calls,
			  (unsigned long long)(s->rec.b_calls + s->rec.calls), s->rec.period);
		if (s->rec.bare_pairs)
			term_text(out, "    %u of the pairs' unmeasured windows bare: the function "
				       "ran without its probes (%u exit site%s rewritten; their "
				       "counting stub %.2f ns a call in a loop)",
				  s->rec.bare_pairs, s->rec.bare_exits,
				  s->rec.bare_exits == 1 ? "" : "s", s->rec.stub_ns);
	}
}

static void print_header(FILE *out, const struct model *m)
{
	uint32_t i;

	term_text(out, "sonde report %s: %u process%s, %u thread%s", m->dir, m->nprocs,
		  m->nprocs == 1 ? "" : "es", m->nthreads, m->nthreads == 1 ? "" : "s");
	for (i = 0; i < m->nprocs; i++)
		print_process(out, &m->procs[i]);
	print_threads(out, m);
	print_insitu(out, m);
}

static const char *flags_of(const struct m_func *f)
{
	if (f->flags & SPROF_FN_THROTTLED)
		return f->unreliable ? "~T" : "T";
	return f->unreliable ? "~" : "";
}

/*
 * The flat table's columns. On a narrow terminal the CPU times go first, then the time per
 * call and the measured (uncompensated) times: the compensated ones and the name matter most.
 */
enum { F_CPU_E, F_CPU_I, F_PCT, F_EXCL_C, F_EXCL, F_INCL_C, F_INCL, F_CALLS, F_PER_CALL, F_FLAGS,
       F_NAME, F_NCOLS };
static const struct term_col flat_cols[F_NCOLS] = {
	[F_CPU_E] = { "cpu excl", 11, 0, 0, 6 },   [F_CPU_I] = { "cpu incl", 11, 1, 0, 5 },
	[F_PCT] = { "excl%", 7, 1, 0, 0 },	   [F_EXCL_C] = { "excl(c)", 11, 1, 0, 0 },
	[F_EXCL] = { "excl", 11, 1, 0, 3 },	   [F_INCL_C] = { "incl(c)", 11, 1, 0, 0 },
	[F_INCL] = { "incl", 11, 1, 0, 2 },	   [F_CALLS] = { "calls", 10, 1, 0, 1 },
	[F_PER_CALL] = { "call(c)", 11, 1, 0, 4 }, [F_FLAGS] = { "", 2, 1, TC_LEFT, 0 },
	[F_NAME] = { "function  (file:line)", 40, 1, TC_NAME, 0 },
};

static void print_flat_row(struct term_table *t, const struct m_func *f, double total, int cpu,
			   const struct term_style *ts)
{
	char b[32];

	if (cpu) { /* CPU time is shown as measured: its probes' cost is not calibrated apart */
		term_cell(t, "%s", fmt_time(b, sizeof(b), f->cpu_excl));
		term_cell(t, "%s", fmt_time(b, sizeof(b), f->cpu_incl));
	} else {
		term_cell(t, "%s", "");
		term_cell(t, "%s", "");
	}
	term_cell(t, "%.1f%%", 100.0 * f->excl_c / total);
	term_cell(t, "%s", fmt_time(b, sizeof(b), f->excl_c));
	term_cell(t, "%s", fmt_time(b, sizeof(b), f->excl));
	term_cell(t, "%s", fmt_time(b, sizeof(b), f->incl_c));
	term_cell(t, "%s", fmt_time(b, sizeof(b), f->incl));
	term_cell(t, "%llu", (unsigned long long)f->calls);
	term_cell(t, "%s", fmt_time(b, sizeof(b), f->calls ? f->incl_c / (double)f->calls : 0));
	/* the colour around a padded cell: width_of counts no escape sequence */
	term_cell(t, "%s%s%s", f->unreliable ? ts->red : "", flags_of(f), f->unreliable ? ts->off : "");
	term_cell(t, "%s  (%s:%d)", f->name, f->file, f->line);
	term_row(t);
}

/* What the uncertainty of compensated values is made of, in a few words. */
static const char *comp_err_why(const struct model *m)
{
	uint32_t i, in_situ = 0;

	for (i = 0; i < m->nthreads; i++)
		in_situ += m->threads[i].insitu.has &&
			   m->threads[i].insitu.rec.status == SPROF_INSITU_USED;
	if (!in_situ)
		return "calibrated: what the program's own work may hide of each probe pair";
	return in_situ == m->nthreads
		       ? "in situ: what the windows cannot observe, and the other functions' pairs "
			 "at the hot leaf's price"
		       : "in situ: what the windows cannot observe, other functions' pairs; "
			 "calibrated: what the program's work may hide of each pair";
}

static void print_notes(FILE *out, const struct model *m)
{
	char t[32];
	uint32_t i;

	for (i = 0; i < m->nfuncs; i++) {
		const struct m_func *f = &m->funcs[i];

		if (f->flags & SPROF_FN_THROTTLED)
			term_text(out, "  T %s: throttled at %s after %llu calls (later calls not "
				       "measured)",
				  f->name, fmt_time(t, sizeof(t), (double)f->throttled_at),
				  (unsigned long long)f->throttled_calls);
		if (f->flags & SPROF_FN_EXCLUDED)
			term_text(out, "  excluded: %s", f->name);
	}
	term_text(out, "  ~ not reliably measurable: time per call below the probe's cost or the "
		       "clock period, or mostly probe cost");
	term_text(out, "  (c) values are uncertain by about %.0f %% of what was removed (%s)",
		  100 * m->err_ratio, comp_err_why(m));
}

/* The flat table's columns without CPU times (a run without --cpu). */
static struct term_col no_cpu[F_NCOLS];

static void print_flat(FILE *out, const struct model *m, const struct report_opts *o)
{
	const char *keys[] = { "exclusive time", "inclusive time", "calls" };
	uint32_t *idx = report_order(m, o->sort), i, shown = 0;
	double total = model_total_t_a(m);
	struct term_style ts = term_style(out);
	struct term_table t;
	int c, dropped = 0;

	memcpy(no_cpu, flat_cols, sizeof(no_cpu));
	no_cpu[F_CPU_E].width = no_cpu[F_CPU_I].width = no_cpu[F_CPU_I].gap = 0;
	no_cpu[F_CPU_E].head = no_cpu[F_CPU_I].head = "";
	no_cpu[F_PCT].gap = 0;
	term_table_init(&t, out, "", m->has_cpu ? flat_cols : no_cpu, F_NCOLS);
	for (c = m->has_cpu ? 0 : F_PCT; c < F_NCOLS; c++)
		dropped += !term_shown(&t, c);
	term_text(out, "\n%sFlat profile by %s; (c) = compensated, overhead removed%s%s", ts.bold,
		  keys[o->sort], ts.off,
		  dropped ? " (narrow terminal: some columns left out)" : "");
	term_table_head(&t);
	for (i = 0; i < m->nfuncs && (!o->limit || shown < (uint32_t)o->limit); i++) {
		const struct m_func *f = &m->funcs[idx[i]];

		if (!f->calls)
			continue;
		print_flat_row(&t, f, total, m->has_cpu, &ts);
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
	int max_indent; /* levels indented at most */
	struct term_table t;
};

static const struct term_col tree_cols[] = {
	{ "incl%", 7, 0, 0, 0 },	 { "incl(c)", 11, 1, 0, 0 }, { "excl(c)", 11, 1, 0, 2 },
	{ "calls", 10, 1, 0, 1 }, { "path", 40, 2, TC_NAME, 0 },
};

static void print_node(const struct model *m, uint32_t n, int level, struct tree_view *v)
{
	const struct m_node *x = &m->nodes[n];
	const struct report_opts *o = v->o;
	uint32_t *kids, nk = 0, c, i;
	char b[32], deep[16] = "";

	if (x->func != M_NONE) { /* deep paths stop indenting and say their level */
		term_cell(&v->t, "%.1f%%", 100.0 * x->incl_c / v->total);
		term_cell(&v->t, "%s", fmt_time(b, sizeof(b), x->incl_c));
		term_cell(&v->t, "%s", fmt_time(b, sizeof(b), x->excl_c));
		term_cell(&v->t, "%llu", (unsigned long long)x->calls);
		if (level >= v->max_indent)
			snprintf(deep, sizeof(deep), "[%d] ", level);
		term_cell(&v->t, "%*s%s%s", 2 * (level < v->max_indent ? level : v->max_indent), "",
			  deep, m->funcs[x->func].name);
		term_row(&v->t);
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
		print_node(m, kids[i], x->func == M_NONE ? level : level + 1, v);
	free(kids);
}

static void print_tree(FILE *out, const struct model *m, const struct report_opts *o)
{
	struct tree_view v = { o, model_total_t_a(m), MAX_INDENT, { 0 } };
	struct term_style ts = term_style(out);
	int c, fixed = 0;

	term_table_init(&v.t, out, "", tree_cols, 5);
	for (c = 0; c < 4; c++)
		if (term_shown(&v.t, c))
			fixed += tree_cols[c].gap + tree_cols[c].width;
	/* on a terminal, the indentation leaves 16 columns for the name at least */
	if (v.t.width && (v.t.width - fixed - 2 - 16) / 2 < v.max_indent)
		v.max_indent = (v.t.width - fixed - 2 - 16) / 2 > 1 ? (v.t.width - fixed - 2 - 16) / 2 : 1;
	term_text(out, "\n%sCall paths (all threads merged)%s", ts.bold, ts.off);
	term_table_head(&v.t);
	print_node(m, 0, 0, &v);
}

static const struct term_col counter_cols[] = {
	{ "Counters", 28, 0, TC_NAME, 0 }, { "count", 10, 1, 0, 0 }, { "mean", 14, 1, 0, 0 },
	{ "min", 14, 1, 0, 1 },		   { "max", 14, 1, 0, 1 },
};

static const struct term_col phase_cols[] = {
	{ "pid", 7, 0, 0, 2 }, { "thread", 6, 1, 0, 1 }, { "phase", 24, 2, TC_NAME, 0 },
	{ "from", 12, 1, 0, 0 }, { "to", 12, 1, 0, 0 },
};

static void print_user_data(FILE *out, const struct model *m)
{
	struct term_table t;
	char a[32];
	uint32_t i;

	if (m->ncounters) {
		fputc('\n', out);
		term_table_init(&t, out, "", counter_cols, 5);
		term_table_head(&t);
	}
	for (i = 0; i < m->ncounters; i++) {
		const struct m_counter *c = &m->counters[i];

		term_cell(&t, "  %s", c->name);
		term_cell(&t, "%llu", (unsigned long long)c->count);
		term_cell(&t, "%.6g", c->count ? c->sum / (double)c->count : 0);
		term_cell(&t, "%.6g", c->min);
		term_cell(&t, "%.6g", c->max);
		term_row(&t);
	}
	if (m->nphases) {
		term_text(out, "\nPhases (pid thread: name from .. to)");
		term_table_init(&t, out, "", phase_cols, 5);
		term_table_head(&t);
	}
	for (i = 0; i < m->nphases; i++) {
		const struct m_phase *p = &m->phases[i];

		term_cell(&t, "%u", p->pid);
		term_cell(&t, "%u", p->thread);
		term_cell(&t, "%s", p->name);
		term_cell(&t, "%s", fmt_time(a, sizeof(a), (double)p->start));
		term_cell(&t, "%s", fmt_time(a, sizeof(a), (double)p->end));
		term_row(&t);
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
