/* SPDX-License-Identifier: MIT */
/*
 * The terminal: its width (tables fitted to it), colour (only on a terminal and never with
 * NO_COLOR set, https://no-color.org), names elided in the middle, and a progress line on
 * stderr for work that takes more than a second (only when stderr is a terminal).
 */
#ifndef SONDE_TERM_H
#define SONDE_TERM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Columns of the terminal f writes to: COLUMNS when set, else the window's; 0 when f is not a
 * terminal (pipes and files get every name whole). */
int term_columns(FILE *f);
/* Whether to colour what goes to f: a terminal, NO_COLOR unset or empty, TERM not "dumb". */
int term_colour(FILE *f);
/* s in at most width columns (one per UTF-8 character): the middle replaced by "…" when
 * longer. Returns s itself or buf. */
const char *term_elide(char *buf, size_t cap, const char *s, size_t width);

/* ANSI attributes, or "" when colour is off. */
struct term_style {
	const char *bold, *dim, *red, *off;
};
struct term_style term_style(FILE *f);

struct progress {
	const char *what;  /* "analyze" */
	uint64_t t0, last; /* ns */
	uint64_t after_ns; /* nothing shown before (1 s; SONDE_PROGRESS_AFTER_MS for tests) */
	int tty, shown;
};
void progress_start(struct progress *p, const char *what);
/* fraction in [0, 1] (negative: unknown), detail may be NULL. Redrawn at most every 100 ms. */
void progress_update(struct progress *p, double fraction, const char *detail);
/* Clears the line if anything was shown. */
void progress_end(struct progress *p);

#endif
