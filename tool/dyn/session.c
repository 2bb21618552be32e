/* SPDX-License-Identifier: MIT */
/*
 * A live instrumentation session (session.h): plan, attach, patch, set points, enable, sample,
 * detach. Order at attach: the runtime is injected and the process let go; the tool connects
 * and lists the modules (the executable's load bias); the functions to patch are read from the
 * executable's symbols; the world is stopped for the patcher (trampolines mapped next to the
 * executable, functions analysed, patches written, threads' PCs moved) and let go; the metrics
 * are enabled, then the points given their actions: every execution from then on is counted.
 * At detach: a last sample, DETACH (the runtime clears the points: the trampolines call a
 * handler that does nothing), then the patches are removed with the world stopped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proc_state.h"
#include "resources.h"
#include "session_int.h"
#include "symbols.h"
#include "util.h"


/* ---- the program's procedures, for the plan ---- */

static int exe_of(pid_t pid, char *out, size_t cap, char *err, size_t n)
{
	char link[64];
	ssize_t k;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	k = readlink(link, out, cap - 1);
	if (k <= 0) {
		if (errno == ENOENT || kill(pid, 0) != 0)
			snprintf(err, n, "no process %d", (int)pid);
		else
			snprintf(err, n, "cannot read %s: %s", link, strerror(errno));
		return -1;
	}
	out[k] = 0;
	return 0;
}

/* Whether some request acts on the metric's own value (not only on flags). */
static int counts_value(const struct mdl_plan *p)
{
	uint32_t i, j;

	for (i = 0; i < p->nreq; i++)
		for (j = 0; j < p->req[i].nact; j++)
			if (p->req[i].act[j].var == 0)
				return 1;
	return 0;
}

/* What the session can do with this plan. */
static int check_plan(struct dyn_session *s, char *err, size_t n)
{
	const struct mdl_plan *p = s->plan;

	if (p->pid >= 0 && s->pid && p->pid != s->pid)
		return snprintf(err, n, "the focus names process %ld; this is process %d", p->pid,
				(int)s->pid), -1;
	if (p->external && !strcmp(p->external, "observed_cost"))
		return snprintf(err, n, "observed_cost is what instrumentation costs: sonde watch "
				"reports it for the metric it watches"), -1;
	if (p->external && strcmp(p->external, "cpu_time") && strcmp(p->external, "wall_time"))
		return snprintf(err, n, "no reading '%s' in this runtime", p->external), -1;
	if (p->external && !strcmp(p->external, "cpu_time") && p->thread >= 0)
		return snprintf(err, n, "the CPU time of one thread needs a procedure in the focus "
				"(e.g. /Code/MODULE/PROC/Threads/%ld)", p->thread), -1;
	if (!p->external && !p->nreq)
		return snprintf(err, n, "%s at %s instruments nothing in process %d (%u named "
				"procedures are in none of its modules)", p->metric->name, p->focus,
				(int)s->pid, p->missing), -1;
	if (!p->external && !counts_value(p))
		return snprintf(err, n, "nothing in process %d counts %s at %s: the %u procedures "
				"it counts at are in none of its modules", (int)s->pid,
				p->metric->name, p->focus, p->missing), -1;
	return 0;
}

/* Against the modules loaded now. */
static int plan_now(struct dyn_session *s, char *err, size_t n)
{
	struct mdl_program prog;

	if (dyn_program_read(s, err, n) != 0)
		return -1;
	prog = (struct mdl_program){ s->procs, s->nprocs, NULL, NULL };
	dyn_resources_program(&prog, &s->pid);
	mdl_plan_free(s->plan);
	s->plan = mdl_plan(s->lib, s->metric, s->focus, &prog, err, n);
	if (!s->plan)
		return -1;
	return check_plan(s, err, n);
}

/* A program not started yet: the metric and the focus, checked without procedures. */
static int plan_later(struct dyn_session *s, char *err, size_t n)
{
	s->plan = mdl_plan(s->lib, s->metric, s->focus, NULL, err, n);
	if (!s->plan)
		return -1;
	if (s->plan->external)
		return check_plan(s, err, n);
	return 0;
}

int dyn_session_plan(struct dyn_session *s, pid_t pid, const char *exe, const struct mdl_lib *lib,
		     const char *metric, const char *focus, char *err, size_t n)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->c.fd = -1;
	s->t_open = mono_now_ns();
	s->lib = lib;
	s->metric = metric;
	s->focus = focus ? focus : "/Code";
	if (exe) {
		snprintf(s->exe, sizeof(s->exe), "%s", exe);
		return metric ? plan_later(s, err, n) : 0;
	}
	if (exe_of(pid, s->exe, sizeof(s->exe), err, n) != 0)
		return -1;
	return metric ? plan_now(s, err, n) : dyn_program_read(s, err, n);
}

/* ---- talking to the runtime ---- */

static void on_sample(struct dyn_session *s, const struct sproto_sample *sm);

/* A SAMPLE, or a BUCKET_REPLY: the answer to a BUCKET sent before. */
static void on_bucket(struct dyn_session *s, const struct sproto_msg *m)
{
	if (m->h.type != SPROTO_SAMPLE && s->owed) /* BUCKET_REPLY, BUCKET_SAME (version 10) */
		s->owed--;
	on_sample(s, &m->u.sample);
}

