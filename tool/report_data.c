/* SPDX-License-Identifier: MIT */
/* Machine-readable reports (JSON, CSV; docs/report-json.md) and the difference of two runs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_io.h"
#include "report.h"
#include "term.h"
#include "util.h"

static const char *const end_names[] = { "exit", "signal", "exec", "detach" };

/* A JSON string; bytes that are not UTF-8 (a file name, an argument) become U+FFFD. */
void json_str(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', out);
	while (*s) {
		int n = utf8_seq_len(s);

		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if (*s < 0x20)
			fprintf(out, "\\u%04x", *s);
		else if (!n)
			fputs("\\ufffd", out);
		else
			fwrite(s, 1, (size_t)n, out);
		s += n ? n : 1;
	}
	fputc('"', out);
}

/* Integral ns: the model keeps doubles, files and reports keep whole nanoseconds. */
static unsigned long long ns(double v)
{
	return v > 0 ? (unsigned long long)llround(v) : 0;
}

static void json_calib(FILE *out, const struct sprof_calib *c, uint32_t run_flags)
{
	fprintf(out,
		"{\"path\":\"%s\",\"clock\":\"%s\",\"ticks_per_ns\":%.6f,\"clock_ns\":%.3f,\"clock_sd_ns\":%.3f,"
		"\"dt_ns\":%.3f,\"o_in_ns\":%.3f,\"o_in_sd_ns\":%.3f,\"o_full_ns\":%.3f,"
		"\"o_full_sd_ns\":%.3f,\"o_skip_ns\":%.3f,\"o_skip_sd_ns\":%.3f,\"batches\":%u}",
		run_flags & SPROF_RUN_DYNAMIC ? "trampolines" : "hooks",
		c->clock_kind == SPROF_CLOCK_TSC ? "tsc" : "monotonic", c->ticks_per_ns,
		c->clock_ns, c->clock_sd, c->dt_ns, c->o_in, c->o_in_sd, c->o_full, c->o_full_sd,
		c->o_skip, c->o_skip_sd, c->samples);
}

/* The OVERLAP record: a probe pair's cost next to latency-bound work; null when not measured. */
static void json_overlap(FILE *out, const struct sprof_overlap *o)
{
	if (!o->batches) {
		fprintf(out, ",\"overlap\":null");
		return;
	}
	fprintf(out,
		",\"overlap\":{\"steps\":%u,\"batches\":%u,\"work_ns\":%.3f,\"pair_ns\":%.3f,"
		"\"pair_sd_ns\":%.3f}",
		o->steps, o->batches, o->work_ns, o->o_pair, o->o_pair_sd);
}

/* `sonde run --insitu`: the thread's INSITU record, and the price its compensation used. */
static void json_insitu(FILE *out, const struct model *m, const struct m_insitu *s)
{
	static const char *const status[] = { "none", "used", "unstable", "implausible" };

	fprintf(out, ",\"insitu\":{\"status\":\"%s\",\"function\":",
		status[s->rec.status < SPROF_INSITU_STATUSES ? s->rec.status : 0]);
	if (s->func == UINT32_MAX)
		fprintf(out, "null");
	else
		json_str(out, m->funcs[s->func].name);
	fprintf(out,
		",\"window_calls\":%u,\"pairs\":%u,\"rejected\":%u,\"preempted\":%u,\"period\":%u,"
		"\"unmeasured_calls\":%llu,\"calls\":%llu,\"price_ns\":%.3f,\"spread_ns\":%.3f,"
		"\"o_full_start_ns\":%.3f,\"o_full_calib_ns\":%.3f,\"o_skip_ns\":%.3f,"
		"\"used_ns\":%.3f,\"used_skip_ns\":%.3f,\"bare_pairs\":%u,\"bare_exits\":%u,"
		"\"stub_ns\":%.3f}",
		s->rec.window, s->rec.pairs, s->rec.rejected, s->rec.preempted, s->rec.period,
		(unsigned long long)s->rec.b_calls, (unsigned long long)s->rec.calls,
		s->rec.price_ns, s->rec.spread_ns, s->rec.o_full_ns, s->calib_o_full,
		s->rec.o_skip_ns, s->price, s->skip_price, s->rec.bare_pairs, s->rec.bare_exits,
		s->rec.stub_ns);
}

