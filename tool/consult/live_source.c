/* SPDX-License-Identifier: MIT */
/*
 * The live source (live_source.h). Metrics and how each is measured:
 *
 *   cpu_time        whole program: the runtime's process CPU time; a thread: its CPU clock
 *                   (/proc/PID/task/TID/schedstat); a module or procedure: a CPU timer started
 *                   at each of its procedures' entry and stopped at their exit (inclusive:
 *                   callees' time counts, timers nest), of one thread with /Threads/TID
 *   sync_time,      wall timers around the blocking pthread and semaphore calls (lock, wait,
 *   sync_wait_time  join...); at a Code focus only while the calling thread is inside one of
 *                   its procedures (a thread counter raised at their entry, lowered at exit)
 *   sync_ops        calls of those and of the releases (unlock, post, signal...), likewise
 *   io_time,        wall timers around read, write, their p/v forms, fsync, open, close;
 *   io_wait_time,   io_ops: their calls
 *   io_ops
 *   io_bytes        the return values of read, write and their p/v forms (TADD_RET at exit)
 *   page_faults     /proc/PID/stat (minor + major), /proc/PID/task/TID/stat for a thread
 *   active_threads  the program's threads alive (/proc/PID/task, the runtime's control thread
 *                   left out) x the period; 1 x the period at /Threads/TID while it lives
 *   observed_cost   executions counted at the points x what one costs, calibrated in the
 *                   process (tool/dyn/costs.c); at a Code focus, the points in its procedures
 *   calls           entries of the focus's procedures (the call:PROC trigger)
 *   mpi_p2p_time,   wall timers around MPI's blocking point-to-point calls (receives, waits,
 *   mpi_coll_time,  probes) and its collectives in the MPI library, narrowed to a Code focus
 *   mpi_time        as the sync calls are; mpi_cpu_time, a CPU timer around both (live_mpi.c)
 *   wall_time       a wall timer at a Code focus's procedures (live_mpi.c)
 *
 * Code is the executable's modules (source files) and procedures; a procedure's children are
 * the procedures of the executable it calls directly (its call instructions, read from the
 * process): with inclusive times, the search goes down the call graph to the most specific
 * procedure that is still hot. Threads are the program's threads seen so far.
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dyn/proc_state.h"
#include "live_int.h"
#include "live_mpi.h"
#include "util.h"

static const struct { const char *name; enum lm m; } metric_names[] = {
	{ "cpu_time", LM_CPU }, { "active_threads", LM_ACTIVE }, { "sync_time", LM_SYNC },
	{ "sync_wait_time", LM_SYNC }, { "sync_ops", LM_SYNC_OPS }, { "io_time", LM_IO },
	{ "io_wait_time", LM_IO }, { "io_ops", LM_IO_OPS }, { "io_bytes", LM_IO_BYTES },
	{ "page_faults", LM_FAULTS },
	{ "observed_cost", LM_COST }, { "calls", LM_CALLS }, { "mpi_p2p_time", LM_MPI_P2P },
	{ "mpi_coll_time", LM_MPI_COLL }, { "mpi_time", LM_MPI }, { "mpi_cpu_time", LM_MPI_CPU },
	{ "wall_time", LM_WALL },
};
#define NMETRICS (sizeof(metric_names) / sizeof(metric_names[0]))

static enum lm metric_of(const char *name)
{
	size_t i;

	for (i = 0; i < NMETRICS; i++)
		if (!strcmp(metric_names[i].name, name))
			return metric_names[i].m;
	return LM_NONE;
}

static int ls_supports(struct cs_source *src, const char *metric, const struct cs_focus *f)
{
	struct lsrc *ls = L(src);
	enum lm m = metric_of(metric);
	struct dyn_lspec sp;
	char key[8300];
	int ok;

	if (m == LM_NONE || f->part[H_MACHINE])
		return 0;
	if (m == LM_ACTIVE) /* not narrowed by Code, SyncObject or Files */
		return 1;
	if ((f->part[H_SYNC] || f->part[H_FILES]) && m != LM_SYNC && m != LM_SYNC_OPS &&
	    m != LM_IO && m != LM_IO_OPS && m != LM_IO_BYTES)
		return 0; /* CPU time, faults, cost are not per object */
	if ((f->part[H_COMM] || f->part[H_PEER] || f->part[H_TAG]) && m != LM_MPI_P2P)
		return 0; /* only receives have a channel (live_chan.c) */
	switch (m) {
	case LM_FAULTS:
		return !f->part[H_CODE];
	case LM_COST:
		return !f->part[H_THREADS];
	case LM_CPU:
		if (!f->part[H_CODE])
			return 1;
		break;
	default:
		break;
	}
	ok = lv_dyn_spec(ls, m, f, &sp, key, sizeof(key)) == 0;
	if (ok)
		free(sp.pt);
	return ok;
}

