/* SPDX-License-Identifier: MIT */
/*
 * Per thread and per process: each thread's times and probes, then the top functions of each
 * process and thread, read again from the run directory with a filter (the merged model keeps
 * no per-thread functions). Bounded: HTML_MAX_THREAD_TABLES tables of HTML_THREAD_ROWS rows.
 */
#include "html.h"
#include "model_sync.h"
#include "util.h"

static void summary(FILE *out, const struct model *m)
{
	static const char *const cols[] = { "#pid", "#thread", "#tid", "#T_m", "#T_a",
					    "#overhead removed", "#probe pairs", "#unmeasured",
					    "#depth skips", "#lost calls" };
	uint32_t i;

	html_table(out, "thread-summary", cols, 10);
	for (i = 0; i < m->nthreads; i++) {
		const struct m_thread *t = &m->threads[i];

		fputs("<tr>", out);
		html_td_u(out, t->pid);
		html_td_u(out, t->index);
		html_td_u(out, t->tid);
		html_td_ns(out, t->t_m);
		html_td_ns(out, t->t_a);
		html_td_ns(out, t->overhead);
		html_td_u(out, t->probes);
		html_td_u(out, t->unmeasured);
		html_td_u(out, t->depth_skips);
		html_td_u(out, t->lost_calls);
		fputs("</tr>\n", out);
	}
	html_table_end(out);
}

static void sync_comp(FILE *out, const struct model *m)
{
	static const char *const cols[] = { "#pid", "#thread", "#T_m", "#local (c)",
					    "#parallel (c)", "#overhead", "#delay inherited",
					    "#delay at end", "#sync ops", "#waits", "#wait",
					    "#wait (c)" };
	const struct model_sync *ms = m->sync;
	uint32_t i;

	if (!ms || !ms->nthreads)
		return;
	fputs("<h3>Parallel compensation (sonde run --sync)</h3>\n<p class=\"note\">local (c): "
	      "T_m less the thread's own probes; parallel (c): less the measurement delay it "
	      "inherited through locks and joins too (MODELS §2.4).</p>\n", out);
	html_table(out, "sync-threads", cols, 12);
	for (i = 0; i < ms->nthreads; i++) {
		const struct m_sync_thread *t = &ms->threads[i];

		fputs("<tr>", out);
		html_td_u(out, t->pid);
		html_td_u(out, t->index);
		html_td_ns(out, t->t_m);
		html_td_ns(out, t->t_local);
		html_td_ns(out, t->t_par);
		html_td_ns(out, t->o);
		html_td_ns(out, t->x0);
		html_td_ns(out, t->x);
		html_td_u(out, t->ops);
		html_td_u(out, t->waits);
		html_td_ns(out, t->wait);
		html_td_ns(out, t->wait_c);
		fputs("</tr>\n", out);
	}
	html_table_end(out);
}

/* The top functions of the part of the run flt selects, in a collapsed block. */
static void one_table(FILE *out, const struct model *m, const struct model_filter *flt,
		      const char *what, const char *id)
{
	struct model part;

	if (model_load(&part, m->dir, flt) != 0)
		return;
	fprintf(out, "<details><summary>%s</summary>\n", what);
	html_func_table(out, &part, id, HTML_THREAD_ROWS);
	fputs("</details>\n", out);
	model_free(&part);
}

static void tables(FILE *out, const struct model *m, const struct html_opts *o)
{
	uint32_t i, shown = 0, max = o->thread_limit ? (uint32_t)o->thread_limit
						     : HTML_MAX_THREAD_TABLES;
	char what[96], id[48];

	fprintf(out, "<h3>Top functions per process and thread</h3>\n<p class=\"note\">At most "
		     "%u tables of %d rows each; <code>sonde report --pid P --thread N</code> shows "
		     "any one in full.</p>\n", max, HTML_THREAD_ROWS);
	for (i = 0; i < m->nprocs && m->nprocs > 1 && shown < max; i++, shown++) {
		struct model_filter flt = { m->procs[i].pid, -1 };

		snprintf(what, sizeof(what), "process %u (all its threads)", m->procs[i].pid);
		snprintf(id, sizeof(id), "functions-p%u", m->procs[i].pid);
		one_table(out, m, &flt, what, id);
	}
	for (i = 0; i < m->nthreads && m->nthreads > 1 && shown < max; i++, shown++) {
		struct model_filter flt = { m->threads[i].pid, (int)m->threads[i].index };

		snprintf(what, sizeof(what), "process %u, thread %u (tid %u)", m->threads[i].pid,
			 m->threads[i].index, m->threads[i].tid);
		snprintf(id, sizeof(id), "functions-p%u-t%u", m->threads[i].pid,
			 m->threads[i].index);
		one_table(out, m, &flt, what, id);
	}
	if (m->nthreads > 1 || m->nprocs > 1)
		html_cut_note(out, shown, (m->nprocs > 1 ? m->nprocs : 0) + m->nthreads,
			      "process and thread tables");
}

void html_threads(FILE *out, const struct model *m, const struct html_opts *o)
{
	html_section(out, "threads", "Threads and processes");
	summary(out, m);
	sync_comp(out, m);
	if ((m->nthreads > 1 || m->nprocs > 1) && o->flt.thread < 0)
		tables(out, m, o);
	html_section_end(out);
}