static void json_threads(FILE *out, const struct model *m, uint32_t proc)
{
	uint32_t i;
	int first = 1;

	fputc('[', out);
	for (i = 0; i < m->nthreads; i++) {
		const struct m_thread *t = &m->threads[i];

		if (t->proc != proc)
			continue;
		fprintf(out,
			"%s{\"index\":%u,\"tid\":%u,\"T_m_ns\":%llu,\"T_a_ns\":%llu,\"T_a_err_ns\":%llu,"
			"\"T_a_err_low_ns\":%llu,\"overhead_ns\":%llu,\"probes\":%llu,"
			"\"unmeasured_probes\":%llu,\"depth_skips\":%llu,\"lost_calls\":%llu",
			first ? "" : ",", t->index, t->tid, ns(t->t_m), ns(t->t_a), ns(t->t_a_err),
			ns(t->t_a_err_low), ns(t->overhead),
			(unsigned long long)t->probes, (unsigned long long)t->unmeasured,
			(unsigned long long)t->depth_skips, (unsigned long long)t->lost_calls);
		if (t->insitu.has)
			json_insitu(out, m, &t->insitu);
		fputc('}', out);
		first = 0;
	}
	fputc(']', out);
}

static void json_processes(FILE *out, const struct model *m)
{
	uint32_t i;

	fprintf(out, "\"processes\":[");
	for (i = 0; i < m->nprocs; i++) {
		const struct m_process *p = &m->procs[i];

		fprintf(out, "%s{\"pid\":%u,\"ppid\":%u,\"exe\":", i ? "," : "", p->pid, p->ppid);
		json_str(out, p->exe);
		fprintf(out, ",\"cmdline\":");
		json_str(out, p->cmdline);
		fprintf(out,
			",\"end\":\"%s\",\"signal\":%u,\"T_m_ns\":%llu,\"T_a_ns\":%llu,\"T_a_err_ns\":%llu,"
			"\"T_a_err_low_ns\":%llu,\"probes\":%llu,"
			"\"unmeasured_probes\":%llu,\"depth_limit\":%u,\"throttle_calls\":%llu,"
			"\"throttle_ns\":%llu,\"calibration\":",
			end_names[p->end_reason < 4 ? p->end_reason : 0], p->end_signal, ns(p->t_m),
			ns(p->t_a), ns(p->t_a_err), ns(p->t_a_err_low),
			(unsigned long long)p->probes,
			(unsigned long long)p->unmeasured, p->depth,
			(unsigned long long)p->throttle_calls, (unsigned long long)p->throttle_ns);
		json_calib(out, &p->calib, p->run_flags);
		json_overlap(out, &p->overlap);
		fprintf(out, ",\"threads\":");
		json_threads(out, m, i);
		fputc('}', out);
	}
	fputc(']', out);
}

