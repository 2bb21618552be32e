/* SPDX-License-Identifier: MIT */
/* The Search History Graph written out: JSON (docs/consult.md) and Graphviz DOT. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "report.h"

const char *cs_node_when(const struct cs_engine *e, const struct cs_node *n)
{
	static char buf[256];

	if (n->phase < 0)
		return "whole run";
	snprintf(buf, sizeof(buf), "phase %s", e->phases[n->phase].name);
	return buf;
}

/* A JSON number; NaN and infinities (0/0 of a metric never seen) are null. */
static void json_num(FILE *out, double v)
{
	if (isfinite(v))
		fprintf(out, "%.6g", v);
	else
		fprintf(out, "null");
}

static void json_node(FILE *out, const struct cs_engine *e, const struct cs_node *n)
{
	const struct hypothesis *h = &e->lib->hyps[n->hyp];
	char focus[4096];
	uint32_t i;

	cs_focus_str(focus, sizeof(focus), &n->focus);
	fprintf(out, "{\"id\":%u,\"hypothesis\":", n->id);
	json_str(out, h->name);
	fprintf(out, ",\"focus\":");
	json_str(out, focus);
	fprintf(out, ",\"phase\":");
	if (n->phase >= 0)
		json_str(out, e->phases[n->phase].name);
	else
		fprintf(out, "null");
	fprintf(out, ",\"state\":\"%s\",\"axis\":\"%s\",\"was_true\":%s,\"bottleneck\":%s,"
		"\"parents\":[", cs_state_name(n->state), cs_axis_name(n->axis),
		n->was_true ? "true" : "false", cs_node_is_bottleneck(e, n) ? "true" : "false");
	for (i = 0; i < n->nparents; i++)
		fprintf(out, "%s%u", i ? "," : "", n->parents[i]);
	fprintf(out, "],\"start_ns\":%llu,\"decided_ns\":%llu,\"end_ns\":%llu,\"observed_s\":",
		(unsigned long long)n->t_start, (unsigned long long)n->t_decided,
		(unsigned long long)n->t_end);
	json_num(out, n->observed);
	fprintf(out, ",\"value\":");
	json_num(out, h->test && n->observed > 0 ? n->value : (double)NAN);
	fprintf(out, ",\"share\":");
	json_num(out, n->share >= 0 && n->observed > 0 ? n->share : (double)NAN);
	fprintf(out, ",\"metrics\":{");
	for (i = 0; i < h->nmetrics && i < CS_MAX_TERMS; i++) {
		fprintf(out, "%s", i ? "," : "");
		json_str(out, e->lib->metrics[h->metrics[i]]);
		fprintf(out, ":");
		json_num(out, n->observed > 0 ? n->values[i] : (double)NAN);
	}
	fprintf(out, "},\"samples\":%llu,\"retests\":%u,\"flips\":[",
		(unsigned long long)n->samples, n->retests);
	for (i = 0; i < n->nflips; i++)
		fprintf(out, "%s{\"t_ns\":%llu,\"to\":\"%s\"}", i ? "," : "",
			(unsigned long long)n->flips[i].t, n->flips[i].to_true ? "true" : "false");
	fprintf(out, "],\"why\":");
	if (n->why)
		json_str(out, n->why);
	else
		fprintf(out, "null");
	fprintf(out, "}");
}

/* Where the samples went: one (metric, focus) pair measured, its samples, of them re-tests. */
static void json_req(FILE *out, const struct cs_engine *e, const struct cs_req *r, uint32_t i)
{
	char focus[4096];

	cs_focus_str(focus, sizeof(focus), &r->focus);
	fprintf(out, "%s\n{\"metric\":", i ? "," : "");
	json_str(out, e->lib->metrics[r->metric]);
	fprintf(out, ",\"focus\":");
	json_str(out, focus);
	fprintf(out, ",\"samples\":%llu,\"retest_samples\":%llu,\"seconds\":",
		(unsigned long long)r->samples, (unsigned long long)r->retest_samples);
	json_num(out, r->secs);
	fprintf(out, "}");
}

void cs_write_json_members(FILE *out, const struct cs_engine *e)
{
	uint32_t i, k = 0;

	fprintf(out, "\"phases\":[");
	for (i = 0; i < e->nphases; i++) {
		fprintf(out, "%s{\"name\":", i ? "," : "");
		json_str(out, e->phases[i].name);
		fprintf(out, ",\"start_ns\":%llu,\"end_ns\":%llu,\"root\":%u}",
			(unsigned long long)e->phases[i].start, (unsigned long long)e->phases[i].end,
			e->phases[i].root);
	}
	fprintf(out, "],\"nodes\":[");
	for (i = 0; i < e->nnodes; i++) {
		fprintf(out, "%s", i ? ",\n" : "\n");
		json_node(out, e, &e->nodes[i]);
	}
	fprintf(out, "],\"bottlenecks\":[");
	for (i = 0; i < e->nnodes; i++)
		if (cs_node_is_bottleneck(e, &e->nodes[i]))
			fprintf(out, "%s%u", k++ ? "," : "", i);
	fprintf(out, "],\"measured\":[");
	for (i = 0; i < e->nreqs; i++)
		json_req(out, e, &e->reqs[i], i);
	fprintf(out, "]");
}

/* ---- DOT ---- */

static const char *const dot_fill[CS_STATE_COUNT] = {
	[CS_UNTESTED] = "white", [CS_TESTING] = "lightyellow", [CS_TRUE] = "palegreen",
	[CS_FALSE] = "lightpink", [CS_DEFERRED] = "lightblue", [CS_NEVER] = "lightgrey",
	[CS_UNAVAILABLE] = "white",
};

static void dot_str(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', out);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, out);
	}
}

void cs_write_dot(FILE *out, const struct cs_engine *e, const char *title)
{
	uint32_t i, k;

	fprintf(out, "digraph shg {\n\tlabel=\"Search History Graph: ");
	dot_str(out, title);
	fprintf(out, "\";\n\trankdir=LR;\n\tnode [shape=box, style=filled, fontname=\"Helvetica\"];\n");
	for (i = 0; i < e->nnodes; i++) {
		const struct cs_node *n = &e->nodes[i];
		char focus[4096];

		cs_focus_str(focus, sizeof(focus), &n->focus);
		fprintf(out, "\tn%u [label=\"", i);
		dot_str(out, e->lib->hyps[n->hyp].name);
		fprintf(out, "\\n");
		dot_str(out, focus);
		fprintf(out, "\\n");
		dot_str(out, cs_node_when(e, n));
		fprintf(out, "\\n%s%s\", fillcolor=%s%s%s];\n", cs_state_name(n->state),
			n->was_true && n->state != CS_TRUE ? " (was true)" : "",
			dot_fill[n->state], n->state == CS_UNAVAILABLE ? ", style=\"dashed\"" : "",
			cs_node_is_bottleneck(e, n) ? ", penwidth=3" : "");
	}
	for (i = 0; i < e->nnodes; i++)
		for (k = 0; k < e->nodes[i].nkids; k++)
			fprintf(out, "\tn%u -> n%u;\n", i, e->nodes[i].kids[k]);
	fprintf(out, "}\n");
}