static int flush(struct dyn_session *s, char *err, size_t n);

/* Wait for the answer to the request sent last; samples meanwhile are kept. want: the reply's
 * type. */
static int answer(struct dyn_session *s, uint16_t want, struct sproto_msg *m, char *err, size_t n)
{
	for (;;) {
		int r = ctl_recv(&s->c, m, 10000, err, n);

		if (r != 0) {
			if (r == 1)
				snprintf(err, n, "no answer from the runtime in 10 s");
			return -1;
		}
		if (sproto_is_sample(m->h.type))
			on_bucket(s, m);
		else if (m->h.type == SPROTO_ERROR)
			return snprintf(err, n, "the runtime refused %s: %s",
					sproto_type_name(m->u.status.type), m->u.status.text), -1;
		else if (m->h.type == want)
			return 0;
	}
}

/* Send a request, wait for its answer. The requests held go first. */
static int request(struct dyn_session *s, const void *msg, size_t len, uint16_t want,
		   struct sproto_msg *m, char *err, size_t n)
{
	if (flush(s, err, n) != 0 || ctl_send(&s->c, msg, len, err, n) != 0)
		return -1;
	return answer(s, want, m, err, n);
}

static int simple(struct dyn_session *s, const void *msg, size_t len, char *err, size_t n)
{
	struct sproto_msg m;

	return request(s, msg, len, SPROTO_OK, &m, err, n);
}

/* The requests held: one alone, or a BATCH (one answer). */
static int flush(struct dyn_session *s, char *err, size_t n)
{
	struct sproto_msg m;
	size_t len;
	int one, r;

	if (!s->batch || !s->bb.n1)
		return 0;
	one = s->bb.n1 == 1;
	len = one ? s->one_len : sproto_end(&s->bb);
	if (!len) {
		sproto_batch_begin(&s->bb, s->batch, SPROTO_MAX_MESSAGE);
		return snprintf(err, n, "the requests held did not fit in a BATCH"), -1;
	}
	r = ctl_send(&s->c, one ? s->one : s->batch, len, err, n);
	sproto_batch_begin(&s->bb, s->batch, SPROTO_MAX_MESSAGE); /* sent: empty again */
	return r != 0 ? -1 : answer(s, SPROTO_OK, &m, err, n);
}

int dyn_session_send(struct dyn_session *s, const void *msg, size_t len, char *err, size_t n)
{
	const uint8_t *p = msg; /* p[6..7]: the header's u16 type (docs/protocol.md) */

	if (!s->holding || len < SPROTO_HEADER_SIZE || len > 4096 ||
	    !sproto_batchable((uint16_t)(p[6] | p[7] << 8)))
		return simple(s, msg, len, err, n);
	if ((s->bb.n1 >= SPROTO_MAX_BATCH || SPROTO_MAX_MESSAGE - s->bb.len < len) &&
	    flush(s, err, n) != 0) /* full: what is held goes first */
		return -1;
	sproto_batch_add(&s->bb, msg, len);
	memcpy(s->one, msg, len);
	s->one_len = len;
	return 0;
}

void dyn_session_hold(struct dyn_session *s)
{
	if (!s->batch) {
		s->batch = xmalloc(SPROTO_MAX_MESSAGE);
		s->one = xmalloc(4096);
		sproto_batch_begin(&s->bb, s->batch, SPROTO_MAX_MESSAGE);
	}
	s->holding = 1;
}

int dyn_session_flush(struct dyn_session *s, char *err, size_t n)
{
	return flush(s, err, n);
}

int dyn_session_flush_quiet(struct dyn_session *s, char *err, size_t n)
{
	size_t len;
	int r;

	if (!s->batch || !s->bb.n1)
		return 0;
	len = sproto_end(&s->bb);
	if (!len) {
		sproto_batch_begin(&s->bb, s->batch, SPROTO_MAX_MESSAGE);
		return snprintf(err, n, "the requests held did not fit in a BATCH"), -1;
	}
	sproto_batch_quiet(s->batch, len); /* version 10: no OK; an ERROR comes as any answer */
	r = ctl_send(&s->c, s->batch, len, err, n);
	sproto_batch_begin(&s->bb, s->batch, SPROTO_MAX_MESSAGE);
	return r;
}

int dyn_session_request(struct dyn_session *s, const void *msg, size_t len, uint16_t want,
			struct sproto_msg *m, char *err, size_t n)
{
	return request(s, msg, len, want, m, err, n);
}

int dyn_session_bucket(struct dyn_session *s, uint64_t width_ns, char *err, size_t n)
{
	uint8_t msg[64];
	size_t len = sproto_put_bucket(msg, sizeof(msg), width_ns);

	if (!len)
		return snprintf(err, n, "bucket width out of range"), -1;
	if (flush(s, err, n) != 0 || ctl_send(&s->c, msg, len, err, n) != 0)
		return -1;
	s->owed++;
	s->asked_ns = width_ns;
	return 0;
}

static int sampling(struct dyn_session *s, uint64_t ns, char *err, size_t n)
{
	uint8_t msg[64];

	return simple(s, msg, sproto_put_sampling(msg, sizeof(msg), ns), err, n);
}

