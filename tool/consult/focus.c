/* SPDX-License-Identifier: MIT */
/* Foci: one node per resource hierarchy (source.h). */
#include <stdlib.h>
#include <string.h>

#include "source.h"
#include "util.h"

void cs_focus_copy(struct cs_focus *dst, const struct cs_focus *src)
{
	int h;

	for (h = 0; h < H_COUNT; h++)
		dst->part[h] = src->part[h] ? xstrdup(src->part[h]) : NULL;
}

void cs_focus_free(struct cs_focus *f)
{
	int h;

	for (h = 0; h < H_COUNT; h++) {
		free(f->part[h]);
		f->part[h] = NULL;
	}
}

int cs_focus_equal(const struct cs_focus *a, const struct cs_focus *b)
{
	int h;

	for (h = 0; h < H_COUNT; h++) {
		if (!a->part[h] != !b->part[h])
			return 0;
		if (a->part[h] && strcmp(a->part[h], b->part[h]))
			return 0;
	}
	return 1;
}

void cs_focus_str(char *buf, size_t cap, const struct cs_focus *f)
{
	size_t n = 0;
	int h;

	if (!cap)
		return;
	buf[0] = 0;
	for (h = 0; h < H_COUNT; h++) {
		if (!f->part[h])
			continue;
		n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%s", n ? "," : "",
				      f->part[h]);
		if (n >= cap)
			return;
	}
	if (!n)
		snprintf(buf, cap, "/");
}

/* The hierarchy a path like "/Code/app.c" belongs to: -1 when none. */
static int hier_of_path(const char *p, size_t len)
{
	int h;

	for (h = 0; h < H_COUNT; h++) {
		const char *name = cs_hier_name(h);
		size_t k = strlen(name);

		if (len > k && p[0] == '/' && !strncmp(p + 1, name, k) &&
		    (len == k + 1 || p[k + 1] == '/'))
			return h;
	}
	return -1;
}

int cs_focus_parse(struct cs_focus *f, const char *s)
{
	memset(f, 0, sizeof(*f));
	if (!strcmp(s, "/") || !*s)
		return 0;
	while (*s) {
		size_t len = strcspn(s, ",");
		int h = hier_of_path(s, len);

		if (h < 0 || f->part[h])
			return cs_focus_free(f), -1;
		/* "/Code" alone is the root */
		if (len > strlen(cs_hier_name(h)) + 1) {
			f->part[h] = xmalloc(len + 1);
			memcpy(f->part[h], s, len);
			f->part[h][len] = 0;
		}
		s += len;
		if (*s == ',')
			s++;
	}
	return 0;
}
