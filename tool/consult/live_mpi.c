/* SPDX-License-Identifier: MIT */
/*
 * The ranks of an MPI program searched live together (live_mpi.h). Each rank is a live source
 * of its own (its process attached, its requests its own instrumentation); a focus's Process
 * part names the rank that measures it, a focus without one is measured in every rank and the
 * values added. Made here from the ranks' readings, as post mortem (trace_mpi.c) makes them
 * from the matched traces:
 *
 *   active_threads      the ranks alive x the period: one thread a rank, the one that calls
 *                       MPI (the MPI library's own threads — OpenMPI's progress and PMIx
 *                       threads — compute nothing of the program); /Threads/TID under a rank
 *   active_ranks        the same, without Threads
 *   cpu_time            the ranks' cpu_time less their CPU time inside MPI's waiting calls
 *                       (mpi_cpu_time: a waiting rank polls), as MPI time is not computing
 *   cpu_time_rank_max,  a rank's computing time is its time outside MPI's waiting calls (wall
 *   cpu_time_rank_mean  time: the period, or wall_time at a Code focus, less mpi_time there),
 *                       as post mortem a trace's time outside MPI calls is computing; the
 *                       largest of the focus's ranks' since the request began, the mean of all
 *                       the ranks'
 *   mpi_coll_wait       a rank's time in collectives less the least any rank spent in them
 *                       (at the same Code focus) since the request began: the last to arrive
 *                       waits least, what it spent being the collectives' own work (the rule
 *                       of parallel compensation, docs/mpi.md); ranks that made none left out
 *
 * mpi_late_sender needs the matching of messages (the sender's time of each send): not live.
 * Communicator, Peer and Tag are each rank's (live_chan.c: its receives' arguments), the
 * children of a focus the union of its ranks'; mpi_p2p_time is their only metric (with
 * active_threads, active_ranks).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live_mpi.h"
#include "util.h"

enum mk { MK_SUM, MK_CPU, MK_ACTIVE, MK_MAX, MK_MEAN, MK_WAIT };

struct mreq {
	int used;
	enum mk kind;
	uint32_t scope;   /* the rank (index) of the focus's Process part; UINT32_MAX: all */
	int *a, *b;       /* per rank: the sub-requests read (a) and subtracted (b), -1: none */
	double *cum;      /* per rank: a - b since the request began (MK_MAX, MK_MEAN, MK_WAIT) */
	double prev;      /* the derived value at the last step */
	double last;
	int fresh;
};

struct msrc {
	struct cs_source **r;
	int32_t *rank;
	uint32_t n;
	uint8_t *done, *stepped;
	struct mreq *reqs;
	uint32_t nreqs;
	uint64_t origin, t_prev;
	double dt;
	int last_done, warm;
	char phase_name[256];
	uint64_t pair_samples; /* readings as each pair had them, the shared ones counted again */
};

#define M(src) ((struct msrc *)(src)->impl)
#define SUB(ms, i) ((ms)->r[i])

static const struct cs_source_ops mpi_ops;

int live_mpi_is(const struct cs_source *src)
{
	return src && src->ops == &mpi_ops;
}

/* ---- foci ---- */

/* The rank index a focus's Process part names: UINT32_MAX when none, -2 when unknown. */
static int64_t scope_of(const struct msrc *ms, const struct cs_focus *f)
{
	const char *p = f->part[H_PROCESS];
	char *end;
	long v;
	uint32_t i;

	if (!p) /* one rank alone: its focus without a Process part is the rank's */
		return ms->n == 1 ? 0 : UINT32_MAX;
	if (strncmp(p, "/Process/rank", 13) || !p[13])
		return -2;
	v = strtol(p + 13, &end, 10);
	if (*end)
		return -2;
	for (i = 0; i < ms->n; i++)
		if (ms->rank[i] == v)
			return i;
	return -2;
}

/* The focus a rank's source measures: f without its Process part. */
static void sub_focus(const struct cs_focus *f, struct cs_focus *g)
{
	*g = *f;
	g->part[H_PROCESS] = NULL;
}

