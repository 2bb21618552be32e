/* SPDX-License-Identifier: MIT */
/*
 * The post-mortem source (trace_source.h). Metrics it measures from enter/exit events:
 *   cpu_time        seconds inside the focus's procedures, their own time (callees that are
 *                   instrumented count to themselves), less the time blocked on locks: the
 *                   trace has no CPU clock, so the rest is taken as computing;
 *   calls           calls of the focus's procedures;
 *   observed_cost   the recording's own probes: events in the focus x alpha (o_full / 2);
 *   active_threads  thread-seconds alive in the focus's threads (not narrowed by Code);
 * and from the synchronization events of `--trace --sync` (trace_sync.c): sync_wait_time,
 * sync_time (the same: uncontended operations record no time), sync_ops; from the MPI events
 * of the traces of an MPI run, searched together (trace_mpi.c): mpi_time, mpi_p2p_time,
 * mpi_coll_time, mpi_late_sender, mpi_coll_wait, active_ranks, cpu_time_rank_max,
 * cpu_time_rank_mean. I/O and page-fault metrics are not in traces: not supported.
 */
#include "trace_source.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "symbols.h"
#include "trace_profile.h"
#include "trace_source_int.h"
#include "util.h"

static const char *const metric_names[M_COUNT] = {
	"cpu_time", "calls", "observed_cost", "active_threads", "sync_wait_time", "sync_time",
	"sync_ops", "mpi_time", "mpi_p2p_time", "mpi_coll_time", "mpi_late_sender",
	"mpi_coll_wait", "active_ranks", "cpu_time_rank_max", "cpu_time_rank_mean"
};

static struct tsrc *T(struct cs_source *s)
{
	return s->impl;
}

uint64_t ts_ns_of(const struct tsrc *t, uint64_t ticks)
{
	double ns = ticks > t->origin ? (double)(ticks - t->origin) / t->ticks_per_ns : 0;

	return (uint64_t)llround(ns);
}

/* ---- building: procedures, call-path nodes, time per sample period ---- */

static uint32_t proc_index(struct tsrc *t, const char *module, const char *name)
{
	uint32_t i;

	for (i = 0; i < t->nprocs; i++)
		if (!strcmp(t->procs[i].name, name) && !strcmp(t->procs[i].module, module))
			return i;
	t->procs = xrealloc(t->procs, (t->nprocs + 1) * sizeof(*t->procs));
	t->procs[t->nprocs] = (struct ts_proc){ xstrdup(module), xstrdup(name), UINT32_MAX };
	return t->nprocs++;
}

/* Names from the symbols of the traced modules: module = source file (DWARF) or library. */
static void name_procs(struct tsrc *t)
{
	const struct strc_file *f = t->f;
	struct symtab *st = symtab__new();
	uint32_t i;

	t->proc_of_func = t->pof[t->fi] = xmalloc((f->nfuncs ? f->nfuncs : 1) * sizeof(uint32_t));
	for (i = 0; i < f->nfuncs; i++) {
		const struct strc_func *fn = &f->funcs[i];
		struct sym_info si = { fn->name && *fn->name ? fn->name : "?", "?", "", 0 };
		int32_t m = fn->module;

		if (fn->kind == SPROF_FUNC) {
			symtab__resolve(st, m >= 0 && (uint32_t)m < f->nmodules ? f->modules[m].path
										   : NULL,
					fn->vaddr, &si);
			t->proc_of_func[i] = proc_index(t, si.file && *si.file ? si.file : "?",
							si.func);
		} else {
			t->proc_of_func[i] = proc_index(t, "regions", si.func);
		}
	}
	symtab__delete(st);
}

static uint32_t node_new(struct tsrc *t, uint32_t parent, uint32_t proc)
{
	struct ts_node *n;

	if (t->nnodes == t->capnodes) {
		t->capnodes = t->capnodes ? t->capnodes * 2 : 256;
		t->nodes = xrealloc(t->nodes, t->capnodes * sizeof(*t->nodes));
	}
	n = &t->nodes[t->nnodes];
	*n = (struct ts_node){ .parent = parent, .thread = t->th, .proc = proc,
			       .first_kid = UINT32_MAX, .next_sib = UINT32_MAX,
			       .first_bucket = UINT32_MAX };
	if (parent != UINT32_MAX) {
		n->next_sib = t->nodes[parent].first_kid;
		t->nodes[parent].first_kid = t->nnodes;
	}
	return t->nnodes++;
}

static uint32_t child_of(struct tsrc *t, uint32_t parent, uint32_t proc)
{
	uint32_t k;

	for (k = t->nodes[parent].first_kid; k != UINT32_MAX; k = t->nodes[k].next_sib)
		if (t->nodes[k].proc == proc)
			return k;
	return node_new(t, parent, proc);
}

static struct ts_entry *entry(struct tsrc *t, uint32_t node, uint32_t bucket)
{
	struct ts_node *n = &t->nodes[node];

