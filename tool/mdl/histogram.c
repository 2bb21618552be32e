/* SPDX-License-Identifier: MIT */
/*
 * Time histograms (histogram.h): fixed buckets whose width doubles by folding, fed by
 * intervals [t0, t1) with an increase spread evenly over them; and their text rendering.
 */
#include "histogram.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct hist *hist_new(uint32_t n, uint64_t width_ns, uint64_t start, enum mdl_fold fold)
{
	struct hist *h = xcalloc(1, sizeof(*h));

	h->n = n ? n : HIST_BUCKETS;
	h->n = h->n < 2 ? 2 : h->n;
	h->width = width_ns ? width_ns : 1;
	h->start = start;
	h->fold = fold;
	h->sum = xcalloc(h->n, sizeof(*h->sum));
	h->cover = xcalloc(h->n, sizeof(*h->cover));
	return h;
}

void hist_free(struct hist *h)
{
	if (!h)
		return;
	free(h->sum);
	free(h->cover);
	free(h);
}

uint64_t hist_end(const struct hist *h)
{
	return h->start + (uint64_t)h->n * h->width;
}

/* Double the width: bucket i goes into bucket i/2 (the last one alone when n is odd). */
static void hist_fold(struct hist *h)
{
	uint32_t i;

	for (i = 0; i < h->n; i++) {
		double s = h->sum[i], c = h->cover[i];

		h->sum[i] = h->cover[i] = 0;
		h->sum[i / 2] += s;
		h->cover[i / 2] += c;
	}
	h->used = (h->used + 1) / 2;
	h->width *= 2;
	h->folds++;
}

/* Fold until time t is inside (t == end counts as inside for an interval's end). */
static int hist_reach(struct hist *h, uint64_t t, int inclusive)
{
	while (inclusive ? t > hist_end(h) : t >= hist_end(h)) {
		if (h->width > (UINT64_MAX - h->start) / h->n / 2)
			return -1;
		hist_fold(h);
	}
	return 0;
}

static void hist_point(struct hist *h, uint64_t t, double value)
{
	uint32_t i;

	if (t < h->start || hist_reach(h, t, 0))
		return;
	i = (uint32_t)((t - h->start) / h->width);
	h->sum[i] += value;
	h->used = i + 1 > h->used ? i + 1 : h->used;
}

void hist_add(struct hist *h, uint64_t t0, uint64_t t1, double value)
{
	uint64_t len, b0;
	uint32_t i;

	if (t1 <= t0) {
		hist_point(h, t0, value);
		return;
	}
	if (t1 <= h->start || hist_reach(h, t1, 1))
		return;
	if (t0 < h->start) {
		value = value * (double)(t1 - h->start) / (double)(t1 - t0);
		t0 = h->start;
	}
	len = t1 - t0;
	for (i = (uint32_t)((t0 - h->start) / h->width); i < h->n; i++) {
		uint64_t lo, hi;

		b0 = h->start + (uint64_t)i * h->width;
		if (b0 >= t1)
			break;
		lo = t0 > b0 ? t0 : b0;
		hi = t1 < b0 + h->width ? t1 : b0 + h->width;
		h->sum[i] += value * (double)(hi - lo) / (double)len;
		h->cover[i] += (double)(hi - lo);
		h->used = i + 1 > h->used ? i + 1 : h->used;
	}
}

void hist_sample(struct hist *h, uint64_t t, double cumulative)
{
	if (h->primed && t > h->last_t)
		hist_add(h, h->last_t, t, cumulative - h->last_v);
	else if (h->primed) /* no time passed: into the bucket ending at the last sample */
		hist_point(h, h->last_t > h->start ? h->last_t - 1 : h->last_t,
			   cumulative - h->last_v);
	if (!h->primed || t > h->last_t)
		h->last_t = t;
	h->primed = 1;
	h->last_v = cumulative;
}

static double rate(double sum, double cover)
{
	return cover > 0 ? sum / cover * 1e9 : 0;
}

double hist_value(const struct hist *h, uint32_t i)
{
	if (i >= h->n)
		return 0;
	return h->fold == MDL_FOLD_AVG ? rate(h->sum[i], h->cover[i]) : h->sum[i];
}

double hist_total(const struct hist *h)
{
	double s = 0;
	uint32_t i;

	for (i = 0; i < h->used; i++)
		s += h->sum[i];
	return s;
}

double hist_rate(const struct hist *h)
{
	double c = 0;
	uint32_t i;

	for (i = 0; i < h->used; i++)
		c += h->cover[i];
	return rate(hist_total(h), c);
}

/* ---- rendering ---- */

#define LABEL 8 /* the value labels' width; then a space, the axis and the bars: 80 columns */
#define MAX_COLS 70

