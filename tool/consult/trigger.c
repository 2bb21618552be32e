/* SPDX-License-Identifier: MIT */
/* Trigger predicates (trigger.h): a source that holds the search back until one fires. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trigger.h"
#include "util.h"

struct trig {
	struct cs_source *in;
	char metric[64];
	struct cs_focus focus;
	double value;
	int above;       /* METRIC>VALUE; else METRIC<VALUE */
	int call;        /* call:PROC */
	char proc[128];  /* its name, until found among the source's procedures */
	uint64_t gen;    /* the source's generation when last looked for */
	int req;         /* the trigger's request on the inner source */
	uint64_t fired;  /* 0: not yet; else the inner time it fired + 1 */
	char phase[256]; /* the phase open when it fired, "" */
	int phase_open;
};

#define T(src) ((struct trig *)(src)->impl)

int cs_trigger_check(const char *spec, char *err, size_t cap)
{
	const char *op = strpbrk(spec, "<>");
	char *end;
	double v;

	if (!strncmp(spec, "call:", 5))
		return spec[5] && !strchr(spec + 5, '/') ? 0
		       : (snprintf(err, cap, "--trigger call:PROC wants a procedure's name"), -1);
	if (!op || op == spec || (size_t)(op - spec) >= 64)
		return snprintf(err, cap, "--trigger wants call:PROC or METRIC>VALUE "
				"(METRIC<VALUE), not '%s'", spec), -1;
	errno = 0;
	v = strtod(op + 1, &end);
	if (errno || end == op + 1 || *end || !isfinite(v))
		return snprintf(err, cap, "--trigger %s: '%s' is not a number", spec, op + 1), -1;
	return 0;
}

/* The procedure's focus: the first module whose children name it. */
static int find_proc(struct cs_source *in, const char *name, struct cs_focus *out)
{
	struct cs_focus root = { { NULL } }, mod = { { NULL } };
	char **mods = NULL, **procs = NULL;
	uint32_t nm = in->ops->children(in, &root, H_CODE, &mods), np, i, k;
	int found = 0;

	for (i = 0; i < nm; i++) {
		mod.part[H_CODE] = mods[i];
		np = found ? 0 : in->ops->children(in, &mod, H_CODE, &procs);
		for (k = 0; k < np; k++) {
			const char *slash = strrchr(procs[k], '/');

			if (!found && slash && !strcmp(slash + 1, name)) {
				out->part[H_CODE] = xstrdup(procs[k]);
				found = 1;
			}
			free(procs[k]);
		}
		free(procs);
		procs = NULL;
		free(mods[i]);
	}
	free(mods);
	return found ? 0 : -1;
}

/* The trigger's request, once its procedure is known (a trace's appear as they are called). */
static void arm(struct trig *t)
{
	uint64_t g = t->in->ops->generation(t->in);

	if (t->req >= 0 || (t->gen == g && t->gen))
		return;
	t->gen = g;
	if (t->call && !t->focus.part[H_CODE] && find_proc(t->in, t->proc, &t->focus) != 0)
		return;
	if (t->in->ops->supports(t->in, t->metric, &t->focus))
		t->req = t->in->ops->request(t->in, t->metric, &t->focus);
}

static int tr_step(struct cs_source *src, struct cs_step *st)
{
	struct trig *t = T(src);
	uint32_t i;

	while (!t->fired) {
		double v, rate;

		if (t->in->ops->step(t->in, st) != 0)
			return -1;
		if (t->req < 0) { /* not measurable yet: look again after this period */
			arm(t);
			if (st->last)
				return -1;
			continue;
		}
		for (i = 0; i < st->nphase; i++) { /* the phase open when it fires */
			t->phase_open = st->phase[i].name != NULL;
			if (st->phase[i].name)
				snprintf(t->phase, sizeof(t->phase), "%s", st->phase[i].name);
		}
		v = t->in->ops->read(t->in, t->req);
		rate = st->t1 > st->t0 ? v / ((double)(st->t1 - st->t0) / 1e9) : 0;
		if (t->call ? v > 0 : t->above ? rate > t->value : rate < t->value) {
			t->fired = st->t1 + 1;
			t->in->ops->cancel(t->in, t->req);
		}
		if (st->last)
			return -1; /* never fired, or fired at the very end: nothing to search */
		if (t->fired && t->phase_open) { /* the next step opens it again, at t = 0 */
			memset(st, 0, sizeof(*st));
			if (t->in->ops->step(t->in, st) != 0)
				return -1;
			memmove(&st->phase[1], &st->phase[0],
				(CS_MAX_PHASE_EVENTS - 1) * sizeof(st->phase[0]));
			st->phase[0].t = st->t0;
			st->phase[0].name = t->phase;
			st->nphase = st->nphase < CS_MAX_PHASE_EVENTS ? st->nphase + 1 : st->nphase;
			goto shift;
		}
	}
	if (t->in->ops->step(t->in, st) != 0)
		return -1;
shift:
	st->t0 -= st->t0 >= t->fired - 1 ? t->fired - 1 : st->t0;
	st->t1 -= st->t1 >= t->fired - 1 ? t->fired - 1 : st->t1;
	for (i = 0; i < st->nphase; i++)
		st->phase[i].t = st->phase[i].t >= t->fired - 1 ? st->phase[i].t - (t->fired - 1)
								 : 0;
	return 0;
}