static uint32_t ls_children(struct cs_source *src, const struct cs_focus *f, int h, char ***out)
{
	struct lsrc *ls = L(src);
	char name[64];
	uint32_t n = 0, i;

	*out = NULL;
	if (h == H_CODE)
		return lv_code_children(ls, f->part[H_CODE], out);
	if (h == H_SYNC)
		return lv_sync_children(ls, f->part[H_SYNC], out);
	if (h == H_COMM || h == H_PEER || h == H_TAG)
		return lv_chan_children(ls, f, h, out);
	if (h == H_FILES) {
		for (i = 0; !f->part[H_FILES] && i < ls->files.n; i++)
			lv_push_name(out, &n, ls->files.v[i].path);
		return n;
	}
	if (h != H_THREADS || f->part[H_THREADS])
		return 0;
	for (i = 0; i < ls->nthr; i++) {
		snprintf(name, sizeof(name), "/Threads/%u", ls->thr[i].tid);
		lv_push_name(out, &n, name);
	}
	return n;
}

/* The entry of (metric, focus) — or of another pair measured by the same instrumentation
 * (wall_time and mpi_coll_time of a procedure that is all one collective, a rank's focus and
 * every rank's in the rank): one metric on the wire, its increase read by both. */
static int find_ent(struct lsrc *ls, const char *key, const struct dyn_lspec *sp)
{
	uint32_t i;

	for (i = 0; i < ls->nents; i++)
		if (ls->ents[i].id >= 0 && !strcmp(ls->ents[i].key, key))
			return (int)i;
	for (i = 0; i < ls->nents; i++)
		if (ls->ents[i].id >= 0 && dyn_live_spec_is(ls->l, ls->ents[i].id, sp))
			return (int)i;
	return -1;
}

static int new_ent(struct lsrc *ls, const char *key, const struct dyn_lspec *sp)
{
	char err[256];
	int id = dyn_live_add(ls->l, sp, err, sizeof(err));
	uint32_t i;

	if (id < 0)
		return -1;
	for (i = 0; i < ls->nents && ls->ents[i].id >= 0; i++)
		;
	if (i == ls->nents) {
		ls->ents = xrealloc(ls->ents, (ls->nents + 1) * sizeof(*ls->ents));
		ls->nents++;
	} else {
		free(ls->ents[i].key);
	}
	ls->ents[i] = (struct ent){ xstrdup(key), id, 0, 0, 0, 1 };
	ls->live_reqs++;
	ls->total_reqs++;
	ls->max_reqs = ls->live_reqs > ls->max_reqs ? ls->live_reqs : ls->max_reqs;
	return (int)i;
}

static int new_req(struct lsrc *ls)
{
	uint32_t i;

	for (i = 0; i < ls->nreqs && ls->reqs[i].used; i++)
		;
	if (i == ls->nreqs) {
		ls->reqs = xrealloc(ls->reqs, (ls->nreqs + 1) * sizeof(*ls->reqs));
		ls->nreqs++;
	}
	memset(&ls->reqs[i], 0, sizeof(ls->reqs[i]));
	ls->reqs[i].used = 1;
	ls->reqs[i].ent = -1;
	ls->reqs[i].alive = -1;
	ls->reqs[i].scale = 1;
	return (int)i;
}

/* The procedures of a Code focus, for the observed cost there. */
static uint8_t *keep_of(const struct lsrc *ls, const char *code)
{
	char buf[4096];
	const char *mod, *proc;
	uint8_t *keep;
	uint32_t i;

	if (!code || lv_code_parts(code, buf, sizeof(buf), &mod, &proc) != 0)
		return NULL;
	keep = xcalloc(ls->s->nprocs + 1, 1);
	for (i = 0; i < ls->s->nprocs; i++)
		keep[i] = (uint8_t)lv_in_code(ls->s, i, mod, proc);
	return keep;
}