static const char *fmt_num(char *buf, size_t cap, double v)
{
	static const struct { double at; const char *sfx; } si[] = {
		{ 1e12, "T" }, { 1e9, "G" }, { 1e6, "M" }, { 1e3, "k" },
	};
	size_t i;

	for (i = 0; i < sizeof(si) / sizeof(si[0]); i++)
		if (fabs(v) >= si[i].at) {
			snprintf(buf, cap, "%.3g%s", v / si[i].at, si[i].sfx);
			return buf;
		}
	snprintf(buf, cap, "%.3g", v);
	return buf;
}

static const char *fmt_span(char *buf, size_t cap, double ns)
{
	if (ns < 1e3)
		snprintf(buf, cap, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, cap, "%.3g us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, cap, "%.3g ms", ns / 1e6);
	else
		snprintf(buf, cap, "%.4g s", ns / 1e9);
	return buf;
}

/* Column c's value: its buckets merged by the fold, divided for display. */
static double column(const struct hist *h, uint32_t c, uint32_t per, double divide)
{
	double s = 0, cv = 0;
	uint32_t i;

	for (i = c * per; i < (c + 1) * per && i < h->used; i++) {
		s += h->sum[i];
		cv += h->cover[i];
	}
	return (h->fold == MDL_FOLD_AVG ? rate(s, cv) : s) / divide;
}

static void put_cell(FILE *out, int level, int ascii)
{
	static const char *const blocks[] = { " ", "\u2581", "\u2582", "\u2583", "\u2584",
					      "\u2585", "\u2586", "\u2587", "\u2588" };

	if (ascii)
		fputc(level >= 8 ? '#' : level >= 4 ? ':' : level > 0 ? '.' : ' ', out);
	else
		fputs(blocks[level], out);
}

static void render_title(FILE *out, const struct hist *h, const struct hist_view *v,
			 uint32_t per, double divide)
{
	const char *u = v->units ? v->units : "", *sp = v->units ? " " : "";
	char a[32], b[32];

	fprintf(out, "%s  (", v->title ? v->title : "");
	if (h->fold == MDL_FOLD_AVG)
		fprintf(out, "%s%smean by column; overall %s%s%s", u, *u ? ", " : "",
			fmt_num(b, sizeof(b), hist_rate(h) / divide), sp, u);
	else
		fprintf(out, "%s%sper %s column; total %s%s%s", u, sp,
			fmt_span(a, sizeof(a), (double)h->width * per),
			fmt_num(b, sizeof(b), hist_total(h) / divide), sp, u);
	fprintf(out, "; %u fold%s)\n", h->folds, h->folds == 1 ? "" : "s");
}

static void render_axis(FILE *out, const struct hist *h, uint32_t ncol, uint32_t per, int ascii)
{
	char a[32];
	uint32_t i;

	fprintf(out, "%*s %s", LABEL, "0", ascii ? "+" : "\u2514");
	for (i = 0; i < ncol; i++)
		fputs(ascii ? "-" : "\u2500", out);
	fmt_span(a, sizeof(a), (double)h->width * per * ncol);
	fprintf(out, "\n%*s 0%*s\n", LABEL, "", (int)(ncol > strlen(a) ? ncol : strlen(a) + 1),
		a);
}

/* A column's height in eighths of a row; a value above 0 shows at least one eighth. */
static int eighths(double v, double max, int rows)
{
	int e = max > 0 && v > 0 ? (int)lround(v / max * rows * 8) : 0;

	return v > 0 && e == 0 ? 1 : e;
}

void hist_render(FILE *out, const struct hist *h, const struct hist_view *v)
{
	double vals[MAX_COLS], max = 0, divide = v->divide > 0 ? v->divide : 1;
	int rows = v->rows > 0 ? v->rows : 8, r;
	uint32_t cols = v->cols > 0 && v->cols < MAX_COLS ? (uint32_t)v->cols : MAX_COLS;
	uint32_t used = h->used ? h->used : 1, per = (used + cols - 1) / cols;
	uint32_t ncol = (used + per - 1) / per, c;
	char lab[32];

	for (c = 0; c < ncol; c++) {
		vals[c] = column(h, c, per, divide);
		max = vals[c] > max ? vals[c] : max;
	}
	render_title(out, h, v, per, divide);
	for (r = 0; r < rows; r++) {
		int base = (rows - 1 - r) * 8;
		uint32_t end = ncol; /* no trailing blanks */

		while (end && eighths(vals[end - 1], max, rows) <= base)
			end--;
		fprintf(out, "%*s %s", LABEL, r ? "" : fmt_num(lab, sizeof(lab), max),
			v->ascii ? "|" : r ? "\u2502" : "\u2524");
		for (c = 0; c < end; c++) {
			int level = eighths(vals[c], max, rows) - base;

			put_cell(out, level < 0 ? 0 : level > 8 ? 8 : level, v->ascii);
		}
		fputc('\n', out);
	}
	render_axis(out, h, ncol, per, v->ascii);
}
