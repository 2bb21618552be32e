/* SPDX-License-Identifier: MIT */
/*
 * The report's sections for `sonde run --io`, `--os` and `--hw`: files ranked by the time spent
 * in their calls, I/O per phase, OS counters per thread, per phase and in time, hardware
 * counters. Text, JSON (docs/report-json.md) and, for files, CSV.
 */
#include <stdlib.h>
#include <string.h>

#include "model_io.h"
#include "report.h"
#include "term.h"
#include "util.h"

#define TEXT_ROWS 20

static const char *const kind_names[] = { "unknown", "file", "pipe", "socket", "terminal",
					  "device", "other", "untracked" };
static const char *const op_names[] = { "read", "write", "open", "close", "sync" };
static const char *const hw_status[] = { "counted", "unavailable", "forked" };

static const char *kind_name(uint32_t k)
{
	return k <= SPROF_IOK_UNTRACKED ? kind_names[k] : "unknown";
}

static const char *fmt_bytes(char *buf, size_t cap, double b)
{
	if (b < 1024)
		snprintf(buf, cap, "%.0f B", b);
	else if (b < 1024 * 1024)
		snprintf(buf, cap, "%.1f KiB", b / 1024);
	else if (b < 1024.0 * 1024 * 1024)
		snprintf(buf, cap, "%.1f MiB", b / (1024 * 1024));
	else
		snprintf(buf, cap, "%.2f GiB", b / (1024.0 * 1024 * 1024));
	return buf;
}

/* ---- order ---- */

static const struct m_ext *sort_x;

static int cmp_file(const void *a, const void *b)
{
	const struct m_iofile *f = &sort_x->files[*(const uint32_t *)a];
	const struct m_iofile *g = &sort_x->files[*(const uint32_t *)b];
	uint64_t x = m_io_total_ns(f), y = m_io_total_ns(g);

	return x != y ? (x < y ? 1 : -1) : strcmp(f->path, g->path);
}

static uint32_t *files_by_time(const struct m_ext *x)
{
	uint32_t *idx = xmalloc((x->nfiles ? x->nfiles : 1) * sizeof(*idx)), i;

	for (i = 0; i < x->nfiles; i++)
		idx[i] = i;
	sort_x = x;
	qsort(idx, x->nfiles, sizeof(*idx), cmp_file);
	return idx;
}

static int cmp_iophase(const void *a, const void *b)
{
	const struct m_iophase *p = a, *q = b;

	return p->ns != q->ns ? (p->ns < q->ns ? 1 : -1) : strcmp(p->name, q->name);
}

static const struct m_iophase_file *busiest(const struct m_iophase *p)
{
	const struct m_iophase_file *best = NULL;
	uint32_t i;

	for (i = 0; i < p->nfiles; i++)
		if (!best || p->files[i].ns > best->ns)
			best = &p->files[i];
	return best;
}

/* ---- text ---- */

static const struct term_col file_cols[] = {
	{ "time", 11, 0, 0, 0 },     { "calls", 9, 1, 0, 0 },	   { "reads", 9, 1, 0, 3 },
	{ "read", 10, 1, 0, 0 },     { "writes", 9, 1, 0, 4 },	   { "written", 10, 1, 0, 0 },
	{ "opens", 6, 1, 0, 5 },     { "closes", 6, 1, 0, 6 },	   { "syncs", 6, 1, 0, 7 },
	{ "errors", 6, 1, 0, 2 },    { "kind", 9, 2, TC_LEFT, 1 }, { "path", 24, 1, TC_NAME, 0 },
};

static void text_files(FILE *out, const struct m_ext *x)
{
	uint32_t *idx = files_by_time(x), i;
	struct term_table t;
	char b[32];

	term_text(out, "\nFiles by I/O time (time in the calls, as measured; stdio calls on their "
		       "stream's file)");
	term_table_init(&t, out, "", file_cols, 12);
	term_table_head(&t);
	for (i = 0; i < x->nfiles && i < TEXT_ROWS; i++) {
		const struct m_iofile *f = &x->files[idx[i]];

		term_cell(&t, "%s", fmt_time(b, sizeof(b), (double)m_io_total_ns(f)));
		term_cell(&t, "%llu", (unsigned long long)m_io_total_calls(f));
		term_cell(&t, "%llu", (unsigned long long)f->calls[0]);
		term_cell(&t, "%s", fmt_bytes(b, sizeof(b), (double)f->bytes_read));
		term_cell(&t, "%llu", (unsigned long long)f->calls[1]);
		term_cell(&t, "%s", fmt_bytes(b, sizeof(b), (double)f->bytes_written));
		term_cell(&t, "%llu", (unsigned long long)f->calls[2]);
		term_cell(&t, "%llu", (unsigned long long)f->calls[3]);
		term_cell(&t, "%llu", (unsigned long long)f->calls[4]);
		term_cell(&t, "%llu", (unsigned long long)f->errors);
		term_cell(&t, "%s", kind_name(f->kind));
		term_cell(&t, "%s", f->path);
		term_row(&t);
	}
	if (x->nfiles > TEXT_ROWS)
		term_text(out, "  (%u more files: --json lists them all)", x->nfiles - TEXT_ROWS);
	free(idx);
}