	if (bucket >= t->nbuckets)
		bucket = t->nbuckets - 1;
	if (n->ne && n->e[n->ne - 1].bucket == bucket)
		return &n->e[n->ne - 1];
	if (n->ne == n->cape) {
		n->cape = n->cape ? n->cape * 2 : 4;
		n->e = xrealloc(n->e, n->cape * sizeof(*n->e));
	}
	if (n->first_bucket == UINT32_MAX)
		n->first_bucket = bucket;
	n->e[n->ne] = (struct ts_entry){ .bucket = bucket };
	return &n->e[n->ne++];
}

uint32_t ts_bucket_of(const struct tsrc *t, uint64_t ns)
{
	uint64_t b = ns / t->period;

	return b < t->nbuckets ? (uint32_t)b : t->nbuckets - 1;
}

/* Seconds [a, b) ns spread over the sample periods, into a node or a per-bucket array; of an
 * MPI rank, only its MPI interval (clip). */
static void spread(struct tsrc *t, uint32_t node, double *arr, uint64_t a, uint64_t b)
{
	a = a > t->clip_lo ? a : t->clip_lo;
	b = b < t->clip_hi ? b : t->clip_hi;
	while (a < b) {
		uint32_t k = ts_bucket_of(t, a);
		uint64_t end = (uint64_t)(k + 1) * t->period;
		uint64_t upto = b < end || k == t->nbuckets - 1 ? b : end;

		if (arr)
			arr[k] += (double)(upto - a) / 1e9;
		else
			entry(t, node, k)->secs += (double)(upto - a) / 1e9;
		a = upto;
	}
}

static uint32_t top(const struct replay *r, uint32_t root, int below)
{
	int d = (int)r->depth - 1 - below;

	return d >= 0 ? r->stack[d].data : root;
}

/* The time since the thread's last event belongs to the call open until now. */
void ts_advance(struct tsrc *t, uint32_t node, uint64_t ticks)
{
	uint64_t now = ts_ns_of(t, ticks);

	if (now > t->last && t->wait_obj != UINT32_MAX)
		ts_sync_wait(t, node, t->last, now);
	else if (now > t->last)
		spread(t, node, NULL, t->last, now);
	if (now > t->last)
		t->last = now;
}

static void on_open(struct replay *r, const struct strc_event *e)
{
	struct tsrc *t = r->arg;
	uint32_t fi = e->id < t->f->func_id_cap ? t->f->func_by_id[e->id] : UINT32_MAX;
	uint32_t proc = fi != UINT32_MAX ? t->proc_of_func[fi] : proc_index(t, "?", "?");
	uint32_t parent = top(r, t->root, 1), n;
	struct ts_entry *en;

	ts_advance(t, parent, e->t);
	t->wait_obj = UINT32_MAX; /* a call ends any blocked call (one that timed out) */
	n = child_of(t, parent, proc);
	r->stack[r->depth - 1].data = n;
	en = entry(t, n, ts_bucket_of(t, t->last));
	en->calls++;
	en->events++;
	if (t->procs[proc].first_bucket == UINT32_MAX)
		t->procs[proc].first_bucket = ts_bucket_of(t, t->last);
}

static void on_close(struct replay *r, const struct replay_frame *f, uint64_t ticks)
{
	struct tsrc *t = r->arg;

	ts_advance(t, f->data, ticks);
	t->wait_obj = UINT32_MAX;
	entry(t, f->data, ts_bucket_of(t, t->last))->events++;
}

static void add_phase(struct tsrc *t, uint64_t ns, const char *name)
{
	t->ph = xrealloc(t->ph, (t->nph + 1) * sizeof(*t->ph));
	t->ph[t->nph++] = (struct ts_phase_ev){ ns, name };
}

static void on_other(struct replay *r, const struct strc_event *e)
{
	struct tsrc *t = r->arg;
	uint32_t n = top(r, t->root, 0);

	if ((e->type == STRC_MPI_RECV || e->type == STRC_MPI_COLL) && t->mpi) {
		ts_mpi_call(t, n, t->thl, e); /* the call's time is MPI's, not computing */
	}
	ts_advance(t, n, e->t);
	t->wait_obj = UINT32_MAX;
	if ((e->type == STRC_SYNC_WAIT || e->type == STRC_SYNC_DONE ||
	     e->type == STRC_SYNC_RELEASE) && t->nobjs)
		ts_sync_event(t, n, e);
	if (e->type == STRC_FLUSH) {
		uint64_t end = t->last + (uint64_t)llround((double)e->arg / t->ticks_per_ns);

		spread(t, 0, t->flush, t->last, end < t->run_ns ? end : t->run_ns);
		t->last = end;
		return;
	}
	if (e->type == STRC_PHASE && t->fi == 0) { /* of an MPI run, rank 0's phases */
		const struct strc_func *fn = strc_func_of(t->f, e->id);

		add_phase(t, t->last, e->id == STRC_ID_NONE ? NULL
					: fn && fn->name && *fn->name ? fn->name : "?");
	}
	entry(t, n, ts_bucket_of(t, t->last))->events++;
}

static int cmp_phase(const void *a, const void *b)
{
	const struct ts_phase_ev *x = a, *y = b;

	return x->t < y->t ? -1 : x->t > y->t;
}

/* A thread of an MPI run that made no call and no MPI call: the MPI library's own (OpenMPI's
 * progress threads), not one of the program's; it is not counted among the active threads. */