/* The threads (/proc/PID/task: the tool is on the target's machine, so it needs no LIST and
 * its module list): the one the focus names must be there. */
static int list_process(struct dyn_session *s, char *err, size_t n)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int count = 0, found = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)s->pid);
	dir = opendir(path);
	if (!dir)
		return snprintf(err, n, "%s: %s", path, strerror(errno)), -1;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.') {
			count++;
			found |= s->plan && s->plan->thread >= 0 &&
				 strtol(d->d_name, NULL, 10) == s->plan->thread;
		}
	closedir(dir);
	if (s->plan && s->plan->thread >= 0 && !found)
		return snprintf(err, n, "process %d has no thread %ld (its thread ids are in "
				"/proc/%d/task)", (int)s->pid, s->plan->thread, (int)s->pid), -1;
	s->threads = s->threads ? s->threads : count;
	return 0;
}

/* ---- which points: those of the plan's requests (sites.c) ---- */

static int collect(struct dyn_session *s, char *err, size_t n)
{
	if (dyn_sites_collect(s, err, n) != 0)
		return -1;
	if (s->set.n)
		return 0;
	if (s->nnocall)
		return snprintf(err, n, "nothing to patch: %s", s->nocall), -1;
	return snprintf(err, n, "none of the %u procedures of the plan can be patched in "
			"process %d (start-up code, no size)", s->plan->nreq, (int)s->pid), -1;
}

/* ---- the points' actions ---- */

static void map_pred(const struct mdl_pred *p, struct sproto_action *o)
{
	static const uint8_t kind[] = { SPROTO_PRED_NONE, SPROTO_PRED_TCOUNTER, SPROTO_PRED_ARG,
					SPROTO_PRED_RETVAL };

	o->pred = kind[p->opd];
	if (p->opd == MDL_OPD_NONE)
		return;
	o->pred_index = p->opd == MDL_OPD_COUNTER ? p->counter
		      : p->opd == MDL_OPD_ARG ? (uint32_t)p->arg : 0;
	o->op = (uint8_t)p->op;
	o->pred_value = p->k;
}

/* Counters are thread counters (index: the plan's variable); timers keep their numbering. */
static void map_action(const struct mdl_plan *p, const struct mdl_action *a, uint8_t when,
		       struct sproto_action *o)
{
	static const uint8_t tprim[] = { SPROTO_TSET, SPROTO_TADD, SPROTO_TSUB };

	memset(o, 0, sizeof(*o));
	o->when = when;
	o->target = a->var;
	if (a->from_return) { /* bytes read or written */
		o->prim = SPROTO_TADD_RET;
	} else if (p->vars[a->var].kind == MDL_VAR_COUNTER && a->prim <= MDL_SUB) {
		o->prim = tprim[a->prim];
		o->value = a->value;
	} else {
		o->prim = (uint8_t)a->prim;
	}
	map_pred(&a->pred, o);
}

/* The point's only action adds a constant to the metric: its own counter counts both. */
static int counts_itself(const struct mdl_plan *p, const struct dyn_site *site)
{
	const struct mdl_request *e = site->nreq == 1 ? &p->req[site->req[0]] : NULL;

	return e && e->point != MDL_EXIT && e->nact == 1 && e->act[0].prim == MDL_ADD &&
	       !e->act[0].from_return && e->act[0].var == 0 && e->act[0].pred.opd == MDL_OPD_NONE && e->act[0].value &&
	       p->vars[0].kind == MDL_VAR_COUNTER;
}

/* The actions of the site's requests at entry (a call site's run there too), or at exit. */
static int add_actions(const struct mdl_plan *p, struct dyn_spoint *pt,
		       const struct dyn_site *site, int at_exit, const char *name, char *err,
		       size_t n)
{
	uint32_t i, j;

	for (j = 0; j < site->nreq; j++) {
		const struct mdl_request *r = &p->req[site->req[j]];

		if ((r->point == MDL_EXIT) != at_exit)
			continue;
		for (i = 0; i < r->nact; i++) {
			if (pt->ps.n == SPROTO_MAX_ACTIONS)
				return snprintf(err, n, "%s needs more than %d actions", name,
						SPROTO_MAX_ACTIONS - 1), -1;
			map_action(p, &r->act[i], at_exit ? SPROTO_AT_EXIT : SPROTO_AT_ENTRY,
				   &pt->ps.act[pt->ps.n++]);
		}
	}
	return 0;
}

static int build_point(struct dyn_session *s, uint32_t i, char *err, size_t n)
{
	const struct mdl_plan *p = s->plan;
	const struct dyn_site *site = &s->site[i];
	struct dyn_spoint *pt = &s->pt[i];
	struct sproto_action *a = &pt->ps.act[0];
	uint32_t j;

	memset(pt, 0, sizeof(*pt));
	pt->func = i;
	pt->ps.point = i;
	pt->count_metric = UINT32_MAX;
	for (j = 0; j < site->nreq; j++)
		if (!pt->req[p->req[site->req[j]].point])
			pt->req[p->req[site->req[j]].point] = &p->req[site->req[j]];
	pt->count_tc = p->nvars + i;
	pt->own = counts_itself(p, site);
	pt->count_k = pt->own ? p->req[site->req[0]].act[0].value : 1;
	*a = (struct sproto_action){ .when = SPROTO_AT_ENTRY, .prim = SPROTO_TADD,
				     .target = pt->count_tc, .value = pt->count_k };
	pt->ps.n = 1;
	if (pt->own)
		return 0;
	if (add_actions(p, pt, site, 0, s->set.f[i].name, err, n) != 0)
		return -1;
	return add_actions(p, pt, site, 1, s->set.f[i].name, err, n);
}

