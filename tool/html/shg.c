/* SPDX-License-Identifier: MIT */
/*
 * The Search History Graph on the page. `sonde report --html` runs the post-mortem search
 * itself (the same engine, hypotheses and defaults as `sonde consult TRACE`): the page then
 * always matches the trace it shows, and needs no file of a consult run. Drawn as a tree by
 * each node's first parent (later parents dashed), coloured by state, bottlenecks outlined;
 * below it when each true node held, the node table and the explanations.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "consult/engine.h"
#include "consult/hyp.h"
#include "consult/trace_source.h"
#include "consult/view.h"
#include "html.h"
#include "shg_hist.h"
#include "trace_read.h"
#include "util.h"

#define SHG_MAX_NODES 400
#define SHG_COL 250
#define SHG_BOX_W 236
#define SHG_ROW 40
#define SHG_BOX_H 34
#define SHG_PERIOD_NS 50000000ull
#define WHEN_MAX_ROWS 60

static const char *const fill[CS_STATE_COUNT] = {
	[CS_UNTESTED] = "#ffffff", [CS_TESTING] = "#ffffe0", [CS_TRUE] = "#98fb98",
	[CS_FALSE] = "#ffb6c1", [CS_DEFERRED] = "#add8e6", [CS_NEVER] = "#d3d3d3",
	[CS_UNAVAILABLE] = "#ffffff",
};

struct layout {
	uint32_t *row, *depth; /* per node; row UINT32_MAX: not drawn */
	uint32_t rows, max_depth;
};

/* Depth-first by first parent: each node one row, at its depth's column. */
static void place(const struct cs_engine *e, struct layout *l, uint32_t id, uint32_t depth)
{
	const struct cs_node *n = &e->nodes[id];
	uint32_t k;

	if (l->row[id] != UINT32_MAX || l->rows >= SHG_MAX_NODES)
		return;
	l->row[id] = l->rows++;
	l->depth[id] = depth;
	if (depth > l->max_depth)
		l->max_depth = depth;
	for (k = 0; k < n->nkids; k++) {
		const struct cs_node *c = &e->nodes[n->kids[k]];

		if (c->nparents && c->parents[0] == id)
			place(e, l, n->kids[k], depth + 1);
	}
}

static void box_text(FILE *out, double x, double y, const char *s, size_t max, int bold)
{
	char buf[64];
	size_t len = strlen(s);

	if (len > max) { /* keep the end of a focus: the procedure is what tells them apart */
		size_t from = len - (max - 1);

		while (from < len && ((unsigned char)s[from] & 0xc0) == 0x80)
			from++;
		snprintf(buf, sizeof(buf), "\xe2\x80\xa6%s", s + from);
		s = buf;
	}
	fprintf(out, "<text x=\"%.0f\" y=\"%.0f\"%s>", x, y, bold ? " font-weight=\"bold\"" : "");
	html_text(out, s);
	fputs("</text>", out);
}

