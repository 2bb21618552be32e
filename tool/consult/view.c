/* SPDX-License-Identifier: MIT */
/* The terminal view of a search (view.h). */
#include "view.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const marks[CS_STATE_COUNT] = {
	[CS_UNTESTED] = " ", [CS_TESTING] = "?", [CS_TRUE] = "+", [CS_FALSE] = "-",
	[CS_DEFERRED] = "~", [CS_NEVER] = ".", [CS_UNAVAILABLE] = "x",
};

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

static void node_line(FILE *out, const struct cs_engine *e, const struct cs_node *n)
{
	char focus[4096];

	cs_focus_str(focus, sizeof(focus), &n->focus);
	fprintf(out, "%s %s", e->lib->hyps[n->hyp].name, focus);
	if (n->phase >= 0)
		fprintf(out, " [%s]", cs_node_when(e, n));
}

static void values(FILE *out, const struct cs_engine *e, const struct cs_node *n)
{
	const struct hypothesis *h = &e->lib->hyps[n->hyp];
	char test[256];

	if (!h->test || n->observed <= 0)
		return;
	hx_print(test, sizeof(test), e->lib, h->test);
	if (isfinite(n->value))
		fprintf(out, "  (%.3g: %s, over %.2f s)", n->value, test, n->observed);
	else /* 0/0: nothing of it in the window (a thread that had ended) */
		fprintf(out, "  (no data: %s, over %.2f s)", test, n->observed);
}

void cs_view_progress(struct cs_engine *e, void *arg)
{
	struct cs_view *v = arg;
	uint32_t i;

	if (v->nseen < e->nnodes) {
		v->seen = xrealloc(v->seen, e->nnodes * sizeof(*v->seen));
		for (i = v->nseen; i < e->nnodes; i++)
			v->seen[i] = CS_UNTESTED;
		v->nseen = e->nnodes;
	}
	for (i = 0; i < e->nnodes; i++) {
		const struct cs_node *n = &e->nodes[i];

		if (n->state == v->seen[i])
			continue;
		v->seen[i] = n->state;
		if (v->quiet || n->state == CS_DEFERRED || n->state == CS_UNTESTED)
			continue;
		fprintf(v->out, "%8.3f s  %-15s ", secs(e->now), cs_state_name(n->state));
		node_line(v->out, e, n);
		if (n->state == CS_TRUE || n->state == CS_FALSE)
			values(v->out, e, n);
		if (n->state == CS_FALSE && n->was_true)
			fprintf(v->out, "  -- was true: turned false");
		fputc('\n', v->out);
	}
}

void cs_view_free(struct cs_view *v)
{
	free(v->seen);
	v->seen = NULL;
}

static void tree_rec(FILE *out, const struct cs_engine *e, uint32_t id, int depth)
{
	const struct cs_node *n = &e->nodes[id];
	uint32_t i;

	fprintf(out, "  %s %*s", marks[n->state], depth * 2, "");
	node_line(out, e, n);
	fprintf(out, "  %s%s", cs_state_name(n->state),
		n->was_true && n->state != CS_TRUE ? " (was true)" : "");
	if (n->state == CS_TRUE || n->state == CS_FALSE || n->was_true)
		values(out, e, n);
	if (n->nparents > 1)
		fprintf(out, "  (also under %u more)", n->nparents - 1);
	fputc('\n', out);
	for (i = 0; i < n->nkids; i++)
		if (e->nodes[n->kids[i]].parents[0] == id)
			tree_rec(out, e, n->kids[i], depth + 1);
}

void cs_view_tree(FILE *out, const struct cs_engine *e)
{
	uint32_t counts[CS_STATE_COUNT] = { 0 }, i, k;

	for (i = 0; i < e->nnodes; i++)
		counts[e->nodes[i].state]++;
	fprintf(out, "\nSearch History Graph: %u nodes (", e->nnodes);
	for (i = 0, k = 0; i < CS_STATE_COUNT; i++)
		if (counts[i])
			fprintf(out, "%s%u %s", k++ ? ", " : "", counts[i], cs_state_name(i));
	fprintf(out, ")\n  (+ true, - false, ? testing, ~ deferred, . never concluded, x "
		"unavailable here)\n");
	if (e->nnodes)
		tree_rec(out, e, 0, 0);
}

/* The focus whose profile explains a bottleneck: a procedure's or call path's module, else
 * the focus itself (same threads). */
static void context_focus(const struct cs_node *n, struct cs_focus *f)
{
	char *code, *slash;

	cs_focus_copy(f, &n->focus);
	code = f->part[H_CODE];
	if (code && (slash = strchr(code + 6, '/')))
		*slash = 0;
}

/* Whether a table row is the bottleneck's own procedure (or the head of its call path). */
static int is_here(const char *proc, const char *name)
{
	size_t k = strlen(name);

	return proc && !strncmp(proc, name, k) && (proc[k] == 0 || proc[k] == '/');
}

static void profile_table(FILE *out, const struct cs_node *n, uint64_t t0, uint64_t t1,
			  cs_profile_fn profile, void *arg)
{
	struct ts_row rows[10];
	struct cs_focus f;
	char fs[4096];
	const char *proc = NULL;
	uint32_t nr, i;
	double total = 0;

	context_focus(n, &f);
	nr = profile(arg, &f, t0, t1, rows, 10, &total);
	cs_focus_str(fs, sizeof(fs), &f);
	if (n->focus.part[H_CODE] && strchr(n->focus.part[H_CODE] + 6, '/'))
		proc = strchr(n->focus.part[H_CODE] + 6, '/') + 1;
	fprintf(out, "    profile of %s over the same interval (time in each procedure itself, threads summed):\n",
		fs);
	fprintf(out, "        seconds  %%interval      calls  procedure\n");
	for (i = 0; i < nr; i++) {
		int here = is_here(proc, rows[i].name);

		fprintf(out, "    %s %9.3f  %8.1f  %10llu  %s (%s)\n", here ? "*" : " ", rows[i].secs,
			total > 0 ? 100 * rows[i].secs / total : 0,
			(unsigned long long)rows[i].calls, rows[i].name, rows[i].module);
	}
	cs_focus_free(&f);
}