static int build_points(struct dyn_session *s, char *err, size_t n)
{
	uint32_t i;

	s->npt = (uint32_t)s->set.n;
	if (s->plan->nvars + s->npt > SPROTO_MAX_TCOUNTERS || s->npt + 16 > SPROTO_MAX_METRICS)
		return snprintf(err, n, "%u points (entries and call sites) are more than one watch "
				"can count (%u at most)", s->npt,
				SPROTO_MAX_METRICS - 16 - s->plan->nvars), -1;
	s->pt = xcalloc(s->npt, sizeof(*s->pt));
	for (i = 0; i < s->npt; i++)
		if (build_point(s, i, err, n) != 0)
			return -1;
	return 0;
}

/* ---- patching, with the world stopped ---- */

static int note_refusals(struct dyn_session *s, char *err, size_t n)
{
	size_t i;

	for (i = 0; i < s->set.n; i++) {
		if (s->set.f[i].state != DYN_REFUSED)
			continue;
		if (!s->nrefused++)
			snprintf(s->refused, sizeof(s->refused), "%s: %s", s->set.f[i].name,
				 s->set.f[i].why);
	}
	if (s->nrefused < s->set.n)
		return 0;
	if (s->set.n == 1)
		return snprintf(err, n, "the patcher refuses %s", s->refused), -1;
	return snprintf(err, n, "the patcher refuses all %zu points (the first: %s)",
			s->set.n, s->refused), -1;
}

static int patch(struct dyn_session *s, char *err, size_t n)
{
	struct target t;
	int r = -1;

	if (target_attach(&t, s->pid, err, n) != 0)
		return -1;
	if (dyn_plan(&t, &s->set, s->c.hello.entry_addr, err, n) == 0 &&
	    note_refusals(s, err, n) == 0)
		r = dyn_install(&t, &s->set, err, n);
	if (r != 0 && dyn_count(&s->set, DYN_INSTALLED)) {
		char e2[256];

		dyn_remove(&t, &s->set, e2, sizeof(e2));
	}
	if (target_detach(&t) != 0 && r == 0) {
		snprintf(err, n, "letting the process go: %s", target_error(&t));
		r = -1;
	}
	s->attach_pause_ms += (double)t.paused_ns / 1e6;
	return r;
}

/* The world stopped again: the original bytes back, threads out of the trampolines. */
static int unpatch(struct dyn_session *s, double *pause_ms, char *err, size_t n)
{
	struct target t;
	int r;

	if (!dyn_count(&s->set, DYN_INSTALLED) && !s->remove)
		return 0;
	if (target_attach(&t, s->pid, err, n) != 0)
		return -1;
	r = dyn_remove(&t, &s->set, err, n);
	if (r == 0 && s->remove)
		r = s->remove(s->cb_arg, &t, err, n);
	if (target_detach(&t) != 0 && r == 0) {
		snprintf(err, n, "letting the process go: %s", target_error(&t));
		r = -1;
	}
	*pause_ms += (double)t.paused_ns / 1e6;
	return r;
}

/* ---- metrics ---- */

static int enable(struct dyn_session *s, uint32_t id, const struct sproto_term *t, uint16_t k,
		  char *err, size_t n)
{
	static uint8_t msg[SPROTO_HEADER_SIZE + 16 + SPROTO_MAX_TERMS * 12];
	struct sproto_metric m = { .id = id, .n = k };

	memcpy(m.term, t, k * sizeof(*t));
	return simple(s, msg, sproto_put_metric_enable(msg, sizeof(msg), &m), err, n);
}

/* The terms summing to the metric's value: its variable, and the points counting it. */
static uint32_t value_terms(const struct dyn_session *s, struct sproto_term *t)
{
	const struct mdl_plan *p = s->plan;
	uint32_t tid = p->thread >= 0 ? (uint32_t)p->thread : 0, k = 0, i;

	if (p->external) {
		t[k++] = (struct sproto_term){ SPROTO_TERM_PROC_CPU, 0, 0 };
		return k;
	}
	t[k++] = (struct sproto_term){ p->vars[0].kind == MDL_VAR_COUNTER ? SPROTO_TERM_TCOUNTER
				       : p->vars[0].kind == MDL_VAR_CPU_TIMER ? SPROTO_TERM_CPU
				       : SPROTO_TERM_WALL, 0, tid };
	for (i = 0; i < s->npt; i++)
		if (s->pt[i].own && s->set.f[i].state == DYN_INSTALLED)
			t[k++] = (struct sproto_term){ SPROTO_TERM_TCOUNTER, s->pt[i].count_tc, tid };
	return k;
}