static int in_scope(uint32_t scope, uint32_t i)
{
	return scope == UINT32_MAX || scope == i;
}

static enum mk kind_of(const char *metric, const struct cs_focus *f)
{
	if (!strcmp(metric, "cpu_time"))
		return MK_CPU;
	if (!strcmp(metric, "active_ranks") ||
	    (!strcmp(metric, "active_threads") && !f->part[H_THREADS]))
		return MK_ACTIVE;
	if (!strcmp(metric, "cpu_time_rank_max"))
		return MK_MAX;
	if (!strcmp(metric, "cpu_time_rank_mean"))
		return MK_MEAN;
	if (!strcmp(metric, "mpi_coll_wait"))
		return MK_WAIT;
	return MK_SUM;
}

/* What a kind reads in each rank (b: NULL when nothing is subtracted). */
static void parts_of(enum mk k, const char *metric, const struct cs_focus *g, const char **a,
		     const char **b)
{
	*a = metric;
	*b = NULL;
	switch (k) {
	case MK_CPU:
		*b = "mpi_cpu_time";
		break;
	case MK_MAX:
	case MK_MEAN: /* the period at the whole program, a wall timer at a Code focus */
		*a = g->part[H_CODE] ? "wall_time" : NULL;
		*b = "mpi_time";
		break;
	case MK_WAIT:
		*a = "mpi_coll_time";
		break;
	default:
		break;
	}
}

static int ms_supports(struct cs_source *src, const char *metric, const struct cs_focus *f)
{
	struct msrc *ms = M(src);
	int64_t sc = scope_of(ms, f);
	enum mk k = kind_of(metric, f);
	struct cs_focus g;
	const char *a, *b;
	uint32_t i;

	if (sc == -2 || f->part[H_MACHINE] || !strcmp(metric, "mpi_late_sender"))
		return 0;
	if ((f->part[H_COMM] || f->part[H_PEER] || f->part[H_TAG]) && k != MK_ACTIVE &&
	    strcmp(metric, "mpi_p2p_time"))
		return 0; /* a channel is the receives' (live_chan.c) */
	if (f->part[H_THREADS] && sc == UINT32_MAX)
		return 0; /* threads refine a rank */
	if (k == MK_ACTIVE)
		return !f->part[H_SYNC] && !f->part[H_FILES];
	if (k == MK_MAX || k == MK_MEAN || k == MK_WAIT) {
		if (ms->n < 2 || f->part[H_THREADS] || f->part[H_SYNC] || f->part[H_FILES])
			return 0;
	}
	sub_focus(f, &g);
	parts_of(k, metric, &g, &a, &b);
	i = sc == UINT32_MAX ? 0 : (uint32_t)sc;
	return (!a || SUB(ms, i)->ops->supports(SUB(ms, i), a, &g)) &&
	       (!b || k == MK_CPU || SUB(ms, i)->ops->supports(SUB(ms, i), b, &g));
}

/* Each name once. */
static void push_unique(char ***out, uint32_t *n, char *name)
{
	uint32_t i;

	for (i = 0; i < *n; i++)
		if (!strcmp((*out)[i], name)) {
			free(name);
			return;
		}
	*out = xrealloc(*out, (*n + 1) * sizeof(char *));
	(*out)[(*n)++] = name;
}