static void node_box(FILE *out, const struct cs_engine *e, const struct layout *l, uint32_t id)
{
	const struct cs_node *n = &e->nodes[id];
	double x = 4 + l->depth[id] * SHG_COL, y = 4 + l->row[id] * SHG_ROW;
	char focus[4096], line[300];
	int bn = cs_node_is_bottleneck(e, n);

	cs_focus_str(focus, sizeof(focus), &n->focus);
	fprintf(out, "<g class=\"shg-node\" data-id=\"%u\" data-state=\"%s\"%s data-hyp=\"", id,
		cs_state_name(n->state), bn ? " data-bottleneck=\"1\"" : "");
	html_attr(out, e->lib->hyps[n->hyp].name);
	fputs("\" data-focus=\"", out);
	html_attr(out, focus);
	fprintf(out, "\" data-phase=\"");
	if (n->phase >= 0)
		html_attr(out, e->phases[n->phase].name);
	fputs("\"><title>", out);
	snprintf(line, sizeof(line), "%s %.200s, %s: %s", e->lib->hyps[n->hyp].name, focus,
		 cs_node_when(e, n), cs_state_name(n->state));
	html_text(out, line);
	if (n->why) {
		fputs(" (", out);
		html_text(out, n->why);
		fputs(")", out);
	}
	fprintf(out, "</title><rect x=\"%.0f\" y=\"%.0f\" width=\"%d\" height=\"%d\" rx=\"4\" "
		     "fill=\"%s\" stroke=\"#333\" stroke-width=\"%s\"%s/>", x, y, SHG_BOX_W, SHG_BOX_H,
		fill[n->state], bn ? "3" : "1",
		n->state == CS_UNAVAILABLE ? " stroke-dasharray=\"4 3\"" : "");
	snprintf(line, sizeof(line), "%s%s", e->lib->hyps[n->hyp].name,
		 n->phase >= 0 ? " " : "");
	if (n->phase >= 0)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "[%s]",
			 e->phases[n->phase].name);
	box_text(out, x + 5, y + 14, line, 36, bn);
	box_text(out, x + 5, y + 28, focus, 36, 0);
	fputs("</g>\n", out);
}

static void edges(FILE *out, const struct cs_engine *e, const struct layout *l)
{
	uint32_t i, k;

	for (i = 0; i < e->nnodes; i++)
		for (k = 0; k < e->nodes[i].nkids; k++) {
			uint32_t c = e->nodes[i].kids[k];
			const struct cs_node *cn = &e->nodes[c];
			double x1, y1, x2, y2;

			if (l->row[i] == UINT32_MAX || l->row[c] == UINT32_MAX)
				continue;
			x1 = 4 + l->depth[i] * SHG_COL + SHG_BOX_W;
			y1 = 4 + l->row[i] * SHG_ROW + SHG_BOX_H / 2.0;
			x2 = 4 + l->depth[c] * SHG_COL;
			y2 = 4 + l->row[c] * SHG_ROW + SHG_BOX_H / 2.0;
			fprintf(out, "<path d=\"M%.0f %.0f H%.0f V%.0f H%.0f\" fill=\"none\" "
				     "stroke=\"#777\"%s/>\n", x1, y1, x1 + 7, y2, x2,
				cn->nparents && cn->parents[0] == i ? "" : " stroke-dasharray=\"3 3\"");
		}
}

static void graph(FILE *out, const struct cs_engine *e)
{
	struct layout l = { 0 };
	uint32_t i;

	l.row = xmalloc((e->nnodes ? e->nnodes : 1) * sizeof(uint32_t));
	l.depth = xcalloc(e->nnodes ? e->nnodes : 1, sizeof(uint32_t));
	for (i = 0; i < e->nnodes; i++)
		l.row[i] = UINT32_MAX;
	for (i = 0; i < e->nnodes; i++) /* the roots: TopLevel and each phase's */
		if (!e->nodes[i].nparents)
			place(e, &l, i, 0);
	fprintf(out, "<svg class=\"shg\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		     "font-size=\"11\" font-family=\"sans-serif\" data-nodes=\"%u\">\n",
		(l.max_depth + 1) * SHG_COL + 8, l.rows * SHG_ROW + 8, (l.max_depth + 1) * SHG_COL + 8,
		l.rows * SHG_ROW + 8, l.rows);
	edges(out, e, &l);
	for (i = 0; i < e->nnodes; i++)
		if (l.row[i] != UINT32_MAX)
			node_box(out, e, &l, i);
	fputs("</svg>\n<p class=\"legend note\">", out);
	for (i = CS_TRUE; i < CS_STATE_COUNT; i++)
		fprintf(out, "<span style=\"background:%s;border:1px solid #333\"></span>%s", fill[i],
			cs_state_name((enum cs_state)i));
	fputs("; thick outline: a bottleneck (true, and no refinement of it was); dashed edges: "
	      "a node's later parents</p>\n", out);
	html_cut_note(out, l.rows, e->nnodes, "nodes of the graph");
	free(l.row);
	free(l.depth);
}

