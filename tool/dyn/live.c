/* SPDX-License-Identifier: MIT */
/*
 * Many requests on one live session (live.h). Each commit: requests gone are taken off their
 * points and their metrics disabled; new ones get fresh runtime indexes; procedures that need
 * a point and have none are patched together (a new dyn_set whose point ids follow the last
 * one's, one stop of the world); every point whose requests changed gets its whole action
 * list again (POINT_SET), or is cleared and its patch taken out when none is left; then the
 * new requests' metrics are enabled. Samples give each metric's increase (their delta). Every
 * metric is enabled "changes only" (protocol version 4): a value that did not change over a
 * bucket is not sent, and counts as no increase. Timers come in units of 1024 ns (version 6:
 * fewer bytes), and the points' execution counters every N buckets when asked
 * (dyn_live_points_pace). The session holds its requests: a commit's go as one BATCH (version
 * 8), answered once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live.h"
#include "session_int.h"
#include "util.h"

#define NONE UINT32_MAX
/* metric ids 0-3 read the runtime's own counters (phases, the control thread) */
#define M_PHASE_NS 0
#define M_PHASE_NAME 1
#define M_PHASES 2
#define M_CTL_TID 3
#define M_FIRST_FREE 4

enum { LP_NONE, LP_IN, LP_REFUSED };
enum { MON_OFF, MON_SENT, MON_ON };
enum { LR_FREE, LR_PENDING, LR_LIVE, LR_GONE };
enum { MK_FREE, MK_OWN = DYN_LE_OWN, MK_REQ = DYN_LE_REQ, MK_POINT = DYN_LE_POINT };

struct lpt {
	uint32_t proc;
	uint32_t set, idx;  /* its patch: batch and index there (set NONE: none) */
	int state;
	uint32_t users;
	int dirty;
	uint32_t tc, metric; /* execution counter, and the metric reading it */
	double ns_each;      /* one execution with its actions now */
	double pend;         /* seconds since its counter last came, paced (not yet in secs) */
};

struct lreq {
	int state;
	struct dyn_lspec spec;
	uint32_t idx[DYN_LREQ_VARS];
	uint32_t metric;
	int64_t taken;
	uint32_t got;    /* entries of its metric received at the last take */
	struct sproto_term term; /* its metric's */
	uint32_t every;  /* sent every N buckets (1: each, when it changed) */
	uint8_t units;   /* SPROTO_M_K64: its samples in units of 65536 (timers), or 0 */
	int fresh;       /* some came between the last two takes */
	int complete;
};

struct dyn_live {
	struct dyn_session *s;
	struct lpt *pt;
	uint32_t npt;
	int32_t *pt_of; /* by procedure: index in pt, -1 */
	struct lreq *req;
	uint32_t nreq;
	struct dyn_set *sets;
	uint32_t nsets, next_id;
	uint32_t next_timer[2], next_tc;
	uint32_t *free_tc, nfree_tc;
	uint8_t mkind[SPROTO_MAX_METRICS];
	uint8_t mrun[SPROTO_MAX_METRICS]; /* MK_POINT: its first sample came (rates count) */
	uint8_t mon[SPROTO_MAX_METRICS];  /* MK_POINT: MON_ON enabled (OK received): the samples
					   * from then count it, changed or not (deltas only);
					   * MON_SENT its METRIC_ENABLE held or not answered yet */
	uint32_t mown[SPROTO_MAX_METRICS];
	int64_t msum[SPROTO_MAX_METRICS], mval[SPROTO_MAX_METRICS];
	uint32_t mgot[SPROTO_MAX_METRICS]; /* entries received */
	/* per procedure: executions counted, over seconds measured (rates), cost observed */
	double *execs, *secs, *obs_ns;
	int started;
	uint8_t pt_every;  /* the points' execution counters: sent every N buckets (when changed) */
	struct dyn_live_stats st;
};

static void on_sample(void *arg, const struct sproto_sample *sm);
static int remove_all(void *arg, struct target *t, char *err, size_t n);

struct dyn_live *dyn_live_new(struct dyn_session *s)
{
	struct dyn_live *l = xcalloc(1, sizeof(*l));
	uint32_t i;

	l->s = s;
	l->pt_every = 1;
	l->pt_of = xmalloc((s->nprocs + 1) * sizeof(*l->pt_of));
	for (i = 0; i < s->nprocs; i++)
		l->pt_of[i] = -1;
	l->execs = xcalloc(s->nprocs + 1, sizeof(double));
	l->secs = xcalloc(s->nprocs + 1, sizeof(double));
	l->obs_ns = xcalloc(s->nprocs + 1, sizeof(double));
	s->on_sample = on_sample;
	s->remove = remove_all;
	s->cb_arg = l;
	dyn_session_hold(s);
	return l;
}

void dyn_live_free(struct dyn_live *l)
{
	uint32_t i;

	if (!l)
		return;
	l->s->on_sample = NULL;
	l->s->remove = NULL;
	for (i = 0; i < l->nreq; i++)
		free(l->req[i].spec.pt);
	for (i = 0; i < l->nsets; i++)
		dyn_set_free(&l->sets[i]);
	free(l->sets);
	free(l->req);
	free(l->pt);
	free(l->pt_of);
	free(l->free_tc);
	free(l->execs);
	free(l->secs);
	free(l->obs_ns);
	free(l);
}

