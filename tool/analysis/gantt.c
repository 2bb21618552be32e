/* SPDX-License-Identifier: MIT */
/* The Gantt chart of a trace, measured and approximated, as SVG: see gantt.h. */
#include "gantt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define LEFT 190    /* px: thread labels ("thread 12 (tid 1234567) measured" at 11 px) */
#define RIGHT 20
#define TOP 56      /* px: title and time axis */
#define ROW 11      /* px per call level; bars are ROW - 2 high */
#define LANE_GAP 3
#define PAIR_GAP 12
#define NCOLOURS 12
#define MAX_RECTS 200000 /* beyond this the file gets too large to open: bars are left out */
#define MAX_EDGES 20000
#define OTHER PT_NONE

static const char *const palette[NCOLOURS] = {
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
	"#b07aa1", "#ff9da7", "#9c755f", "#17becf", "#8cd17d", "#d37295",
};
#define OTHER_COLOUR "#bab0ac"

/* A call open while a thread's events are replayed. */
struct frame {
	uint32_t id;
	uint32_t pad;
	double start; /* ns */
};

/* A bar waiting to be drawn: neighbours of one colour closer than half a pixel become one. */
struct pending {
	int valid;
	uint32_t colour, func, n;
	double x0, x1;
};

struct chart {
	FILE *out;
	const struct strc_file *f;
	const struct pt_trace *t;
	const char *const *names;
	const struct gantt_opts *o;
	double tpn, span, px_per_ns;
	int lane_h, pair_h;
	struct frame *stack;
	uint32_t depth, cap;
	double *total;        /* per function: time in drawn levels (measured), ns */
	uint32_t *colour;     /* per function: palette index or OTHER */
	struct pending pend[16];
	double lane_y;        /* top of the lane being drawn */
	uint64_t rects, dropped;
	int pass;             /* 0: sum the time per function; 1: draw */
};

static uint32_t func_index(const struct strc_file *f, uint32_t id)
{
	return id < f->func_id_cap && f->func_by_id ? f->func_by_id[id] : OTHER;
}

static void xml_escaped(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		default:
			if ((unsigned char)*s >= 0x20)
				fputc(*s, out);
		}
	}
}

static void put_name(const struct chart *c, uint32_t fi, uint32_t id)
{
	if (c->names && fi != OTHER && c->names[fi])
		xml_escaped(c->out, c->names[fi]);
	else
		fprintf(c->out, "f%u", id);
}

static double x_of(const struct chart *c, double ns)
{
	return LEFT + ns * c->px_per_ns;
}

static void flush_bar(struct chart *c, int level)
{
	struct pending *p = &c->pend[level];
	double w = p->x1 - p->x0;

	if (!p->valid)
		return;
	p->valid = 0;
	if (c->rects >= (c->o->max_rects > 0 ? (uint64_t)c->o->max_rects : MAX_RECTS)) {
		c->dropped++;
		return;
	}
	c->rects++;
	fprintf(c->out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\">",
		p->x0, c->lane_y + 1 + level * ROW, w < 0.3 ? 0.3 : w, ROW - 2,
		p->colour == OTHER ? OTHER_COLOUR : palette[p->colour]);
	if (p->n == 1 && w >= 2) {
		fputs("<title>", c->out);
		put_name(c, p->func, c->f->funcs && p->func != OTHER ? c->f->funcs[p->func].id : 0);
		fprintf(c->out, " %.3f us</title>", w / c->px_per_ns / 1e3);
	}
	fputs("</rect>\n", c->out);
}

static void bar(struct chart *c, int level, uint32_t fi, double t0, double t1)
{
	struct pending *p = &c->pend[level];
	uint32_t colour = fi == OTHER ? OTHER : c->colour[fi];
	double x0 = x_of(c, t0), x1 = x_of(c, t1);

	if (p->valid && p->colour == colour && x0 <= p->x1 + 0.5) {
		if (x1 > p->x1)
			p->x1 = x1;
		p->n++;
		return;
	}
	flush_bar(c, level);
	*p = (struct pending){ 1, colour, fi, 1, x0, x1 };
}

/* A call closed at time t (ns): summed or drawn when it is in the levels shown. */
static void close_frame(struct chart *c, uint32_t level, double t)
{
	const struct frame *fr = &c->stack[level];
	uint32_t fi = func_index(c->f, fr->id);

	if ((int)level >= c->o->depth)
		return;
	if (c->pass == 0) {
		if (fi != OTHER)
			c->total[fi] += t - fr->start;
	} else {
		bar(c, (int)level, fi, fr->start, t);
	}
}