/* One row per node that was ever true: grey while observed, green while true. */
static void when(FILE *out, const struct cs_engine *e, uint64_t run_ns)
{
	double w = 1000, left = 330, px = run_ns ? (w - left - 10) / (double)run_ns : 0;
	uint32_t i, rows = 0, k;

	for (i = 0; i < e->nnodes; i++)
		rows += e->nodes[i].was_true && rows < WHEN_MAX_ROWS;
	if (!rows)
		return;
	fprintf(out, "<h3>When each hypothesis held</h3>\n<svg class=\"when\" width=\"%.0f\" "
		     "height=\"%u\" viewBox=\"0 0 %.0f %u\" font-size=\"11\" "
		     "font-family=\"sans-serif\">\n", w, rows * 16 + 24, w, rows * 16 + 24);
	for (i = 0, rows = 0; i < e->nnodes && rows < WHEN_MAX_ROWS; i++) {
		const struct cs_node *n = &e->nodes[i];
		char focus[4096], line[300];
		double y = 4 + rows * 16, from = 0;
		int on = 0;

		if (!n->was_true)
			continue;
		rows++;
		cs_focus_str(focus, sizeof(focus), &n->focus);
		snprintf(line, sizeof(line), "%s %.200s%s%.60s", e->lib->hyps[n->hyp].name, focus,
			 n->phase >= 0 ? " @" : "", n->phase >= 0 ? e->phases[n->phase].name : "");
		box_text(out, 2, y + 10, line, 50, cs_node_is_bottleneck(e, n));
		fprintf(out, "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"12\" "
			     "fill=\"#e4e4e4\"/>", left + (double)n->t_start * px, y,
			((double)(n->t_end ? n->t_end : e->now) - (double)n->t_start) * px);
		for (k = 0; k <= n->nflips; k++) {
			double t = k < n->nflips ? (double)n->flips[k].t
						 : (double)(n->t_end ? n->t_end : e->now);

			if (on && t > from)
				fprintf(out, "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"12\" "
					     "fill=\"#3a3\"/>", left + from * px, y, (t - from) * px);
			if (k < n->nflips) {
				on = n->flips[k].to_true;
				from = t;
			}
		}
		fputs("\n", out);
	}
	fprintf(out, "<text x=\"%.0f\" y=\"%u\">0 s</text><text x=\"%.0f\" y=\"%u\" "
		     "text-anchor=\"end\">%.3f s</text></svg>\n", left, rows * 16 + 18, w - 10,
		rows * 16 + 18, (double)run_ns / 1e9);
}

static void table(FILE *out, const struct cs_engine *e, uint32_t pid)
{
	static const char *const cols[] = { "#node", "hypothesis", "focus", "when", "state",
					    "bottleneck", "#value", "#share %", "#observed s",
					    "why it stopped" };
	char id[40], focus[4096];
	uint32_t i;

	snprintf(id, sizeof(id), "shg-nodes-%u", pid);
	html_table(out, id, cols, 10);
	for (i = 0; i < e->nnodes && i < SHG_MAX_NODES; i++) {
		const struct cs_node *n = &e->nodes[i];
		int seen = n->observed > 0 && e->lib->hyps[n->hyp].test;

		cs_focus_str(focus, sizeof(focus), &n->focus);
		fputs("<tr>", out);
		html_td_u(out, i);
		html_td(out, e->lib->hyps[n->hyp].name);
		html_td(out, focus);
		html_td(out, cs_node_when(e, n));
		html_td(out, cs_state_name(n->state));
		html_td(out, cs_node_is_bottleneck(e, n) ? "yes" : "");
		html_td_f(out, seen && isfinite(n->value) ? n->value : 0, 4);
		html_td_f(out, n->share >= 0 && n->observed > 0 ? 100 * n->share : 0, 1);
		html_td_f(out, n->observed, 2);
		html_td(out, n->why ? n->why : "");
		fputs("</tr>\n", out);
	}
	html_table_end(out);
	html_cut_note(out, i, e->nnodes, "nodes");
}