/* ---- samples ---- */

static void on_sample(void *arg, const struct sproto_sample *sm)
{
	struct dyn_live *l = arg;
	struct sproto_sample_entry e;
	double dt = sm->end_ns > sm->start_ns ? (double)(sm->end_ns - sm->start_ns) / 1e9 : 0;
	uint32_t i;

	l->st.samples++;
	l->st.entries += sm->n;
	l->st.bytes += l->s->c.frame + (uint64_t)sm->size; /* its frame's header: 2-4 bytes */
	l->st.entry_bytes += sm->entries_size;
	/* a point's time measured counts every bucket since its first sample: at once when its
	 * counter is sent each bucket it changed (not sent: not run), else up to the bucket in
	 * which it came last (paced: those after may have run) */
	for (i = 0; i < l->npt; i++)
		if (l->pt[i].state == LP_IN && l->pt[i].metric != NONE && l->mrun[l->pt[i].metric]) {
			if (l->pt_every > 1)
				l->pt[i].pend += dt;
			else
				l->secs[l->pt[i].proc] += dt;
		}
	for (i = 0; i < sm->n; i++) {
		sproto_sample_entry(sm, i, &e);
		l->st.by_kind[l->mkind[e.metric]]++; /* MK_FREE: disabled since it was sent */
		if (l->mkind[e.metric] == MK_FREE)
			continue;
		l->msum[e.metric] += e.delta;
		/* its value comes once (the first entry), then the deltas add to it */
		l->mval[e.metric] = e.flags & SPROTO_S_VALUE ? e.value
				  : (int64_t)((uint64_t)l->mval[e.metric] + (uint64_t)e.delta);
		l->mgot[e.metric]++;
		if (l->mkind[e.metric] == MK_POINT) {
			struct lpt *p = &l->pt[l->mown[e.metric]];

			l->secs[p->proc] += p->pend;
			p->pend = 0;
			l->execs[p->proc] += (double)e.delta;
			l->obs_ns[p->proc] += (double)e.delta * p->ns_each;
			l->mrun[e.metric] = 1;
		}
	}
	/* a point's counter comes only when it changed (deltas only, version 7): the first
	 * sample after its enable starts its time as its first entry did */
	for (i = 0; i < l->npt; i++)
		if (l->pt[i].metric != NONE && l->mon[l->pt[i].metric] == MON_ON)
			l->mrun[l->pt[i].metric] = 1;
}

int64_t dyn_live_take(struct dyn_live *l, int id)
{
	struct lreq *r = &l->req[id];
	int64_t v, d;

	if (id < 0 || (uint32_t)id >= l->nreq || r->metric == NONE)
		return 0;
	v = l->msum[r->metric];
	d = v - r->taken;
	r->taken = v;
	r->fresh = l->mgot[r->metric] != r->got;
	r->got = l->mgot[r->metric];
	return r->units ? d * 65536 : d;
}

int dyn_live_fresh(const struct dyn_live *l, int id)
{
	return id >= 0 && (uint32_t)id < l->nreq && l->req[id].fresh;
}

int dyn_live_complete(const struct dyn_live *l, int id)
{
	return id >= 0 && (uint32_t)id < l->nreq && l->req[id].complete;
}

void dyn_live_phase(const struct dyn_live *l, uint64_t *count, uint64_t *name, uint64_t *t_ns)
{
	*count = (uint64_t)l->mval[M_PHASES];
	*name = (uint64_t)l->mval[M_PHASE_NAME];
	*t_ns = (uint64_t)l->mval[M_PHASE_NS];
}

uint32_t dyn_live_ctl_tid(const struct dyn_live *l)
{
	return (uint32_t)l->mval[M_CTL_TID];
}

void dyn_live_stats(const struct dyn_live *l, struct dyn_live_stats *out)
{
	*out = l->st;
	out->received = l->s->c.received;
	out->sent = l->s->c.sent;
	out->got = l->s->c.got;
}

/* ---- costs ---- */

/* The cost model's primitive for a runtime primitive (thread counters cost as counters: the
 * session's figures are the thread counters'). */
static double prim_ns(const struct cost_params *c, uint8_t prim)
{
	if (prim == SPROTO_RECORD) /* a hash probe and an atomic add: about an ADD behind a
				    * predicate (tests/unit/dyn_bench) */
		return c->prim_ns[MDL_ADD] + c->pred_ns;
	if (prim == SPROTO_TSET_ARG) /* a thread counter's store */
		return c->prim_ns[MDL_SET];
	if (prim == SPROTO_START_WALL_IF) /* a start behind a second test */
		return c->prim_ns[MDL_START_WALL] + c->pred_ns;
	return prim >= SPROTO_TSET && prim <= SPROTO_TSUB ? c->prim_ns[prim - SPROTO_TSET]
	       : prim < MDL_PRIM_COUNT ? c->prim_ns[prim] : 0;
}

static int has_pred(const struct dyn_lact *a)
{
	return a->pred_var >= 0 || a->pred_arg >= 0;
}

static double actions_ns(const struct cost_params *c, const struct dyn_lpoint *p, int *exits)
{
	double ns = 0;
	uint32_t i;

	for (i = 0; i < p->nact; i++) {
		ns += prim_ns(c, p->act[i].prim) + (has_pred(&p->act[i]) ? c->pred_ns : 0);
		*exits |= p->act[i].when == SPROTO_AT_EXIT;
	}
	return ns;
}