static const struct term_col iophase_cols[] = {
	{ "phase", 20, 0, TC_NAME, 0 }, { "I/O time", 11, 1, 0, 0 }, { "phase time", 11, 1, 0, 2 },
	{ "I/O %", 7, 1, 0, 0 },	{ "calls", 9, 1, 0, 3 },     { "bytes", 10, 1, 0, 4 },
	{ "busiest file", 16, 2, TC_NAME, 1 },
};

static void text_iophases(FILE *out, struct m_ext *x)
{
	struct term_table t;
	char b[32];
	uint32_t i;

	if (!x->niophases)
		return;
	qsort(x->iophases, x->niophases, sizeof(*x->iophases), cmp_iophase);
	term_text(out, "\nI/O by phase (sonde.h phases)");
	term_table_init(&t, out, "", iophase_cols, 7);
	term_table_head(&t);
	for (i = 0; i < x->niophases; i++) {
		const struct m_iophase *p = &x->iophases[i];
		const struct m_iophase_file *top = busiest(p);

		term_cell(&t, "%s", p->name);
		term_cell(&t, "%s", fmt_time(b, sizeof(b), (double)p->ns));
		term_cell(&t, "%s", fmt_time(b, sizeof(b), p->span_ns));
		term_cell(&t, "%.1f%%", p->span_ns > 0 ? 100.0 * (double)p->ns / p->span_ns : 0.0);
		term_cell(&t, "%llu", (unsigned long long)p->calls);
		term_cell(&t, "%s", fmt_bytes(b, sizeof(b), (double)p->bytes));
		term_cell(&t, "%s", top ? x->files[top->file].path : "");
		term_row(&t);
	}
}

/* The getrusage columns shared by the per-thread table and the intervals. */
#define OS_VAL_COLS                                                                             \
	{ "user", 11, 1, 0, 0 }, { "system", 11, 1, 0, 3 }, { "minflt", 9, 1, 0, 4 },          \
		{ "majflt", 7, 1, 0, 5 }, { "vol.cs", 8, 1, 0, 7 }, { "invol.cs", 8, 1, 0, 6 }

static void text_vals(struct term_table *t, const struct sprof_os_vals *v)
{
	char b[32];

	term_cell(t, "%s", fmt_time(b, sizeof(b), (double)v->user_ns));
	term_cell(t, "%s", fmt_time(b, sizeof(b), (double)v->sys_ns));
	term_cell(t, "%llu", (unsigned long long)v->minflt);
	term_cell(t, "%llu", (unsigned long long)v->majflt);
	term_cell(t, "%llu", (unsigned long long)v->nvcsw);
	term_cell(t, "%llu", (unsigned long long)v->nivcsw);
}

static const struct term_col os_cols[] = {
	{ "pid", 7, 0, 0, 0 },	  { "thread", 6, 1, 0, 0 }, { "tid", 8, 1, 0, 8 },
	{ "wall", 11, 1, 0, 2 }, OS_VAL_COLS,		    { "cpu%", 6, 1, 0, 0 },
};

static void text_os(FILE *out, const struct m_ext *x)
{
	struct term_table t;
	char b[32];
	uint32_t i;

	term_text(out, "\nOS counters per thread (getrusage; thread '-' is the whole process)");
	term_table_init(&t, out, "", os_cols, 11);
	term_table_head(&t);
	for (i = 0; i < x->nos; i++) {
		const struct m_os *o = &x->os[i];

		term_cell(&t, "%u", o->pid);
		if (o->thread == SPROF_NO_INDEX)
			term_cell(&t, "-");
		else
			term_cell(&t, "%u", o->thread);
		term_cell(&t, "%u", o->tid);
		term_cell(&t, "%s", fmt_time(b, sizeof(b), (double)o->wall_ns));
		text_vals(&t, &o->v);
		term_cell(&t, "%.1f%%", o->wall_ns ? 100.0 * (double)(o->v.user_ns + o->v.sys_ns) /
							   (double)o->wall_ns : 0.0);
		term_row(&t);
	}
}