static uint32_t profile_cb(void *arg, const struct cs_focus *f, uint64_t t0, uint64_t t1,
			   struct ts_row *rows, uint32_t max, double *span)
{
	return trace_source_profile(arg, f, t0, t1, rows, max, span);
}

static void explanations(FILE *out, const struct cs_engine *e, uint64_t run_ns,
			 struct cs_source *src)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);

	if (!mem)
		return;
	cs_view_explain(mem, e, run_ns, profile_cb, src);
	fclose(mem);
	fputs("<h3>Explanations</h3>\n<pre class=\"explain\">", out);
	html_text(out, buf && *buf == '\n' ? buf + 1 : buf);
	fputs("</pre>\n", out);
	free(buf);
}

static void summary(FILE *out, const struct cs_engine *e, const struct trace_source_info *ti)
{
	uint32_t count[CS_STATE_COUNT] = { 0 }, i, bn = 0;

	for (i = 0; i < e->nnodes; i++) {
		count[e->nodes[i].state]++;
		bn += cs_node_is_bottleneck(e, &e->nodes[i]);
	}
	fprintf(out, "<p class=\"shg-summary\">%.3f s, %u thread%s, samples every %.0f ms: "
		     "<b>%u nodes</b> (%u true, %u false, %u never concluded, %u unavailable), "
		     "<b>%u bottleneck%s</b>.</p>\n", (double)ti->run_ns / 1e9, ti->threads,
		ti->threads == 1 ? "" : "s", (double)ti->period_ns / 1e6, e->nnodes,
		count[CS_TRUE], count[CS_FALSE], count[CS_NEVER], count[CS_UNAVAILABLE], bn,
		bn == 1 ? "" : "s");
}

static struct hyp_lib *hypotheses(FILE *out)
{
	struct hyp_lib *lib = hyp_lib_new();
	char path[PATH_MAX];

	if (hyp_builtin_path(path, sizeof(path)) == 0 && hyp_load_file(lib, path) == 0)
		return lib;
	fputs("<p class=\"note\">The built-in hypotheses could not be read: no search.</p>\n", out);
	hyp_lib_free(lib);
	return NULL;
}

void html_consult(FILE *out, const char *path)
{
	struct strc_file *f;
	struct cs_source *src;
	struct cs_engine *e;
	struct trace_source_info ti;
	struct cs_params par;
	struct hyp_lib *lib;
	struct shg_rec *rec;
	char err[256];

	fputs("<h3>Search of <code>", out);
	html_text(out, path);
	fputs("</code> (defaults of <code>sonde consult</code>)</h3>\n", out);
	if (strc_read_file(path, &f, err, sizeof(err)) != 0) {
		fputs("<p class=\"note\">Not readable: ", out);
		html_text(out, err);
		fputs("</p>\n", out);
		return;
	}
	src = trace_source_new(f, SHG_PERIOD_NS, err, sizeof(err));
	lib = src ? hypotheses(out) : NULL;
	if (!lib) {
		if (!src) {
			fputs("<p class=\"note\">Not searchable: ", out);
			html_text(out, err);
			fputs("</p>\n", out);
		}
		if (src)
			trace_source_free(src);
		strc_free(f);
		return;
	}
	trace_source_info(src, &ti);
	cs_params_default(&par);
	e = cs_engine_new(lib, &par, src);
	rec = shg_rec_new();
	e->progress = shg_rec_step;
	e->progress_arg = rec;
	cs_engine_run(e);
	summary(out, e, &ti);
	graph(out, e);
	when(out, e, ti.run_ns);
	shg_histograms(out, e, rec, ti.run_ns, SHG_PERIOD_NS);
	shg_rec_free(rec);
	explanations(out, e, ti.run_ns, src);
	fputs("<details><summary>Every node of the graph</summary>\n", out);
	table(out, e, f->pid);
	fputs("</details>\n", out);
	cs_engine_free(e);
	hyp_lib_free(lib);
	trace_source_free(src);
	strc_free(f);
}