double dyn_live_rate(const struct dyn_live *l, uint32_t proc)
{
	return l->secs[proc] > 0.05 ? l->execs[proc] / l->secs[proc] : -1;
}

double dyn_live_predict(const struct dyn_live *l, const struct dyn_lspec *spec)
{
	const struct cost_params *c = &l->s->cp;
	double ns = 0;
	uint32_t i;

	for (i = 0; i < spec->npt; i++) {
		const struct dyn_lpoint *p = &spec->pt[i];
		double rate = dyn_live_rate(l, p->proc), each;
		int exits = 0, in = l->pt_of[p->proc] >= 0 &&
				    l->pt[l->pt_of[p->proc]].state == LP_IN;

		if (rate < 0)
			rate = l->s->procs[p->proc].library ? c->freq_library : c->freq_user;
		each = actions_ns(c, p, &exits);
		if (!in)
			each += c->tramp_ns[MDL_ENTRY] + c->prim_ns[MDL_ADD];
		if (exits)
			each += c->tramp_ns[MDL_EXIT];
		ns += each * rate;
	}
	return ns;
}

double dyn_live_observed_ns(const struct dyn_live *l, const uint8_t *keep)
{
	double ns = 0;
	uint32_t i;

	for (i = 0; i < l->s->nprocs; i++)
		if (!keep || keep[i])
			ns += l->obs_ns[i];
	return ns;
}

/* ---- runtime indexes ---- */

static uint32_t metric_id(struct dyn_live *l, int kind, uint32_t owner)
{
	uint32_t i;

	for (i = M_FIRST_FREE; i < SPROTO_MAX_METRICS; i++)
		if (l->mkind[i] == MK_FREE) {
			l->mkind[i] = (uint8_t)kind;
			l->mown[i] = owner;
			l->msum[i] = l->mval[i] = 0;
			l->mrun[i] = l->mon[i] = 0;
			l->mgot[i] = 0;
			return i;
		}
	return NONE;
}

static uint32_t tcounter(struct dyn_live *l, int reusable)
{
	if (reusable && l->nfree_tc)
		return l->free_tc[--l->nfree_tc];
	return l->next_tc < SPROTO_MAX_TCOUNTERS ? l->next_tc++ : NONE;
}

static void tcounter_free(struct dyn_live *l, uint32_t tc)
{
	l->free_tc = xrealloc(l->free_tc, (l->nfree_tc + 1) * sizeof(uint32_t));
	l->free_tc[l->nfree_tc++] = tc;
}

/* A thread counter is reused only as a plain value: one a predicate tests is fresh, and so is
 * one TSET_ARG sets (its reader takes the value for an argument: it must start at 0). */
static int is_flag(const struct dyn_lspec *sp, uint32_t var)
{
	uint32_t i, j;

	for (i = 0; i < sp->npt; i++)
		for (j = 0; j < sp->pt[i].nact; j++)
			if (sp->pt[i].act[j].pred_var == (int8_t)var ||
			    (sp->pt[i].act[j].prim == SPROTO_TSET_ARG &&
			     sp->pt[i].act[j].var == (uint8_t)var) ||
			    (sp->pt[i].act[j].prim == SPROTO_START_WALL_IF &&
			     (sp->pt[i].act[j].value & 0xff) == var))
				return 1;
	return 0;
}

static int alloc_vars(struct dyn_live *l, struct lreq *r, char *err, size_t n)
{
	uint32_t v;

	for (v = 0; v < r->spec.nvars; v++) {
		uint8_t k = r->spec.var[v];

		if (k == DYN_LV_SHARED) {
			int32_t o = r->spec.share[v];

			/* an earlier request's, allocated before (live, or pending in this commit) */
			r->idx[v] = v && o >= 0 && o < (int32_t)(r - l->req) &&
					    (l->req[o].state == LR_LIVE ||
					     l->req[o].state == LR_PENDING) &&
					    l->req[o].spec.var[0] == DYN_LV_TCOUNTER
				    ? l->req[o].idx[0] : NONE;
			if (r->idx[v] == NONE)
				return snprintf(err, n, "a shared variable of no earlier request"), -1;
		} else if (k == DYN_LV_TCOUNTER)
			r->idx[v] = tcounter(l, !is_flag(&r->spec, v));
		else
			r->idx[v] = l->next_timer[k == DYN_LV_CPU] < SPROTO_MAX_TIMERS
					    ? l->next_timer[k == DYN_LV_CPU]++ : NONE;
		if (r->idx[v] == NONE)
			return snprintf(err, n, "the runtime's timers or thread counters are "
					"all used"), -1;
	}
	return 0;
}

/* ---- requests ---- */

