/* SPDX-License-Identifier: MIT */
/*
 * The synchronization sections of `sonde report` (runs made with `sonde run --sync`): objects
 * ranked by the time threads waited for them, and the shared-memory compensation of every thread
 * and process (MODELS §2.4). Text, JSON ("sync" key, docs/report-json.md) and CSV (--sync --csv).
 */
#include <stdlib.h>
#include <string.h>

#include "model_sync.h"
#include "profile_sync.h"
#include "report.h"
#include "term.h"
#include "util.h"

static const struct model_sync *sorted;

static int by_wait(const void *x, const void *y)
{
	const struct m_sync *a = &sorted->objs[*(const uint32_t *)x];
	const struct m_sync *b = &sorted->objs[*(const uint32_t *)y];

	if (a->wait != b->wait)
		return a->wait < b->wait ? 1 : -1;
	if (a->acquires + a->shared != b->acquires + b->shared)
		return a->acquires + a->shared < b->acquires + b->shared ? 1 : -1;
	return strcmp(a->name, b->name);
}

/* Object indices, most waited-for first. Caller frees. */
static uint32_t *order(const struct model_sync *ms)
{
	uint32_t *idx = xmalloc((ms->nobjs ? ms->nobjs : 1) * sizeof(*idx)), i;

	for (i = 0; i < ms->nobjs; i++)
		idx[i] = i;
	sorted = ms;
	qsort(idx, ms->nobjs, sizeof(*idx), by_wait);
	return idx;
}

static const struct term_col obj_cols[] = {
	{ "wait", 11, 0, 0, 0 },	{ "max wait", 11, 1, 0, 5 }, { "hold", 11, 1, 0, 6 },
	{ "acquires", 10, 1, 0, 0 },	{ "shared", 9, 1, 0, 3 },    { "contended", 9, 1, 0, 1 },
	{ "busy", 7, 1, 0, 4 },		{ "timeouts", 8, 1, 0, 7 },  { "releases", 9, 1, 0, 8 },
	{ "kind", 7, 2, TC_LEFT, 2 }, { "object", 24, 1, TC_NAME, 0 },
};

static void text_objects(FILE *out, const struct model_sync *ms, int limit)
{
	uint32_t *idx = order(ms), i;
	struct term_table t;
	char b[32];

	term_text(out, "\nSynchronization objects by wait time (%u; hold time estimated from "
		       "sampled acquisitions)", ms->nobjs);
	term_table_init(&t, out, "", obj_cols, 11);
	term_table_head(&t);
	for (i = 0; i < ms->nobjs && (!limit || i < (uint32_t)limit); i++) {
		const struct m_sync *o = &ms->objs[idx[i]];

		term_cell(&t, "%s", fmt_time(b, sizeof(b), o->wait));
		term_cell(&t, "%s", fmt_time(b, sizeof(b), o->wait_max));
		term_cell(&t, "%s", o->hold_samples ? fmt_time(b, sizeof(b), o->hold) : "-");
		term_cell(&t, "%llu", (unsigned long long)o->acquires);
		term_cell(&t, "%llu", (unsigned long long)o->shared);
		term_cell(&t, "%llu", (unsigned long long)o->contended);
		term_cell(&t, "%llu", (unsigned long long)o->failed);
		term_cell(&t, "%llu", (unsigned long long)o->timeouts);
		term_cell(&t, "%llu", (unsigned long long)(o->releases + o->broadcasts));
		term_cell(&t, "%s", sync_kind_name(o->kind));
		term_cell(&t, "%s", o->name);
		term_row(&t);
	}
	free(idx);
}

static const struct term_col comp_cols[] = {
	{ "pid", 8, 0, 0, 0 },	       { "thread", 6, 1, 0, 0 },      { "T_m", 11, 1, 0, 0 },
	{ "local(c)", 11, 1, 0, 0 },   { "parallel(c)", 11, 1, 0, 0 }, { "overhead", 11, 1, 0, 3 },
	{ "delay", 11, 1, 0, 2 },      { "waits", 8, 1, 0, 4 },	      { "wait", 11, 1, 0, 5 },
	{ "wait(c)", 11, 1, 0, 1 },
};

static void text_comp(FILE *out, const struct model_sync *ms)
{
	char a[32], b[32], c[32];
	struct term_table t;
	uint32_t i;

	term_text(out, "\nShared-memory compensation (a wait inherits the releaser's delay)");
	term_table_init(&t, out, "", comp_cols, 10);
	term_table_head(&t);
	for (i = 0; i < ms->nthreads; i++) {
		const struct m_sync_thread *th = &ms->threads[i];

		term_cell(&t, "%u", th->pid);
		term_cell(&t, "%u", th->index);
		term_cell(&t, "%s", fmt_time(a, sizeof(a), th->t_m));
		term_cell(&t, "%s", fmt_time(a, sizeof(a), th->t_local));
		term_cell(&t, "%s", fmt_time(a, sizeof(a), th->t_par));
		term_cell(&t, "%s", fmt_time(a, sizeof(a), th->o));
		term_cell(&t, "%s", fmt_time(a, sizeof(a), th->x - th->x0));
		term_cell(&t, "%llu", (unsigned long long)th->waits);
		term_cell(&t, "%s", fmt_time(a, sizeof(a), th->wait));
		term_cell(&t, "%s", fmt_time(a, sizeof(a), th->wait_c));
		term_row(&t);
	}
	for (i = 0; i < ms->nprocs; i++) {
		const struct m_sync_proc *p = &ms->procs[i];

		term_text(out, "  process %u: T_m %s, locally compensated (fork-join) %s, "
			       "parallel compensated %s",
			  p->pid, fmt_time(a, sizeof(a), p->t_m), fmt_time(b, sizeof(b), p->t_a),
			  fmt_time(c, sizeof(c), p->t_par));
	}
}

