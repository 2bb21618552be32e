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

static void text_files(FILE *out, const struct m_ext *x)
{
	uint32_t *idx = files_by_time(x), i;
	char t[32], r[32], w[32];

	fprintf(out, "\nFiles by I/O time (time in the calls, as measured; stdio calls on their "
		     "stream's file)\n");
	fprintf(out, "%11s %9s %9s %10s %9s %10s %6s %6s %6s %6s  %-9s %s\n", "time", "calls",
		"reads", "read", "writes", "written", "opens", "closes", "syncs", "errors", "kind",
		"path");
	for (i = 0; i < x->nfiles && i < TEXT_ROWS; i++) {
		const struct m_iofile *f = &x->files[idx[i]];

		fprintf(out, "%11s %9llu %9llu %10s %9llu %10s %6llu %6llu %6llu %6llu  %-9s %s\n",
			fmt_time(t, sizeof(t), (double)m_io_total_ns(f)),
			(unsigned long long)m_io_total_calls(f), (unsigned long long)f->calls[0],
			fmt_bytes(r, sizeof(r), (double)f->bytes_read), (unsigned long long)f->calls[1],
			fmt_bytes(w, sizeof(w), (double)f->bytes_written),
			(unsigned long long)f->calls[2], (unsigned long long)f->calls[3],
			(unsigned long long)f->calls[4], (unsigned long long)f->errors,
			kind_name(f->kind), f->path);
	}
	if (x->nfiles > TEXT_ROWS)
		fprintf(out, "  (%u more files: --json lists them all)\n", x->nfiles - TEXT_ROWS);
	free(idx);
}

static void text_iophases(FILE *out, const struct model *m, struct m_ext *x)
{
	char t[32], s[32], b[32];
	uint32_t i;

	if (!x->niophases)
		return;
	qsort(x->iophases, x->niophases, sizeof(*x->iophases), cmp_iophase);
	fprintf(out, "\nI/O by phase (sonde.h phases)\n%-20s %11s %11s %7s %9s %10s  %s\n", "phase",
		"I/O time", "phase time", "I/O %", "calls", "bytes", "busiest file");
	for (i = 0; i < x->niophases; i++) {
		const struct m_iophase *p = &x->iophases[i];
		const struct m_iophase_file *top = busiest(p);

		fprintf(out, "%-20s %11s %11s %6.1f%% %9llu %10s  %s\n", p->name,
			fmt_time(t, sizeof(t), (double)p->ns), fmt_time(s, sizeof(s), p->span_ns),
			p->span_ns > 0 ? 100.0 * (double)p->ns / p->span_ns : 0.0,
			(unsigned long long)p->calls, fmt_bytes(b, sizeof(b), (double)p->bytes),
			top ? x->files[top->file].path : "");
	}
	(void)m;
}

static void text_vals(FILE *out, const struct sprof_os_vals *v)
{
	char u[32], s[32];

	fprintf(out, " %11s %11s %9llu %7llu %8llu %8llu", fmt_time(u, sizeof(u), (double)v->user_ns),
		fmt_time(s, sizeof(s), (double)v->sys_ns), (unsigned long long)v->minflt,
		(unsigned long long)v->majflt, (unsigned long long)v->nvcsw,
		(unsigned long long)v->nivcsw);
}

static void text_os(FILE *out, const struct m_ext *x)
{
	char wl[32];
	uint32_t i;

	fprintf(out, "\nOS counters per thread (getrusage; thread '-' is the whole process)\n");
	fprintf(out, "%7s %6s %8s %11s %11s %11s %9s %7s %8s %8s %6s\n", "pid", "thread", "tid",
		"wall", "user", "system", "minflt", "majflt", "vol.cs", "invol.cs", "cpu%");
	for (i = 0; i < x->nos; i++) {
		const struct m_os *o = &x->os[i];
		char th[16];

		if (o->thread == SPROF_NO_INDEX)
			snprintf(th, sizeof(th), "-");
		else
			snprintf(th, sizeof(th), "%u", o->thread);
		fprintf(out, "%7u %6s %8u %11s", o->pid, th, o->tid,
			fmt_time(wl, sizeof(wl), (double)o->wall_ns));
		text_vals(out, &o->v);
		fprintf(out, " %5.1f%%\n", o->wall_ns ? 100.0 * (double)(o->v.user_ns + o->v.sys_ns) /
							   (double)o->wall_ns : 0.0);
	}
}