int dyn_live_add(struct dyn_live *l, const struct dyn_lspec *spec, char *err, size_t n)
{
	struct lreq *r;
	uint32_t i;

	if (spec->nvars > DYN_LREQ_VARS || (!spec->proc_cpu && !spec->nvars))
		return snprintf(err, n, "a request needs a value"), -1;
	for (i = 0; i < spec->npt; i++)
		if (spec->pt[i].proc >= l->s->nprocs || spec->pt[i].nact > DYN_LREQ_ACTS)
			return snprintf(err, n, "a request's point is out of range"), -1;
	for (i = 0; i < l->nreq && l->req[i].state != LR_FREE; i++)
		;
	if (i == l->nreq) {
		l->req = xrealloc(l->req, (l->nreq + 1) * sizeof(*l->req));
		l->nreq++;
	}
	r = &l->req[i];
	memset(r, 0, sizeof(*r));
	r->state = LR_PENDING;
	r->spec = *spec;
	r->spec.pt = xmalloc((spec->npt + 1) * sizeof(*spec->pt));
	memcpy(r->spec.pt, spec->pt, spec->npt * sizeof(*spec->pt));
	r->metric = NONE;
	r->complete = 1;
	return (int)i;
}

static int act_equal(const struct dyn_lact *a, const struct dyn_lact *b)
{
	return a->when == b->when && a->prim == b->prim && a->var == b->var &&
	       a->pred_var == b->pred_var && a->pred_arg == b->pred_arg && a->op == b->op &&
	       a->value == b->value && a->k == b->k;
}

int dyn_live_spec_is(const struct dyn_live *l, int id, const struct dyn_lspec *sp)
{
	const struct dyn_lspec *q;
	uint32_t i, j;

	if (id < 0 || (uint32_t)id >= l->nreq || l->req[id].state == LR_FREE ||
	    l->req[id].state == LR_GONE)
		return 0;
	q = &l->req[id].spec;
	if (q->nvars != sp->nvars || q->proc_cpu != sp->proc_cpu || q->tid != sp->tid ||
	    q->npt != sp->npt)
		return 0;
	for (i = 0; i < sp->nvars; i++)
		if (q->var[i] != sp->var[i] || q->share[i] != sp->share[i])
			return 0;
	for (i = 0; i < sp->npt; i++) {
		if (q->pt[i].proc != sp->pt[i].proc || q->pt[i].nact != sp->pt[i].nact)
			return 0;
		for (j = 0; j < sp->pt[i].nact; j++)
			if (!act_equal(&q->pt[i].act[j], &sp->pt[i].act[j]))
				return 0;
	}
	return 1;
}

void dyn_live_remove(struct dyn_live *l, int id)
{
	if (id < 0 || (uint32_t)id >= l->nreq)
		return;
	if (l->req[id].state == LR_PENDING) { /* never measured */
		free(l->req[id].spec.pt);
		l->req[id].spec.pt = NULL;
		l->req[id].spec.npt = 0;
		l->req[id].state = LR_FREE;
	} else if (l->req[id].state == LR_LIVE) {
		l->req[id].state = LR_GONE;
	}
}

static struct lpt *point_of(struct dyn_live *l, uint32_t proc)
{
	if (l->pt_of[proc] < 0) {
		l->pt = xrealloc(l->pt, (l->npt + 1) * sizeof(*l->pt));
		l->pt[l->npt] = (struct lpt){ .proc = proc, .set = NONE, .tc = NONE,
					      .metric = NONE };
		l->pt_of[proc] = (int32_t)l->npt++;
	}
	return &l->pt[l->pt_of[proc]];
}

static void touch_points(struct dyn_live *l, const struct lreq *r, int delta)
{
	uint32_t i;

	for (i = 0; i < r->spec.npt; i++) {
		struct lpt *p = point_of(l, r->spec.pt[i].proc);

		p->users += (uint32_t)delta;
		p->dirty = 1;
	}
}

/* Every N buckets (N > 1: sent then, changed or not; with SPROTO_M_CHANGES, only when it
 * changed), or each bucket (when it changed); SPROTO_M_K64: in units of 65536; the requests'
 * and the points' with SPROTO_M_DELTAS (version 7: their values are never read, only their
 * increases; the runtime's own counters come with values). */
static int send_metric_every(struct dyn_live *l, uint32_t id, const struct sproto_term *t,
			     uint16_t k, uint8_t every, uint8_t flags, char *err, size_t n)
{
	static uint8_t msg[SPROTO_HEADER_SIZE + 16 + SPROTO_MAX_TERMS * 12];
	struct sproto_metric m = { .id = id, .n = k, .every = every, .flags = flags };

	memcpy(m.term, t, k * sizeof(*t));
	return dyn_session_send(l->s, msg, sproto_put_metric_enable(msg, sizeof(msg), &m), err, n);
}

static int send_metric(struct dyn_live *l, uint32_t id, const struct sproto_term *t, uint16_t k,
		       char *err, size_t n)
{
	return send_metric_every(l, id, t, k, 1, SPROTO_M_CHANGES, err, n);
}

static int disable_metric(struct dyn_live *l, uint32_t id, char *err, size_t n)
{
	uint8_t msg[64];

	l->mkind[id] = MK_FREE;
	return dyn_session_send(l->s, msg, sproto_put_metric_disable(msg, sizeof(msg), id), err, n);
}