static void live_table(FILE *out, const struct cs_engine *e, const struct cs_node *n,
		       cs_live_profile_fn profile, void *arg)
{
	struct cs_live_row rows[12];
	struct cs_focus f;
	char fs[4096];
	const char *proc = NULL;
	uint32_t nr, i;

	context_focus(n, &f);
	nr = profile(arg, e, &f, rows, 12);
	cs_focus_str(fs, sizeof(fs), &f);
	if (n->focus.part[H_CODE] && strchr(n->focus.part[H_CODE] + 6, '/'))
		proc = strchr(n->focus.part[H_CODE] + 6, '/') + 1;
	if (!nr) {
		fprintf(out, "    profile: no procedure of %s was measured by the search\n", fs);
		cs_focus_free(&f);
		return;
	}
	fprintf(out, "    profile of %s as the search measured it (CPU time, callees' included, "
		"each procedure over the time it was measured; threads summed):\n", fs);
	fprintf(out, "         %%CPU    cpu s  measured s     calls/s  procedure\n");
	for (i = 0; i < nr; i++) {
		fprintf(out, "    %s %6.1f %8.3f  %10.2f  ", is_here(proc, rows[i].name) ? "*" : " ",
			rows[i].measured_s > 0 ? 100 * rows[i].cpu_s / rows[i].measured_s : 0,
			rows[i].cpu_s, rows[i].measured_s);
		if (rows[i].calls_per_s >= 0)
			fprintf(out, "%10.3g  %s\n", rows[i].calls_per_s, rows[i].name);
		else
			fprintf(out, "%10s  %s\n", "-", rows[i].name);
	}
	cs_focus_free(&f);
}

struct tables {
	cs_profile_fn profile;
	cs_live_profile_fn live;
	void *arg;
};

static void explain_one(FILE *out, const struct cs_engine *e, const struct cs_node *n,
			uint32_t k, uint64_t run_ns, const struct tables *tb)
{
	const struct hypothesis *h = &e->lib->hyps[n->hyp];
	char focus[4096], test[256];
	uint64_t t0, t1;
	uint32_t i;

	cs_node_interval(e, n, &t0, &t1);
	if (!t1)
		t1 = e->now;
	cs_focus_str(focus, sizeof(focus), &n->focus);
	hx_print(test, sizeof(test), e->lib, h->test);
	fprintf(out, "\n%u. %s (%s)\n", k, h->title ? h->title : h->name, h->name);
	fprintf(out, "    what:  %s; test %s", h->explain ? h->explain : h->name, test);
	for (i = 0; i < h->nmetrics && i < CS_MAX_TERMS; i++)
		fprintf(out, "%s%s = %.3g", i ? ", " : " with ", e->lib->metrics[h->metrics[i]],
			n->values[i]);
	fprintf(out, "\n    where: %s\n", focus);
	fprintf(out, "    when:  %s (%.3f s to %.3f s); true from %.3f s", cs_node_when(e, n),
		secs(t0), secs(t1), n->nflips ? secs(n->flips[0].t) : 0.0);
	for (i = 1; i < n->nflips; i++)
		fprintf(out, ", %s at %.3f s", n->flips[i].to_true ? "true again" : "false",
			secs(n->flips[i].t));
	if (n->state != CS_TRUE)
		fprintf(out, " -- it did not hold to the end");
	fputc('\n', out);
	if (n->share >= 0) {
		double run_share = run_ns ? n->share * (double)(t1 - t0) / (double)run_ns : 0;

		fprintf(out, "    share: %.1f %% of the threads' time in the interval observed "
			"(%.2f s of it), about %.1f %% of the run\n", 100 * n->share, n->observed,
			100 * run_share);
	}
	if (tb->profile)
		profile_table(out, n, t0, t1, tb->profile, tb->arg);
	else if (tb->live)
		live_table(out, e, n, tb->live, tb->arg);
}

static uint32_t explain_all(FILE *out, const struct cs_engine *e, uint64_t run_ns,
			    const struct tables *tb)
{
	uint32_t i, k = 0;

	fprintf(out, "\nBottlenecks (true nodes none of whose refinements was true):\n");
	for (i = 0; i < e->nnodes; i++)
		if (cs_node_is_bottleneck(e, &e->nodes[i]))
			explain_one(out, e, &e->nodes[i], ++k, run_ns, tb);
	if (!k)
		fprintf(out, "  none found: no hypothesis held at any focus\n");
	return k;
}

uint32_t cs_view_explain(FILE *out, const struct cs_engine *e, uint64_t run_ns,
			 cs_profile_fn profile, void *arg)
{
	struct tables tb = { profile, NULL, arg };

	return explain_all(out, e, run_ns, &tb);
}

uint32_t cs_view_explain_live(FILE *out, const struct cs_engine *e, uint64_t run_ns,
			      cs_live_profile_fn profile, void *arg)
{
	struct tables tb = { NULL, profile, arg };

	return explain_all(out, e, run_ns, &tb);
}