static int ls_request(struct cs_source *src, const char *metric, const struct cs_focus *f)
{
	struct lsrc *ls = L(src);
	enum lm m = metric_of(metric);
	struct dyn_lspec sp;
	char key[8300];
	int id, e;
	struct req *r;

	if (!ls_supports(src, metric, f))
		return -1;
	id = new_req(ls);
	r = &ls->reqs[id];
	r->tid = lv_thread_of(f);
	r->sync = m == LM_SYNC || m == LM_SYNC_OPS;
	if (m == LM_ACTIVE || m == LM_FAULTS || m == LM_COST || (m == LM_CPU && r->tid &&
								   !f->part[H_CODE])) {
		r->kind = m == LM_ACTIVE ? K_ACTIVE : m == LM_FAULTS ? K_FAULTS
			: m == LM_COST ? K_COST : K_TCPU;
		if (r->kind == K_COST)
			r->keep = keep_of(ls, f->part[H_CODE]);
		r->prev = lv_reading(ls, r);
		return id;
	}
	r->kind = K_DYN;
	r->scale = m == LM_CPU || m == LM_SYNC || m == LM_IO || m == LM_MPI_P2P ||
		   m == LM_MPI_COLL || m == LM_MPI || m == LM_MPI_CPU || m == LM_WALL ? 1e-9 : 1;
	if (lv_dyn_spec(ls, m, f, &sp, key, sizeof(key)) != 0) {
		r->used = 0;
		return -1;
	}
	e = find_ent(ls, key, &sp);
	if (e < 0)
		e = new_ent(ls, key, &sp);
	free(sp.pt);
	if (e < 0) {
		r->used = 0;
		return -1;
	}
	ls->ents[e].refs++;
	r->ent = e;
	return id;
}

static void ls_cancel(struct cs_source *src, int id)
{
	struct lsrc *ls = L(src);
	struct req *r;

	if (id < 0 || (uint32_t)id >= ls->nreqs || !ls->reqs[id].used)
		return;
	r = &ls->reqs[id];
	if (r->kind == K_DYN && r->ent >= 0 && --ls->ents[r->ent].refs == 0) {
		dyn_live_remove(ls->l, ls->ents[r->ent].id);
		ls->ents[r->ent].id = -1;
		ls->live_reqs--;
	}
	free(r->keep);
	r->keep = NULL;
	r->used = 0;
}

static double ls_cost(struct cs_source *src, const char *metric, const struct cs_focus *f)
{
	struct lsrc *ls = L(src);
	enum lm m = metric_of(metric);
	struct dyn_lspec sp;
	char key[8300];
	double ns;

	if (m == LM_ACTIVE || m == LM_FAULTS || m == LM_COST || (m == LM_CPU && !f->part[H_CODE]))
		return 0;
	if (lv_dyn_spec(ls, m, f, &sp, key, sizeof(key)) != 0 || sp.proc_cpu) {
		if (!sp.proc_cpu)
			return 0;
		free(sp.pt);
		return 0;
	}
	/* no room on a point (SPROTO_MAX_ACTIONS): as if it cost far more than any budget, so the
	 * search defers it until other requests there are gone */
	ns = find_ent(ls, key, &sp) >= 0 ? 0 : !dyn_live_room(ls->l, &sp) ? CS_COST_NO_ROOM * 1e9
	   : dyn_live_predict(ls->l, &sp);
	free(sp.pt);
	return ns / 1e9;
}

static double ls_max_rate(struct cs_source *src, const char *metric, const struct cs_focus *f)
{
	(void)src, (void)metric, (void)f;
	return INFINITY;
}

/* ---- time ---- */

/* The name of a phase marker from the process's memory. */
static const char *phase_name(struct lsrc *ls, uint64_t addr, char *buf, size_t cap)
{
	ssize_t k;

	if (!addr)
		return NULL;
	k = ls->memfd >= 0 ? pread(ls->memfd, buf, cap - 1, (off_t)addr) : -1;
	if (k <= 0)
		snprintf(buf, cap, "phase@0x%llx", (unsigned long long)addr);
	else
		buf[strnlen(buf, (size_t)k)] = 0;
	return buf;
}