static int library_thread(const struct tsrc *t, const struct strc_thread *st)
{
	size_t k;

	if (!t->mpi)
		return 0;
	for (k = 0; k < st->nev; k++)
		if (st->ev[k].type == STRC_ENTER || st->ev[k].type == STRC_REGION_BEGIN ||
		    st->ev[k].type == STRC_MPI_SEND || st->ev[k].type == STRC_MPI_RECV ||
		    st->ev[k].type == STRC_MPI_COLL)
			return 0;
	return 1;
}

static void replay_file(struct tsrc *t, struct replay *r)
{
	uint32_t i;

	t->f = t->files[t->fi];
	t->proc_of_func = t->pof[t->fi];
	t->clip_lo = t->mpi && t->nfiles > 1 ? t->mpi->lo[t->fi] : 0;
	t->clip_hi = t->mpi && t->nfiles > 1 ? t->mpi->hi[t->fi] : UINT64_MAX;
	for (i = 0; i < t->f->nthreads; i++) {
		const struct strc_thread *st = &t->f->threads[i];
		struct ts_thread *th = &t->threads[t->th];

		th->tid = st->tid;
		th->rank = t->fi;
		th->lib = library_thread(t, st);
		th->start = st->nev ? ts_ns_of(t, st->ev[0].t) : 0;
		th->end = st->nev ? ts_ns_of(t, st->ev[st->nev - 1].t) : 0;
		th->start = th->start > t->clip_lo ? th->start : t->clip_lo;
		th->alive = xcalloc(t->nbuckets, sizeof(double));
		if (th->lib) { /* no time at all: an empty interval */
			t->clip_lo = UINT64_MAX;
			t->clip_hi = 0;
		}
		spread(t, 0, th->alive, th->start, th->end);
		t->last = th->start;
		t->wait_obj = UINT32_MAX;
		t->thl = i;
		t->root = node_new(t, UINT32_MAX, UINT32_MAX);
		entry(t, t->root, ts_bucket_of(t, th->start));
		replay_thread(r, st);
		t->events += st->nev;
		t->th++;
		t->clip_lo = t->mpi && t->nfiles > 1 ? t->mpi->lo[t->fi] : 0;
		t->clip_hi = t->mpi && t->nfiles > 1 ? t->mpi->hi[t->fi] : UINT64_MAX;
	}
}

static void replay_all(struct tsrc *t)
{
	struct replay r = { .arg = t, .open = on_open, .close = on_close, .other = on_other };

	t->th = 0;
	for (t->fi = 0; t->fi < t->nfiles; t->fi++)
		replay_file(t, &r);
	t->clip_lo = 0;
	t->clip_hi = UINT64_MAX;
	replay_free(&r);
	qsort(t->ph, t->nph, sizeof(*t->ph), cmp_phase);
}

static void count_seen(struct tsrc *t)
{
	uint32_t i;

	t->seen_by = xcalloc(t->nbuckets + 1, sizeof(uint64_t));
	for (i = 0; i < t->nnodes; i++)
		if (t->nodes[i].first_bucket < t->nbuckets)
			t->seen_by[t->nodes[i].first_bucket + 1]++;
	for (i = 0; i < t->nthreads; i++)
		t->seen_by[ts_bucket_of(t, t->threads[i].start) + 1]++;
	for (i = 0; i < t->nobjs; i++)
		if (t->objs[i].first_bucket < t->nbuckets)
			t->seen_by[t->objs[i].first_bucket + 1]++;
	for (i = 1; i <= t->nbuckets; i++)
		t->seen_by[i] += t->seen_by[i - 1];
}

/* ---- foci ---- */

static int thread_of_focus(const struct tsrc *t, const struct cs_focus *f, uint32_t *out)
{
	const char *p = f->part[H_THREADS];
	uint32_t i;

	*out = UINT32_MAX;
	if (!p)
		return 0;
	if (strncmp(p, "/Threads/", 9))
		return -1;
	for (i = 0; i < t->nthreads; i++)
		if ((unsigned long)t->threads[i].tid == strtoul(p + 9, NULL, 10)) {
			*out = i;
			return 0;
		}
	return -1;
}

/* A node's call path: procedure names from the thread's first call down, joined by '>'. */
static void path_of(const struct tsrc *t, uint32_t node, char *buf, size_t cap)
{
	uint32_t chain[256], n = 0, k = node;
	size_t len = 0;

	while (k != UINT32_MAX && t->nodes[k].proc != UINT32_MAX && n < 256) {
		chain[n++] = k;
		k = t->nodes[k].parent;
	}
	buf[0] = 0;
	while (n-- > 0 && len < cap) {
		const char *name = t->procs[t->nodes[chain[n]].proc].name;

		len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ">" : "", name);
	}
}