static int enable_all(struct dyn_session *s, char *err, size_t n)
{
	struct sproto_term *t = xcalloc(s->npt + 1, sizeof(*t)), one;
	uint32_t k = value_terms(s, t), i, id = 0;
	int r = 0;

	for (i = 0; r == 0 && i < k; i += SPROTO_MAX_TERMS)
		r = enable(s, id++, t + i, (uint16_t)(k - i < SPROTO_MAX_TERMS ? k - i
									 : SPROTO_MAX_TERMS), err, n);
	free(t);
	s->nvalue = id;
	for (i = 0; r == 0 && i < s->npt; i++) {
		if (s->set.f[i].state != DYN_INSTALLED)
			continue;
		one = (struct sproto_term){ SPROTO_TERM_TCOUNTER, s->pt[i].count_tc, 0 };
		s->pt[i].count_metric = id;
		r = enable(s, id++, &one, 1, err, n);
	}
	s->nmetrics = id;
	s->base = xcalloc(id, sizeof(*s->base));
	s->cur = xcalloc(id, sizeof(*s->cur));
	s->seen = xcalloc(id, 1);
	return r;
}

static int set_points(struct dyn_session *s, char *err, size_t n)
{
	static uint8_t msg[SPROTO_HEADER_SIZE + 16 + SPROTO_MAX_ACTIONS * 32];
	uint32_t i;

	for (i = 0; i < s->npt; i++)
		if (s->set.f[i].state == DYN_INSTALLED &&
		    simple(s, msg, sproto_put_point_set(msg, sizeof(msg), &s->pt[i].ps), err, n))
			return -1;
	return 0;
}

/*
 * The calls of the points' procedures that are running now (a thread blocked in a wait, a loop
 * in progress) get their timers started and their returns hooked (catchup.h).
 */
static void catch_up(struct dyn_session *s)
{
	struct dyn_catchup_proc *cp = xcalloc(s->npt + 1, sizeof(*cp));
	struct sproto_point_set *ps = xcalloc(s->npt + 1, sizeof(*ps));
	size_t k = 0;
	uint32_t i;

	for (i = 0; i < s->npt; i++) {
		const struct dyn_func *f = &s->set.f[s->pt[i].func];

		if (f->state != DYN_INSTALLED || f->kind != PATCH_ENTRY || s->pt[i].own ||
		    !dyn_catchup_wanted(&s->pt[i].ps))
			continue;
		ps[k] = s->pt[i].ps; /* without its execution counter (act[0]): not an execution */
		ps[k].n--;
		memmove(ps[k].act, ps[k].act + 1, ps[k].n * sizeof(ps[k].act[0]));
		cp[k] = (struct dyn_catchup_proc){ f->addr, f->addr + f->size,
						   dyn_catchup_obj_size(f->name), &ps[k] };
		k++;
	}
	dyn_catch_up(s->pid, s->c.hello.entry_addr, cp, k, &s->catchup);
	free(cp);
	free(ps);
	s->attach_pause_ms += s->catchup.pause_ms;
}

/* ---- samples ---- */

static int64_t value_now(const struct dyn_session *s)
{
	uint64_t v = 0;
	uint32_t i;

	for (i = 0; i < s->nvalue; i++)
		v += (uint64_t)s->cur[i] - (uint64_t)s->base[i];
	return (int64_t)v;
}

static void on_sample(struct dyn_session *s, const struct sproto_sample *sm)
{
	struct sproto_sample_entry e;
	uint64_t t0;
	int64_t v;
	uint32_t i;

	if (s->on_sample) { /* many requests: their owner reads the samples (live.c) */
		s->on_sample(s->cb_arg, sm);
		s->t_start = s->nsamples ? s->t_start : sm->start_ns;
		s->t_last = sm->end_ns;
		s->lost = sm->lost;
		s->nsamples++;
		return;
	}
	for (i = 0; i < sm->n; i++) {
		sproto_sample_entry(sm, i, &e);
		s->last_seen |= (e.flags & SPROTO_S_LAST) != 0;
		if (e.metric >= s->nmetrics)
			continue;
		if (!s->seen[e.metric])
			s->base[e.metric] = (int64_t)((uint64_t)e.value - (uint64_t)e.delta);
		s->seen[e.metric] = 1;
		/* the value comes in a metric's first entry; then the last one plus the delta */
		s->cur[e.metric] = e.flags & SPROTO_S_VALUE ? e.value
				 : (int64_t)((uint64_t)s->cur[e.metric] + (uint64_t)e.delta);
	}
	t0 = s->nsamples ? s->t_last : sm->start_ns;
	if (!s->nsamples)
		s->t_start = t0;
	if (!s->h)
		s->h = hist_new(0, s->bucket_ns, t0, s->plan->fold);
	v = s->plan->external && !strcmp(s->plan->external, "wall_time")
		    ? s->value + (int64_t)(sm->end_ns - t0) : value_now(s);
	if (s->h && sm->end_ns > t0)
		hist_add(s->h, t0, sm->end_ns, (double)(v - s->value));
	s->value = v;
	s->t_last = sm->end_ns > t0 ? sm->end_ns : t0;
	s->lost = sm->lost;
	s->nsamples++;
}

/* ---- a file's descriptors change: the predicates follow ---- */

/* The same requests at the same procedures and points, only other values of $object. */
static int same_shape(const struct mdl_plan *a, const struct mdl_plan *b)
{
	uint32_t i;

	if (a->nreq != b->nreq || a->nvars != b->nvars)
		return 0;
	for (i = 0; i < a->nreq; i++)
		if (a->req[i].proc != b->req[i].proc || a->req[i].point != b->req[i].point ||
		    strcmp(a->req[i].name, b->req[i].name))
			return 0;
	return 1;
}