static void phases(struct lsrc *ls, struct cs_step *st, char *name, size_t cap)
{
	uint64_t count, addr, t;

	dyn_live_phase(ls->l, &count, &addr, &t);
	if (count == ls->phases_seen)
		return;
	ls->phases_seen = count; /* markers between two samples: only the last is seen */
	t = t > ls->origin ? t - ls->origin : 0;
	if (t < st->t0)
		t = st->t0;
	if (t >= st->t1)
		t = st->t1 - 1;
	st->phase[0].t = t;
	st->phase[0].name = phase_name(ls, addr, name, cap);
	st->nphase = 1;
}

/* Whether a node may be refined to the heap's sync objects now: a synchronization metric is
 * measured (its nodes under test, or true and re-tested). Otherwise the tool does not ask for
 * them (RESOURCES): the runtime keeps recording them, and the first ask after that brings
 * every one not heard of (protocol version 8's "new only"), so none is missed, only learned
 * later — when a node could use it. */
static int sync_wanted(const struct lsrc *ls)
{
	uint32_t i;

	for (i = 0; i < ls->nreqs; i++)
		if (ls->reqs[i].used && ls->reqs[i].sync)
			return 1;
	return 0;
}

static void take_all(struct lsrc *ls)
{
	uint32_t i;

	for (i = 0; i < ls->nents; i++)
		if (ls->ents[i].id >= 0) {
			ls->ents[i].last = (double)dyn_live_take(ls->l, ls->ents[i].id);
			ls->ents[i].fresh = dyn_live_fresh(ls->l, ls->ents[i].id);
			ls->ents[i].every_was = dyn_live_every(ls->l, ls->ents[i].id);
		}
	lv_read_threads(ls);
	if (mono_now_ns() - ls->files_read_ns >= 1000000000ull)
		lv_read_files(ls);
	if (mono_now_ns() - ls->heap_read_ns >= 1000000000ull && sync_wanted(ls))
		lv_read_heap(ls);
	lv_chan_read(ls);
	for (i = 0; i < ls->nreqs; i++) {
		struct req *r = &ls->reqs[i];
		double now;

		if (!r->used)
			continue;
		if (r->kind == K_DYN) {
			r->last = r->ent >= 0 ? ls->ents[r->ent].last * r->scale : 0;
			r->fresh = r->ent >= 0 && ls->ents[r->ent].fresh;
		} else if (r->kind == K_ACTIVE) {
			now = r->tid ? (double)lv_thread_alive(ls, r->tid) : (double)ls->alive;
			r->last = ls->dt * now;
			r->fresh = now != r->alive; /* stored when the count changes */
			r->alive = now;
		} else {
			now = lv_reading(ls, r);
			r->last = now >= 0 && now >= r->prev ? now - r->prev : 0;
			r->fresh = r->last != 0;
			if (now >= 0)
				r->prev = now;
		}
	}
}

static int stop_now(const struct lsrc *ls)
{
	return (ls->o.stop && *ls->o.stop) ||
	       (ls->o.seconds > 0 && (double)ls->t_prev / 1e9 >= ls->o.seconds);
}

/* Wait for the answer to the BUCKET asked for, and a sample newer than the last step: 0; 1 when
 * the process ended meanwhile. The end is seen when the connection closes; every second
 * without a sample the process's state is looked at too, so that a connection that stays open
 * (a descriptor kept by another process) cannot keep the search waiting for a program that
 * has ended. */
static int wait_sample(struct lsrc *ls)
{
	uint64_t look = mono_now_ns() + 1000000000ull;
	char err[256];

	while ((ls->s->owed || ls->s->nsamples == ls->nsamples_seen) && !ls->s->ended) {
		if (ls->o.stop && *ls->o.stop)
			return 0;
		if (dyn_session_poll(ls->s, 10, err, sizeof(err)) < 0) {
			snprintf(ls->error, sizeof(ls->error), "%s", err);
			ls->ended = 1;
			return 1;
		}
		if (ls->s->nsamples == ls->nsamples_seen && mono_now_ns() >= look) {
			look = mono_now_ns() + 1000000000ull;
			if (dyn_program_ended(ls->s->pid))
				ls->s->ended = 1;
		}
	}
	return ls->s->ended;
}

/* The points' counters each bucket while a request reads the observed cost, else paced. */
static void pace_points(struct lsrc *ls)
{
	char err[256];
	uint32_t i, every = LIVE_POINT_EVERY;

	for (i = 0; i < ls->nreqs && every > 1; i++)
		if (ls->reqs[i].used && ls->reqs[i].kind == K_COST)
			every = 1;
	dyn_live_points_pace(ls->l, every, err, sizeof(err));
}