/* Splits "/Code/M/P/PATH" into its parts (pointers into a copy in buf). */
static int code_parts(const char *p, char *buf, size_t cap, const char **mod, const char **proc,
		      const char **path)
{
	char *s, *slash;

	*mod = *proc = *path = NULL;
	if (!p)
		return 0;
	if (strncmp(p, "/Code/", 6) || snprintf(buf, cap, "%s", p + 6) >= (int)cap)
		return -1;
	s = buf;
	*mod = s;
	if ((slash = strchr(s, '/'))) {
		*slash = 0;
		*proc = slash + 1;
		if ((slash = strchr(*proc, '/'))) {
			*slash = 0;
			*path = slash + 1;
		}
	}
	return 0;
}

/* Does a node belong to the focus's Code part? */
static int node_in_code(const struct tsrc *t, uint32_t k, const char *mod, const char *proc,
			const char *path)
{
	const struct ts_node *n = &t->nodes[k];
	char buf[4096];

	if (!mod)
		return 1;
	if (n->proc == UINT32_MAX || strcmp(t->procs[n->proc].module, mod))
		return 0;
	if (proc && strcmp(t->procs[n->proc].name, proc))
		return 0;
	if (path) {
		path_of(t, k, buf, sizeof(buf));
		return !strcmp(buf, path);
	}
	return 1;
}

/* The nodes a focus covers (for every metric but active_threads); -1 for a bad focus. */
static int focus_nodes(const struct tsrc *t, const struct cs_focus *f, uint32_t **out,
		       uint32_t *n, uint32_t *thread)
{
	char buf[4096];
	const char *mod, *proc, *path;
	uint32_t k;
	int h;

	uint32_t obj, kind;
	struct ts_mfocus mf;

	for (h = 0; h < H_COUNT; h++)
		if (f->part[h] && (h == H_FILES || h == H_MACHINE))
			return -1;
	if (ts_sync_focus(t, f->part[H_SYNC], &obj, &kind) || thread_of_focus(t, f, thread) ||
	    ts_mpi_focus(t, f, &mf) ||
	    code_parts(f->part[H_CODE], buf, sizeof(buf), &mod, &proc, &path))
		return -1;
	*out = NULL;
	*n = 0;
	for (k = 0; k < t->nnodes; k++) {
		if (*thread != UINT32_MAX && t->nodes[k].thread != *thread)
			continue;
		if (mf.rank != UINT32_MAX && t->threads[t->nodes[k].thread].rank != mf.rank)
			continue;
		if (!node_in_code(t, k, mod, proc, path))
			continue;
		*out = xrealloc(*out, (*n + 1) * sizeof(uint32_t));
		(*out)[(*n)++] = k;
	}
	return 0;
}

static int is_sync(int m)
{
	return m == M_SYNC_WAIT || m == M_SYNC_TIME || m == M_SYNC_OPS;
}

static int is_mpi(int m)
{
	return m == M_MPI_TIME || m == M_MPI_P2P || m == M_MPI_COLL || m == M_LATE_SENDER ||
	       m == M_COLL_WAIT;
}

/* Metrics of the ranks of an MPI run (more than one trace). */
static int is_ranks(int m)
{
	return m == M_RANKS || m == M_CPU_MAX || m == M_CPU_MEAN;
}

static int has_msg_part(const struct cs_focus *f)
{
	return f->part[H_COMM] || f->part[H_PEER] || f->part[H_TAG];
}

static int metric_of(const char *name)
{
	int m;

	for (m = 0; m < M_COUNT; m++)
		if (!strcmp(name, metric_names[m]))
			return m;
	return -1;
}

/* ---- the source's operations ---- */

static int ts_supports(struct cs_source *s, const char *metric, const struct cs_focus *f)
{
	struct tsrc *t = T(s);
	uint32_t *nodes = NULL, n, th;
	int ok;

	int m = metric_of(metric);

	if (m < 0 || (is_sync(m) && !t->nobjs))
		return 0; /* no --sync in the recording (or no lock used) */
	if (f->part[H_SYNC] && !is_sync(m) && m != M_THREADS)
		return 0; /* time and calls are not per object */
	if ((is_mpi(m) && !t->mpi) || (is_ranks(m) && (!t->mpi || t->nfiles < 2)) ||
	    ((m == M_LATE_SENDER || m == M_COLL_WAIT) && !t->mpi->matched))
		return 0; /* not an MPI run, or one rank's trace alone */
	if (has_msg_part(f) && !is_mpi(m) && m != M_THREADS && m != M_RANKS)
		return 0; /* time and calls are not per communicator, peer or tag */
	if ((f->part[H_THREADS] || f->part[H_SYNC]) && (m == M_CPU_MAX || m == M_CPU_MEAN))
		return 0; /* a spread across ranks */
	ok = focus_nodes(t, f, &nodes, &n, &th) == 0;
	free(nodes);
	return ok;
}

