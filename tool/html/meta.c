/* SPDX-License-Identifier: MIT */
/* The page's first section: the processes of the run, what measuring cost, the calibration. */
#include "html.h"
#include "report.h"

static const char *const end_names[] = { "exit", "signal", "exec", "detach" };

static void processes(FILE *out, const struct model *m)
{
	static const char *const cols[] = { "#pid", "#ppid", "program", "command line", "end",
					    "#T_m", "#T_a", "#removed %", "#probe pairs",
					    "#unmeasured", "#threads" };
	uint32_t i, k, nth;

	html_table(out, "processes", cols, 11);
	for (i = 0; i < m->nprocs; i++) {
		const struct m_process *p = &m->procs[i];
		char end[32];

		for (k = 0, nth = 0; k < m->nthreads; k++)
			nth += m->threads[k].proc == i;
		snprintf(end, sizeof(end), "%s%s", end_names[p->end_reason < 4 ? p->end_reason : 0],
			 p->end_reason == 1 ? " " : "");
		fprintf(out, "<tr><td class=\"n\">%u</td><td class=\"n\">%u</td>", p->pid, p->ppid);
		fputs("<td class=\"name\">", out);
		html_text(out, p->exe);
		fputs("</td><td class=\"name\">", out);
		html_text(out, p->cmdline);
		fprintf(out, "</td><td>%s", end);
		if (p->end_reason == 1)
			fprintf(out, "%u", p->end_signal);
		fputs("</td>", out);
		html_td_ns(out, p->t_m);
		html_td_ns(out, p->t_a);
		html_td_f(out, p->t_m > 0 ? 100.0 * (p->t_m - p->t_a) / p->t_m : 0, 1);
		html_td_u(out, p->probes);
		html_td_u(out, p->unmeasured);
		html_td_u(out, nth);
		fputs("</tr>\n", out);
	}
	html_table_end(out);
}

static void calibration(FILE *out, const struct model *m)
{
	static const char *const cols[] = { "#pid", "probes", "clock", "#ticks/ns", "#clock read ns",
					    "#period ns", "#o_in ns", "#± sd", "#o_full ns",
					    "#± sd", "#o_skip ns", "#± sd", "#batches" };
	uint32_t i;

	fputs("<h3>Calibration (in vitro, in the measured process)</h3>\n<p class=\"note\">"
	      "<code>o_full</code>: an enter+exit probe pair as an enclosing function sees it, "
	      "removed per call; <code>o_in</code>: the part inside the call's own interval; "
	      "<code>o_skip</code>: an excluded function's probes (docs/measurement.md).</p>\n",
	      out);
	html_table(out, "calibration", cols, 13);
	for (i = 0; i < m->nprocs; i++) {
		const struct m_process *p = &m->procs[i];
		const struct sprof_calib *c = &p->calib;

		fprintf(out, "<tr><td class=\"n\">%u</td><td>%s</td><td>%s</td>", p->pid,
			p->run_flags & SPROF_RUN_DYNAMIC ? "trampolines" : "hooks",
			c->clock_kind == SPROF_CLOCK_TSC ? "tsc" : "monotonic");
		html_td_f(out, c->ticks_per_ns, 4);
		html_td_f(out, c->clock_ns, 1);
		html_td_f(out, c->dt_ns, 1);
		html_td_f(out, c->o_in, 1);
		html_td_f(out, c->o_in_sd, 1);
		html_td_f(out, c->o_full, 1);
		html_td_f(out, c->o_full_sd, 1);
		html_td_f(out, c->o_skip, 1);
		html_td_f(out, c->o_skip_sd, 1);
		html_td_u(out, c->samples);
		fputs("</tr>\n", out);
	}
	html_table_end(out);
}

static void counters(FILE *out, const struct model *m)
{
	static const char *const ccols[] = { "counter", "#count", "#mean", "#min", "#max" };
	static const char *const pcols[] = { "#pid", "#thread", "phase", "#from", "#to",
					     "#duration" };
	uint32_t i;

	if (m->ncounters) {
		fputs("<h3>Counters (sonde.h)</h3>\n", out);
		html_table(out, "counters", ccols, 5);
		for (i = 0; i < m->ncounters; i++) {
			const struct m_counter *c = &m->counters[i];

			fputs("<tr>", out);
			html_td(out, c->name);
			html_td_u(out, c->count);
			html_td_f(out, c->count ? c->sum / (double)c->count : 0, 3);
			html_td_f(out, c->min, 3);
			html_td_f(out, c->max, 3);
			fputs("</tr>\n", out);
		}
		html_table_end(out);
	}
	if (!m->nphases)
		return;
	fputs("<h3>Phases (sonde.h)</h3>\n", out);
	html_table(out, "phases", pcols, 6);
	for (i = 0; i < m->nphases && i < HTML_DEFAULT_ROWS; i++) {
		const struct m_phase *p = &m->phases[i];

		fprintf(out, "<tr><td class=\"n\">%u</td><td class=\"n\">%u</td>", p->pid, p->thread);
		html_td(out, p->name);
		html_td_ns(out, (double)p->start);
		html_td_ns(out, (double)p->end);
		html_td_ns(out, p->end > p->start ? (double)(p->end - p->start) : 0);
		fputs("</tr>\n", out);
	}
	html_table_end(out);
	html_cut_note(out, m->nphases < HTML_DEFAULT_ROWS ? m->nphases : HTML_DEFAULT_ROWS,
		      m->nphases, "phases");
}

void html_meta(FILE *out, const struct model *m)
{
	html_section(out, "run", "Run and calibration");
	fprintf(out, "<p>%u process%s, %u thread%s.</p>\n", m->nprocs, m->nprocs == 1 ? "" : "es",
		m->nthreads, m->nthreads == 1 ? "" : "s");
	processes(out, m);
	calibration(out, m);
	counters(out, m);
	html_section_end(out);
}