static int ls_step(struct cs_source *src, struct cs_step *st)
{
	static char name[256];
	struct lsrc *ls = L(src);
	char err[256];
	int gone;

	if (ls->last_done)
		return -1;
	if (!ls->s->ended)
		pace_points(ls);
	/* the requests, then the bucket they are measured in: it ends when the search needs it */
	if (!ls->s->ended && (dyn_live_commit_quiet(ls->l, err, sizeof(err)) != 0 ||
			      (!ls->s->owed && dyn_session_bucket(ls->s, ls->next_ns, err,
								   sizeof(err)) != 0))) {
		char e2[256];

		/* the process ending meanwhile closes the connection: no error then */
		if (dyn_session_poll(ls->s, 1, e2, sizeof(e2)) != 1)
			snprintf(ls->error, sizeof(ls->error), "%s", err);
		ls->s->ended = 1;
	}
	gone = wait_sample(ls);
	if (ls->s->nsamples == ls->nsamples_seen && !(ls->o.stop && *ls->o.stop))
		return -1; /* ended with nothing new */
	ls->nsamples_seen = ls->s->nsamples;
	st->t0 = ls->t_prev;
	st->t1 = ls->s->t_last > ls->origin ? ls->s->t_last - ls->origin : st->t0 + 1;
	if (st->t1 <= st->t0)
		st->t1 = st->t0 + 1;
	ls->dt = (double)(st->t1 - st->t0) / 1e9;
	ls->t_prev = st->t1;
	take_all(ls);
	lv_read_ctl_cpu(ls);
	st->load = lv_load_factor(ls);
	phases(ls, st, name, sizeof(name));
	ls->ended |= gone;
	st->last = gone || stop_now(ls);
	ls->last_done = st->last;
	return 0;
}

static double ls_read(struct cs_source *src, int id)
{
	struct lsrc *ls = L(src);

	return id >= 0 && (uint32_t)id < ls->nreqs && ls->reqs[id].used ? ls->reqs[id].last : 0;
}

static int ls_fresh(struct cs_source *src, int id)
{
	struct lsrc *ls = L(src);

	return id >= 0 && (uint32_t)id < ls->nreqs && ls->reqs[id].used && ls->reqs[id].fresh;
}

/* A request of dynamic instrumentation read only by slow requests is sent every LIVE_RETEST
 * buckets, or 2, 4, 8 times that (up to LIVE_SETTLED_MAX) while their re-tests can wait that
 * long — unless every bucket is that long already (settled). */
static void pace_ent(struct lsrc *ls, int e)
{
	double wait = INFINITY, period = (double)ls->s->bucket_ns / 1e9;
	uint32_t i, every = LIVE_RETEST;
	char err[256];

	for (i = 0; i < ls->nreqs; i++) {
		const struct req *r = &ls->reqs[i];

		if (r->used && r->kind == K_DYN && r->ent == e && r->slow < wait)
			wait = r->slow;
	}
	if (ls->coarse || wait <= 0)
		every = 1;
	while (every > 1 && 2 * every <= LIVE_SETTLED_MAX && 2 * every * period <= wait)
		every *= 2;
	dyn_live_pace(ls->l, ls->ents[e].id, every, err, sizeof(err));
}

/* The periods of a settled bucket: LIVE_RETEST doubled while the re-tests can wait that long
 * (and --for has that long to run), up to LIVE_SETTLED_MAX; 0 when not settled. */
static uint32_t settled_periods(const struct lsrc *ls, double settled)
{
	double period = (double)ls->s->bucket_ns / 1e9, left = INFINITY;
	uint32_t k = LIVE_RETEST;

	if (settled <= 0)
		return 0;
	if (ls->o.seconds > 0)
		left = ls->o.seconds - (double)ls->t_prev / 1e9;
	while (2 * k <= LIVE_SETTLED_MAX && 2 * k * period <= settled && 2 * k * period <= left)
		k *= 2;
	return k;
}

/* While nodes are under test: the next bucket as long as the engine can wait (a period at
 * least, LIVE_SETTLED_MAX periods at most, and what --for has left). */