static void open_frame(struct chart *c, uint32_t id, double t)
{
	if (c->depth == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		c->stack = xrealloc(c->stack, c->cap * sizeof(*c->stack));
	}
	c->stack[c->depth++] = (struct frame){ .id = id, .start = t };
}

/* An EXIT closes the innermost open call of its function and every call above it. */
static void exit_frame(struct chart *c, uint32_t id, double t)
{
	uint32_t d = c->depth;

	while (d > 0 && c->stack[d - 1].id != id)
		d--;
	if (!d)
		return; /* matches no open call: ignored, as the runtime ignores it */
	while (c->depth >= d) {
		close_frame(c, c->depth - 1, t);
		c->depth--;
	}
}

static void replay(struct chart *c, const struct pt_thread *th, int approx)
{
	size_t i;
	double t = 0;

	c->depth = 0;
	for (i = 0; i < th->nev; i++) {
		const struct strc_event *e = &th->ev[i];

		t = (approx ? th->ta[i] : (double)(int64_t)(e->t - c->t->t0)) / c->tpn;
		if (e->type == STRC_ENTER || e->type == STRC_REGION_BEGIN)
			open_frame(c, e->id, t);
		else if (e->type == STRC_EXIT || e->type == STRC_REGION_END)
			exit_frame(c, e->id, t);
		else if (e->type == STRC_UNWIND)
			for (; c->depth > e->arg; c->depth--)
				close_frame(c, c->depth - 1, t);
	}
	for (; c->depth > 0; c->depth--) /* calls still open end with the stream */
		close_frame(c, c->depth - 1, t);
}