static int enable_request(struct dyn_live *l, struct lreq *r, uint32_t id, char *err, size_t n)
{
	static const uint8_t kind[] = { SPROTO_TERM_TCOUNTER, SPROTO_TERM_WALL, SPROTO_TERM_CPU };
	struct sproto_term t;

	if (r->spec.proc_cpu)
		t = (struct sproto_term){ SPROTO_TERM_PROC_CPU, 0, 0 };
	else
		t = (struct sproto_term){ kind[r->spec.var[0]], r->idx[0], r->spec.tid };
	r->term = t;
	r->every = 1;
	/* timers in units of 65536 ns: a bucket's quarter second of waiting in 2 bytes, not 3-5
	 * (a reading's increase is short by less than 66 us, docs/protocol.md) */
	r->units = t.kind != SPROTO_TERM_TCOUNTER ? SPROTO_M_K64 : 0;
	r->metric = metric_id(l, MK_REQ, id);
	if (r->metric == NONE)
		return snprintf(err, n, "the runtime's metric ids are all used"), -1;
	return send_metric_every(l, r->metric, &t, 1, 1,
				 SPROTO_M_CHANGES | SPROTO_M_DELTAS | r->units, err, n);
}

int dyn_live_pace(struct dyn_live *l, int id, uint32_t every, char *err, size_t n)
{
	struct lreq *r;

	if (id < 0 || (uint32_t)id >= l->nreq)
		return 0;
	r = &l->req[id];
	if (every > 255)
		every = 255;
	if (every < 1)
		every = 1;
	if (r->state != LR_LIVE || r->metric == NONE || r->every == every)
		return 0;
	r->every = every;
	return send_metric_every(l, r->metric, &r->term, 1, (uint8_t)every,
				 (every > 1 ? 0 : SPROTO_M_CHANGES) | SPROTO_M_DELTAS | r->units, err,
				 n);
}

int dyn_live_points_pace(struct dyn_live *l, uint32_t every, char *err, size_t n)
{
	uint32_t i;

	every = every < 1 ? 1 : every > 255 ? 255 : every;
	if (every == l->pt_every)
		return 0;
	l->pt_every = (uint8_t)every;
	for (i = 0; i < l->npt; i++) {
		struct sproto_term t = { SPROTO_TERM_TCOUNTER, l->pt[i].tc, 0 };

		if (l->pt[i].metric != NONE &&
		    send_metric_every(l, l->pt[i].metric, &t, 1, l->pt_every,
				      SPROTO_M_CHANGES | SPROTO_M_DELTAS, err, n) != 0)
			return -1;
	}
	return 0;
}

uint32_t dyn_live_every(const struct dyn_live *l, int id)
{
	return id >= 0 && (uint32_t)id < l->nreq && l->req[id].state == LR_LIVE &&
			       l->req[id].metric != NONE ? l->req[id].every : 1;
}

/* ---- points ---- */

static void map_act(const struct lreq *r, const struct dyn_lact *a, struct sproto_action *o)
{
	memset(o, 0, sizeof(*o));
	o->when = a->when;
	o->prim = a->prim;
	if (a->prim == SPROTO_RECORD) { /* var: the kind of object; value: use or init */
		o->target = a->var;
		o->value = a->value;
		return;
	}
	o->target = r->idx[a->var];
	o->value = (a->prim >= SPROTO_TSET && a->prim <= SPROTO_TSUB) || a->prim == SPROTO_TSET_ARG
			   ? a->value : 0;
	if (a->prim == SPROTO_START_WALL_IF) /* the guard: a var of the request, to its index */
		o->value = SPROTO_GUARD(r->idx[a->value & 0xff], a->value >> 16 & 0xff,
					a->value >> 24);
	if (a->pred_var >= 0) {
		o->pred = SPROTO_PRED_TCOUNTER;
		o->pred_index = r->idx[a->pred_var];
	} else if (a->pred_arg >= 0) {
		o->pred = SPROTO_PRED_ARG;
		o->pred_index = (uint32_t)a->pred_arg;
	}
	if (has_pred(a)) {
		o->op = a->op;
		o->pred_value = a->k;
	}
}

/* Actions of request r at procedure proc. */
static uint32_t actions_at(const struct lreq *r, uint32_t proc)
{
	uint32_t j, k = 0;

	for (j = 0; j < r->spec.npt; j++)
		k += r->spec.pt[j].proc == proc ? r->spec.pt[j].nact : 0;
	return k;
}

static int active(const struct lreq *r)
{
	return r->state == LR_LIVE || r->state == LR_PENDING;
}

int dyn_live_room(const struct dyn_live *l, const struct dyn_lspec *spec)
{
	uint32_t i, j, used;

	for (j = 0; j < spec->npt; j++) {
		used = 1 + spec->pt[j].nact; /* the execution counter */
		for (i = 0; i < l->nreq; i++)
			if (active(&l->req[i]))
				used += actions_at(&l->req[i], spec->pt[j].proc);
		if (used > SPROTO_MAX_ACTIONS)
			return 0;
	}
	return 1;
}

/* The actions of every request at the point, entries first, then exits; a request whose
 * actions there do not all fit (16 a point) has none there and is incomplete. */
