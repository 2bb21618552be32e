/* SPDX-License-Identifier: MIT */
/* Text tables and prose fitted to the terminal's width (term.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "term.h"
#include "util.h"

/* The least a name at the end of a row keeps (or its heading's width when wider) before other
 * columns are dropped for it. */
#define NAME_LEAST 16

/* Columns s takes: one per UTF-8 character, none for an ANSI escape sequence "\033[...m". */
static size_t width_of(const char *s)
{
	size_t n = 0;

	for (; *s; s++) {
		if (*s == '\033' && s[1] == '[') {
			s += 2;
			while (*s && *s != 'm')
				s++;
			if (!*s)
				break;
			continue;
		}
		n += ((unsigned char)*s & 0xc0) != 0x80;
	}
	return n;
}

/* The line buffer a row is built in. */
struct line {
	char *s;
	size_t len, cap;
};

static void put(struct line *l, const char *s, size_t n)
{
	if (l->len + n + 1 > l->cap) {
		l->cap = 2 * (l->len + n + 1) + 64;
		l->s = xrealloc(l->s, l->cap);
	}
	memcpy(l->s + l->len, s, n);
	l->len += n;
	l->s[l->len] = 0;
}

static void spaces(struct line *l, int n)
{
	for (; n > 0; n--)
		put(l, " ", 1);
}

static int is_last(const struct term_table *t, int i)
{
	for (i++; i < t->ncols; i++)
		if (t->shown & (1u << i))
			return 0;
	return 1;
}

/* What a row needs at least with the columns shown now. */
static int need(const struct term_table *t)
{
	int i, n = (int)width_of(t->indent);

	for (i = 0; i < t->ncols; i++) {
		const struct term_col *c = &t->col[i];

		if (!(t->shown & (1u << i)))
			continue;
		n += c->gap;
		if ((c->flags & TC_NAME) && is_last(t, i)) /* its heading whole, 16 at least */
			n += (int)width_of(c->head) > NAME_LEAST ? (int)width_of(c->head) : NAME_LEAST;
		else
			n += c->width;
	}
	return n;
}

void term_table_init(struct term_table *t, FILE *f, const char *indent,
		     const struct term_col *cols, int ncols)
{
	int i, worst;

	*t = (struct term_table){ .out = f, .col = cols, .indent = indent ? indent : "" };
	t->ncols = ncols < TERM_TABLE_COLS ? ncols : TERM_TABLE_COLS;
	t->width = term_columns(f);
	t->shown = (1u << t->ncols) - 1;
	while (t->width && need(t) > t->width) {
		worst = -1;
		for (i = 0; i < t->ncols; i++)
			if ((t->shown & (1u << i)) && cols[i].drop &&
			    (worst < 0 || cols[i].drop >= cols[worst].drop))
				worst = i;
		if (worst < 0)
			break;
		t->shown &= ~(1u << worst);
	}
}

int term_shown(const struct term_table *t, int i)
{
	return i >= 0 && i < t->ncols && (t->shown & (1u << i));
}

void term_cell(struct term_table *t, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = xstrdup("?");
	va_end(ap);
	if (t->cur < t->ncols)
		t->cell[t->cur++] = s;
	else
		free(s);
}

/* One cell at the end of l: elided when a name on a terminal, padded to its width. */
static void put_cell(const struct term_table *t, struct line *l, int i, const char *s)
{
	const struct term_col *c = &t->col[i];
	int last = is_last(t, i), w = (int)width_of(s), room, lead;
	char buf[1024];

	spaces(l, c->gap);
	if ((c->flags & TC_NAME) && t->width) { /* leading spaces (a tree's indent) stay whole */
		lead = (int)strspn(s, " ");
		room = (last ? t->width - (int)width_of(l->s) : c->width) - lead;
		if (room < 8)
			room = 8;
		spaces(l, lead);
		s = term_elide(buf, sizeof(buf), s + lead, (size_t)room);
		w = (int)width_of(s) + lead;
	}
	if (!(c->flags & (TC_LEFT | TC_NAME)))
		spaces(l, c->width - w);
	put(l, s, strlen(s));
	if ((c->flags & (TC_LEFT | TC_NAME)) && !last)
		spaces(l, c->width - w);
}

/* l cut to the terminal's width, its last column "…" (escape sequences kept whole, and the
 * attributes reset when there was one). */
static void cut(const struct term_table *t, struct line *l)
{
	size_t i, n = 0;
	int esc = 0;

	if (!t->width || width_of(l->s) <= (size_t)t->width)
		return;
	for (i = 0; l->s[i]; i++) {
		if (l->s[i] == '\033' && l->s[i + 1] == '[') {
			esc = 1;
			while (l->s[i] && l->s[i] != 'm')
				i++;
			if (!l->s[i])
				break;
			continue;
		}
		if (((unsigned char)l->s[i] & 0xc0) != 0x80 && ++n == (size_t)t->width)
			break;
	}
	l->len = i;
	l->s[i] = 0;
	if (esc)
		put(l, "\033[0m", 4);
	put(l, "\xe2\x80\xa6", 3);
}