static const struct term_col osphase_cols[] = {
	{ "phase", 20, 0, TC_NAME, 0 }, { "span", 11, 1, 0, 0 },     { "user", 11, 1, 0, 0 },
	{ "system", 11, 1, 0, 3 },	{ "minflt", 9, 1, 0, 4 },    { "majflt", 7, 1, 0, 5 },
	{ "vol.cs", 8, 1, 0, 7 },	{ "invol.cs", 8, 1, 0, 6 }, { "faults/s", 12, 1, 0, 2 },
};

static void text_osphases(FILE *out, const struct m_ext *x)
{
	struct term_table t;
	char b[32];
	uint32_t i;

	if (!x->nosphases)
		return;
	term_text(out, "\nOS counters by phase (each thread's own between its phase markers, "
		       "summed over threads)");
	term_table_init(&t, out, "", osphase_cols, 9);
	term_table_head(&t);
	for (i = 0; i < x->nosphases; i++) {
		const struct m_osphase *p = &x->osphases[i];

		term_cell(&t, "%s", p->name);
		term_cell(&t, "%s", fmt_time(b, sizeof(b), p->span_ns));
		term_cell(&t, "%s", fmt_time(b, sizeof(b), p->user_ns));
		term_cell(&t, "%s", fmt_time(b, sizeof(b), p->sys_ns));
		term_cell(&t, "%.0f", p->minflt);
		term_cell(&t, "%.0f", p->majflt);
		term_cell(&t, "%.0f", p->nvcsw);
		term_cell(&t, "%.0f", p->nivcsw);
		term_cell(&t, "%.0f", p->span_ns > 0 ? (p->minflt + p->majflt) * 1e9 / p->span_ns : 0.0);
		term_row(&t);
	}
}

static int cmp_interval_faults(const void *a, const void *b)
{
	const struct m_interval *p = *(const struct m_interval *const *)a;
	const struct m_interval *q = *(const struct m_interval *const *)b;
	uint64_t x = p->v.minflt + p->v.majflt, y = q->v.minflt + q->v.majflt;

	return x != y ? (x < y ? 1 : -1) : (p->start > q->start) - (p->start < q->start);
}

static const struct term_col interval_cols[] = {
	{ "pid", 7, 0, 0, 8 },		     { "from", 11, 1, 0, 0 }, { "to", 11, 1, 0, 2 }, OS_VAL_COLS,
	{ "phase (thread 0)", 16, 2, TC_NAME, 0 },
};

static void text_intervals(FILE *out, const struct m_ext *x)
{
	const struct m_interval **v;
	struct term_table t;
	char b[32];
	uint32_t i;

	if (!x->nintervals)
		return;
	v = xmalloc(x->nintervals * sizeof(*v));
	for (i = 0; i < x->nintervals; i++)
		v[i] = &x->intervals[i];
	qsort(v, x->nintervals, sizeof(*v), cmp_interval_faults);
	term_text(out, "\nOS intervals: %u; the 5 with most page faults", x->nintervals);
	term_table_init(&t, out, "", interval_cols, 10);
	term_table_head(&t);
	for (i = 0; i < x->nintervals && i < 5; i++) {
		term_cell(&t, "%u", v[i]->pid);
		term_cell(&t, "%s", fmt_time(b, sizeof(b), (double)v[i]->start));
		term_cell(&t, "%s", fmt_time(b, sizeof(b), (double)v[i]->end));
		text_vals(&t, &v[i]->v);
		term_cell(&t, "%s", v[i]->phase ? v[i]->phase : "-");
		term_row(&t);
	}
	free(v);
}

static const struct term_col hw_cols[] = {
	{ "pid", 7, 0, 0, 0 }, { "event", 18, 1, TC_NAME, 0 }, { "count", 16, 1, 0, 0 },
	{ "", 10, 2, TC_NAME, 0 },
};