static void build_actions(struct dyn_live *l, struct lpt *p, struct sproto_point_set *ps)
{
	const struct cost_params *c = &l->s->cp;
	uint8_t *in = xcalloc(l->nreq + 1, 1);
	uint32_t pass, i, j, k, n = 1;
	int exits = 0;

	for (i = 0; i < l->nreq; i++) {
		uint32_t a = active(&l->req[i]) ? actions_at(&l->req[i], p->proc) : 0;

		if (a && n + a <= SPROTO_MAX_ACTIONS)
			in[i] = 1, n += a;
		else if (a)
			l->req[i].complete = 0;
	}
	ps->act[0] = (struct sproto_action){ .when = SPROTO_AT_ENTRY, .prim = SPROTO_TADD,
					     .target = p->tc, .value = 1 };
	ps->n = 1;
	p->ns_each = c->tramp_ns[MDL_ENTRY] + c->prim_ns[MDL_ADD];
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < l->nreq; i++)
			for (j = 0; in[i] && j < l->req[i].spec.npt; j++) {
				const struct dyn_lpoint *lp = &l->req[i].spec.pt[j];

				for (k = 0; lp->proc == p->proc && k < lp->nact; k++) {
					if (lp->act[k].when != pass)
						continue;
					map_act(&l->req[i], &lp->act[k], &ps->act[ps->n++]);
					p->ns_each += prim_ns(c, lp->act[k].prim) +
						      (has_pred(&lp->act[k]) ? c->pred_ns : 0);
					exits |= (int)pass;
				}
			}
	free(in);
	if (exits)
		p->ns_each += c->tramp_ns[MDL_EXIT];
}

static int set_point(struct dyn_live *l, struct lpt *p, char *err, size_t n)
{
	static uint8_t msg[SPROTO_HEADER_SIZE + 16 + SPROTO_MAX_ACTIONS * 32];
	struct sproto_point_set ps;
	struct sproto_term t;

	if (p->tc == NONE) {
		p->tc = tcounter(l, 1);
		p->metric = metric_id(l, MK_POINT, (uint32_t)(p - l->pt));
		if (p->tc == NONE || p->metric == NONE)
			return snprintf(err, n, "the runtime's thread counters are all used"), -1;
		t = (struct sproto_term){ SPROTO_TERM_TCOUNTER, p->tc, 0 };
		p->pend = 0;
		if (send_metric_every(l, p->metric, &t, 1, l->pt_every,
				      SPROTO_M_CHANGES | SPROTO_M_DELTAS, err, n) != 0)
			return -1;
		l->mon[p->metric] = MON_SENT;
	}
	memset(&ps, 0, sizeof(ps));
	ps.point = l->sets[p->set].first_id + p->idx;
	build_actions(l, p, &ps);
	/* in variable-length integers (version 8): about 5 bytes an action, not 32 */
	return dyn_session_send(l->s, msg, sproto_put_point_actions(msg, sizeof(msg), &ps), err,
				n);
}

/* Not used any more: cleared now, its patch taken out with the others after. */
static int clear_point(struct dyn_live *l, struct lpt *p, char *err, size_t n)
{
	uint8_t msg[64];
	uint32_t id = l->sets[p->set].first_id + p->idx;

	if (dyn_session_send(l->s, msg, sproto_put_point_clear(msg, sizeof(msg), id, 1), err,
			     n) != 0)
		return -1;
	if (p->metric != NONE && disable_metric(l, p->metric, err, n) != 0)
		return -1;
	tcounter_free(l, p->tc);
	p->tc = p->metric = NONE;
	return 0;
}

/* ---- patching ---- */

static uint32_t area_for(struct dyn_set *set, uint32_t *areas, const struct target_module *m,
			 uint32_t mod)
{
	if (!areas[mod])
		areas[mod] = dyn_add_area(set, m->text_start, m->text_end) + 1;
	return areas[mod] - 1;
}

/* The points wanted and not patched, in a new set: 0 when none. */
static uint32_t new_batch(struct dyn_live *l, struct dyn_set *set)
{
	struct dyn_session *s = l->s;
	uint32_t *areas = xcalloc((size_t)s->nmods + 1, sizeof(uint32_t)), i, k = 0;

	memset(set, 0, sizeof(*set));
	set->first_id = l->next_id;
	for (i = 0; i < l->npt; i++) {
		struct lpt *p = &l->pt[i];
		uint32_t mod = s->pinfo[p->proc].mod;

		if (p->state != LP_NONE || !p->users)
			continue;
		if (dyn_add(set, s->procs[p->proc].name, dyn_proc_addr(s, p->proc),
			    s->pinfo[p->proc].size, PATCH_ENTRY, 0,
			    area_for(set, areas, &s->mods[mod], mod)) != 0) {
			error("out of memory");
			exit(1);
		}
		if (s->pinfo[p->proc].ifunc) {
			set->f[set->n - 1].state = DYN_REFUSED;
			snprintf(set->f[set->n - 1].why, sizeof(set->f[0].why),
				 "an IFUNC resolver");
		}
		p->set = l->nsets;
		p->idx = (uint32_t)set->n - 1;
		k++;
	}
	free(areas);
	return k;
}