static int same_objects(const struct mdl_plan *p, const int64_t *v, uint32_t n)
{
	return p->nobjects == n && (!n || !memcmp(p->objects, v, n * sizeof(*v)));
}

/* A point's actions from the plan now; its execution counter's metric stays. */
static int rebuild_point(struct dyn_session *s, uint32_t i, char *err, size_t n)
{
	uint32_t metric = s->pt[i].count_metric;
	int r = build_point(s, i, err, n);

	s->pt[i].count_metric = metric;
	return r;
}

int dyn_session_refresh(struct dyn_session *s, char *err, size_t n)
{
	int64_t fds[MDL_MAX_OBJECTS];
	struct mdl_program prog = { s->procs, s->nprocs, NULL, NULL };
	struct mdl_plan *p, *old = s->plan;
	uint32_t k, i;

	if (!old || old->resource != MDL_RES_FILE || !s->pt || s->ended)
		return 0;
	k = dyn_file_fds(s->pid, old->object + 6, fds, MDL_MAX_OBJECTS);
	if (same_objects(old, fds, k < MDL_MAX_OBJECTS ? k : MDL_MAX_OBJECTS))
		return 0;
	dyn_resources_program(&prog, &s->pid);
	if (!(p = mdl_plan(s->lib, s->metric, s->focus, &prog, err, n)))
		return -1;
	if (!same_shape(old, p)) {
		mdl_plan_free(p);
		return snprintf(err, n, "the plan for the new descriptors of %s differs",
				old->object), -1;
	}
	s->plan = p;
	for (i = 0; i < s->npt; i++)
		if (rebuild_point(s, i, err, n) != 0)
			break;
	if (i == s->npt && set_points(s, err, n) == 0) {
		mdl_plan_free(old);
		s->refocused++;
		return 1;
	}
	s->plan = old; /* the runtime keeps what it had; the points' copies are rebuilt */
	for (i = 0; i < s->npt; i++)
		rebuild_point(s, i, err, n);
	mdl_plan_free(p);
	return -1;
}

int dyn_session_poll(struct dyn_session *s, unsigned ms, char *err, size_t n)
{
	uint64_t end = mono_now_ns() + (uint64_t)ms * 1000000ull, now;
	struct sproto_msg m;
	int r;

	while (!s->ended && (now = mono_now_ns()) < end) {
		r = ctl_recv(&s->c, &m, (int)((end - now) / 1000000ull) + 1, err, n);
		if (r == 1)
			break;
		if (r < 0) {
			if (!dyn_gone_soon(s->pid))
				return -1;
			s->ended = 1;
		} else if (sproto_is_sample(m.h.type)) {
			on_bucket(s, &m);
		} else if (m.h.type == SPROTO_ERROR) {
			return snprintf(err, n, "the runtime refused %s: %s",
					sproto_type_name(m.u.status.type), m.u.status.text), -1;
		}
	}
	if (!s->ended && s->plan && s->plan->resource == MDL_RES_FILE &&
	    mono_now_ns() - s->t_refresh >= DYN_REFRESH_NS) {
		s->t_refresh = mono_now_ns();
		if (dyn_session_refresh(s, err, n) < 0)
			return dyn_process_gone(s->pid) ? (s->ended = 1) : -1;
	}
	if (!s->ended && s->h && s->h->width > s->bucket_ns) { /* folded: sample less often */
		s->bucket_ns = s->h->width;
		if (sampling(s, s->bucket_ns, err, n) != 0)
			return dyn_process_gone(s->pid) ? (s->ended = 1) : -1;
	}
	return s->ended;
}

/* ---- the session ---- */

static int inject(struct dyn_session *s, char *err, size_t n)
{
	struct inject_session_opts so = { s->o.runtime, s->ctl_dir, NULL, 1 };
	struct inject_session is;

	if (inject_session_open(&is, s->pid, &so, err, n) != 0)
		return -1;
	snprintf(s->comm, sizeof(s->comm), "%s", is.comm);
	s->threads = is.threads;
	if (inject_session_close(&is, err, n) != 0)
		return -1;
	s->attach_pause_ms += is.pause_ms;
	return 0;
}

static int connect_runtime(struct dyn_session *s, char *err, size_t n)
{
	unsigned wait = s->o.launched ? (s->o.connect_ms ? s->o.connect_ms : 10000) : 2000;
	uint8_t msg[64];

	if (ctl_connect(&s->c, s->ctl_dir, s->pid, wait, err, n) != 0) {
		if (!s->o.launched && strstr(err, "connection broke")) /* refused, closed */
			snprintf(err + strlen(err), n - strlen(err), " (is another sonde connected? "
				 "the runtime serves one client at a time)");
		return -1;
	}
	s->connected = 1;
	if (!s->o.launched && (s->c.hello.flags & SPROTO_F_AT_START))
		return snprintf(err, n, "process %d runs under sonde run --dynamic: its functions "
				"are patched already", (int)s->pid), -1;
	if (s->o.costs && (s->o.costs->flags & SPROTO_COSTS_MEASURED))
		s->costs = *s->o.costs; /* the same code on the same machine: asked once */
	else if (ctl_costs(&s->c, &s->costs, err, n) != 0)
		return -1;
	/* points a killed session left: its trampolines fall inert, our ids start afresh */
	return simple(s, msg, sproto_put_point_clear(msg, sizeof(msg), 0, SPROTO_MAX_POINTS), err,
		      n);
}