static void json_func(FILE *out, const struct m_func *f, int cpu, double err_ratio)
{
	fprintf(out, "{\"name\":");
	json_str(out, f->name);
	fprintf(out, ",\"file\":");
	json_str(out, f->file);
	fprintf(out, ",\"line\":%d,\"resource\":", f->line);
	json_str(out, f->resource);
	fprintf(out,
		",\"kind\":\"%s\",\"calls\":%llu,\"child_calls\":%llu,\"incl_ns\":%llu,"
		"\"excl_ns\":%llu,\"incl_c_ns\":%llu,\"excl_c_ns\":%llu,\"incl_c_err_ns\":%llu,"
		"\"excl_c_err_ns\":%llu,",
		f->kind == SPROF_REGION ? "region" : "function", (unsigned long long)f->calls,
		(unsigned long long)f->child_calls, ns(f->incl), ns(f->excl), ns(f->incl_c),
		ns(f->excl_c), ns(err_ratio * (f->incl - f->incl_c)),
		ns(err_ratio * (f->excl - f->excl_c)));
	if (cpu)
		fprintf(out, "\"cpu_incl_ns\":%llu,\"cpu_excl_ns\":%llu,", ns(f->cpu_incl),
			ns(f->cpu_excl));
	fprintf(out,
		"\"unreliable\":%s,\"excluded\":%s,\"throttled\":%s,\"throttled_at_ns\":%llu,"
		"\"throttled_after_calls\":%llu}",
		f->unreliable ? "true" : "false", f->flags & SPROF_FN_EXCLUDED ? "true" : "false",
		f->flags & SPROF_FN_THROTTLED ? "true" : "false",
		(unsigned long long)f->throttled_at, (unsigned long long)f->throttled_calls);
}

static void json_node(FILE *out, const struct model *m, uint32_t n, int level, int depth)
{
	const struct m_node *x = &m->nodes[n];
	uint32_t c;
	int first = 1;

	fprintf(out, "{\"name\":");
	json_str(out, x->func == M_NONE ? "<root>" : m->funcs[x->func].name);
	if (x->func != M_NONE) {
		fprintf(out, ",\"resource\":");
		json_str(out, m->funcs[x->func].resource);
	}
	fprintf(out,
		",\"calls\":%llu,\"child_calls\":%llu,\"incl_ns\":%llu,\"excl_ns\":%llu,"
		"\"incl_c_ns\":%llu,\"excl_c_ns\":%llu",
		(unsigned long long)x->calls, (unsigned long long)x->child_calls, ns(x->incl),
		ns(x->excl), ns(x->incl_c), ns(x->excl_c));
	if (m->has_cpu)
		fprintf(out, ",\"cpu_incl_ns\":%llu,\"cpu_excl_ns\":%llu", ns(x->cpu_incl),
			ns(x->cpu_excl));
	fprintf(out, ",\"children\":[");
	for (c = x->first_child; c != M_NONE && (!depth || level < depth);
	     c = m->nodes[c].next_sibling) {
		if (!m->nodes[c].calls && m->nodes[c].first_child == M_NONE)
			continue;
		if (!first)
			fputc(',', out);
		json_node(out, m, c, level + 1, depth);
		first = 0;
	}
	fprintf(out, "]}");
}

static void json_user_data(FILE *out, const struct model *m)
{
	uint32_t i;

	fprintf(out, ",\"counters\":[");
	for (i = 0; i < m->ncounters; i++) {
		const struct m_counter *c = &m->counters[i];

		fprintf(out, "%s{\"name\":", i ? "," : "");
		json_str(out, c->name);
		fprintf(out, ",\"count\":%llu,\"sum\":%.17g,\"min\":%.17g,\"max\":%.17g}",
			(unsigned long long)c->count, c->sum, c->min, c->max);
	}
	fprintf(out, "],\"phases\":[");
	for (i = 0; i < m->nphases; i++) {
		const struct m_phase *p = &m->phases[i];

		fprintf(out, "%s{\"pid\":%u,\"thread\":%u,\"name\":", i ? "," : "", p->pid,
			p->thread);
		json_str(out, p->name);
		fprintf(out, ",\"start_ns\":%llu,\"end_ns\":%llu}", (unsigned long long)p->start,
			(unsigned long long)p->end);
	}
	fputc(']', out);
}