void term_row(struct term_table *t)
{
	struct line l = { 0 };
	int i;

	put(&l, t->indent, strlen(t->indent));
	for (i = 0; i < t->ncols; i++)
		if (t->shown & (1u << i))
			put_cell(t, &l, i, i < t->cur ? t->cell[i] : "");
	while (l.len && l.s[l.len - 1] == ' ')
		l.s[--l.len] = 0;
	cut(t, &l);
	fprintf(t->out, "%s\n", l.s);
	free(l.s);
	for (i = 0; i < t->cur; i++)
		free(t->cell[i]);
	t->cur = 0;
}

void term_table_head(struct term_table *t)
{
	int i;

	for (i = 0; i < t->ncols; i++)
		term_cell(t, "%s", t->col[i].head);
	term_row(t);
}

void term_table_free(struct term_table *t)
{
	int i;

	for (i = 0; i < t->cur; i++)
		free(t->cell[i]);
	t->cur = 0;
}

/* Writes s wrapped at spaces to width (the spaces between words kept as they are, those where
 * a line breaks dropped), continuation lines indented by ind; a word longer than a line is
 * elided in the middle. */
static void wrap(FILE *f, const char *s, int width, int ind)
{
	int col = 0, first = 1, gap;
	char word[1024], buf[1024];
	const char *w, *out;
	size_t wl, ww;

	if (ind > width / 2)
		ind = width / 2;
	while (*s) {
		gap = (int)strspn(s, " ");
		w = s + gap;
		if (!*w)
			break;
		wl = strcspn(w, " ");
		snprintf(word, sizeof(word), "%.*s", (int)wl, w);
		ww = width_of(word);
		if (!first && col + gap + (int)ww > width) {
			fprintf(f, "\n%*s", ind, "");
			col = ind;
		} else {
			fprintf(f, "%*s", gap, "");
			col += gap;
		}
		out = word;
		if (col + (int)ww > width) {
			out = term_elide(buf, sizeof(buf), word,
					 (size_t)(width - col > 5 ? width - col : 5));
			ww = width_of(out);
		}
		fputs(out, f);
		col += (int)ww;
		first = 0;
		s = w + wl;
	}
	fputc('\n', f);
}

void term_text(FILE *f, const char *fmt, ...)
{
	va_list ap;
	char *s, *line, *next;
	int width = term_columns(f);
	size_t len;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = xstrdup("?");
	va_end(ap);
	len = strlen(s);
	if (len && s[len - 1] == '\n') /* the line's end is term_text's */
		s[len - 1] = 0;
	if (!width) {
		fprintf(f, "%s\n", s);
		free(s);
		return;
	}
	for (line = s; line; line = next) { /* each "\n"-separated line apart */
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (width_of(line) <= (size_t)width)
			fprintf(f, "%s\n", line);
		else
			wrap(f, line, width, (int)strspn(line, " ") + 2);
	}
	free(s);
}

/* term_fitted: bytes kept until a line is complete, then fitted. */
struct fitted {
	FILE *out;
	char *buf;
	size_t len, cap;
};

static ssize_t fitted_write(void *cookie, const char *data, size_t n)
{
	struct fitted *ft = cookie;
	char *nl;

	if (ft->len + n + 1 > ft->cap) {
		ft->cap = 2 * (ft->len + n + 1);
		ft->buf = xrealloc(ft->buf, ft->cap);
	}
	memcpy(ft->buf + ft->len, data, n);
	ft->len += n;
	ft->buf[ft->len] = 0;
	while ((nl = memchr(ft->buf, '\n', ft->len))) {
		*nl = 0;
		term_text(ft->out, "%s", ft->buf);
		ft->len -= (size_t)(nl + 1 - ft->buf);
		memmove(ft->buf, nl + 1, ft->len + 1);
	}
	fflush(ft->out);
	return (ssize_t)n;
}

static int fitted_close(void *cookie)
{
	struct fitted *ft = cookie;

	if (ft->len)
		term_text(ft->out, "%s", ft->buf);
	free(ft->buf);
	free(ft);
	return 0;
}

FILE *term_fitted(FILE *f)
{
	cookie_io_functions_t io = { .write = fitted_write, .close = fitted_close };
	struct fitted *ft;
	FILE *s;

	if (!term_columns(f))
		return f;
	ft = xcalloc(1, sizeof(*ft));
	ft->out = f;
	s = fopencookie(ft, "w", io);
	if (!s) {
		free(ft);
		return f;
	}
	setvbuf(s, NULL, _IOLBF, 0);
	return s;
}

void term_fitted_close(FILE *fitted, FILE *f)
{
	if (fitted && fitted != f)
		fclose(fitted);
}
