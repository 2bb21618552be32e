/* SPDX-License-Identifier: MIT */
/*
 * Icicle graphs (flame graphs drawn downwards) as inline SVG: the measured call-path tree with
 * widths by compensated inclusive time, and the sampled call paths with widths by samples.
 * Bounded: frames narrower than half a pixel, deeper than FL_MAX_DEPTH levels or beyond
 * FL_MAX_RECTS are left out, and the page says how many (zooming cannot show them). Each frame
 * carries where it is drawn (data-x, data-w, data-d): the page's script zooms with them.
 */
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "report.h"
#include "sample_model.h"
#include "util.h"

#define FL_WIDTH 1200.0
#define FL_ROW 17
#define FL_MAX_DEPTH 64
#define FL_MAX_RECTS 4000
#define FL_CHAR_PX 6.6 /* an average character of the 11 px sans-serif labels */

/* A tree either graph draws: values are what widths are proportional to. */
struct fl_node {
	uint32_t first_child, next_sibling;
	double value, self;
	uint64_t calls;
	const char *name;
};

struct fl_tree {
	struct fl_node *n;
	uint32_t count;
	int timed;        /* values are ns (else samples) */
	FILE *body;       /* the rects, written before the size is known */
	double total;
	uint32_t rects, hidden, depth;
};

/* A warm colour from the name, stable across runs (FlameGraph's convention). */
static void colour(const char *name, int *r, int *g, int *b)
{
	uint32_t h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	*r = 205 + (int)(h % 50);
	*g = 80 + (int)((h >> 8) % 130);
	*b = 40 + (int)((h >> 16) % 50);
}

static void label(FILE *out, const char *name, double w)
{
	size_t fit = w > 12 ? (size_t)((w - 6) / FL_CHAR_PX) : 0, len = strlen(name);
	char buf[256];

	if (fit < 3)
		return;
	if (len > fit) { /* cut at a character boundary, then ".." */
		size_t k = fit - 2 < sizeof(buf) - 3 ? fit - 2 : sizeof(buf) - 3;

		while (k > 0 && ((unsigned char)name[k] & 0xc0) == 0x80)
			k--;
		memcpy(buf, name, k);
		strcpy(buf + k, "..");
	} else {
		snprintf(buf, sizeof(buf), "%s", name);
	}
	html_text(out, buf);
}

static void frame(struct fl_tree *t, const struct fl_node *n, double x, double w, uint32_t depth)
{
	FILE *out = t->body;
	char v[32], s[32];
	int r, g, b;

	colour(n->name, &r, &g, &b);
	/* where it is drawn, for the page's script to zoom (page.c) */
	fprintf(out, "<g data-x=\"%.1f\" data-w=\"%.1f\" data-d=\"%u\"><title>", x, w, depth);
	html_text(out, n->name);
	if (t->timed)
		fprintf(out, "\n%s inclusive (c), %.2f %%; %s exclusive (c); %llu calls",
			fmt_time(v, sizeof(v), n->value), 100 * n->value / t->total,
			fmt_time(s, sizeof(s), n->self), (unsigned long long)n->calls);
	else
		fprintf(out, "\n%.0f samples, %.2f %%; %.0f innermost", n->value,
			100 * n->value / t->total, n->self);
	fprintf(out, "</title><rect x=\"%.1f\" y=\"%u\" width=\"%.1f\" height=\"%d\" "
		     "fill=\"rgb(%d,%d,%d)\"/>", x, depth * FL_ROW, w, FL_ROW - 1, r, g, b);
	if (w > 20) {
		fprintf(out, "<text x=\"%.1f\" y=\"%u\">", x + 3, depth * FL_ROW + 12);
		label(out, n->name, w);
		fputs("</text>", out);
	}
	fputs("</g>\n", out);
}

static int by_value(const void *x, const void *y, void *arg)
{
	const struct fl_tree *t = arg;
	double a = t->n[*(const uint32_t *)x].value, b = t->n[*(const uint32_t *)y].value;

	return a < b ? 1 : a > b ? -1 : 0;
}