static void text_osphases(FILE *out, const struct m_ext *x)
{
	char sp[32], u[32], s[32];
	uint32_t i;

	if (!x->nosphases)
		return;
	fprintf(out, "\nOS counters by phase (each thread's own between its phase markers, summed "
		     "over threads)\n%-20s %11s %11s %11s %9s %7s %8s %8s %12s\n", "phase", "span", "user",
		"system", "minflt", "majflt", "vol.cs", "invol.cs", "faults/s");
	for (i = 0; i < x->nosphases; i++) {
		const struct m_osphase *p = &x->osphases[i];

		fprintf(out, "%-20s %11s %11s %11s %9.0f %7.0f %8.0f %8.0f %12.0f\n", p->name,
			fmt_time(sp, sizeof(sp), p->span_ns), fmt_time(u, sizeof(u), p->user_ns),
			fmt_time(s, sizeof(s), p->sys_ns), p->minflt, p->majflt, p->nvcsw, p->nivcsw,
			p->span_ns > 0 ? (p->minflt + p->majflt) * 1e9 / p->span_ns : 0.0);
	}
}

static int cmp_interval_faults(const void *a, const void *b)
{
	const struct m_interval *p = *(const struct m_interval *const *)a;
	const struct m_interval *q = *(const struct m_interval *const *)b;
	uint64_t x = p->v.minflt + p->v.majflt, y = q->v.minflt + q->v.majflt;

	return x != y ? (x < y ? 1 : -1) : (p->start > q->start) - (p->start < q->start);
}

static void text_intervals(FILE *out, const struct m_ext *x)
{
	const struct m_interval **v;
	char a[32], b[32];
	uint32_t i;

	if (!x->nintervals)
		return;
	v = xmalloc(x->nintervals * sizeof(*v));
	for (i = 0; i < x->nintervals; i++)
		v[i] = &x->intervals[i];
	qsort(v, x->nintervals, sizeof(*v), cmp_interval_faults);
	fprintf(out, "\nOS intervals: %u; the 5 with most page faults\n%7s %11s %11s %11s %11s %9s "
		     "%7s %8s %8s  %s\n", x->nintervals, "pid", "from", "to", "user", "system",
		"minflt", "majflt", "vol.cs", "invol.cs", "phase (thread 0)");
	for (i = 0; i < x->nintervals && i < 5; i++) {
		fprintf(out, "%7u %11s %11s", v[i]->pid, fmt_time(a, sizeof(a), (double)v[i]->start),
			fmt_time(b, sizeof(b), (double)v[i]->end));
		text_vals(out, &v[i]->v);
		fprintf(out, "  %s\n", v[i]->phase ? v[i]->phase : "-");
	}
	free(v);
}

static void text_hw(FILE *out, const struct m_ext *x)
{
	uint32_t i;

	if (!x->nhw)
		return;
	fprintf(out, "\nHardware counters (perf_event; the main thread and the threads that ended "
		     "before the profile was written)\n");
	for (i = 0; i < x->nhw; i++) {
		const struct m_hw *h = &x->hw[i];

		if (h->status != SPROF_HW_COUNTED) {
			fprintf(out, "%7u %-18s not counted: %s\n", h->pid, h->event, h->reason);
			continue;
		}
		fprintf(out, "%7u %-18s %16llu", h->pid, h->event, (unsigned long long)h->value);
		if (h->running_ns < h->enabled_ns)
			fprintf(out, "  (counted %.1f %% of the time: ~%.0f scaled)",
				h->enabled_ns ? 100.0 * (double)h->running_ns / (double)h->enabled_ns : 0.0,
				h->running_ns ? (double)h->value * (double)h->enabled_ns /
							(double)h->running_ns : 0.0);
		fputc('\n', out);
	}
}

void report_io_text(FILE *out, const struct model *m)
{
	struct m_ext *x = m->ext;

	if (!x)
		return;
	if (x->nfiles)
		text_files(out, x);
	text_iophases(out, m, x);
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