static uint32_t ms_children(struct cs_source *src, const struct cs_focus *f, int h, char ***out)
{
	struct msrc *ms = M(src);
	int64_t sc = scope_of(ms, f);
	struct cs_focus g;
	char **sub, name[64];
	uint32_t n = 0, i, k, ns;

	*out = NULL;
	if (sc == -2 || h == H_MACHINE)
		return 0;
	/* Code before the channels: a channel focus is not refined along Code (the same foci are
	 * reached the other way, in fewer requests on MPI_Recv's point, which every MPI metric
	 * shares: live_chan.c) */
	if (h == H_CODE && (f->part[H_COMM] || f->part[H_PEER] || f->part[H_TAG]))
		return 0;
	if (h == H_PROCESS) {
		if (f->part[H_PROCESS] || ms->n < 2)
			return 0;
		sub_focus(f, &g);
		for (i = 0; i < ms->n; i++) {
			if (!live_source_chan_used(SUB(ms, i), &g))
				continue; /* a channel: the ranks that received on it */
			snprintf(name, sizeof(name), "/Process/rank%d", (int)ms->rank[i]);
			push_unique(out, &n, xstrdup(name));
		}
		return n;
	}
	if (h == H_THREADS && sc == UINT32_MAX)
		return 0;
	sub_focus(f, &g);
	for (i = 0; i < ms->n; i++) {
		if (!in_scope((uint32_t)sc, i))
			continue;
		ns = SUB(ms, i)->ops->children(SUB(ms, i), &g, h, &sub);
		for (k = 0; k < ns; k++)
			push_unique(out, &n, sub[k]);
		free(sub);
	}
	return n;
}

/* ---- requests ---- */

static int new_mreq(struct msrc *ms)
{
	uint32_t i;

	for (i = 0; i < ms->nreqs && ms->reqs[i].used; i++)
		;
	if (i == ms->nreqs) {
		ms->reqs = xrealloc(ms->reqs, (ms->nreqs + 1) * sizeof(*ms->reqs));
		ms->nreqs++;
	}
	memset(&ms->reqs[i], 0, sizeof(ms->reqs[i]));
	ms->reqs[i].used = 1;
	ms->reqs[i].a = xmalloc(ms->n * sizeof(int));
	ms->reqs[i].b = xmalloc(ms->n * sizeof(int));
	ms->reqs[i].cum = xcalloc(ms->n, sizeof(double));
	return (int)i;
}

static void ms_cancel(struct cs_source *src, int id)
{
	struct msrc *ms = M(src);
	struct mreq *q;
	uint32_t i;

	if (id < 0 || (uint32_t)id >= ms->nreqs || !ms->reqs[id].used)
		return;
	q = &ms->reqs[id];
	for (i = 0; i < ms->n; i++) {
		if (q->a[i] >= 0)
			SUB(ms, i)->ops->cancel(SUB(ms, i), q->a[i]);
		if (q->b[i] >= 0)
			SUB(ms, i)->ops->cancel(SUB(ms, i), q->b[i]);
	}
	free(q->a);
	free(q->b);
	free(q->cum);
	q->a = q->b = NULL;
	q->cum = NULL;
	q->used = 0;
}

/* The ranks a kind reads: the mean and the waits compare every rank, whatever the scope. */
static int reads_rank(const struct mreq *q, uint32_t i)
{
	return q->kind == MK_MEAN || q->kind == MK_WAIT || in_scope(q->scope, i);
}

static int ms_request(struct cs_source *src, const char *metric, const struct cs_focus *f)
{
	struct msrc *ms = M(src);
	struct cs_focus g;
	const char *a, *b;
	struct mreq *q;
	uint32_t i;
	int id;

	if (!ms_supports(src, metric, f))
		return -1;
	id = new_mreq(ms);
	q = &ms->reqs[id];
	q->kind = kind_of(metric, f);
	q->scope = (uint32_t)scope_of(ms, f);
	sub_focus(f, &g);
	parts_of(q->kind, metric, &g, &a, &b);
	for (i = 0; i < ms->n; i++) {
		struct cs_source *s = SUB(ms, i);
		/* a channel only where it was seen: a rank that never used it would hold room on
		 * its MPI_Recv for nothing (live_chan.c) */
		int need = reads_rank(q, i) && q->kind != MK_ACTIVE && !ms->done[i] &&
			   live_source_chan_used(s, &g);

		q->a[i] = need && a ? s->ops->request(s, a, &g) : -1;
		q->b[i] = need && b && s->ops->supports(s, b, &g) ? s->ops->request(s, b, &g) : -1;
	}
	return id;
}

