/* SPDX-License-Identifier: MIT */
/*
 * The sampled parts of `sonde report` (sonde run --sample): the flat sampled profile with each
 * share's statistical error and, when the run was measured too, the measured share beside it;
 * the sampled call paths; folded stacks (--folded) for FlameGraph and speedscope; JSON.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "sample_model.h"
#include "term.h"
#include "util.h"

/* |z| above this: the measured share lies outside what sampling error explains */
#define AGREE_Z 3.0
/* sampled call paths below this share of all samples are not printed */
#define TREE_MIN_SHARE 0.001
/* source lines shown in the text report */
#define TEXT_LINES 15

static const struct m_samples *cmp_s;

static int cmp_self(const void *a, const void *b)
{
	uint64_t x = cmp_s->funcs[*(const uint32_t *)a].self;
	uint64_t y = cmp_s->funcs[*(const uint32_t *)b].self;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* Whether the run has measured (probe) data: then shares are compared. */
static int measured(const struct model *m)
{
	uint32_t i;

	for (i = 0; i < m->nfuncs; i++)
		if (m->funcs[i].calls)
			return 1;
	return 0;
}

static uint32_t *by_self(const struct m_samples *s, uint32_t *n)
{
	uint32_t *idx = xmalloc((s->nfuncs ? s->nfuncs : 1) * sizeof(*idx)), i;

	*n = 0;
	for (i = 0; i < s->nfuncs; i++)
		if (s->funcs[i].self)
			idx[(*n)++] = i;
	cmp_s = s;
	qsort(idx, *n, sizeof(*idx), cmp_self);
	return idx;
}

static const struct term_col thread_cols[] = {
	{ "threads:", 8, 0, TC_LEFT, 0 }, { "pid", 6, 0, 0, 0 },	  { "index", 6, 1, 0, 0 },
	{ "tid", 8, 1, 0, 4 },		  { "CPU time", 11, 1, 0, 0 }, { "samples", 9, 1, 0, 0 },
	{ "signals", 9, 1, 0, 3 },	  { "dropped", 9, 1, 0, 2 },   { "truncated", 9, 1, 0, 1 },
	{ "", 8, 2, TC_NAME, 0 },
};

static void print_threads(FILE *out, const struct m_samples *s)
{
	struct term_table t;
	char cpu[32];
	uint32_t i;

	term_table_init(&t, out, "  ", thread_cols, 10);
	term_table_head(&t);
	for (i = 0; i < s->nthreads; i++) {
		const struct ms_thread *th = &s->threads[i];

		term_cell(&t, "%s", "");
		term_cell(&t, "%u", th->pid);
		term_cell(&t, "%u", th->index);
		term_cell(&t, "%u", th->tid);
		term_cell(&t, "%s", fmt_time(cpu, sizeof(cpu), (double)th->cpu_ns));
		term_cell(&t, "%llu", (unsigned long long)th->periods);
		term_cell(&t, "%llu", (unsigned long long)th->signals);
		term_cell(&t, "%llu", (unsigned long long)th->dropped);
		term_cell(&t, "%llu", (unsigned long long)th->truncated);
		term_cell(&t, "%s", th->ended ? "" : "(running at the end)");
		term_row(&t);
	}
}

/*
 * Inclusive shares are compared: samples are attributed to the code's own function (a symbol),
 * while -finstrument-functions also measures functions inlined into it apart, so exclusive
 * shares differ where instrumented code was inlined; inclusive ones do not.
 */
static void print_agreement(struct term_table *t, const struct model *m, const struct m_func *f,
			    double p, uint64_t n, double total)
{
	double q = sample_measured_incl(m, f) / total, se = sample_stderr(p, n), z = se > 0 ? (p - q) / se : 0;

	if (!f->calls) {
		term_cell(t, "-");
		term_cell(t, "%s", "");
		return;
	}
	term_cell(t, "%.1f%%", 100 * q);
	term_cell(t, "%s", fabs(z) <= AGREE_Z ? "yes" : "NO");
}

static const struct term_col flat_cols[] = {
	{ "samples", 9, 0, 0, 0 },    { "self%", 7, 1, 0, 0 },	  { "±err", 8, 1, 0, 3 },
	{ "total%", 7, 1, 0, 0 },     { "meas.incl", 9, 1, 0, 2 }, { "agree", 6, 1, 0, 1 },
	{ "function  (file:line)", 24, 3, TC_NAME, 0 },
};

static void print_flat(FILE *out, const struct model *m, const struct report_opts *o)
{
	const struct m_samples *s = m->samples;
	uint32_t n, i, *idx = by_self(s, &n);
	int both = measured(m);
	double total = (double)(s->stored_periods ? s->stored_periods : 1), mt = sample_measured_total(m);
	struct term_col cols[7];
	struct term_table t;

	term_text(out, "\nSampled profile: %llu samples of %s CPU time (%u Hz; %llu signals, %llu "
		       "dropped), %u thread%s",
		  (unsigned long long)s->periods, fmt_time((char[32]){ 0 }, 32, (double)s->period_ns),
		  s->hz, (unsigned long long)s->signals, (unsigned long long)s->dropped,
		  s->nthreads, s->nthreads == 1 ? "" : "s");
	print_threads(out, s);
	memcpy(cols, flat_cols, sizeof(cols));
	if (!both) /* no measured share to compare with: those columns take no room */
		cols[4] = cols[5] = (struct term_col){ "", 0, 0, 0, 0 };
	term_table_init(&t, out, "", cols, 7);
	term_table_head(&t);
	for (i = 0; i < n && (!o->limit || i < (uint32_t)o->limit); i++) {
		const struct ms_func *sf = &s->funcs[idx[i]];
		const struct m_func *f = &m->funcs[idx[i]];
		double p = (double)sf->self / total, se = sample_stderr(p, s->signals);

		term_cell(&t, "%llu", (unsigned long long)sf->self);
		term_cell(&t, "%.1f%%", 100 * p);
		term_cell(&t, "± %5.1f%%", 100 * se);
		term_cell(&t, "%.1f%%", 100.0 * (double)sf->total / total);
		if (both) {
			print_agreement(&t, m, f, (double)sf->total / total, s->signals, mt);
		} else {
			term_cell(&t, "%s", "");
			term_cell(&t, "%s", "");
		}
		term_cell(&t, "%s  (%s:%d)", f->name, f->file, f->line);
		term_row(&t);
	}
	term_text(out, "  a sample is one timer period of a thread's CPU time; ±err is the binomial "
		       "standard error of self%%, sqrt(p(1-p)/N), N = %llu signals",
		  (unsigned long long)s->signals);
	if (both)
		term_text(out, "  meas.incl = measured inclusive share of %s, beside total%%; "
			       "agree: within %.0f standard errors", m->has_cpu ? "CPU time (--cpu)"
			       : "(compensated) wall time", AGREE_Z);
	free(idx);
}

static const struct m_samples *cmp_l;

static int cmp_line(const void *a, const void *b)
{
	const struct ms_line *x = &cmp_l->lines[*(const uint32_t *)a];
	const struct ms_line *y = &cmp_l->lines[*(const uint32_t *)b];

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	return x->line - y->line;
}

/* The source lines, most sampled first. Caller frees. */
static uint32_t *by_line(const struct m_samples *s)
{
	uint32_t *idx = xmalloc((s->nlines ? s->nlines : 1) * sizeof(*idx)), i;

	for (i = 0; i < s->nlines; i++)
		idx[i] = i;
	cmp_l = s;
	qsort(idx, s->nlines, sizeof(*idx), cmp_line);
	return idx;
}

static const struct term_col line_cols[] = {
	{ "samples", 9, 0, 0, 0 }, { "self%", 7, 1, 0, 0 }, { "file:line  function", 24, 2, TC_NAME, 0 },
};

static void print_lines(FILE *out, const struct model *m)
{
	const struct m_samples *s = m->samples;
	double total = (double)(s->stored_periods ? s->stored_periods : 1);
	uint32_t *idx = by_line(s), i;
	struct term_table t;

	if (!s->nlines) {
		free(idx);
		return;
	}
	term_text(out, "\nSampled source lines (the interrupted instruction's; the %d most sampled)",
		  TEXT_LINES);
	term_table_init(&t, out, "", line_cols, 3);
	term_table_head(&t);
	for (i = 0; i < s->nlines && i < TEXT_LINES; i++) {
		const struct ms_line *l = &s->lines[idx[i]];

		term_cell(&t, "%llu", (unsigned long long)l->self);
		term_cell(&t, "%.1f%%", 100.0 * (double)l->self / total);
		term_cell(&t, "%s:%d  %s", l->file, l->line, m->funcs[l->func].name);
		term_row(&t);
	}
	free(idx);
}

static const struct m_samples *cmp_t;

static int cmp_total(const void *a, const void *b)
{
	uint64_t x = cmp_t->nodes[*(const uint32_t *)a].total;
	uint64_t y = cmp_t->nodes[*(const uint32_t *)b].total;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The children of a node, largest first. Caller frees. */
static uint32_t *children(const struct m_samples *s, uint32_t n, uint32_t *nk)
{
	uint32_t c, *kids;

	*nk = 0;
	for (c = s->nodes[n].first_child; c != M_NONE; c = s->nodes[c].next_sibling)
		(*nk)++;
	kids = xmalloc((*nk ? *nk : 1) * sizeof(*kids));
	*nk = 0;
	for (c = s->nodes[n].first_child; c != M_NONE; c = s->nodes[c].next_sibling)
		kids[(*nk)++] = c;
	cmp_t = s;
	qsort(kids, *nk, sizeof(*kids), cmp_total);
	return kids;
}

static const struct term_col tree_cols[] = {
	{ "total%", 7, 0, 0, 0 }, { "self%", 7, 1, 0, 0 }, { "samples", 9, 1, 0, 1 },
	{ "path", 24, 2, TC_NAME, 0 },
};

static void print_node(struct term_table *t, const struct model *m, uint32_t n, int level,
		       const struct report_opts *o)
{
	const struct m_samples *s = m->samples;
	const struct ms_node *x = &s->nodes[n];
	double total = (double)(s->nodes[0].total ? s->nodes[0].total : 1);
	uint32_t nk, i, *kids;

	if (n && (double)x->total < TREE_MIN_SHARE * total)
		return;
	if (n) {
		term_cell(t, "%.1f%%", 100.0 * (double)x->total / total);
		term_cell(t, "%.1f%%", 100.0 * (double)x->self / total);
		term_cell(t, "%llu", (unsigned long long)x->total);
		term_cell(t, "%*s%s", 2 * (level < 30 ? level : 30), "", m->funcs[x->func].name);
		term_row(t);
	}
	if (o->depth && level >= o->depth)
		return;
	kids = children(s, n, &nk);
	for (i = 0; i < nk; i++)
		print_node(t, m, kids[i], n ? level + 1 : level, o);
	free(kids);
}

void report_sample_text(FILE *out, const struct model *m, const struct report_opts *o)
{
	struct term_table t;

	if (!m->samples)
		return;
	if (o->flat) {
		print_flat(out, m, o);
		print_lines(out, m);
	}
	if (!o->tree)
		return;
	term_text(out, "\nSampled call paths (all threads merged; under %.1f %% not shown)",
		  100 * TREE_MIN_SHARE);
	term_table_init(&t, out, "", tree_cols, 4);
	term_table_head(&t);
	print_node(&t, m, 0, 0, o);
}

/* A frame's name in a folded line: ';' separates frames, so it cannot be in one. */
static void folded_name(FILE *out, const char *name)
{
	for (; *name; name++)
		fputc(*name == ';' ? ':' : *name, out);
}

static void folded_node(FILE *out, const struct model *m, uint32_t n, uint32_t *path,
			uint32_t level)
{
	const struct m_samples *s = m->samples;
	uint32_t c, i;

	if (n) {
		path[level++] = n;
		if (s->nodes[n].self) {
			for (i = 0; i < level; i++) {
				if (i)
					fputc(';', out);
				folded_name(out, m->funcs[s->nodes[path[i]].func].name);
			}
			fprintf(out, " %llu\n", (unsigned long long)s->nodes[n].self);
		}
	}
	for (c = s->nodes[n].first_child; c != M_NONE; c = s->nodes[c].next_sibling)
		folded_node(out, m, c, path, level);
}

int report_folded(FILE *out, const struct model *m)
{
	uint32_t *path;

	if (!m->samples)
		return error("report: --folded needs a sampled run (sonde run --sample)");
	path = xmalloc((m->samples->nnodes + 1) * sizeof(*path));
	folded_node(out, m, 0, path, 0);
	free(path);
	return 0;
}

static void json_tree(FILE *out, const struct model *m, uint32_t n)
{
	const struct m_samples *s = m->samples;
	const struct ms_node *x = &s->nodes[n];
	uint32_t c;
	int first = 1;

	fprintf(out, "{\"name\":");
	json_str(out, n ? m->funcs[x->func].name : "<root>");
	fprintf(out, ",\"self\":%llu,\"total\":%llu,\"children\":[", (unsigned long long)x->self,
		(unsigned long long)x->total);
	for (c = x->first_child; c != M_NONE; c = s->nodes[c].next_sibling) {
		if (!first)
			fputc(',', out);
		json_tree(out, m, c);
		first = 0;
	}
	fprintf(out, "]}");
}

static void json_threads(FILE *out, const struct m_samples *s)
{
	uint32_t i;

	fprintf(out, "\"threads\":[");
	for (i = 0; i < s->nthreads; i++) {
		const struct ms_thread *t = &s->threads[i];

		fprintf(out, "%s{\"pid\":%u,\"index\":%u,\"tid\":%u,\"ended\":%s,\"cpu_ns\":%llu,"
			     "\"samples\":%llu,\"signals\":%llu,\"dropped\":%llu,\"truncated\":%llu}",
			i ? "," : "", t->pid, t->index, t->tid, t->ended ? "true" : "false",
			(unsigned long long)t->cpu_ns, (unsigned long long)t->periods,
			(unsigned long long)t->signals, (unsigned long long)t->dropped,
			(unsigned long long)t->truncated);
	}
	fputc(']', out);
}

static void json_funcs(FILE *out, const struct model *m)
{
	const struct m_samples *s = m->samples;
	uint32_t n, i, *idx = by_self(s, &n);
	double total = (double)(s->stored_periods ? s->stored_periods : 1), mt = sample_measured_total(m);

	fprintf(out, ",\"functions\":[");
	for (i = 0; i < n; i++) {
		const struct m_func *f = &m->funcs[idx[i]];
		const struct ms_func *sf = &s->funcs[idx[i]];
		double p = (double)sf->self / total, q = (double)sf->total / total;

		fprintf(out, "%s{\"name\":", i ? "," : "");
		json_str(out, f->name);
		fprintf(out, ",\"file\":");
		json_str(out, f->file);
		fprintf(out, ",\"line\":%d,\"resource\":", f->line);
		json_str(out, f->resource);
		fprintf(out, ",\"self\":%llu,\"total\":%llu,\"self_signals\":%llu,\"share\":%.6f,"
			     "\"stderr\":%.6f,\"total_share\":%.6f,\"total_stderr\":%.6f",
			(unsigned long long)sf->self, (unsigned long long)sf->total,
			(unsigned long long)sf->self_signals, p, sample_stderr(p, s->signals), q,
			sample_stderr(q, s->signals));
		if (f->calls)
			fprintf(out, ",\"measured_share\":%.6f,\"measured_incl_share\":%.6f",
				sample_measured_excl(m, f) / mt, sample_measured_incl(m, f) / mt);
		fputc('}', out);
	}
	fputc(']', out);
	free(idx);
}

static void json_lines(FILE *out, const struct model *m)
{
	const struct m_samples *s = m->samples;
	uint32_t *idx = by_line(s), i;

	fprintf(out, ",\"lines\":[");
	for (i = 0; i < s->nlines; i++) {
		const struct ms_line *l = &s->lines[idx[i]];

		fprintf(out, "%s{\"file\":", i ? "," : "");
		json_str(out, l->file);
		fprintf(out, ",\"line\":%d,\"function\":", l->line);
		json_str(out, m->funcs[l->func].name);
		fprintf(out, ",\"self\":%llu}", (unsigned long long)l->self);
	}
	fputc(']', out);
	free(idx);
}

void report_sample_json(FILE *out, const struct model *m)
{
	const struct m_samples *s = m->samples;

	if (!s)
		return;
	fprintf(out, ",\"samples\":{\"hz\":%u,\"period_ns\":%llu,\"samples\":%llu,\"signals\":%llu,"
		     "\"dropped\":%llu,\"truncated\":%llu,\"stored\":%llu,\"measured_clock\":\"%s\",",
		s->hz, (unsigned long long)s->period_ns, (unsigned long long)s->periods,
		(unsigned long long)s->signals, (unsigned long long)s->dropped,
		(unsigned long long)s->truncated, (unsigned long long)s->stored_periods,
		m->has_cpu ? "cpu" : "wall");
	json_threads(out, s);
	json_funcs(out, m);
	json_lines(out, m);
	fprintf(out, ",\"callpath\":");
	json_tree(out, m, 0);
	fputc('}', out);
}