static void text_hw(FILE *out, const struct m_ext *x)
{
	struct term_table t;
	uint32_t i;

	if (!x->nhw)
		return;
	term_text(out, "\nHardware counters (perf_event; the main thread and the threads that "
		       "ended before the profile was written)");
	term_table_init(&t, out, "", hw_cols, 4);
	for (i = 0; i < x->nhw; i++) {
		const struct m_hw *h = &x->hw[i];

		term_cell(&t, "%u", h->pid);
		term_cell(&t, "%s", h->event);
		if (h->status != SPROF_HW_COUNTED) {
			term_cell(&t, "-");
			term_cell(&t, "not counted: %s", h->reason);
		} else {
			term_cell(&t, "%llu", (unsigned long long)h->value);
			if (h->running_ns < h->enabled_ns)
				term_cell(&t, "(counted %.1f %% of the time: ~%.0f scaled)",
					  h->enabled_ns ? 100.0 * (double)h->running_ns /
								  (double)h->enabled_ns : 0.0,
					  h->running_ns ? (double)h->value * (double)h->enabled_ns /
								  (double)h->running_ns : 0.0);
		}
		term_row(&t);
	}
}

void report_io_text(FILE *out, const struct model *m)
{
	struct m_ext *x = m->ext;

	if (!x)
		return;
	if (x->nfiles)
		text_files(out, x);
	text_iophases(out, x);
	if (x->nos)
		text_os(out, x);
	text_osphases(out, x);
	text_intervals(out, x);
	text_hw(out, x);
}

/* ---- JSON ---- */

static void json_file(FILE *out, const struct m_iofile *f)
{
	char *res = xmalloc(strlen(f->path) + 8);
	int i;

	fprintf(out, "{\"path\":");
	json_str(out, f->path);
	sprintf(res, "/Files%s%s", f->path[0] == '/' ? "" : "/", f->path);
	fprintf(out, ",\"resource\":");
	json_str(out, res);
	free(res);
	fprintf(out, ",\"kind\":\"%s\",\"time_ns\":%llu,\"calls\":%llu", kind_name(f->kind),
		(unsigned long long)m_io_total_ns(f), (unsigned long long)m_io_total_calls(f));
	for (i = 0; i < SPROF_IO_OPS; i++)
		fprintf(out, ",\"%s_calls\":%llu,\"%s_ns\":%llu", op_names[i],
			(unsigned long long)f->calls[i], op_names[i], (unsigned long long)f->ns[i]);
	fprintf(out, ",\"read_bytes\":%llu,\"write_bytes\":%llu,\"errors\":%llu}",
		(unsigned long long)f->bytes_read, (unsigned long long)f->bytes_written,
		(unsigned long long)f->errors);
}

static void json_iophases(FILE *out, const struct m_ext *x)
{
	uint32_t i, j;

	fprintf(out, ",\"io_phases\":[");
	for (i = 0; i < x->niophases; i++) {
		const struct m_iophase *p = &x->iophases[i];

		fprintf(out, "%s{\"name\":", i ? "," : "");
		json_str(out, p->name);
		fprintf(out, ",\"span_ns\":%.0f,\"time_ns\":%llu,\"calls\":%llu,\"bytes\":%llu,"
			     "\"files\":[", p->span_ns, (unsigned long long)p->ns,
			(unsigned long long)p->calls, (unsigned long long)p->bytes);
		for (j = 0; j < p->nfiles; j++) {
			fprintf(out, "%s{\"path\":", j ? "," : "");
			json_str(out, x->files[p->files[j].file].path);
			fprintf(out, ",\"time_ns\":%llu,\"calls\":%llu,\"bytes\":%llu}",
				(unsigned long long)p->files[j].ns, (unsigned long long)p->files[j].calls,
				(unsigned long long)p->files[j].bytes);
		}
		fprintf(out, "]}");
	}
	fputc(']', out);
}

static void json_vals(FILE *out, const struct sprof_os_vals *v)
{
	fprintf(out, ",\"user_ns\":%llu,\"sys_ns\":%llu,\"minflt\":%llu,\"majflt\":%llu,"
		     "\"nvcsw\":%llu,\"nivcsw\":%llu", (unsigned long long)v->user_ns,
		(unsigned long long)v->sys_ns, (unsigned long long)v->minflt,
		(unsigned long long)v->majflt, (unsigned long long)v->nvcsw,
		(unsigned long long)v->nivcsw);
}