/* ns per execution of the execution counter a point has besides the plan's actions. */
static double counter_ns(const struct dyn_session *s, uint32_t i)
{
	return s->pt[i].own || s->set.f[i].state == DYN_REFUSED ? 0 : s->cp.prim_ns[MDL_ADD];
}

/*
 * The cost model with the runtime's measured costs (the defaults where it measured none):
 * the plan's predicted cost, and each point's execution counter, at static frequencies. Over
 * the limit, the plan is deferred: nothing is installed (the search would retry it later; a
 * watch says so and stops).
 */
static int cost_setup(struct dyn_session *s, char *err, size_t n)
{
	double limit = s->o.max_cost, ns;
	uint32_t i;

	if (s->cost)
		cost_model_free(s->cost);
	cost_defaults(&s->cp);
	dyn_costs_apply(&s->costs, 1, &s->cp);
	if (limit < 0)
		s->cp.defer_at = 1e9;
	else if (limit > 0)
		s->cp.defer_at = limit;
	s->cost = cost_model_new(&s->cp);
	ns = cost_predict(s->cost, s->plan);
	for (i = 0; i < s->npt; i++)
		ns += s->cp.freq_user * counter_ns(s, i);
	s->predicted_ns = ns;
	if (ns > 1e9 * s->cp.defer_at || cost_admit(s->cost, s->plan, NULL) != COST_INSTALL) {
		s->deferred = 1;
		return snprintf(err, n, "the predicted cost, %.3g %% of a CPU, is above the limit "
				"of %.3g %%: deferred, nothing installed (--max-cost PCT)",
				ns / 1e7, s->cp.defer_at * 100), -1;
	}
	return 0;
}

/* No plan: the process connected and let go; requests come later (live.c). A program started
 * here was never patched: no other session's patches to look for in it (reading every
 * procedure's first bytes while it is held before main). */
static int open_only(struct dyn_session *s, char *err, size_t n)
{
	uint8_t msg[64];

	if (s->o.launched && dyn_program_read(s, err, n) != 0)
		return -1;
	if (list_process(s, err, n) != 0 ||
	    (!s->o.launched && dyn_sites_left_patch(s, err, n) != 0))
		return -1;
	cost_defaults(&s->cp);
	dyn_costs_apply(&s->costs, 1, &s->cp);
	if (s->o.max_cost > 0)
		s->cp.defer_at = s->o.max_cost;
	s->cost = cost_model_new(&s->cp);
	if (sampling(s, s->bucket_ns, err, n) != 0)
		return -1;
	if (!s->o.launched)
		return 0;
	if (simple(s, msg, sproto_put_empty(msg, sizeof(msg), SPROTO_RESUME), err, n) != 0)
		return -1;
	s->t_resumed = mono_now_ns();
	return 0;
}

static int instrument(struct dyn_session *s, char *err, size_t n)
{
	uint8_t msg[64];

	if (!s->metric)
		return open_only(s, err, n);
	if (s->o.launched && plan_now(s, err, n) != 0) /* held before main: libraries loaded */
		return -1;
	if (!s->o.launched && dyn_program_check(s, err, n) != 0)
		return -1;
	if (list_process(s, err, n) != 0 || dyn_sites_left_patch(s, err, n) != 0 ||
	    collect(s, err, n) != 0 || build_points(s, err, n) != 0 ||
	    cost_setup(s, err, n) != 0 || patch(s, err, n) != 0)
		return -1;
	if (sampling(s, s->bucket_ns, err, n) != 0 || enable_all(s, err, n) != 0 ||
	    set_points(s, err, n) != 0)
		return -1;
	if (!s->o.launched)
		catch_up(s);
	if (s->o.launched)
		return simple(s, msg, sproto_put_empty(msg, sizeof(msg), SPROTO_RESUME), err, n);
	return 0;
}

/* Undo what a failed attach did: the runtime's points, then the patches. */
static void undo(struct dyn_session *s)
{
	uint8_t msg[64];
	char e[256];
	double pause = 0;

	if (s->connected && !s->ended)
		simple(s, msg, sproto_put_empty(msg, sizeof(msg), SPROTO_DETACH), e, sizeof(e));
	if (s->connected)
		ctl_close(&s->c);
	s->connected = 0;
	if (!dyn_process_gone(s->pid))
		unpatch(s, &pause, e, sizeof(e));
}

int dyn_session_attach(struct dyn_session *s, const struct dyn_session_opts *o, char *err,
		       size_t n)
{
	s->o = *o;
	s->t_open = mono_now_ns();
	s->bucket_ns = o->bucket_ns ? o->bucket_ns : SPROTO_DEFAULT_BUCKET_NS;
	if (o->ctl_dir)
		snprintf(s->ctl_dir, sizeof(s->ctl_dir), "%s", o->ctl_dir);
	else if (ctl_default_dir(s->ctl_dir, sizeof(s->ctl_dir)) != 0)
		return snprintf(err, n, "no directory for the control socket"), -1;
	if (!o->launched && inject(s, err, n) != 0)
		return -1;
	if (connect_runtime(s, err, n) != 0 || instrument(s, err, n) != 0) {
		if (o->launched && s->pid > 0) { /* held before main: it must not run on */
			kill(s->pid, SIGKILL);
			s->ended = 1;
		}
		undo(s);
		return -1;
	}
	s->attach_ms = elapsed_ms(s->t_open);
	return 0;
}