static double ms_cost(struct cs_source *src, const char *metric, const struct cs_focus *f)
{
	struct msrc *ms = M(src);
	enum mk k = kind_of(metric, f);
	int64_t sc = scope_of(ms, f);
	struct mreq probe = { .kind = k, .scope = (uint32_t)sc };
	struct cs_focus g;
	const char *a, *b;
	double c = 0;
	uint32_t i;

	if (sc == -2 || k == MK_ACTIVE)
		return 0;
	sub_focus(f, &g);
	parts_of(k, metric, &g, &a, &b);
	for (i = 0; i < ms->n; i++) {
		if (!reads_rank(&probe, i) || ms->done[i] || !live_source_chan_used(SUB(ms, i), &g))
			continue;
		c += a ? SUB(ms, i)->ops->cost(SUB(ms, i), a, &g) : 0;
		c += b ? SUB(ms, i)->ops->cost(SUB(ms, i), b, &g) : 0;
	}
	return c;
}

static double ms_max_rate(struct cs_source *src, const char *metric, const struct cs_focus *f)
{
	(void)src, (void)metric, (void)f;
	return INFINITY;
}

/* ---- time ---- */

static double sub_read(struct msrc *ms, uint32_t i, int id)
{
	return id >= 0 && ms->stepped[i] ? SUB(ms, i)->ops->read(SUB(ms, i), id) : 0;
}

static int sub_fresh(struct msrc *ms, uint32_t i, int id)
{
	struct cs_source *s = SUB(ms, i);

	return id >= 0 && ms->stepped[i] && (!s->ops->fresh || s->ops->fresh(s, id));
}

/* The derived value of a request now (cumulative since it began). */
static double derived(const struct msrc *ms, const struct mreq *q)
{
	double v = 0, lo = INFINITY;
	uint32_t i, k = 0;

	for (i = 0; i < ms->n; i++) {
		if (q->kind == MK_MAX && in_scope(q->scope, i))
			v = q->cum[i] > v ? q->cum[i] : v;
		else if (q->kind == MK_MEAN)
			v += q->cum[i] / ms->n;
		else if (q->kind == MK_WAIT && q->cum[i] > 0)
			lo = q->cum[i] < lo ? q->cum[i] : lo;
	}
	if (q->kind != MK_WAIT)
		return v;
	for (i = 0; i < ms->n; i++)
		if (in_scope(q->scope, i) && q->cum[i] > 0) {
			v += q->cum[i] - lo;
			k++;
		}
	return k ? v : 0;
}

static void update(struct msrc *ms, struct mreq *q)
{
	double v = 0, x, now;
	uint32_t i, alive = 0;

	q->fresh = 0;
	for (i = 0; i < ms->n; i++) {
		if (!reads_rank(q, i))
			continue;
		alive += ms->stepped[i];
		q->fresh |= sub_fresh(ms, i, q->a[i]) || sub_fresh(ms, i, q->b[i]);
		if (q->kind == MK_SUM) {
			v += sub_read(ms, i, q->a[i]);
		} else if (q->kind == MK_CPU) {
			x = sub_read(ms, i, q->a[i]) - sub_read(ms, i, q->b[i]);
			v += x > 0 ? x : 0;
		} else if (q->kind != MK_ACTIVE && ms->stepped[i]) {
			x = (q->a[i] >= 0 ? sub_read(ms, i, q->a[i]) : ms->dt) -
			    sub_read(ms, i, q->b[i]);
			q->cum[i] += q->kind == MK_WAIT ? sub_read(ms, i, q->a[i]) : x > 0 ? x : 0;
		}
	}
	if (q->kind == MK_ACTIVE) { /* a sample when the count changes */
		q->last = ms->dt * alive;
		q->fresh = alive != (uint32_t)q->prev;
		q->prev = alive;
		return;
	}
	if (q->kind == MK_SUM || q->kind == MK_CPU) {
		q->last = v;
		return;
	}
	now = derived(ms, q);
	q->last = now - q->prev;
	q->prev = now;
}