static void json_os(FILE *out, const struct m_ext *x)
{
	uint32_t i;

	fprintf(out, ",\"os_threads\":[");
	for (i = 0; i < x->nos; i++) {
		const struct m_os *o = &x->os[i];

		fprintf(out, "%s{\"pid\":%u,\"thread\":", i ? "," : "", o->pid);
		if (o->thread == SPROF_NO_INDEX)
			fprintf(out, "null");
		else
			fprintf(out, "%u", o->thread);
		fprintf(out, ",\"tid\":%u,\"wall_ns\":%llu", o->tid, (unsigned long long)o->wall_ns);
		json_vals(out, &o->v);
		fputc('}', out);
	}
	fprintf(out, "],\"os_intervals\":[");
	for (i = 0; i < x->nintervals; i++) {
		const struct m_interval *v = &x->intervals[i];

		fprintf(out, "%s{\"pid\":%u,\"start_ns\":%llu,\"end_ns\":%llu", i ? "," : "", v->pid,
			(unsigned long long)v->start, (unsigned long long)v->end);
		json_vals(out, &v->v);
		fprintf(out, ",\"phase\":");
		if (v->phase)
			json_str(out, v->phase);
		else
			fprintf(out, "null");
		fputc('}', out);
	}
	fprintf(out, "],\"os_phases\":[");
	for (i = 0; i < x->nosphases; i++) {
		const struct m_osphase *p = &x->osphases[i];

		fprintf(out, "%s{\"name\":", i ? "," : "");
		json_str(out, p->name);
		fprintf(out, ",\"threads\":%u,\"span_ns\":%.0f,\"user_ns\":%.0f,\"sys_ns\":%.0f,"
			     "\"minflt\":%.0f,\"majflt\":%.0f,\"nvcsw\":%.0f,\"nivcsw\":%.0f}",
			p->threads, p->span_ns, p->user_ns, p->sys_ns, p->minflt, p->majflt, p->nvcsw,
			p->nivcsw);
	}
	fputc(']', out);
}

static void json_hw(FILE *out, const struct m_ext *x)
{
	uint32_t i;

	fprintf(out, ",\"hw\":[");
	for (i = 0; i < x->nhw; i++) {
		const struct m_hw *h = &x->hw[i];

		fprintf(out, "%s{\"pid\":%u,\"event\":", i ? "," : "", h->pid);
		json_str(out, h->event);
		fprintf(out, ",\"status\":\"%s\",\"value\":%llu,\"enabled_ns\":%llu,"
			     "\"running_ns\":%llu,\"reason\":", hw_status[h->status <= 2 ? h->status : 1],
			(unsigned long long)h->value, (unsigned long long)h->enabled_ns,
			(unsigned long long)h->running_ns);
		json_str(out, h->reason);
		fputc('}', out);
	}
	fputc(']', out);
}

/* The extra keys of the report's object (present only when their data are). */
void report_io_json(FILE *out, const struct model *m)
{
	struct m_ext *x = m->ext;
	uint32_t *idx, i;

	if (!x)
		return;
	if (x->nfiles || x->niophases) {
		idx = files_by_time(x);
		fprintf(out, ",\"files\":[");
		for (i = 0; i < x->nfiles; i++) {
			if (i)
				fputc(',', out);
			json_file(out, &x->files[idx[i]]);
		}
		fputc(']', out);
		free(idx);
		qsort(x->iophases, x->niophases, sizeof(*x->iophases), cmp_iophase);
		json_iophases(out, x);
	}
	if (x->nos || x->nintervals)
		json_os(out, x);
	if (x->nhw)
		json_hw(out, x);
}

/* ---- CSV: the files table ---- */

static void csv_field(FILE *out, const char *s)
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

void report_io_csv(FILE *out, const struct model *m)
{
	const struct m_ext *x = m->ext;
	uint32_t *idx, i;
	int k;

	fprintf(out, "path,kind,time_ns,calls");
	for (k = 0; k < SPROF_IO_OPS; k++)
		fprintf(out, ",%s_calls,%s_ns", op_names[k], op_names[k]);
	fprintf(out, ",read_bytes,write_bytes,errors\n");
	if (!x)
		return;
	idx = files_by_time(x);
	for (i = 0; i < x->nfiles; i++) {
		const struct m_iofile *f = &x->files[idx[i]];

		csv_field(out, f->path);
		fprintf(out, ",%s,%llu,%llu", kind_name(f->kind),
			(unsigned long long)m_io_total_ns(f), (unsigned long long)m_io_total_calls(f));
		for (k = 0; k < SPROF_IO_OPS; k++)
			fprintf(out, ",%llu,%llu", (unsigned long long)f->calls[k],
				(unsigned long long)f->ns[k]);
		fprintf(out, ",%llu,%llu,%llu\n", (unsigned long long)f->bytes_read,
			(unsigned long long)f->bytes_written, (unsigned long long)f->errors);
	}
	free(idx);
}