void report_json(FILE *out, const struct model *m, const struct report_opts *o)
{
	uint32_t *idx = report_order(m, o->sort), i, shown = 0;

	fprintf(out, "{\"sonde_report\":1,\"run_dir\":");
	json_str(out, m->dir);
	fputc(',', out);
	json_processes(out, m);
	fprintf(out, ",\"functions\":[");
	for (i = 0; i < m->nfuncs && (!o->limit || shown < (uint32_t)o->limit); i++, shown++) {
		if (shown)
			fputc(',', out);
		json_func(out, &m->funcs[idx[i]], m->has_cpu, m->err_ratio);
	}
	fprintf(out, "],\"callpath\":");
	json_node(out, m, 0, 0, o->depth);
	json_user_data(out, m);
	report_sync_json(out, m);
	report_mpi_json(out, m);
	report_io_json(out, m);
	report_sample_json(out, m);
	fprintf(out, "}\n");
	free(idx);
}

/* CSV fields are quoted when they hold a comma, a quote or a line break. */
static void csv_str(FILE *out, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

void report_csv(FILE *out, const struct model *m, const struct report_opts *o)
{
	uint32_t *idx = report_order(m, o->sort), i;

	fprintf(out, "name,file,line,resource,kind,calls,child_calls,incl_ns,excl_ns,incl_c_ns,"
		     "excl_c_ns,unreliable,excluded,throttled\n");
	for (i = 0; i < m->nfuncs && (!o->limit || i < (uint32_t)o->limit); i++) {
		const struct m_func *f = &m->funcs[idx[i]];

		csv_str(out, f->name);
		fputc(',', out);
		csv_str(out, f->file);
		fprintf(out, ",%d,", f->line);
		csv_str(out, f->resource);
		fprintf(out, ",%s,%llu,%llu,%llu,%llu,%llu,%llu,%d,%d,%d\n",
			f->kind == SPROF_REGION ? "region" : "function", (unsigned long long)f->calls,
			(unsigned long long)f->child_calls, ns(f->incl), ns(f->excl), ns(f->incl_c),
			ns(f->excl_c), f->unreliable, !!(f->flags & SPROF_FN_EXCLUDED),
			!!(f->flags & SPROF_FN_THROTTLED));
	}
	free(idx);
}

/* ---- difference of two runs, matched by resource path ---- */

struct diff_row {
	const char *name, *resource;
	double a, b; /* compensated exclusive ns */
	uint64_t calls_a, calls_b;
};

static int cmp_delta(const void *x, const void *y)
{
	const struct diff_row *p = x, *q = y;
	double d1 = fabs(p->b - p->a), d2 = fabs(q->b - q->a);

	return d1 < d2 ? 1 : d1 > d2 ? -1 : strcmp(p->resource, q->resource);
}

static const struct m_func *find_func(const struct model *m, const char *resource)
{
	uint32_t i;

	for (i = 0; i < m->nfuncs; i++)
		if (!strcmp(m->funcs[i].resource, resource))
			return &m->funcs[i];
	return NULL;
}

static struct diff_row *diff_rows(const struct model *a, const struct model *b, uint32_t *n)
{
	struct diff_row *rows = xcalloc(a->nfuncs + b->nfuncs, sizeof(*rows));
	uint32_t i;

	*n = 0;
	for (i = 0; i < a->nfuncs; i++) {
		const struct m_func *fa = &a->funcs[i], *fb = find_func(b, fa->resource);

		rows[(*n)++] = (struct diff_row){ fa->name, fa->resource, fa->excl_c,
						  fb ? fb->excl_c : 0, fa->calls,
						  fb ? fb->calls : 0 };
	}
	for (i = 0; i < b->nfuncs; i++) {
		const struct m_func *fb = &b->funcs[i];

		if (!find_func(a, fb->resource))
			rows[(*n)++] = (struct diff_row){ fb->name, fb->resource, 0, fb->excl_c, 0,
							  fb->calls };
	}
	qsort(rows, *n, sizeof(*rows), cmp_delta);
	return rows;
}

static double sum_t_a(const struct model *m)
{
	double t = 0;
	uint32_t i;

	for (i = 0; i < m->nprocs; i++)
		t += m->procs[i].t_a;
	return t;
}

static const struct term_col diff_cols[] = {
	{ "excl(c) A", 12, 0, 0, 0 }, { "excl(c) B", 12, 1, 0, 0 }, { "B - A", 12, 1, 0, 0 },
	{ "change", 8, 1, 0, 3 },     { "calls A", 10, 1, 0, 2 },   { "calls B", 10, 1, 0, 1 },
	{ "function", 24, 2, TC_NAME, 0 },
};

static void diff_text(FILE *out, const struct model *a, const struct model *b,
		      const struct diff_row *rows, uint32_t n, int limit)
{
	char x[32], y[32];
	struct term_table t;
	uint32_t i;

	term_text(out, "sonde report --diff: A = %s, B = %s", a->dir, b->dir);
	term_text(out, "  T_a: A %s, B %s", fmt_time(x, sizeof(x), sum_t_a(a)),
		  fmt_time(y, sizeof(y), sum_t_a(b)));
	term_table_init(&t, out, "", diff_cols, 7);
	term_table_head(&t);
	for (i = 0; i < n && (!limit || i < (uint32_t)limit); i++) {
		const struct diff_row *r = &rows[i];
		double delta = r->b - r->a;

		term_cell(&t, "%s", fmt_time(x, sizeof(x), r->a));
		term_cell(&t, "%s", fmt_time(x, sizeof(x), r->b));
		term_cell(&t, "%s%s", delta < 0 ? "-" : "+", fmt_time(x, sizeof(x), fabs(delta)));
		if (r->a > 0)
			term_cell(&t, "%.1f%%", 100.0 * delta / r->a);
		else
			term_cell(&t, "new");
		term_cell(&t, "%llu", (unsigned long long)r->calls_a);
		term_cell(&t, "%llu", (unsigned long long)r->calls_b);
		term_cell(&t, "%s", r->name);
		term_row(&t);
	}
}

static void diff_json(FILE *out, const struct model *a, const struct model *b,
		      const struct diff_row *rows, uint32_t n)
{
	uint32_t i;

	fprintf(out, "{\"sonde_diff\":1,\"a\":");
	json_str(out, a->dir);
	fprintf(out, ",\"b\":");
	json_str(out, b->dir);
	fprintf(out, ",\"T_a_ns_a\":%llu,\"T_a_ns_b\":%llu,\"functions\":[", ns(sum_t_a(a)),
		ns(sum_t_a(b)));
	for (i = 0; i < n; i++) {
		fprintf(out, "%s{\"name\":", i ? "," : "");
		json_str(out, rows[i].name);
		fprintf(out, ",\"resource\":");
		json_str(out, rows[i].resource);
		fprintf(out,
			",\"excl_c_ns_a\":%llu,\"excl_c_ns_b\":%llu,\"delta_ns\":%.0f,"
			"\"calls_a\":%llu,\"calls_b\":%llu}",
			ns(rows[i].a), ns(rows[i].b), rows[i].b - rows[i].a,
			(unsigned long long)rows[i].calls_a, (unsigned long long)rows[i].calls_b);
	}
	fprintf(out, "]}\n");
}

void report_diff(FILE *out, const struct model *a, const struct model *b, enum diff_format fmt,
		 int limit)
{
	uint32_t n, i;
	struct diff_row *rows = diff_rows(a, b, &n);

	if (fmt == DIFF_JSON) {
		diff_json(out, a, b, rows, n);
	} else if (fmt == DIFF_CSV) {
		fprintf(out, "name,resource,excl_c_ns_a,excl_c_ns_b,delta_ns,calls_a,calls_b\n");
		for (i = 0; i < n; i++) {
			csv_str(out, rows[i].name);
			fputc(',', out);
			csv_str(out, rows[i].resource);
			fprintf(out, ",%llu,%llu,%.0f,%llu,%llu\n", ns(rows[i].a), ns(rows[i].b),
				rows[i].b - rows[i].a, (unsigned long long)rows[i].calls_a,
				(unsigned long long)rows[i].calls_b);
		}
	} else {
		diff_text(out, a, b, rows, n, limit);
	}
	free(rows);
}
