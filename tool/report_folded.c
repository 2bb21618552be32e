/* SPDX-License-Identifier: MIT */
/*
 * The measured call-path profile as folded stacks (`sonde report --folded=time|calls`), the
 * format of FlameGraph's stackcollapse and speedscope: one line per call path, its frames from
 * the outermost joined by ';', a space, and the path's own weight. A flame graph then draws
 * each frame as wide as the weights of the lines beneath it: its inclusive figure.
 *
 *   time   the path's compensated exclusive time in whole microseconds (paths below 0.5 us
 *          are left out: a flame graph could not show them)
 *   calls  the number of calls of the path's innermost function on that path
 */
#include <math.h>
#include <stdlib.h>

#include "report.h"
#include "util.h"

struct folded {
	FILE *out;
	const struct model *m;
	int by_calls;
	uint32_t *path;
	unsigned long long lines;
};

/* A frame's name: ';' separates frames and a newline ends the line, so neither is in one. */
static void frame_name(FILE *out, const char *name)
{
	for (; *name; name++)
		fputc(*name == ';' ? ':' : *name == '\n' || *name == '\r' ? ' ' : *name, out);
}

static unsigned long long weight(const struct folded *f, const struct m_node *n)
{
	if (f->by_calls)
		return (unsigned long long)n->calls;
	return n->excl_c > 0 ? (unsigned long long)llround(n->excl_c / 1e3) : 0;
}

static void walk(struct folded *f, uint32_t n, uint32_t level)
{
	const struct m_node *x = &f->m->nodes[n];
	unsigned long long w;
	uint32_t c, i;

	if (x->func != M_NONE) {
		f->path[level++] = x->func;
		w = weight(f, x);
		if (w) {
			for (i = 0; i < level; i++) {
				if (i)
					fputc(';', f->out);
				frame_name(f->out, f->m->funcs[f->path[i]].name);
			}
			fprintf(f->out, " %llu\n", w);
			f->lines++;
		}
	}
	for (c = x->first_child; c != M_NONE; c = f->m->nodes[c].next_sibling)
		walk(f, c, level);
}

int report_folded_measured(FILE *out, const struct model *m, int by_calls)
{
	struct folded f = { out, m, by_calls, NULL, 0 };
	uint32_t i, measured = 0;

	for (i = 0; i < m->nfuncs; i++)
		measured += m->funcs[i].calls > 0;
	if (!measured || m->nnodes < 2)
		return error("report: --folded=%s needs a measured run (sonde cc, sonde run; or "
			     "--dynamic, --trace); for samples: --folded=sampled",
			     by_calls ? "calls" : "time");
	f.path = xmalloc((m->nnodes + 1) * sizeof(*f.path));
	walk(&f, 0, 0);
	free(f.path);
	return 0;
}