static uint64_t testing_width(const struct lsrc *ls, double wait)
{
	double period = (double)ls->s->bucket_ns / 1e9, w = wait;

	if (ls->o.seconds > 0 && ls->o.seconds - (double)ls->t_prev / 1e9 < w)
		w = ls->o.seconds - (double)ls->t_prev / 1e9;
	if (w > LIVE_SETTLED_MAX * period)
		w = LIVE_SETTLED_MAX * period;
	return w > period ? (uint64_t)(w * 1e9) : ls->s->bucket_ns;
}

/* Settled, the true nodes are re-tested every LIVE_RETEST periods or more (live_source.h):
 * fewer samples, the same cumulative averages (a bucket's increase is the same whatever its
 * width). Under test, a bucket ends when a node could next conclude (engine.c next_need):
 * at the minimum observation time of the nodes just started, then as the averages of those
 * past it can move (protocol version 7: the runtime ends each bucket when BUCKET asks). */
static void ls_pace(struct cs_source *src, double settled, double wait)
{
	struct lsrc *ls = L(src);
	uint32_t i, k = settled_periods(ls, settled), coarse;
	char err[256];
	int changed;

	if (ls->s->ended || ls->last_done)
		return;
	ls->next_ns = k ? ls->s->bucket_ns * k : testing_width(ls, wait);
	coarse = ls->next_ns >= LIVE_RETEST * ls->s->bucket_ns
			 ? (uint32_t)(ls->next_ns / ls->s->bucket_ns) : 0;
	changed = !coarse != !ls->coarse;
	ls->coarse = coarse;
	if (!changed) /* the requests' paces depend only on whether buckets are coarse */
		return;
	for (i = 0; i < ls->nents; i++)
		if (ls->ents[i].id >= 0)
			pace_ent(ls, (int)i);
	/* one BATCH; a refusal is not fatal (as a pace's never was), a broken connection fails
	 * the next commit */
	dyn_live_flush(ls->l, err, sizeof(err));
}

static void ls_pace_req(struct cs_source *src, int id, double slow)
{
	struct lsrc *ls = L(src);
	struct req *r;

	if (id < 0 || (uint32_t)id >= ls->nreqs || !ls->reqs[id].used)
		return;
	r = &ls->reqs[id];
	r->slow = slow;
	if (r->kind == K_DYN && r->ent >= 0 && !ls->s->ended && !ls->last_done)
		pace_ent(ls, r->ent);
}

int live_source_data_id(struct cs_source *src, int id)
{
	struct lsrc *ls = L(src);
	const struct req *r;

	if (id < 0 || (uint32_t)id >= ls->nreqs || !ls->reqs[id].used)
		return -1;
	r = &ls->reqs[id];
	/* tool-side readings are each their own (ids past the entries') */
	return r->kind == K_DYN && r->ent >= 0 ? r->ent : (int)ls->nents + id;
}

/* A request sent in lumps is complete when its lump came. */
static int ls_current(struct cs_source *src, int id)
{
	struct lsrc *ls = L(src);
	const struct req *r;

	if (id < 0 || (uint32_t)id >= ls->nreqs || !ls->reqs[id].used)
		return 1;
	r = &ls->reqs[id];
	return r->kind != K_DYN || r->ent < 0 || ls->ents[r->ent].every_was <= 1 ||
	       ls->ents[r->ent].fresh;
}

static uint64_t ls_zero(struct cs_source *src)
{
	(void)src;
	return 0;
}

static uint64_t ls_phase_end(struct cs_source *src, uint64_t start)
{
	(void)src, (void)start;
	return 0;
}

static uint64_t ls_generation(struct cs_source *src)
{
	return L(src)->generation;
}

static const struct cs_source_ops live_ops = {
	.supports = ls_supports, .children = ls_children, .request = ls_request,
	.cancel = ls_cancel, .cost = ls_cost, .max_rate = ls_max_rate, .step = ls_step,
	.read = ls_read, .run_end = ls_zero, .phase_end = ls_phase_end,
	.generation = ls_generation, .fresh = ls_fresh, .pace = ls_pace,
	.pace_req = ls_pace_req, .current = ls_current,
	.sample_bytes = 24, /* an entry of a SAMPLE message */
};

