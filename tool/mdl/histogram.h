/* SPDX-License-Identifier: MIT */
/*
 * Time histograms of a metric and the aggregation of asynchronous sample streams (seed 003
 * §5.2.2 and §5.4; MODELS.md §4). Times are nanoseconds on the runtime's clock; values are
 * what the runtime reports, cumulative (a counter's count, a timer's ns).
 *
 * A histogram has a fixed number of buckets of one width; when data arrives past its end, the
 * width doubles and adjacent pairs of buckets merge (a fold), as often as needed: its size stays
 * fixed and the data kept grows with the logarithm of the run's length. Each bucket keeps the
 * increase of the value inside it and how much of it data covered, so both views are exact
 * after any number of folds: by sum (the increase) and by avg (the increase per second of
 * covered time, the time-weighted mean rate).
 */
#ifndef SONDE_HISTOGRAM_H
#define SONDE_HISTOGRAM_H

#include <stdint.h>
#include <stdio.h>

#include "mdl.h"

#define HIST_BUCKETS 1000

struct hist {
	uint32_t n;      /* buckets */
	uint64_t start;  /* time of bucket 0's start */
	uint64_t width;  /* ns per bucket */
	double *sum;     /* increase inside each bucket */
	double *cover;   /* ns of each bucket covered by data */
	uint32_t used;   /* buckets up to the last one data reached */
	unsigned folds;
	enum mdl_fold fold;
	/* a single stream's last cumulative sample (hist_sample) */
	uint64_t last_t;
	double last_v;
	int primed;
};

/* n buckets (HIST_BUCKETS when 0) of width_ns (>= 1) from 'start'. */
struct hist *hist_new(uint32_t n, uint64_t width_ns, uint64_t start, enum mdl_fold fold);
void hist_free(struct hist *h);
/* An increase of 'value' spread evenly over [t0, t1) (t1 > t0; a part before start is lost). */
void hist_add(struct hist *h, uint64_t t0, uint64_t t1, double value);
/* One stream's cumulative sample: the first one only sets the baseline. */
void hist_sample(struct hist *h, uint64_t t, double cumulative);
/* Bucket i by the histogram's fold: the increase, or the increase per second of covered time. */
double hist_value(const struct hist *h, uint32_t i);
/* The increase over the whole histogram, and its mean rate per second of covered time. */
double hist_total(const struct hist *h);
double hist_rate(const struct hist *h);
/* The end of the time the histogram holds now; the period to sample at: one bucket. */
uint64_t hist_end(const struct hist *h);

/* A compact bar chart in at most 80 columns: a title line, 'rows' lines of bars (columns
 * merge adjacent buckets with the fold), a time axis. */
struct hist_view {
	const char *title;   /* e.g. "calls /Code/app.c/solve" */
	const char *units;   /* shown after the values; NULL: none */
	double divide;       /* values shown divided by this (0 or 1: as they are) */
	int rows;            /* 0: 8 */
	int cols;            /* columns of bars, 0: 70 (the most) */
	int ascii;           /* '#' and ':' instead of Unicode eighth blocks */
};
void hist_render(FILE *out, const struct hist *h, const struct hist_view *v);

/*
 * Aggregation of asynchronous streams (threads, processes), the thesis's algorithm: each
 * source's samples end at its own times; the current time is the earliest latest end over the
 * live sources. When a sample advances it, one aggregate interval [previous, new current time]
 * is emitted, each source contributing the time-weighted share of its samples that cover it;
 * a sample that does not advance it waits in its source's queue (the oldest two pieces merge
 * when a source runs far ahead). A source counts in an interval (for avg, min and max) from its
 * start until its last sample once it has ended; a source added with a start already passed
 * loses the share of its first sample before the current time (counted in 'dropped').
 */
typedef void (*agg_emit_fn)(void *arg, uint64_t t0, uint64_t t1, double value);

struct agg_piece {
	uint64_t t0, t1;
	double v;
};

struct agg_source {
	uint64_t start, last_t; /* the source's first time, and its latest sample's end */
	double last_v;          /* its cumulative value then */
	struct agg_piece *q;    /* pieces not yet emitted, in time order */
	uint32_t nq, capq;
	int ended;
};

struct agg {
	enum mdl_agg op;
	agg_emit_fn emit;
	void *arg;
	struct agg_source *src;
	uint32_t nsrc;
	uint64_t now;   /* current time: everything before it has been emitted */
	int emitted;    /* an interval was emitted (before, 'now' is the earliest start) */
	double dropped; /* value of late sources before the current time, not emitted */
	uint32_t maxq;  /* pieces a source may queue before merging */
};

struct agg *agg_new(enum mdl_agg op, agg_emit_fn emit, void *arg);
void agg_free(struct agg *a);
/* A new source whose cumulative value is 0 at 'start'; returns its index. */
uint32_t agg_source(struct agg *a, uint64_t start);
/* A source's cumulative value at time t (times only grow; an older or equal time adds its
 * change to the source's latest piece). */
void agg_sample(struct agg *a, uint32_t src, uint64_t t, double cumulative);
/* The source sends nothing more: it no longer holds the current time back. */
void agg_end(struct agg *a, uint32_t src);

#endif
