/* SPDX-License-Identifier: MIT */
/*
 * The trace timeline of a --trace run: the perturbation analysis of `sonde analyze` (the events
 * model for several threads, the sequential one for one), its totals and per-thread ends, and
 * its Gantt chart (measured lanes above, approximated below) inline, with fewer bars than the
 * chart `sonde analyze --gantt` writes to a file of its own.
 */
#include <stdlib.h>
#include <string.h>

#include "gantt.h"
#include "html.h"
#include "perturb.h"
#include "report.h"
#include "symbols.h"
#include "trace_read.h"
#include "util.h"

#define TL_WIDTH 1200
#define TL_DEPTH 3
#define TL_MAX_RECTS 6000

/* Function names by index in f->funcs, resolved as `sonde analyze` does. Free each. */
static char **names_of(const struct strc_file *f)
{
	char **names = xcalloc(f->nfuncs ? f->nfuncs : 1, sizeof(*names));
	struct symtab *st = symtab__new();
	uint32_t i;

	for (i = 0; i < f->nfuncs; i++) {
		const struct strc_func *fn = &f->funcs[i];
		struct sym_info si = { fn->name && *fn->name ? fn->name : "?", "", "", 0 };
		int32_t mod = fn->module;

		if (fn->kind == SPROF_FUNC)
			symtab__resolve(st, mod >= 0 && (uint32_t)mod < f->nmodules
						    ? f->modules[mod].path : NULL,
					fn->vaddr, &si);
		names[i] = xstrdup(si.func);
	}
	symtab__delete(st);
	return names;
}

static const char *model_name(enum pt_model m)
{
	return m == PT_SEQUENTIAL ? "sequential" : m == PT_FORKJOIN ? "fork-join" : "events";
}

static void totals(FILE *out, const struct pt_trace *t, const struct pt_totals *tt, double tpn,
		   uint32_t pid)
{
	static const char *const cols[] = { "#thread", "#events", "#measured end", "#approx. end",
					    "#removed", "#simultaneous" };
	char a[32], b[32], c[32], d[32];
	uint32_t k;

	fprintf(out, "<p>T_m <b>%s</b> (first to last event); T_a sequential <b>%s</b>, "
		     "fork-join <b>%s</b>, %s-model trace <b>%s</b> (MODELS §2.2).</p>\n",
		fmt_time(a, sizeof(a), tt->t_m / tpn), fmt_time(b, sizeof(b), tt->t_a_seq / tpn),
		fmt_time(c, sizeof(c), tt->t_a_fj / tpn), model_name(t->model),
		fmt_time(d, sizeof(d), tt->end / tpn));
	{
		char id[40];

		snprintf(id, sizeof(id), "timeline-threads-%u", pid);
		html_table(out, id, cols, 6);
	}
	for (k = 0; k < t->nth; k++) {
		const struct pt_thread *th = &t->th[k];
		double tm, ta;

		if (!th->nev)
			continue;
		tm = (double)(th->ev[th->nev - 1].t - t->t0);
		ta = th->ta[th->nev - 1];
		fputs("<tr>", out);
		html_td_u(out, th->index);
		html_td_u(out, th->nev);
		html_td_ns(out, tm / tpn);
		html_td_ns(out, ta / tpn);
		html_td_ns(out, (tm - ta) / tpn);
		html_td_u(out, th->simultaneous);
		fputs("</tr>\n", out);
	}
	html_table_end(out);
	fprintf(out, "<p class=\"note\">Reorderings across threads: %llu (and %llu ties within the "
		     "clock's resolution).</p>\n", (unsigned long long)t->reorders,
		(unsigned long long)t->ties);
}

/* The chart into memory, then inline without its XML declaration. */
static void chart(FILE *out, const struct strc_file *f, const struct pt_trace *t,
		  const char *const *names)
{
	struct gantt_opts go = { .depth = TL_DEPTH, .width = TL_WIDTH, .max_rects = TL_MAX_RECTS };
	char title[128], *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	const char *svg;

	if (!mem)
		return;
	snprintf(title, sizeof(title), "pid %u: measured (upper lane) and approximated (lower "
		 "lane), %s model", f->pid, model_name(t->model));
	go.title = title;
	gantt_write(mem, f, t, names, &go);
	fclose(mem);
	svg = buf ? strstr(buf, "<svg") : NULL;
	if (svg)
		fprintf(out, "<div class=\"gantt\" data-pid=\"%u\">%s</div>\n", f->pid, svg);
	fprintf(out, "<p class=\"note\">The top %d call levels per lane; neighbouring bars closer "
		     "than half a pixel are merged, at most %d bars (<code>sonde analyze --gantt "
		     "FILE.svg</code> draws more).</p>\n", TL_DEPTH, TL_MAX_RECTS);
	free(buf);
}

void html_timeline(FILE *out, const char *path)
{
	struct strc_file *f;
	struct pt_costs costs;
	struct pt_trace t;
	struct pt_totals tt;
	char err[256], **names;
	uint32_t i;

	fputs("<h3>Trace <code>", out);
	html_text(out, path);
	fputs("</code></h3>\n", out);
	if (strc_read_file(path, &f, err, sizeof(err)) != 0) {
		fputs("<p class=\"note\">Not readable: ", out);
		html_text(out, err);
		fputs("</p>\n", out);
		return;
	}
	if (pt_costs_of(f, 0, &costs) != 0 || pt_init(&t, f, &costs) != 0) {
		fputs("<p class=\"note\">No calibration record or no event: not analysed.</p>\n", out);
		strc_free(f);
		return;
	}
	pt_run(&t, f->nthreads > 1 ? PT_EVENTS : PT_SEQUENTIAL);
	pt_reorders(&t);
	pt_totals(&t, &tt);
	totals(out, &t, &tt, pt_ticks_per_ns(f), f->pid);
	names = names_of(f);
	chart(out, f, &t, (const char *const *)names);
	for (i = 0; i < f->nfuncs; i++)
		free(names[i]);
	free(names);
	pt_free(&t);
	strc_free(f);
}