struct cs_source *live_source_new(struct dyn_session *s, const struct live_source_opts *o,
				  char *err, size_t cap)
{
	struct cs_source *src = xcalloc(1, sizeof(*src));
	struct lsrc *ls = xcalloc(1, sizeof(*ls));
	char path[64];

	src->ops = &live_ops;
	src->impl = ls;
	ls->s = s;
	ls->o = *o;
	ls->l = dyn_live_new(s);
	ls->origin = s->t_open;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)s->pid);
	ls->memfd = open(path, O_RDONLY | O_CLOEXEC);
	lv_code_init(ls);
	if (dyn_resources_list(s->pid, DYN_RES_WANT_SYNC, &ls->objs, err, cap) != 0)
		ls->objs = (struct dyn_resources){ 0 }; /* no variables to name: no SyncObject */
	lv_own_objects(ls);
	lv_read_files(ls);
	lv_heap_start(ls);
	ls->heap_read_ns = mono_now_ns();
	lv_mpi_imports(ls);
	lv_chan_start(ls);
	/* the runtime's own counters: sampling on; a quiet BATCH (protocol version 10): the BUCKET
	 * below follows it, and a refusal comes before its answer */
	if (dyn_live_commit_quiet(ls->l, err, cap) != 0) {
		live_source_free(src);
		return NULL;
	}
	lv_read_threads(ls);
	if (!s->o.launched)
		lv_phase_link(ls); /* an attached program's markers: to the runtime from now */
	ls->nsamples_seen = s->nsamples;
	ls->t_prev = mono_now_ns() - ls->origin;
	ls->next_ns = s->bucket_ns;
	/* buckets on request from now: none while the search is set up (the other ranks'
	 * processes, the first requests) */
	if (dyn_session_bucket(s, s->bucket_ns, err, cap) != 0) {
		live_source_free(src);
		return NULL;
	}
	return src;
}

void live_source_free(struct cs_source *src)
{
	struct lsrc *ls;
	uint32_t i;

	if (!src)
		return;
	ls = L(src);
	for (i = 0; i < ls->nreqs; i++)
		free(ls->reqs[i].keep);
	for (i = 0; i < ls->nents; i++)
		free(ls->ents[i].key);
	if (ls->memfd >= 0)
		close(ls->memfd);
	dyn_resources_free(&ls->objs);
	dyn_resources_free(&ls->files);
	dyn_live_free(ls->l);
	lv_code_free(ls);
	lv_chan_free(ls);
	free(ls->ents);
	free(ls->reqs);
	free(ls->thr);
	free(ls);
	free(src);
}

void live_source_info(struct cs_source *src, struct live_source_info *out)
{
	struct lsrc *ls = L(src);
	const struct dyn_session *s;
	char **mods = NULL;
	uint32_t i;

	if (live_mpi_is(src)) {
		live_mpi_info(src, out);
		return;
	}
	s = ls->s;
	memset(out, 0, sizeof(*out));
	out->run_ns = ls->t_prev;
	out->threads = ls->nthr;
	out->modules = lv_code_children(ls, NULL, &mods);
	for (i = 0; i < out->modules; i++)
		free(mods[i]);
	free(mods);
	for (i = 0; i < s->nprocs; i++) {
		double rate = dyn_live_rate(ls->l, i);

		out->procedures += lv_own_proc(s, i);
		if (lv_own_proc(s, i) && rate > 0)
			out->full_calls += (uint64_t)llround(rate * (double)ls->t_prev / 1e9);
	}
	/* cpu_time ... observed_cost, calls; mpi_p2p_time, mpi_coll_time, mpi_time */
	out->metrics = 10 + (lv_has_mpi(s) ? 3 : 0);
	out->period_ns = s->bucket_ns;
	out->requests = ls->total_reqs;
	out->requests_max = ls->max_reqs;
	dyn_live_stats(ls->l, &out->dyn);
	out->observed_ns = dyn_live_observed_ns(ls->l, NULL);
	out->control_cpu_ns = ls->ctl_cpu_ns;
	out->ended = ls->ended || s->ended;
	snprintf(out->error, sizeof(out->error), "%s", ls->error);
}

int live_source_chan_used(struct cs_source *src, const struct cs_focus *f)
{
	return lv_chan_used(L(src), f);
}

double live_source_call_rate(struct cs_source *src, const char *module, const char *proc)
{
	struct lsrc *ls = L(src);
	uint32_t i;

	if (live_mpi_is(src))
		return live_mpi_call_rate(src, module, proc);
	for (i = 0; i < ls->s->nprocs; i++)
		if (lv_in_code(ls->s, i, module, proc))
			return dyn_live_rate(ls->l, i);
	return -1;
}