void report_sync_text(FILE *out, const struct model *m, int limit)
{
	if (!m->sync)
		return;
	if (m->sync->nobjs)
		text_objects(out, m->sync, limit);
	if (m->sync->nthreads)
		text_comp(out, m->sync);
}

static unsigned long long ns(double v)
{
	return v > 0 ? (unsigned long long)(v + 0.5) : 0;
}

static void json_object(FILE *out, const struct m_sync *o)
{
	fprintf(out, "{\"pid\":%u,\"kind\":\"%s\",\"name\":", o->pid, sync_kind_name(o->kind));
	json_str(out, o->name);
	fprintf(out, ",\"addr\":%llu,\"init_site\":%d,\"overflow\":%d,\"acquires\":%llu,"
		     "\"shared\":%llu,\"contended\":%llu,\"busy\":%llu,\"timeouts\":%llu,"
		     "\"releases\":%llu,\"broadcasts\":%llu,\"wait_ns\":%llu,\"wait_max_ns\":%llu,"
		     "\"hold_ns\":%llu,\"hold_samples\":%llu}",
		(unsigned long long)o->addr, !!(o->flags & SPROF_SYNC_F_INIT),
		!!(o->flags & SPROF_SYNC_F_OVERFLOW), (unsigned long long)o->acquires,
		(unsigned long long)o->shared, (unsigned long long)o->contended,
		(unsigned long long)o->failed, (unsigned long long)o->timeouts,
		(unsigned long long)o->releases, (unsigned long long)o->broadcasts, ns(o->wait),
		ns(o->wait_max), ns(o->hold), (unsigned long long)o->hold_samples);
}

void report_sync_json(FILE *out, const struct model *m)
{
	const struct model_sync *ms = m->sync;
	uint32_t *idx, i;

	if (!ms)
		return;
	idx = order(ms);
	fprintf(out, ",\"sync\":{\"objects\":[");
	for (i = 0; i < ms->nobjs; i++) {
		if (i)
			fputc(',', out);
		json_object(out, &ms->objs[idx[i]]);
	}
	fprintf(out, "],\"threads\":[");
	for (i = 0; i < ms->nthreads; i++) {
		const struct m_sync_thread *t = &ms->threads[i];

		fprintf(out, "%s{\"pid\":%u,\"thread\":%u,\"T_m_ns\":%.0f,\"local_c_ns\":%.0f,"
			     "\"parallel_c_ns\":%.0f,\"overhead_ns\":%.0f,\"delay0_ns\":%.0f,"
			     "\"delay_ns\":%.0f,\"ops\":%llu,\"waits\":%llu,\"wait_ns\":%.0f,"
			     "\"wait_c_ns\":%.0f,\"wakes_unneeded\":%u}",
			i ? "," : "", t->pid, t->index, t->t_m, t->t_local, t->t_par, t->o, t->x0,
			t->x, (unsigned long long)t->ops, (unsigned long long)t->waits, t->wait,
			t->wait_c, t->wakes_unneeded);
	}
	fprintf(out, "],\"processes\":[");
	for (i = 0; i < ms->nprocs; i++)
		fprintf(out, "%s{\"pid\":%u,\"T_m_ns\":%.0f,\"T_a_ns\":%.0f,\"T_par_ns\":%.0f}",
			i ? "," : "", ms->procs[i].pid, ms->procs[i].t_m, ms->procs[i].t_a,
			ms->procs[i].t_par);
	fprintf(out, "]}");
	free(idx);
}

void report_sync_csv(FILE *out, const struct model *m)
{
	const struct model_sync *ms = m->sync;
	uint32_t *idx, i;

	fprintf(out, "pid,kind,name,acquires,shared,contended,busy,timeouts,releases,broadcasts,"
		     "wait_ns,wait_max_ns,hold_ns,hold_samples\n");
	if (!ms)
		return;
	idx = order(ms);
	for (i = 0; i < ms->nobjs; i++) {
		const struct m_sync *o = &ms->objs[idx[i]];
		const char *q = strpbrk(o->name, ",\"\n") ? "\"" : "";
		const char *s;

		fprintf(out, "%u,%s,%s", o->pid, sync_kind_name(o->kind), q);
		for (s = o->name; *s; s++)
			fprintf(out, *s == '"' ? "\"\"" : "%c", *s);
		fprintf(out, "%s,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n", q,
			(unsigned long long)o->acquires, (unsigned long long)o->shared,
			(unsigned long long)o->contended, (unsigned long long)o->failed,
			(unsigned long long)o->timeouts, (unsigned long long)o->releases,
			(unsigned long long)o->broadcasts, ns(o->wait), ns(o->wait_max), ns(o->hold),
			(unsigned long long)o->hold_samples);
	}
	free(idx);
}