/* Whether every fresh reading request id takes in this step came to a request before it too:
 * the mean of a procedure's time over the ranks at /Process/rank0 and at /Process/rank1 is
 * the same data (so are the collectives' times a wait is derived from), one sample, not two. */
static int read_before(struct msrc *ms, uint32_t id)
{
	const struct mreq *q = &ms->reqs[id];
	uint32_t i, p;

	for (i = 0; i < ms->n; i++) {
		int sub[2] = { q->a[i], q->b[i] }, k;

		for (k = 0; k < 2; k++) {
			int data, seen = 0;

			if (!sub_fresh(ms, i, sub[k]))
				continue;
			data = live_source_data_id(SUB(ms, i), sub[k]);
			for (p = 0; p < id && !seen; p++) {
				const struct mreq *o = &ms->reqs[p];

				seen = o->used && o->kind != MK_ACTIVE &&
				       ((o->a[i] >= 0 && live_source_data_id(SUB(ms, i), o->a[i]) == data) ||
					(o->b[i] >= 0 && live_source_data_id(SUB(ms, i), o->b[i]) == data));
			}
			if (!seen)
				return 0;
		}
	}
	return 1;
}

/* Rank 0's phase markers are the run's (as post mortem). */
static void take_phases(struct msrc *ms, const struct cs_step *sub, struct cs_step *st)
{
	if (!sub->nphase)
		return;
	snprintf(ms->phase_name, sizeof(ms->phase_name), "%s",
		 sub->phase[sub->nphase - 1].name ? sub->phase[sub->nphase - 1].name : "");
	st->nphase = 1;
	st->phase[0].t = st->t1 > st->t0 ? st->t1 - 1 : st->t0;
	st->phase[0].name = sub->phase[sub->nphase - 1].name ? ms->phase_name : NULL;
}

/* The first step installs the search's first requests in every rank in turn (hundreds of
 * points, a stop of each process): a step of its own, its values dropped, so that the search's
 * time begins when they are in (else their first averages would count the install as zeros). */
static void warm_up(struct msrc *ms)
{
	struct cs_step sub[1];
	uint32_t i;

	for (i = 0; i < ms->n; i++) {
		memset(sub, 0, sizeof(sub));
		if (SUB(ms, i)->ops->step(SUB(ms, i), sub) != 0 || sub->last)
			ms->done[i] = 1;
	}
	ms->t_prev = mono_now_ns() - ms->origin;
	ms->warm = 1;
}

static int ms_step(struct cs_source *src, struct cs_step *st)
{
	struct msrc *ms = M(src);
	struct cs_step sub[1];
	double load = 0;
	uint32_t i, k = 0, ph = UINT32_MAX;
	int any = 0, open = 0;

	if (ms->last_done)
		return -1;
	if (!ms->warm)
		warm_up(ms);
	memset(ms->stepped, 0, ms->n);
	for (i = 0; i < ms->n; i++) {
		if (ms->done[i])
			continue;
		memset(sub, 0, sizeof(sub));
		if (SUB(ms, i)->ops->step(SUB(ms, i), sub) != 0) {
			ms->done[i] = 1;
			continue;
		}
		ms->stepped[i] = 1;
		any = 1;
		load += sub->load;
		k++;
		if (sub->last)
			ms->done[i] = 1;
		else
			open = 1;
		if (ms->rank[i] == 0 && sub->nphase)
			ph = i;
		if (ph == i)
			take_phases(ms, sub, st);
	}
	if (!any)
		return -1;
	st->t0 = ms->t_prev;
	st->t1 = mono_now_ns() - ms->origin;
	if (st->t1 <= st->t0)
		st->t1 = st->t0 + 1;
	for (i = 0; i < st->nphase; i++)
		st->phase[i].t = st->t1 - 1 > st->t0 ? st->t1 - 1 : st->t0;
	ms->dt = (double)(st->t1 - st->t0) / 1e9;
	ms->t_prev = st->t1;
	st->load = k ? load / k : 1;
	for (i = 0; i < ms->nreqs; i++)
		if (ms->reqs[i].used)
			update(ms, &ms->reqs[i]);
	for (i = ms->nreqs; i-- > 0;) {
		ms->pair_samples += ms->reqs[i].used && ms->reqs[i].fresh;
		if (ms->reqs[i].used && ms->reqs[i].kind != MK_ACTIVE && ms->reqs[i].fresh)
			ms->reqs[i].fresh = !read_before(ms, i);
	}
	st->last = !open;
	ms->last_done = st->last;
	return 0;
}