/* Node k at x, w px wide, depth levels down; its children left to right, largest first. */
static void draw(struct fl_tree *t, uint32_t k, double x, double w, uint32_t depth)
{
	const struct fl_node *n = &t->n[k];
	uint32_t c, nk = 0, i, *kids;
	double sum = 0, scale;

	if (depth > 0) {
		if (w < 0.5 || depth > FL_MAX_DEPTH || t->rects >= FL_MAX_RECTS) {
			t->hidden++;
			return;
		}
		t->rects++;
		frame(t, n, x, w, depth - 1);
		if (depth > t->depth)
			t->depth = depth;
	}
	for (c = n->first_child; c != M_NONE; c = t->n[c].next_sibling)
		nk++;
	if (!nk)
		return;
	kids = xmalloc(nk * sizeof(*kids));
	nk = 0;
	for (c = n->first_child; c != M_NONE; c = t->n[c].next_sibling)
		if (t->n[c].value > 0) {
			kids[nk++] = c;
			sum += t->n[c].value;
		}
	qsort_r(kids, nk, sizeof(*kids), by_value, t);
	/* compensation can leave children a hair above their parent: never wider than it */
	scale = n->value > 0 && sum > n->value ? w / sum : n->value > 0 ? w / n->value : 0;
	for (i = 0; i < nk; i++) {
		double cw = t->n[kids[i]].value * scale;

		draw(t, kids[i], x, cw, depth + 1);
		x += cw;
	}
	free(kids);
}

static void render(FILE *out, struct fl_tree *t, const char *id, const char *caption)
{
	char *buf = NULL;
	size_t len = 0;

	t->body = open_memstream(&buf, &len);
	if (!t->body)
		return;
	t->total = t->n[0].value > 0 ? t->n[0].value : 1;
	draw(t, 0, 0, FL_WIDTH, 0);
	fclose(t->body);
	fprintf(out, "<p class=\"note\">%s Hover a frame for its figures, click it to zoom to it "
		     "(its callers above it, full width) <button type=\"button\" class=\"unzoom\" "
		     "data-svg=\"%s\">reset zoom</button></p>\n", caption, id);
	fprintf(out, "<svg id=\"%s\" class=\"flame\" data-zoom=\"\" "
		     "width=\"%.0f\" height=\"%u\" viewBox=\"0 0 %.0f %u\" font-size=\"11\" "
		     "font-family=\"sans-serif\" data-frames=\"%u\">\n",
		id, FL_WIDTH, t->depth * FL_ROW + 2, FL_WIDTH, t->depth * FL_ROW + 2, t->rects);
	fwrite(buf, 1, len, out);
	fputs("</svg>\n", out);
	if (t->hidden)
		fprintf(out, "<p class=\"cut\">%u frame%s not drawn: narrower than half a pixel, "
			     "deeper than %d levels, or beyond %d frames.</p>\n",
			t->hidden, t->hidden == 1 ? "" : "s", FL_MAX_DEPTH, FL_MAX_RECTS);
	free(buf);
}

/* The model's call-path tree, leaving out paths with no calls and nothing measured below. */
static void measured(FILE *out, const struct model *m)
{
	struct fl_tree t = { .timed = 1 };
	uint32_t i;
	double root = 0;

	t.n = xcalloc(m->nnodes ? m->nnodes : 1, sizeof(*t.n));
	for (i = 0; i < m->nnodes; i++) {
		const struct m_node *x = &m->nodes[i];
		int keep = x->calls || x->first_child != M_NONE;

		t.n[i] = (struct fl_node){ x->first_child, x->next_sibling,
					   keep && x->incl_c > 0 ? x->incl_c : 0,
					   x->excl_c > 0 ? x->excl_c : 0, x->calls,
					   x->func != M_NONE ? m->funcs[x->func].name : "all" };
		if (x->parent == 0 && i)
			root += t.n[i].value;
	}
	t.n[0].value = root;
	t.count = m->nnodes;
	render(out, &t, "flame-measured", "Measured call paths, all threads merged: width is the "
	       "compensated inclusive time, callers above callees.");
	free(t.n);
}

static void sampled(FILE *out, const struct model *m)
{
	const struct m_samples *s = m->samples;
	struct fl_tree t = { .timed = 0 };
	uint32_t i;

	t.n = xcalloc(s->nnodes ? s->nnodes : 1, sizeof(*t.n));
	for (i = 0; i < s->nnodes; i++) {
		const struct ms_node *x = &s->nodes[i];

		t.n[i] = (struct fl_node){ x->first_child, x->next_sibling, (double)x->total,
					   (double)x->self, 0,
					   x->func != M_NONE && x->func < m->nfuncs
						   ? m->funcs[x->func].name : "all" };
	}
	t.count = s->nnodes;
	render(out, &t, "flame-sampled", "Sampled call paths (sonde run --sample): width is the "
	       "number of samples with the path on the stack.");
	free(t.n);
}

void html_flame(FILE *out, const struct model *m)
{
	html_section(out, "callpaths", "Call paths (icicle graphs)");
	if (m->nnodes > 1)
		measured(out, m);
	if (m->samples && m->samples->nnodes > 1)
		sampled(out, m);
	if (m->nnodes <= 1 && !(m->samples && m->samples->nnodes > 1))
		fputs("<p class=\"note\">No call path in this run.</p>\n", out);
	html_section_end(out);
}