static int patch_batch(struct dyn_live *l, char *err, size_t n)
{
	struct dyn_set set;
	struct target t;
	uint32_t i;
	int r = -1;

	if (!new_batch(l, &set))
		return 0;
	l->sets = xrealloc(l->sets, (l->nsets + 1) * sizeof(*l->sets));
	l->sets[l->nsets++] = set;
	l->next_id += (uint32_t)set.n;
	if (target_attach(&t, l->s->pid, err, n) != 0)
		return -1;
	if (dyn_plan(&t, &l->sets[l->nsets - 1], l->s->c.hello.entry_addr, err, n) == 0)
		r = dyn_install(&t, &l->sets[l->nsets - 1], err, n);
	if (target_detach(&t) != 0 && r == 0) {
		snprintf(err, n, "letting the process go: %s", target_error(&t));
		r = -1;
	}
	l->st.pause_ms += (double)t.paused_ns / 1e6;
	l->st.batches++;
	for (i = 0; i < l->npt; i++) {
		struct lpt *p = &l->pt[i];

		if (p->state != LP_NONE || p->set != l->nsets - 1)
			continue;
		p->state = l->sets[p->set].f[p->idx].state == DYN_INSTALLED ? LP_IN : LP_REFUSED;
		l->st.points_total += p->state == LP_IN;
		l->st.refused += p->state == LP_REFUSED;
	}
	return r;
}

/* The patches of the points with no user, every set in one stop. */
static int unpatch_unused(struct dyn_live *l, char *err, size_t n)
{
	uint8_t **which = xcalloc(l->nsets + 1, sizeof(uint8_t *));
	struct target t;
	uint32_t i, k = 0;
	int r = 0;

	for (i = 0; i < l->npt; i++) {
		struct lpt *p = &l->pt[i];

		if (p->state != LP_IN || p->users)
			continue;
		if (!which[p->set])
			which[p->set] = xcalloc(l->sets[p->set].n + 1, 1);
		which[p->set][p->idx] = 1;
		k++;
	}
	if (k && target_attach(&t, l->s->pid, err, n) == 0) {
		for (i = 0; r == 0 && i < l->nsets; i++)
			if (which[i])
				r = dyn_remove_some(&t, &l->sets[i], which[i], err, n);
		if (target_detach(&t) != 0 && r == 0) {
			snprintf(err, n, "letting the process go: %s", target_error(&t));
			r = -1;
		}
		l->st.pause_ms += (double)t.paused_ns / 1e6;
		l->st.removals++;
		for (i = 0; r == 0 && i < l->npt; i++)
			if (l->pt[i].state == LP_IN && !l->pt[i].users) {
				l->pt[i].state = LP_NONE; /* a new point if needed again */
				l->pt[i].set = NONE;
			}
	} else if (k) {
		r = -1;
	}
	for (i = 0; i < l->nsets; i++)
		free(which[i]);
	free(which);
	return r;
}

static int remove_all(void *arg, struct target *t, char *err, size_t n)
{
	struct dyn_live *l = arg;
	uint32_t i;
	int r = 0;

	for (i = 0; r == 0 && i < l->nsets; i++)
		r = dyn_remove(t, &l->sets[i], err, n);
	return r;
}

/* ---- commit ---- */

/* The runtime's own counters (phases, the control thread), read from the first commit. */
static int start_own(struct dyn_live *l, char *err, size_t n)
{
	static const uint32_t ctr[] = { SPROTO_COUNTER_PHASE_NS, SPROTO_COUNTER_PHASE_NAME,
					SPROTO_COUNTER_PHASES, SPROTO_COUNTER_CTL_TID };
	uint32_t i;

	for (i = 0; i < 4; i++) {
		struct sproto_term t = { SPROTO_TERM_COUNTER, ctr[i], 0 };

		l->mkind[i] = MK_OWN;
		if (send_metric(l, i, &t, 1, err, n) != 0)
			return -1;
	}
	l->started = 1;
	return 0;
}

static int drop_gone(struct dyn_live *l, char *err, size_t n)
{
	uint32_t i;

	for (i = 0; i < l->nreq; i++) {
		struct lreq *r = &l->req[i];

		if (r->state != LR_GONE)
			continue;
		touch_points(l, r, -1);
		if (r->metric != NONE && disable_metric(l, r->metric, err, n) != 0)
			return -1;
		if (!r->spec.proc_cpu && r->spec.var[0] == DYN_LV_TCOUNTER && !is_flag(&r->spec, 0))
			tcounter_free(l, r->idx[0]);
		free(r->spec.pt);
		r->spec.pt = NULL;
		r->spec.npt = 0;
		r->metric = NONE;
		r->state = LR_FREE;
	}
	return 0;
}

static int take_new(struct dyn_live *l, char *err, size_t n)
{
	uint32_t i;

	for (i = 0; i < l->nreq; i++)
		if (l->req[i].state == LR_PENDING) {
			if (alloc_vars(l, &l->req[i], err, n) != 0)
				return -1;
			touch_points(l, &l->req[i], 1);
		}
	return 0;
}

static int set_dirty(struct dyn_live *l, char *err, size_t n)
{
	uint32_t i, j, now = 0;

	for (i = 0; i < l->npt; i++) {
		struct lpt *p = &l->pt[i];

		if (p->dirty && p->state == LP_IN &&
		    (p->users ? set_point(l, p, err, n) : clear_point(l, p, err, n)) != 0)
			return -1;
		p->dirty = 0;
		now += p->state == LP_IN && p->users;
	}
	for (i = 0; i < l->nreq; i++) /* a refused point leaves its requests incomplete */
		for (j = 0; l->req[i].state == LR_LIVE && j < l->req[i].spec.npt; j++)
			if (l->pt[l->pt_of[l->req[i].spec.pt[j].proc]].state == LP_REFUSED)
				l->req[i].complete = 0;
	l->st.points_now = now;
	l->st.points_max = now > l->st.points_max ? now : l->st.points_max;
	return 0;
}