static void push_name(char ***out, uint32_t *n, const char *s)
{
	uint32_t i;

	for (i = 0; i < *n; i++)
		if (!strcmp((*out)[i], s))
			return;
	*out = xrealloc(*out, (*n + 1) * sizeof(char *));
	(*out)[(*n)++] = xstrdup(s);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int thread_in_process(const struct tsrc *t, uint32_t k, const struct cs_focus *f)
{
	struct ts_mfocus mf;

	return ts_mpi_focus(t, f, &mf) == 0 && (mf.rank == UINT32_MAX || t->threads[k].rank == mf.rank);
}

/* Resources seen by now: modules, procedures, call paths (two or more), threads, and of an
 * MPI run its ranks, communicators, peers and tags. */
static uint32_t ts_children(struct cs_source *s, const struct cs_focus *f, int h, char ***out)
{
	struct tsrc *t = T(s);
	char buf[4096], name[4200], path[4096];
	const char *mod, *proc, *cpath;
	uint32_t n = 0, k, th;

	*out = NULL;
	if (h == H_SYNC)
		return ts_sync_children(t, f->part[H_SYNC], t->cur, out);
	if (h == H_PROCESS || h == H_COMM || h == H_PEER || h == H_TAG) {
		uint32_t *nodes = NULL, nn = 0;

		if (!t->mpi || f->part[h] || focus_nodes(t, f, &nodes, &nn, &th))
			return 0;
		n = ts_mpi_children(t, f, h, nodes, nn, out);
		free(nodes);
		return n;
	}
	if (h == H_THREADS) {
		/* of an MPI run, the threads of a rank: the ranks are the Process hierarchy */
		if (f->part[H_THREADS] || (t->mpi && t->nfiles > 1 && !f->part[H_PROCESS]))
			return 0;
		for (k = 0; k < t->nthreads; k++)
			if (!t->threads[k].lib && t->threads[k].start < (uint64_t)t->cur * t->period &&
			    (!f->part[H_PROCESS] || thread_in_process(t, k, f))) {
				snprintf(name, sizeof(name), "/Threads/%u", t->threads[k].tid);
				push_name(out, &n, name);
			}
		return n;
	}
	if (h != H_CODE || code_parts(f->part[H_CODE], buf, sizeof(buf), &mod, &proc, &cpath) ||
	    cpath || thread_of_focus(t, f, &th))
		return 0;
	for (k = 0; k < t->nnodes; k++) {
		const struct ts_node *nd = &t->nodes[k];

		if (nd->proc == UINT32_MAX || nd->first_bucket >= t->cur ||
		    (th != UINT32_MAX && nd->thread != th) || !node_in_code(t, k, mod, proc, NULL))
			continue;
		if (!mod) {
			snprintf(name, sizeof(name), "/Code/%s", t->procs[nd->proc].module);
		} else if (!proc) {
			snprintf(name, sizeof(name), "/Code/%s/%s", mod, t->procs[nd->proc].name);
		} else {
			path_of(t, k, path, sizeof(path));
			snprintf(name, sizeof(name), "/Code/%s/%s/%s", mod, proc, path);
		}
		push_name(out, &n, name);
	}
	if (proc && n < 2) { /* one call path is no refinement */
		for (k = 0; k < n; k++)
			free((*out)[k]);
		free(*out);
		*out = NULL;
		return 0;
	}
	qsort(*out, n, sizeof(char *), cmp_str);
	return n;
}

static int ts_request(struct cs_source *s, const char *metric, const struct cs_focus *f)
{
	struct tsrc *t = T(s);
	struct ts_req *r;
	int m = metric_of(metric);

	if (m < 0)
		return -1;
	t->reqs = xrealloc(t->reqs, (t->nreqs + 1) * sizeof(*t->reqs));
	r = &t->reqs[t->nreqs];
	*r = (struct ts_req){ .used = 1, .m = (enum ts_metric)m };
	if (ts_mpi_focus(t, f, &r->mf) != 0 || ts_sync_focus(t, f->part[H_SYNC], &r->obj,
								      &r->kind) != 0)
		return -1;
	if (m == M_CPU_MEAN) { /* the mean of all the ranks: the Process part left out */
		struct cs_focus g = *f;

		g.part[H_PROCESS] = NULL;
		if (focus_nodes(t, &g, &r->nodes, &r->nnodes, &r->thread) != 0)
			return -1;
	} else if (focus_nodes(t, f, &r->nodes, &r->nnodes, &r->thread) != 0) {
		return -1;
	}
	r->cursor = xcalloc(r->nnodes ? r->nnodes : 1, sizeof(uint32_t));
	r->scursor = xcalloc(r->nnodes ? r->nnodes : 1, sizeof(uint32_t));
	r->mcursor = xcalloc(r->nnodes ? r->nnodes : 1, sizeof(uint32_t));
	r->acc = xcalloc(t->nfiles, sizeof(double));
	/* values count from the next period */
	for (uint32_t i = 0; i < r->nnodes; i++) {
		const struct ts_node *n = &t->nodes[r->nodes[i]];

		while (r->cursor[i] < n->ne && n->e[r->cursor[i]].bucket < t->cur)
			r->cursor[i]++;
	}
	return (int)t->nreqs++;
}

static void ts_cancel(struct cs_source *s, int id)
{
	struct tsrc *t = T(s);

	if (id < 0 || (uint32_t)id >= t->nreqs || !t->reqs[id].used)
		return;
	t->reqs[id].used = 0;
	free(t->reqs[id].nodes);
	free(t->reqs[id].cursor);
	free(t->reqs[id].scursor);
	free(t->reqs[id].mcursor);
	free(t->reqs[id].acc);
	t->reqs[id].nodes = t->reqs[id].cursor = t->reqs[id].scursor = NULL;
	t->reqs[id].mcursor = NULL;
	t->reqs[id].acc = NULL;
}

/*
 * What measuring a metric at a procedure would cost live (the cost model's defaults,
 * tool/mdl/cost.c): a process timer started at entry and stopped at exit for cpu_time, a
 * counter added at entry for calls and observed_cost; times the calls per second of the
 * focus's procedures so far (Paradyn's static 1000/s for one not called yet).
 */
static double ts_cost(struct cs_source *s, const char *metric, const struct cs_focus *f)
{
	struct tsrc *t = T(s);
	const struct cost_params *c = &t->cost;
	int m = metric_of(metric);
	int timer = m == M_CPU || m == M_CPU_MAX || m == M_CPU_MEAN;
	double per_call = timer ? c->prim_ns[MDL_START_CPU] + c->prim_ns[MDL_STOP_CPU] +
					       c->tramp_ns[MDL_ENTRY] + c->tramp_ns[MDL_EXIT]
				     : c->prim_ns[MDL_ADD] + c->tramp_ns[MDL_ENTRY];
	double elapsed = (double)t->cur * (double)t->period / 1e9, calls = 0;
	uint32_t *nodes = NULL, n = 0, th, i, k;

	if (!f->part[H_CODE] || m == M_THREADS || m == M_RANKS)
		return 0; /* readings of the whole program or of threads: no instrumentation; the
			   * MPI wrappers measure every call anyway */
	if (focus_nodes(t, f, &nodes, &n, &th) != 0)
		return 0;
	for (i = 0; i < n; i++)
		for (k = 0; k < t->nodes[nodes[i]].ne && t->nodes[nodes[i]].e[k].bucket < t->cur; k++)
			calls += t->nodes[nodes[i]].e[k].calls;
	free(nodes);
	if (elapsed <= 0 || calls == 0)
		return c->freq_user * per_call / 1e9;
	return calls / elapsed * per_call / 1e9;
}

static double ts_max_rate(struct cs_source *s, const char *metric, const struct cs_focus *f)
{
	struct tsrc *t = T(s);
	uint32_t th;

	if (metric_of(metric) == M_CALLS || metric_of(metric) == M_SYNC_OPS)
		return INFINITY;
	if (metric_of(metric) == M_RANKS)
		return t->nfiles;
	if (thread_of_focus(t, f, &th) == 0 && th != UINT32_MAX)
		return 1;
	return t->nthreads ? (double)t->nthreads : 1;
}

static uint32_t phase_events_in(const struct tsrc *t, uint64_t t0, uint64_t t1,
				struct cs_step *st)
{
	uint32_t i;

	for (i = 0; i < t->nph; i++)
		if (t->ph[i].t >= t0 && t->ph[i].t < t1 && st->nphase < CS_MAX_PHASE_EVENTS) {
			st->phase[st->nphase].t = t->ph[i].t;
			st->phase[st->nphase++].name = t->ph[i].name;
		}
	return st->nphase;
}

static int ts_step(struct cs_source *s, struct cs_step *st)
{
	struct tsrc *t = T(s);
	double alive = 0;
	uint32_t i;

	if (t->cur >= t->nbuckets)
		return -1;
	st->t0 = (uint64_t)t->cur * t->period;
	st->t1 = st->t0 + t->period;
	if (st->t1 > t->run_ns || t->cur == t->nbuckets - 1)
		st->t1 = t->run_ns > st->t0 ? t->run_ns : st->t0 + 1;
	for (i = 0; i < t->nthreads; i++)
		alive += t->threads[i].alive[t->cur];
	st->load = alive > 0 ? 1 - t->flush[t->cur] / alive : 1;
	phase_events_in(t, st->t0, t->cur == t->nbuckets - 1 ? UINT64_MAX : st->t1, st);
	t->cur++;
	st->last = t->cur >= t->nbuckets;
	return 0;
}

/* A node's time, calls or probe cost of period b (the request's cursor moves on). */
static double node_read(const struct tsrc *t, struct ts_req *r, uint32_t i, uint32_t b)
{
	const struct ts_node *n = &t->nodes[r->nodes[i]];
	const struct ts_entry *e;

	while (r->cursor[i] < n->ne && n->e[r->cursor[i]].bucket < b)
		r->cursor[i]++;
	if (r->cursor[i] >= n->ne || n->e[r->cursor[i]].bucket != b)
		return 0;
	e = &n->e[r->cursor[i]];
	return r->m == M_CALLS ? e->calls : r->m == M_COST ? e->events * t->alpha_s : e->secs;
}

/* cpu_time_rank_max: the largest rank's CPU time since the request began grows by this. */
static double rank_max_read(const struct tsrc *t, struct ts_req *r, uint32_t b)
{
	double max = r->max;
	uint32_t i, k;

	for (i = 0; i < r->nnodes; i++)
		r->acc[t->threads[t->nodes[r->nodes[i]].thread].rank] += node_read(t, r, i, b);
	for (k = 0; k < t->nfiles; k++)
		max = r->acc[k] > max ? r->acc[k] : max;
	max -= r->max;
	r->max += max;
	return max;
}

static double ts_read(struct cs_source *s, int id)
{
	struct tsrc *t = T(s);
	struct ts_req *r;
	uint32_t b = t->cur - 1, i;
	double v = 0;

	if (id < 0 || (uint32_t)id >= t->nreqs || !t->reqs[id].used || !t->cur)
		return 0;
	r = &t->reqs[id];
	if (r->m == M_THREADS) {
		for (i = 0; i < t->nthreads; i++)
			if ((r->thread == UINT32_MAX || r->thread == i) &&
			    (r->mf.rank == UINT32_MAX || r->mf.rank == t->threads[i].rank))
				v += t->threads[i].alive[b];
		return v;
	}
	if (r->m == M_RANKS) {
		for (i = 0; i < t->nfiles; i++)
			if (r->mf.rank == UINT32_MAX || r->mf.rank == i)
				v += t->mpi->alive[i][b];
		return v;
	}
	if (r->m == M_CPU_MAX)
		return rank_max_read(t, r, b);
	if (is_sync(r->m)) {
		for (i = 0; i < r->nnodes; i++)
			v += ts_sync_read(t, &t->nodes[r->nodes[i]], &r->scursor[i], b, r);
		return v;
	}
	if (is_mpi(r->m)) {
		for (i = 0; i < r->nnodes; i++)
			v += ts_mpi_read(&t->nodes[r->nodes[i]], &r->mcursor[i], b, r);
		return v;
	}
	for (i = 0; i < r->nnodes; i++)
		v += node_read(t, r, i, b);
	return r->m == M_CPU_MEAN ? v / t->nfiles : v;
}

static uint64_t ts_run_end(struct cs_source *s)
{
	return T(s)->run_ns;
}

static uint64_t ts_phase_end(struct cs_source *s, uint64_t start)
{
	struct tsrc *t = T(s);
	uint32_t i;

	for (i = 0; i < t->nph; i++)
		if (t->ph[i].t > start)
			return t->ph[i].t;
	return t->run_ns;
}

/* Resources seen before the next period: procedures called, call paths, threads started. */
static uint64_t ts_generation(struct cs_source *s)
{
	struct tsrc *t = T(s);

	return t->cur < t->nbuckets ? t->seen_by[t->cur] : t->seen_by[t->nbuckets];
}

static const struct cs_source_ops trace_ops = {
	.supports = ts_supports, .children = ts_children, .request = ts_request,
	.cancel = ts_cancel, .cost = ts_cost, .max_rate = ts_max_rate, .step = ts_step,
	.read = ts_read, .run_end = ts_run_end, .phase_end = ts_phase_end,
	.generation = ts_generation,
	.sample_bytes = 12, /* the thesis's: counter id, time stamp, value (seed 003 §4.2) */
};

/* The first and last event over the traces (ticks of their common clock). */
static int time_span(const struct strc_file *const *files, uint32_t n, uint64_t *first,
		     uint64_t *last)
{
	uint32_t i, k;

	*first = UINT64_MAX;
	*last = 0;
	for (k = 0; k < n; k++)
		for (i = 0; i < files[k]->nthreads; i++) {
			const struct strc_thread *st = &files[k]->threads[i];

			if (!st->nev)
				continue;
			*first = st->ev[0].t < *first ? st->ev[0].t : *first;
			*last = st->ev[st->nev - 1].t > *last ? st->ev[st->nev - 1].t : *last;
		}
	return *first == UINT64_MAX || *last <= *first ? -1 : 0;
}

struct cs_source *trace_source_new_run(const struct strc_file *const *files, uint32_t n,
				       uint64_t period_ns, char *err, size_t cap)
{
	const struct strc_file *f = files[0];
	struct tsrc *t;
	uint64_t first, last;
	uint32_t i;

	if (!n || time_span(files, n, &first, &last) != 0) {
		snprintf(err, cap, "the trace holds no events to search");
		return NULL;
	}
	t = xcalloc(1, sizeof(*t));
	t->pub = (struct cs_source){ .ops = &trace_ops, .impl = t }; /* a request is in at once */
	t->f = f;
	t->files = files;
	t->nfiles = n;
	for (i = 0; i < n; i++)
		t->nthreads += files[i]->nthreads;
	t->threads = xcalloc(t->nthreads ? t->nthreads : 1, sizeof(*t->threads));
	t->pof = xcalloc(n, sizeof(*t->pof));
	if (ts_mpi_init(t, err, cap) != 0) {
		trace_source_free(&t->pub);
		return NULL;
	}
	ts_mpi_span(t, &first, &last); /* of an MPI run: not MPI_Init, MPI_Finalize */
	t->origin = first;
	t->ticks_per_ns = f->ticks_per_ns > 0 ? f->ticks_per_ns : 1; /* one clock: rank 0's rate */
	t->run_ns = ts_ns_of(t, last);
	t->period = period_ns ? period_ns : 50000000;
	t->nbuckets = (uint32_t)((t->run_ns + t->period - 1) / t->period);
	if (!t->nbuckets)
		t->nbuckets = 1;
	t->alpha_s = f->has_calib ? f->calib.o_full / 2 / 1e9 : 0;
	t->flush = xcalloc(t->nbuckets, sizeof(double));
	cost_defaults(&t->cost);
	ts_mpi_layout(t);
	for (t->fi = 0; t->fi < n; t->fi++) {
		t->f = files[t->fi];
		name_procs(t);
	}
	t->f = f;
	t->fi = 0;
	if (n == 1) /* objects are per process: locks of one trace only */
		ts_sync_objects(t);
	t->wait_obj = UINT32_MAX;
	replay_all(t);
	t->f = f;
	count_seen(t);
	return &t->pub;
}

struct cs_source *trace_source_new(const struct strc_file *f, uint64_t period_ns, char *err,
				   size_t cap)
{
	struct tsrc *t;
	struct cs_source *s;
	const struct strc_file **one = xmalloc(sizeof(*one));

	one[0] = f;
	s = trace_source_new_run(one, 1, period_ns, err, cap);
	if (!s) {
		free(one);
		return NULL;
	}
	t = T(s);
	t->own_files = one;
	return s;
}

void trace_source_free(struct cs_source *s)
{
	struct tsrc *t;
	uint32_t i;

	if (!s)
		return;
	t = T(s);
	for (i = 0; i < t->nnodes; i++) {
		free(t->nodes[i].e);
		free(t->nodes[i].se);
		free(t->nodes[i].me);
	}
	for (i = 0; i < t->nfiles; i++)
		free(t->pof[i]);
	free(t->pof);
	free(t->own_files);
	ts_mpi_free(t);
	for (i = 0; i < t->nprocs; i++) {
		free(t->procs[i].module);
		free(t->procs[i].name);
	}
	for (i = 0; i < t->nthreads; i++)
		free(t->threads[i].alive);
	for (i = 0; i < t->nreqs; i++)
		ts_cancel(s, (int)i);
	free(t->nodes);
	free(t->procs);
	free(t->threads);
	ts_sync_free(t);
	free(t->flush);
	free(t->seen_by);
	free(t->ph);
	free(t->reqs);
	free(t);
}

void trace_source_info(struct cs_source *s, struct trace_source_info *out)
{
	struct tsrc *t = T(s);
	uint32_t i, mods = 0, paths = 0, j;

	for (i = 0; i < t->nprocs; i++) {
		for (j = 0; j < i && strcmp(t->procs[j].module, t->procs[i].module); j++)
			;
		mods += j == i && t->procs[i].first_bucket != UINT32_MAX;
	}
	for (i = 0; i < t->nnodes; i++)
		paths += t->nodes[i].proc != UINT32_MAX;
	*out = (struct trace_source_info){ .events = t->events, .run_ns = t->run_ns,
					   .threads = t->nthreads, .modules = mods,
					   .call_paths = paths, .sync_objects = t->nobjs,
					   .metrics = t->nobjs ? M_MPI_TIME : M_SYNC_WAIT,
					   .period_ns = t->period };
	for (i = 0; i < t->nprocs; i++)
		out->procedures += t->procs[i].first_bucket != UINT32_MAX;
	ts_mpi_info(t, out);
}

static int cmp_row(const void *a, const void *b)
{
	const struct ts_row *x = a, *y = b;

	if (x->secs != y->secs)
		return x->secs > y->secs ? -1 : 1;
	return strcmp(x->name, y->name);
}

uint32_t trace_source_profile(struct cs_source *s, const struct cs_focus *f, uint64_t t0,
			      uint64_t t1, struct ts_row *rows, uint32_t max, double *span)
{
	struct tsrc *t = T(s);
	struct ts_row *all = xcalloc(t->nprocs ? t->nprocs : 1, sizeof(*all));
	uint32_t *nodes = NULL, n = 0, th, i, k, nr = 0;
	uint64_t b0 = t0 / t->period, b1 = (t1 + t->period - 1) / t->period;

	if (b1 > t->nbuckets)
		b1 = t->nbuckets;
	*span = (double)((b1 < t->nbuckets ? b1 * t->period : t->run_ns) -
			 (b0 < b1 ? b0 * t->period : 0)) / 1e9;
	if (b0 >= b1)
		*span = 0;
	for (i = 0; i < t->nprocs; i++)
		all[i] = (struct ts_row){ t->procs[i].module, t->procs[i].name, 0, 0 };
	if (focus_nodes(t, f, &nodes, &n, &th) == 0) {
		for (i = 0; i < n; i++) {
			const struct ts_node *nd = &t->nodes[nodes[i]];

			if (nd->proc == UINT32_MAX)
				continue;
			for (k = 0; k < nd->ne; k++)
				if (nd->e[k].bucket >= b0 && nd->e[k].bucket < b1) {
					all[nd->proc].secs += nd->e[k].secs;
					all[nd->proc].calls += nd->e[k].calls;
				}
		}
	}
	free(nodes);
	qsort(all, t->nprocs, sizeof(*all), cmp_row);
	for (i = 0; i < t->nprocs && nr < max; i++)
		if (all[i].secs > 0 || all[i].calls)
			rows[nr++] = all[i];
	free(all);
	return nr;
}