static int tr_supports(struct cs_source *s, const char *m, const struct cs_focus *f)
{
	return T(s)->in->ops->supports(T(s)->in, m, f);
}

static uint32_t tr_children(struct cs_source *s, const struct cs_focus *f, int h, char ***out)
{
	return T(s)->in->ops->children(T(s)->in, f, h, out);
}

static int tr_request(struct cs_source *s, const char *m, const struct cs_focus *f)
{
	return T(s)->in->ops->request(T(s)->in, m, f);
}

static void tr_cancel(struct cs_source *s, int req)
{
	T(s)->in->ops->cancel(T(s)->in, req);
}

static double tr_cost(struct cs_source *s, const char *m, const struct cs_focus *f)
{
	return T(s)->in->ops->cost(T(s)->in, m, f);
}

static double tr_max_rate(struct cs_source *s, const char *m, const struct cs_focus *f)
{
	return T(s)->in->ops->max_rate(T(s)->in, m, f);
}

static double tr_read(struct cs_source *s, int req)
{
	return T(s)->in->ops->read(T(s)->in, req);
}

static uint64_t shifted(const struct trig *t, uint64_t at)
{
	return !at ? 0 : at > t->fired - 1 ? at - (t->fired - 1) : 1;
}

static uint64_t tr_run_end(struct cs_source *s)
{
	struct trig *t = T(s);

	return t->fired ? shifted(t, t->in->ops->run_end(t->in)) : 0;
}

static uint64_t tr_phase_end(struct cs_source *s, uint64_t start)
{
	struct trig *t = T(s);

	return t->fired ? shifted(t, t->in->ops->phase_end(t->in, start + t->fired - 1)) : 0;
}

static uint64_t tr_generation(struct cs_source *s)
{
	return T(s)->in->ops->generation(T(s)->in);
}

static int tr_fresh(struct cs_source *s, int req)
{
	struct cs_source *in = T(s)->in;

	return !in->ops->fresh || in->ops->fresh(in, req);
}

/* Until the trigger fires the source keeps its pace: the firing is seen within a period. */
static void tr_pace(struct cs_source *s, double settled, double wait)
{
	struct cs_source *in = T(s)->in;

	if (T(s)->fired && in->ops->pace)
		in->ops->pace(in, settled, wait);
}

static void tr_pace_req(struct cs_source *s, int req, double slow)
{
	struct cs_source *in = T(s)->in;

	if (in->ops->pace_req)
		in->ops->pace_req(in, req, slow);
}

static int tr_current(struct cs_source *s, int req)
{
	struct cs_source *in = T(s)->in;

	return !in->ops->current || in->ops->current(in, req);
}

struct cs_source *cs_trigger_new(struct cs_source *inner, const char *spec, int known,
				 char *err, size_t cap)
{
	static struct cs_source_ops ops = {
		.supports = tr_supports, .children = tr_children, .request = tr_request,
		.cancel = tr_cancel, .cost = tr_cost, .max_rate = tr_max_rate, .step = tr_step,
		.read = tr_read, .run_end = tr_run_end, .phase_end = tr_phase_end,
		.generation = tr_generation, .fresh = tr_fresh, .pace = tr_pace,
		.pace_req = tr_pace_req, .current = tr_current,
	};
	struct cs_source *src;
	struct trig *t;
	const char *op;

	if (cs_trigger_check(spec, err, cap) != 0)
		return NULL;
	t = xcalloc(1, sizeof(*t));
	t->in = inner;
	t->req = -1;
	if (!strncmp(spec, "call:", 5)) {
		t->call = 1;
		snprintf(t->metric, sizeof(t->metric), "calls");
		snprintf(t->proc, sizeof(t->proc), "%s", spec + 5);
		if (find_proc(inner, t->proc, &t->focus) != 0 && known) {
			snprintf(err, cap, "--trigger %s: no procedure %s in the program", spec,
				 spec + 5);
			free(t);
			return NULL;
		}
	} else {
		op = strpbrk(spec, "<>");
		snprintf(t->metric, sizeof(t->metric), "%.*s", (int)(op - spec), spec);
		t->above = *op == '>';
		t->value = strtod(op + 1, NULL);
	}
	arm(t);
	if (t->req < 0 && (known || !t->call)) {
		snprintf(err, cap, "--trigger %s: %s cannot be measured %s", spec, t->metric,
			 t->call ? "there" : "for the whole program");
		cs_focus_free(&t->focus);
		free(t);
		return NULL;
	}
	ops.sample_bytes = inner->ops->sample_bytes;
	src = xcalloc(1, sizeof(*src));
	src->ops = &ops;
	src->impl = t;
	src->late_start = inner->late_start;
	return src;
}

void cs_trigger_free(struct cs_source *src)
{
	if (!src)
		return;
	cs_focus_free(&T(src)->focus);
	free(src->impl);
	free(src);
}

uint64_t cs_trigger_fired(const struct cs_source *src)
{
	return T(src)->fired ? T(src)->fired - 1 : 0;
}