int dyn_session_hammer(struct dyn_session *s, unsigned rounds, char *err, size_t n)
{
	struct target t;
	unsigned i;
	int r = 0, k;

	if (target_attach(&t, s->pid, err, n) != 0)
		return -1;
	for (i = 0; r == 0 && i < 2 * rounds; i++) {
		r = i % 2 ? dyn_install(&t, &s->set, err, n) : dyn_remove(&t, &s->set, err, n);
		if (r == 0 && (k = target_run_for(&t, 1, NULL)) != 0) {
			snprintf(err, n, "%s", k == 1 ? "the process ended" : target_error(&t));
			s->ended = k == 1;
			r = -1;
		}
	}
	if (target_detach(&t) != 0 && r == 0) {
		snprintf(err, n, "letting the process go: %s", target_error(&t));
		r = -1;
	}
	s->hammer_pause_ms += (double)t.paused_ns / 1e6;
	return r;
}

/* Values up to now: the buckets are made short until one ends after now; on request (BUCKET),
 * one more bucket, as short as can be, or the one asked for already. */
static void last_sample(struct dyn_session *s, char *err, size_t n)
{
	uint64_t t = mono_now_ns(), deadline = t + 2000000000ull + s->asked_ns;

	if (s->asked_ns) {
		if (!s->owed && dyn_session_bucket(s, SPROTO_MIN_BUCKET_NS, err, n) != 0)
			return;
		while (!s->ended && s->owed && mono_now_ns() < deadline)
			if (dyn_session_poll(s, 20, err, n) < 0)
				return;
		return;
	}
	if (sampling(s, SPROTO_MIN_BUCKET_NS, err, n) != 0)
		return;
	while (!s->ended && s->t_last < t && mono_now_ns() < deadline)
		if (dyn_session_poll(s, 20, err, n) < 0)
			return;
}

int dyn_session_finish(struct dyn_session *s, char *err, size_t n)
{
	char e2[256];
	uint8_t msg[64];
	uint64_t t0;
	int r = 0;

	if (!s->connected)
		return 0;
	if (!s->ended)
		last_sample(s, err, n);
	t0 = mono_now_ns();
	if (!s->ended &&
	    simple(s, msg, sproto_put_empty(msg, sizeof(msg), SPROTO_DETACH), err, n) != 0)
		r = dyn_process_gone(s->pid) ? 0 : -1;
	else if (!s->ended)
		ctl_wait_end(&s->c, 2000);
	ctl_close(&s->c);
	s->connected = 0;
	if (dyn_process_gone(s->pid))
		s->ended = 1;
	else if (unpatch(s, &s->detach_pause_ms, r ? e2 : err, r ? sizeof(e2) : n) != 0)
		r = -1; /* the patches come out even when DETACH failed */
	s->detach_ms = elapsed_ms(t0);
	return r;
}

uint64_t dyn_session_count(const struct dyn_session *s, uint32_t i)
{
	const struct dyn_spoint *p = &s->pt[i];
	uint32_t id = p->count_metric;

	if (id >= s->nmetrics || !s->seen[id])
		return 0;
	return ((uint64_t)s->cur[id] - (uint64_t)s->base[id]) / (uint64_t)p->count_k;
}

double dyn_session_observed_ns(struct dyn_session *s, double *elapsed_ns)
{
	double el = (double)(s->t_last - s->t_start), extra = 0;
	uint64_t *count;
	uint32_t i, j;

	if (elapsed_ns)
		*elapsed_ns = el;
	if (!s->cost)
		return 0;
	count = xcalloc(s->plan->nreq + 1, sizeof(*count));
	for (i = 0; i < s->npt; i++) /* a call request's count: the sum over its call sites */
		for (j = 0; j < s->site[i].nreq; j++)
			if (s->pt[i].count_metric < s->nmetrics)
				count[s->site[i].req[j]] += dyn_session_count(s, i);
	for (j = 0; j < s->plan->nreq; j++)
		cost_observe(s->cost, &s->plan->req[j], count[j], el);
	free(count);
	for (i = 0; i < s->npt; i++)
		extra += (double)dyn_session_count(s, i) * counter_ns(s, i);
	return cost_observed_ns(s->cost) + extra;
}

void dyn_session_free(struct dyn_session *s)
{
	if (s->connected)
		ctl_close(&s->c);
	dyn_program_free(s);
	mdl_plan_free(s->plan);
	dyn_set_free(&s->set);
	free(s->pt);
	free(s->site);
	free(s->base);
	free(s->cur);
	free(s->seen);
	free(s->batch);
	free(s->one);
	if (s->h)
		hist_free(s->h);
	if (s->cost)
		cost_model_free(s->cost);
	memset(s, 0, sizeof(*s));
	s->c.fd = -1;
}