/* Points to be unpatched: their clearing must be done (answered) before. */
static int unused_points(const struct dyn_live *l)
{
	uint32_t i;

	for (i = 0; i < l->npt; i++)
		if (l->pt[i].state == LP_IN && !l->pt[i].users)
			return 1;
	return 0;
}

static int flush_quiet(struct dyn_live *l, char *err, size_t n)
{
	uint32_t i;

	if (dyn_session_flush_quiet(l->s, err, n) != 0)
		return -1;
	for (i = 0; i < SPROTO_MAX_METRICS; i++) /* done before the next answer: enabled */
		if (l->mon[i] == MON_SENT)
			l->mon[i] = MON_ON;
	return 0;
}

/* ---- catch-up (catchup.h) ---- */

/* The actions of the new requests (fresh) at point p, in one list for the runtime. */
static void fresh_actions(const struct dyn_live *l, const struct lpt *p, const uint8_t *fresh,
			  struct sproto_point_set *ps)
{
	uint32_t i, j, k;

	memset(ps, 0, sizeof(*ps));
	ps->point = l->sets[p->set].first_id + p->idx;
	for (i = 0; i < l->nreq; i++) {
		const struct lreq *r = &l->req[i];

		if (!fresh[i] || r->state != LR_LIVE || !r->complete) /* incomplete: not all set */
			continue;
		for (j = 0; j < r->spec.npt; j++)
			for (k = 0; r->spec.pt[j].proc == p->proc && k < r->spec.pt[j].nact &&
				    ps->n < SPROTO_MAX_ACTIONS; k++)
				map_act(r, &r->spec.pt[j].act[k], &ps->act[ps->n++]);
	}
}

/* The points where new requests start timers, for dyn_catch_up; their number. */
static size_t catchup_procs(const struct dyn_live *l, const uint8_t *fresh,
			    struct dyn_catchup_proc *cp, struct sproto_point_set *ps)
{
	size_t k = 0;
	uint32_t i;

	for (i = 0; i < l->npt; i++) {
		const struct lpt *p = &l->pt[i];
		const struct dyn_func *f;

		if (p->state != LP_IN || !p->users)
			continue;
		f = &l->sets[p->set].f[p->idx];
		fresh_actions(l, p, fresh, &ps[k]);
		if (f->kind != PATCH_ENTRY || !dyn_catchup_wanted(&ps[k]))
			continue;
		cp[k] = (struct dyn_catchup_proc){ f->addr, f->addr + f->size,
						   dyn_catchup_obj_size(f->name), &ps[k] };
		k++;
	}
	return k;
}

/* The calls running now of the procedures in cp get their new timers started. */
static void catch_up(struct dyn_live *l, const struct dyn_catchup_proc *cp, size_t k)
{
	double before = l->st.catchup.pause_ms;

	dyn_catch_up(l->s->pid, l->s->c.hello.entry_addr, cp, k, &l->st.catchup);
	l->st.pause_ms += l->st.catchup.pause_ms - before;
}

static int commit(struct dyn_live *l, int quiet, char *err, size_t n)
{
	uint8_t *fresh = xcalloc(l->nreq + 1, 1);
	struct dyn_catchup_proc *cp = NULL;
	struct sproto_point_set *ps = NULL;
	size_t k = 0;
	int r = -1;
	uint32_t i;

	if (!l->started && start_own(l, err, n) != 0)
		goto out;
	if (drop_gone(l, err, n) != 0 || take_new(l, err, n) != 0 || patch_batch(l, err, n) != 0)
		goto out;
	for (i = 0; i < l->nreq; i++) /* counting before the points act */
		if (l->req[i].state == LR_PENDING) {
			if (enable_request(l, &l->req[i], i, err, n) != 0)
				goto out;
			l->req[i].state = LR_LIVE;
			fresh[i] = 1;
		}
	if (set_dirty(l, err, n) != 0)
		goto out;
	cp = xcalloc(l->npt + 1, sizeof(*cp));
	ps = xcalloc(l->npt + 1, sizeof(*ps));
	k = catchup_procs(l, fresh, cp, ps);
	if (quiet && !unused_points(l) && !k) {
		r = flush_quiet(l, err, n);
		goto out;
	}
	/* answered: the runtime has the new actions before any call is caught up */
	if (dyn_live_flush(l, err, n) != 0)
		goto out;
	if (k)
		catch_up(l, cp, k);
	r = unpatch_unused(l, err, n); /* the points cleared first */
out:
	free(fresh);
	free(cp);
	free(ps);
	return r;
}

int dyn_live_commit(struct dyn_live *l, char *err, size_t n)
{
	return commit(l, 0, err, n);
}

int dyn_live_commit_quiet(struct dyn_live *l, char *err, size_t n)
{
	return commit(l, 1, err, n);
}

int dyn_live_flush(struct dyn_live *l, char *err, size_t n)
{
	uint32_t i;

	if (dyn_session_flush(l->s, err, n) != 0)
		return -1;
	for (i = 0; i < SPROTO_MAX_METRICS; i++) /* answered: enabled */
		if (l->mon[i] == MON_SENT)
			l->mon[i] = MON_ON;
	return 0;
}