static double ms_read(struct cs_source *src, int id)
{
	struct msrc *ms = M(src);

	return id >= 0 && (uint32_t)id < ms->nreqs && ms->reqs[id].used ? ms->reqs[id].last : 0;
}

static int ms_fresh(struct cs_source *src, int id)
{
	struct msrc *ms = M(src);

	return id >= 0 && (uint32_t)id < ms->nreqs && ms->reqs[id].used && ms->reqs[id].fresh;
}

static void ms_pace(struct cs_source *src, double settled, double wait)
{
	struct msrc *ms = M(src);
	uint32_t i;

	for (i = 0; i < ms->n; i++)
		if (!ms->done[i] && SUB(ms, i)->ops->pace)
			SUB(ms, i)->ops->pace(SUB(ms, i), settled, wait);
}

static void ms_pace_req(struct cs_source *src, int id, double slow)
{
	struct msrc *ms = M(src);
	const struct mreq *q;
	uint32_t i;

	if (id < 0 || (uint32_t)id >= ms->nreqs || !ms->reqs[id].used)
		return;
	q = &ms->reqs[id];
	for (i = 0; i < ms->n; i++) {
		struct cs_source *s = SUB(ms, i);

		if (ms->done[i] || !s->ops->pace_req)
			continue;
		if (q->a[i] >= 0)
			s->ops->pace_req(s, q->a[i], slow);
		if (q->b[i] >= 0)
			s->ops->pace_req(s, q->b[i], slow);
	}
}

static int ms_current(struct cs_source *src, int id)
{
	struct msrc *ms = M(src);
	const struct mreq *q;
	uint32_t i;

	if (id < 0 || (uint32_t)id >= ms->nreqs || !ms->reqs[id].used)
		return 1;
	q = &ms->reqs[id];
	for (i = 0; i < ms->n; i++) {
		struct cs_source *s = SUB(ms, i);

		if (!ms->stepped[i] || !s->ops->current)
			continue;
		if ((q->a[i] >= 0 && !s->ops->current(s, q->a[i])) ||
		    (q->b[i] >= 0 && !s->ops->current(s, q->b[i])))
			return 0;
	}
	return 1;
}

static uint64_t ms_zero(struct cs_source *src)
{
	(void)src;
	return 0;
}

static uint64_t ms_phase_end(struct cs_source *src, uint64_t start)
{
	(void)src, (void)start;
	return 0;
}

static uint64_t ms_generation(struct cs_source *src)
{
	struct msrc *ms = M(src);
	uint64_t g = 0;
	uint32_t i;

	for (i = 0; i < ms->n; i++)
		g += SUB(ms, i)->ops->generation(SUB(ms, i));
	return g;
}

static const struct cs_source_ops mpi_ops = {
	.supports = ms_supports, .children = ms_children, .request = ms_request,
	.cancel = ms_cancel, .cost = ms_cost, .max_rate = ms_max_rate, .step = ms_step,
	.read = ms_read, .run_end = ms_zero, .phase_end = ms_phase_end,
	.generation = ms_generation, .fresh = ms_fresh, .pace = ms_pace,
	.pace_req = ms_pace_req, .current = ms_current,
	.sample_bytes = 24, /* an entry of a SAMPLE message */
};

struct cs_source *live_mpi_new(struct cs_source **ranks, const int32_t *rank, uint32_t n)
{
	struct cs_source *src = xcalloc(1, sizeof(*src));
	struct msrc *ms = xcalloc(1, sizeof(*ms));