static int by_total_desc(const void *a, const void *b, void *arg)
{
	const double *total = arg;
	double x = total[*(const uint32_t *)a], y = total[*(const uint32_t *)b];

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The functions with the most time in the drawn levels get the palette; the rest are grey. */
static uint32_t choose_colours(struct chart *c, uint32_t *order)
{
	uint32_t i, k, n = c->f->nfuncs, shown = 0;

	c->pass = 0;
	for (k = 0; k < c->t->nth; k++)
		replay(c, &c->t->th[k], 0);
	for (i = 0; i < n; i++) {
		order[i] = i;
		c->colour[i] = OTHER;
	}
	qsort_r(order, n, sizeof(*order), by_total_desc, c->total);
	for (i = 0; i < n && i < NCOLOURS && c->total[order[i]] > 0; i++)
		c->colour[order[i]] = shown++;
	return shown;
}

static double nice_step(double span_ms)
{
	double raw = span_ms / 10, p = pow(10, floor(log10(raw > 0 ? raw : 1e-6)));

	return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

static void axis(const struct chart *c, int height)
{
	double step = nice_step(c->span / 1e6), ms;

	fprintf(c->out, "<g stroke=\"#ddd\" stroke-width=\"0.5\">\n");
	for (ms = 0; ms * 1e6 <= c->span * 1.0001; ms += step)
		fprintf(c->out, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\"/>\n",
			x_of(c, ms * 1e6), TOP - 6, x_of(c, ms * 1e6), height);
	fprintf(c->out, "</g>\n<g text-anchor=\"middle\" fill=\"#333\">\n");
	for (ms = 0; ms * 1e6 <= c->span * 1.0001; ms += step)
		fprintf(c->out, "<text x=\"%.2f\" y=\"%d\">%.6g ms</text>\n", x_of(c, ms * 1e6),
			TOP - 10, ms);
	fprintf(c->out, "</g>\n");
}

static double lane_top(const struct chart *c, uint32_t k, int approx)
{
	return TOP + k * c->pair_h + (approx ? c->lane_h + LANE_GAP : 0);
}

static void lanes(struct chart *c)
{
	uint32_t k;
	int approx, level;

	for (k = 0; k < c->t->nth; k++) {
		const struct strc_thread *st = &c->f->threads[k];

		for (approx = 0; approx < 2; approx++) {
			c->lane_y = lane_top(c, k, approx);
			fprintf(c->out, "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
					"fill=\"%s\"/>\n",
				LEFT, c->lane_y, c->span * c->px_per_ns, c->lane_h,
				approx ? "#eef4fb" : "#f4f4f4");
			fprintf(c->out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", LEFT - 6,
				c->lane_y + 10);
			if (!approx)
				fprintf(c->out, "thread %u (tid %u) measured</text>\n", st->index,
					st->tid);
			else
				fprintf(c->out, "approximated</text>\n");
			replay(c, &c->t->th[k], approx);
			for (level = 0; level < c->o->depth; level++)
				flush_bar(c, level);
		}
	}
}

/* Create and join edges: from the source event's lane to the dependent's, in both lane kinds. */
static void edges(const struct chart *c)
{
	size_t i;
	int approx;

	fprintf(c->out, "<g stroke-width=\"1\" fill=\"none\">\n");
	for (i = 0; i < c->t->nedges && i < MAX_EDGES; i++) {
		const struct pt_edge *e = &c->t->edges[i];
		const struct pt_thread *s = &c->t->th[e->src_thr], *d = &c->t->th[e->dst_thr];

		for (approx = 0; approx < 2; approx++) {
			double ts = approx ? s->ta[e->src] : (double)(int64_t)(s->ev[e->src].t - c->t->t0);
			double td = approx ? d->ta[e->dst] : (double)(int64_t)(d->ev[e->dst].t - c->t->t0);

			fprintf(c->out, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" "
					"stroke=\"%s\"%s/>\n",
				x_of(c, ts / c->tpn), lane_top(c, e->src_thr, approx) + c->lane_h / 2.0,
				x_of(c, td / c->tpn), lane_top(c, e->dst_thr, approx) + c->lane_h / 2.0,
				e->kind == PT_EDGE_CREATE ? "#1a7f37" : "#c0392b",
				approx ? " stroke-dasharray=\"3,2\"" : "");
		}
	}
	fprintf(c->out, "</g>\n");
}

static void legend(const struct chart *c, const uint32_t *order, uint32_t shown, int y)
{
	uint32_t i;

	for (i = 0; i <= shown; i++) {
		int x = LEFT + (int)(i % 3) * 330, yy = y + (int)(i / 3) * 16;

		fprintf(c->out, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>"
				"<text x=\"%d\" y=\"%d\">",
			x, yy, i < shown ? palette[i] : OTHER_COLOUR, x + 14, yy + 9);
		if (i < shown)
			put_name(c, order[i], c->f->funcs[order[i]].id);
		else
			fputs("other functions", c->out);
		fputs("</text>\n", c->out);
	}
	fprintf(c->out, "<text x=\"%d\" y=\"%d\" fill=\"#555\">edges: green create, red join; "
			"dashed in approximated lanes%s</text>\n",
		LEFT, y + (int)(shown / 3 + 1) * 16 + 12,
		c->dropped ? " (too many bars: some not drawn)" : "");
}

static double spans(const struct chart *c)
{
	double end = (double)(c->t->t1 - c->t->t0);
	uint32_t k;

	for (k = 0; k < c->t->nth; k++)
		if (c->t->th[k].nev && c->t->th[k].ta[c->t->th[k].nev - 1] > end)
			end = c->t->th[k].ta[c->t->th[k].nev - 1];
	return end / c->tpn;
}

int gantt_write(FILE *out, const struct strc_file *f, const struct pt_trace *t,
		const char *const *names, const struct gantt_opts *o)
{
	struct chart c = { .out = out, .f = f, .t = t, .names = names, .o = o };
	uint32_t *order = xcalloc(f->nfuncs + 1, sizeof(*order)), shown;
	int height, legend_y;

	c.tpn = pt_ticks_per_ns(f);
	c.span = spans(&c);
	if (c.span <= 0)
		c.span = 1;
	c.px_per_ns = (o->width - LEFT - RIGHT) / c.span;
	c.lane_h = o->depth * ROW + 2;
	c.pair_h = 2 * c.lane_h + LANE_GAP + PAIR_GAP;
	c.total = xcalloc(f->nfuncs + 1, sizeof(*c.total));
	c.colour = xcalloc(f->nfuncs + 1, sizeof(*c.colour));
	shown = choose_colours(&c, order);
	legend_y = TOP + (int)t->nth * c.pair_h + 10;
	height = legend_y + (int)(shown / 3 + 2) * 16 + 20;
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		     "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n"
		     "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		     "<text x=\"%d\" y=\"18\" font-size=\"14\">",
		o->width, height, o->width, height, LEFT);
	xml_escaped(out, o->title ? o->title : "sonde trace");
	fputs("</text>\n", out);
	axis(&c, legend_y - 10);
	c.pass = 1;
	lanes(&c);
	edges(&c);
	legend(&c, order, shown, legend_y);
	fputs("</svg>\n", out);
	free(order);
	free(c.total);
	free(c.colour);
	free(c.stack);
	return ferror(out) ? -1 : 0;
}
