/* SPDX-License-Identifier: MIT */
/*
 * `sonde report --html`: one self-contained page (inline CSS, JS and SVG; nothing fetched) of a
 * run directory: metadata and calibration, sortable profile tables, icicle graphs of the
 * measured and the sampled call paths, time histograms, the trace timeline measured and
 * approximated, the Search History Graph of a post-mortem search (docs/report-html.md).
 *
 * Everything that comes from the measured program (names, paths, command lines) goes through
 * html_text/html_attr. Each part is bounded (top-N rows, bars, nodes) and says so on the page.
 */
#ifndef SONDE_HTML_H
#define SONDE_HTML_H

#include <stdint.h>
#include <stdio.h>

#include "model.h"

struct html_opts {
	int limit;        /* rows of the function tables (0: HTML_DEFAULT_ROWS) */
	int consult;      /* run the post-mortem search on the run's traces */
	int timeline;     /* analyze the run's traces for the timeline */
	int thread_limit; /* threads with a table of their own */
	const char *const *hist; /* --hist METRIC[@FOCUS]: time histograms of these from the traces */
	uint32_t nhist;
	struct model_filter flt; /* what the model was loaded with (per-thread tables reload) */
};

#define HTML_DEFAULT_ROWS 200
#define HTML_MAX_TRACES 4      /* traces of a run drawn as timelines and searched */
#define HTML_MAX_THREAD_TABLES 8
#define HTML_THREAD_ROWS 25

/* The whole page to out; 0, or -1 after an error line. */
int report_html(FILE *out, const struct model *m, const struct html_opts *o);
/* The progress line of the page being written (after a second, on a terminal's stderr): what
 * is being done now; long loops call it as they go (page.c). */
void html_progress(const char *what);

/* ---- escape.c: text from the program, and the small pieces every section writes ---- */
void html_text(FILE *out, const char *s);            /* element text: & < > escaped */
void html_attr(FILE *out, const char *s);            /* inside a "..." attribute */
void html_section(FILE *out, const char *id, const char *title);
void html_section_end(FILE *out);
/* <table class="sortable" id=ID>; cols: "Name" (text) or "#Name" (numeric, right-aligned) */
void html_table(FILE *out, const char *id, const char *const *cols, int ncols);
void html_table_end(FILE *out);
void html_td(FILE *out, const char *text);            /* text cell */
void html_td_ns(FILE *out, double ns);                /* a time, sorts by ns */
void html_td_u(FILE *out, unsigned long long v);      /* a count */
void html_td_f(FILE *out, double v, int decimals);     /* a number, so many decimals */
/* "shown N of M (by KEY): the rest are in --json" when n < total. */
void html_cut_note(FILE *out, uint64_t shown, uint64_t total, const char *what);

/* ---- the sections, one file each ---- */
void html_meta(FILE *out, const struct model *m);                       /* meta.c */
void html_profile(FILE *out, const struct model *m, const struct html_opts *o); /* tables.c */
/* The functions of m by compensated exclusive time, limit rows (tables.c). */
void html_func_table(FILE *out, const struct model *m, const char *id, int limit);
void html_threads(FILE *out, const struct model *m, const struct html_opts *o); /* threads.c */
void html_flame(FILE *out, const struct model *m);                      /* flame.c */
void html_histograms(FILE *out, const struct model *m, const struct html_opts *o); /* hist.c */
/* The chosen metrics over time, from the run's traces (metric_hist.c). */
void html_metric_hists(FILE *out, const struct model *m, const struct html_opts *o);
/* Each --hist a pair the run's first trace can measure: 0, or -1 after an error line. */
int html_hist_check(const struct model *m, const struct html_opts *o);
struct cs_focus;
/* "METRIC[@FOCUS]": 0, or -1 when the focus names no hierarchy (metric_hist.c). */
int html_hist_parse(const char *spec, char **metric, struct cs_focus *f);
void html_resources(FILE *out, const struct model *m, int limit);       /* resources.c */
void html_timeline(FILE *out, const char *trace);                       /* timeline.c */
void html_consult(FILE *out, const char *trace);                        /* shg.c */

/* An SVG bar chart (hist.c): n bars of values, labels may be NULL (then x0..x1 in ms). */
struct html_bars {
	const char *title, *unit;   /* unit: "ns" shows times, else a count's unit */
	const double *v;            /* n values, or stacked: v[i * nstack + k] */
	const char *const *labels;  /* n labels (bars named), or NULL */
	const char *const *stack_names; /* nstack names, or NULL */
	double x0_ms, x1_ms;        /* time axis when labels is NULL */
	uint32_t n, nstack;
};
void html_bar_chart(FILE *out, const struct html_bars *b);

#endif
