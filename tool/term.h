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
 * terminal (pipes and files get every line whole, whatever COLUMNS says: a report saved or
 * piped to grep keeps every name and column). */
int term_columns(FILE *f);
/* Whether to colour what goes to f: a terminal, NO_COLOR unset or empty, TERM not "dumb". */
int term_colour(FILE *f);
/* s in at most width columns (one per UTF-8 character): the middle replaced by "…" when
 * longer. Returns s itself or buf. */
const char *term_elide(char *buf, size_t cap, const char *s, size_t width);

/*
 * A text table fitted to the terminal (every table the tool prints goes through these). Each
 * column has a heading, a width and a gap (spaces before it). On a terminal narrower than the
 * table, the columns with the highest `drop` go first (0: never), then the name columns (TC_NAME)
 * are elided in the middle with "…": a fixed-width one to its width, the last one to what is
 * left of the line; a line still too wide is cut, ending in "…". Off a terminal every column
 * and every name is printed whole, as wide as it is.
 */
#define TC_LEFT 1 /* left-aligned (numbers are right-aligned) */
#define TC_NAME 2 /* a name: elided on a terminal; TC_LEFT implied */
#define TERM_TABLE_COLS 16

struct term_col {
	const char *head;
	int width, gap, flags, drop;
};

struct term_table {
	FILE *out;
	const struct term_col *col;
	int ncols, width;   /* width: the terminal's columns, 0 off a terminal */
	int cur;            /* the next cell of the row */
	unsigned shown;     /* bit i: column i is printed */
	const char *indent; /* before every row */
	char *cell[TERM_TABLE_COLS];
};

/* Chooses the columns for f's width; prints nothing. */
void term_table_init(struct term_table *t, FILE *f, const char *indent,
		     const struct term_col *cols, int ncols);
/* The headings as a row. */
void term_table_head(struct term_table *t);
/* The next cell of the current row (formatted like printf). */
void term_cell(struct term_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the row (missing cells empty) and starts the next one. */
void term_row(struct term_table *t);
void term_table_free(struct term_table *t);
/* Whether column i is printed (a caller may leave a note that some are not). */
int term_shown(const struct term_table *t, int i);

/* A line of prose (a title, a note): on a terminal wrapped at spaces to its width, the
 * continuation lines indented two more than the first; elsewhere as it is. Ends with "\n". */
void term_text(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A stream whose every line goes through term_text on f (wrapped to the terminal), for output
 * written line by line elsewhere (the consultant's views); f itself off a terminal. Close it
 * with term_fitted_close (which writes a last unfinished line). */
FILE *term_fitted(FILE *f);
void term_fitted_close(FILE *fitted, FILE *f);

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