	src->ops = &mpi_ops;
	src->impl = ms;
	ms->n = n;
	ms->r = xmalloc(n * sizeof(*ms->r));
	memcpy(ms->r, ranks, n * sizeof(*ms->r));
	ms->rank = xmalloc(n * sizeof(*ms->rank));
	memcpy(ms->rank, rank, n * sizeof(*ms->rank));
	ms->done = xcalloc(n, 1);
	ms->stepped = xcalloc(n, 1);
	ms->origin = mono_now_ns();
	return src;
}

void live_mpi_free(struct cs_source *src)
{
	struct msrc *ms;
	uint32_t i;

	if (!src)
		return;
	ms = M(src);
	for (i = 0; i < ms->nreqs; i++)
		if (ms->reqs[i].used)
			ms_cancel(src, (int)i);
	for (i = 0; i < ms->n; i++)
		live_source_free(ms->r[i]);
	free(ms->r);
	free(ms->rank);
	free(ms->done);
	free(ms->stepped);
	free(ms->reqs);
	free(ms);
	free(src);
}

/* The ranks' figures added; the run's time is the search's. */
void live_mpi_info(struct cs_source *src, struct live_source_info *out)
{
	struct msrc *ms = M(src);
	struct live_source_info r;
	uint32_t i;
	size_t k;

	memset(out, 0, sizeof(*out));
	out->ended = 1;
	for (i = 0; i < ms->n; i++) {
		live_source_info(ms->r[i], &r);
		out->threads += r.threads;
		out->modules = r.modules > out->modules ? r.modules : out->modules;
		out->procedures = r.procedures > out->procedures ? r.procedures : out->procedures;
		out->metrics = r.metrics + 3; /* active_ranks, cpu_time_rank_max/mean, coll wait */
		out->period_ns = r.period_ns;
		out->requests += r.requests;
		out->requests_max += r.requests_max;
		out->dyn.points_now += r.dyn.points_now;
		out->dyn.points_max += r.dyn.points_max;
		out->dyn.points_total += r.dyn.points_total;
		out->dyn.refused += r.dyn.refused;
		out->dyn.batches += r.dyn.batches;
		out->dyn.removals += r.dyn.removals;
		out->dyn.samples += r.dyn.samples;
		out->dyn.entries += r.dyn.entries;
		out->dyn.bytes += r.dyn.bytes;
		out->dyn.entry_bytes += r.dyn.entry_bytes;
		out->dyn.received += r.dyn.received;
		ctl_traffic_add(&out->dyn.sent, &r.dyn.sent);
		ctl_traffic_add(&out->dyn.got, &r.dyn.got);
		for (k = 0; k < sizeof(r.dyn.by_kind) / sizeof(r.dyn.by_kind[0]); k++)
			out->dyn.by_kind[k] += r.dyn.by_kind[k];
		out->dyn.pause_ms += r.dyn.pause_ms;
		out->observed_ns += r.observed_ns;
		out->control_cpu_ns += r.control_cpu_ns;
		out->full_calls += r.full_calls;
		out->ended &= r.ended;
		if (r.error[0] && !out->error[0])
			snprintf(out->error, sizeof(out->error), "rank %d: %.200s",
				 (int)ms->rank[i], r.error);
	}
	out->run_ns = ms->t_prev;
	out->ranks = ms->n;
	out->pair_samples = ms->pair_samples;
}

int live_mpi_rank_info(struct cs_source *src, uint32_t i, struct live_source_info *out)
{
	struct msrc *ms = M(src);

	if (i >= ms->n)
		return -1;
	live_source_info(ms->r[i], out);
	return 0;
}

double live_mpi_call_rate(struct cs_source *src, const char *module, const char *proc)
{
	struct msrc *ms = M(src);
	double v = 0, x;
	uint32_t i;
	int any = 0;

	for (i = 0; i < ms->n; i++) {
		x = live_source_call_rate(ms->r[i], module, proc);
		if (x >= 0) {
			v += x;
			any = 1;
		}
	}
	return any ? v : -1;
}
