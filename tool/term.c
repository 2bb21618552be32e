/* SPDX-License-Identifier: MIT */
/* The terminal (term.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "term.h"
#include "util.h"

int term_columns(FILE *f)
{
	const char *env = getenv("COLUMNS");
	unsigned long long n;
	struct winsize ws;

	if (!isatty(fileno(f)))
		return 0;
	if (env && !parse_u64(env, &n) && n >= 20 && n <= 10000)
		return (int)n;
	if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return 80;
}

int term_colour(FILE *f)
{
	const char *no = getenv("NO_COLOR"), *term = getenv("TERM");

	if (no && *no)
		return 0;
	if (term && !strcmp(term, "dumb"))
		return 0;
	return isatty(fileno(f));
}

struct term_style term_style(FILE *f)
{
	if (term_colour(f))
		return (struct term_style){ "\033[1m", "\033[2m", "\033[31m", "\033[0m" };
	return (struct term_style){ "", "", "", "" };
}

/* Characters (UTF-8 sequences; a stray byte counts as one) of s. */
static size_t chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* The byte offset of character k of s. */
static size_t offset_of(const char *s, size_t k)
{
	size_t i = 0;

	for (; s[i]; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && k-- == 0)
			return i;
	return i;
}

const char *term_elide(char *buf, size_t cap, const char *s, size_t width)
{
	size_t n = chars(s), head, tail, hb, tb;

	if (n <= width || width < 5 || cap < 8)
		return s;
	head = (width - 1) / 2;
	tail = width - 1 - head;
	hb = offset_of(s, head);
	tb = strlen(s) - offset_of(s, n - tail);
	if (hb + tb + 4 > cap) /* the buffer is the limit: keep both ends in proportion */
		return s;
	memcpy(buf, s, hb);
	memcpy(buf + hb, "\xe2\x80\xa6", 3);
	memcpy(buf + hb + 3, s + strlen(s) - tb, tb + 1);
	return buf;
}

static struct progress *active; /* the progress line an error line must clear first */

static void clear_active(void)
{
	if (active)
		progress_end(active);
}

void progress_start(struct progress *p, const char *what)
{
	const char *env = getenv("SONDE_PROGRESS_AFTER_MS");
	unsigned long long ms = 1000;

	if (env && parse_u64(env, &ms))
		ms = 1000;
	*p = (struct progress){ what, mono_now_ns(), 0, ms * 1000000ull, isatty(STDERR_FILENO), 0 };
	active = p;
	before_message = clear_active;
}

void progress_update(struct progress *p, double fraction, const char *detail)
{
	uint64_t now;
	int cols, n;
	char line[512], tmp[512];
	const char *out = line;

	if (!p->tty)
		return;
	now = mono_now_ns();
	if (now - p->t0 < p->after_ns || (p->shown && now - p->last < 100000000ull))
		return;
	if (fraction >= 0)
		n = snprintf(line, sizeof(line), "sonde: %s: %3.0f %%%s%s", p->what,
			     100 * (fraction > 1 ? 1 : fraction), detail ? " " : "",
			     detail ? detail : "");
	else
		n = snprintf(line, sizeof(line), "sonde: %s: %.1f s%s%s", p->what,
			     (double)(now - p->t0) / 1e9, detail ? " " : "", detail ? detail : "");
	cols = term_columns(stderr);
	if (n > 0 && cols > 1 && (size_t)n >= (size_t)cols) /* never wrap: \r must reach it */
		out = term_elide(tmp, sizeof(tmp), line, (size_t)cols - 1);
	fprintf(stderr, "\r\033[K%s", out);
	fflush(stderr);
	p->shown = 1;
	p->last = now;
}

void progress_end(struct progress *p)
{
	if (!p->shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->shown = 0;
}
