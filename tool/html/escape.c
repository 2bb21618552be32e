/* SPDX-License-Identifier: MIT */
/* Escaping what comes from the measured program, and the small pieces every section writes. */
#include <math.h>
#include <string.h>

#include "html.h"
#include "report.h"
#include "util.h"

/*
 * s with & < > (and in attributes " and ') as entities, bytes that are not UTF-8 as U+FFFD and
 * control characters but tab and newline as spaces: nothing the program named can open a tag,
 * end an attribute or make the page invalid UTF-8.
 */
static void escaped(FILE *out, const char *str, int attr)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");

	while (*s) {
		int n = utf8_seq_len(s);

		if (*s == '&')
			fputs("&amp;", out);
		else if (*s == '<')
			fputs("&lt;", out);
		else if (*s == '>')
			fputs("&gt;", out);
		else if (attr && *s == '"')
			fputs("&quot;", out);
		else if (attr && *s == '\'')
			fputs("&#39;", out);
		else if (*s < 0x20 && *s != '\n' && *s != '\t')
			fputc(' ', out);
		else if (*s == 0x7f)
			fputc(' ', out);
		else if (!n)
			fputs("\xef\xbf\xbd", out);
		else
			fwrite(s, 1, (size_t)n, out);
		s += n ? n : 1;
	}
}

void html_text(FILE *out, const char *s)
{
	escaped(out, s, 0);
}

void html_attr(FILE *out, const char *s)
{
	escaped(out, s, 1);
}

void html_section(FILE *out, const char *id, const char *title)
{
	fprintf(out, "<section id=\"%s\">\n<h2>%s</h2>\n", id, title);
}

void html_section_end(FILE *out)
{
	fputs("</section>\n", out);
}

void html_table(FILE *out, const char *id, const char *const *cols, int ncols)
{
	int i;

	fprintf(out, "<table class=\"sortable\" id=\"%s\">\n<thead><tr>", id);
	for (i = 0; i < ncols; i++) {
		int num = cols[i][0] == '#';

		fprintf(out, "<th%s title=\"click to sort\">%s</th>",
			num ? " data-t=\"n\" class=\"n\"" : "", cols[i] + num);
	}
	fputs("</tr></thead>\n<tbody>\n", out);
}

void html_table_end(FILE *out)
{
	fputs("</tbody></table>\n", out);
}

void html_td(FILE *out, const char *text)
{
	fputs("<td>", out);
	html_text(out, text);
	fputs("</td>", out);
}

/* A number a browser can parse back (data-v), never NaN or an infinity. */
static double finite_or_0(double v)
{
	return isfinite(v) ? v : 0;
}

void html_td_ns(FILE *out, double ns)
{
	char b[32];

	fprintf(out, "<td class=\"n\" data-v=\"%.0f\">%s</td>", finite_or_0(ns),
		fmt_time(b, sizeof(b), finite_or_0(ns)));
}

void html_td_u(FILE *out, unsigned long long v)
{
	fprintf(out, "<td class=\"n\" data-v=\"%llu\">%llu</td>", v, v);
}

void html_td_f(FILE *out, double v, int decimals)
{
	fprintf(out, "<td class=\"n\" data-v=\"%.6g\">%.*f</td>", finite_or_0(v), decimals, finite_or_0(v));
}

void html_cut_note(FILE *out, uint64_t shown, uint64_t total, const char *what)
{
	if (shown >= total)
		return;
	fprintf(out, "<p class=\"cut\">Showing the first %llu of %llu %s (the page is kept small;"
		     " <code>sonde report --json</code> has them all).</p>\n",
		(unsigned long long)shown, (unsigned long long)total, what);
}
