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
 *
 * Code is the executable's modules (source files) and procedures; a procedure's children are
 * the procedures of the executable it calls directly (its call instructions, read from the
 * process): with inclusive times, the search goes down the call graph to the most specific
 * procedure that is still hot. Threads are the program's threads seen so far.
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dyn/resources.h"
#include "../dyn/session_int.h"
#include "live_source.h"
#include "util.h"

enum lm { LM_CPU, LM_ACTIVE, LM_SYNC, LM_SYNC_OPS, LM_IO, LM_IO_OPS, LM_IO_BYTES, LM_FAULTS,
	  LM_COST, LM_CALLS, LM_NONE };

static const struct { const char *name; enum lm m; } metric_names[] = {
	{ "cpu_time", LM_CPU }, { "active_threads", LM_ACTIVE }, { "sync_time", LM_SYNC },
	{ "sync_wait_time", LM_SYNC }, { "sync_ops", LM_SYNC_OPS }, { "io_time", LM_IO },
	{ "io_wait_time", LM_IO }, { "io_ops", LM_IO_OPS }, { "io_bytes", LM_IO_BYTES },
	{ "page_faults", LM_FAULTS },
	{ "observed_cost", LM_COST }, { "calls", LM_CALLS },
};
#define NMETRICS (sizeof(metric_names) / sizeof(metric_names[0]))

/* Calls that block (timed), and the releases (counted as operations too). */
static const char *const sync_waits[] = {
	"pthread_mutex_lock", "pthread_mutex_timedlock", "pthread_cond_wait",
	"pthread_cond_timedwait", "pthread_cond_clockwait", "pthread_barrier_wait",
	"pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "pthread_rwlock_timedrdlock",
	"pthread_rwlock_timedwrlock", "sem_wait", "sem_timedwait", "sem_clockwait",
	"pthread_join", "pthread_timedjoin_np", NULL
};
static const char *const sync_releases[] = {
	"pthread_mutex_unlock", "pthread_mutex_trylock", "pthread_cond_signal",
	"pthread_cond_broadcast", "pthread_rwlock_unlock", "sem_post", NULL
};
static const char *const io_calls[] = {
	"read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev",
	"fsync", "fdatasync", "open", "open64", "openat", "close", NULL
};

/* The same by the kind of object they act on (/SyncObject/KIND), waits then releases. */
static const struct {
	const char *kind;
	const char *const waits[5], *const releases[3];
} sync_kinds[] = {
	{ "mutex", { "pthread_mutex_lock", "pthread_mutex_timedlock", NULL },
	  { "pthread_mutex_unlock", "pthread_mutex_trylock", NULL } },
	{ "rwlock", { "pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
		      "pthread_rwlock_timedrdlock", "pthread_rwlock_timedwrlock", NULL },
	  { "pthread_rwlock_unlock", NULL } },
	{ "cond", { "pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait", NULL },
	  { "pthread_cond_signal", "pthread_cond_broadcast", NULL } },
	{ "barrier", { "pthread_barrier_wait", NULL }, { NULL } },
	{ "sem", { "sem_wait", "sem_timedwait", "sem_clockwait", NULL }, { "sem_post", NULL } },
};
#define NKINDS (sizeof(sync_kinds) / sizeof(sync_kinds[0]))
/* The I/O calls whose first argument is a descriptor (a /Files focus). */
static const char *const io_fd_calls[] = {
	"read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev",
	"fsync", "fdatasync", "close", NULL
};

/* The calls that move data: their return value is the bytes moved (io_bytes). */
static const char *const io_data_calls[] = {
	"read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", NULL
};

/* The objects a /SyncObject or /Files focus narrows the calls to: their functions, and the
 * first argument's values (an object's address, a file's descriptors; none: every object of
 * the kind). */
struct narrow {
	const char *const *timed, *const *more;
	int64_t val[4];
	uint32_t nval;
	int on; /* a SyncObject or Files focus */
};

enum { K_DYN, K_ACTIVE, K_TCPU, K_FAULTS, K_COST };

/* A dynamic-instrumentation request, shared by the source's requests of the same key. */
struct ent {
	char *key;
	int id;        /* dyn_live's, -1: gone */
	uint32_t refs;
	double last;   /* increase over the last step (ns or a count) */
	int fresh;     /* it came as a sample (a value that did not change is not sent) */
	uint32_t every_was; /* sent every N buckets during the last step */
};

struct req {
	int used, kind;
	int ent;        /* K_DYN */
	uint32_t tid;   /* 0: every thread */
	uint8_t *keep;  /* K_COST at a Code focus: its procedures */
	double scale;   /* to seconds (timers) or counts */
	double prev;    /* tool-side readings: the cumulative value at the last step */
	double last;
	double alive;   /* K_ACTIVE: threads alive at the last step, -1: none yet */
	int fresh;      /* the last step's reading counts as a sample (source.h: fresh) */
	int slow;       /* only true nodes read it (source.h: pace_req) */
};

struct thr {
	uint32_t tid;
	int alive;
	double wait_ns; /* time waiting for a CPU so far (schedstat), -1: not read yet */
};

struct lsrc {
	struct dyn_session *s;
	struct dyn_live *l;
	struct live_source_opts o;
	uint64_t origin, t_prev; /* CLOCK_MONOTONIC of t = 0; the last step's end (since origin) */
	uint64_t nsamples_seen;
	struct ent *ents;
	uint32_t nents;
	struct req *reqs;
	uint32_t nreqs, live_reqs, max_reqs, total_reqs;
	struct thr *thr;
	uint32_t nthr, alive;
	uint64_t generation, phases_seen;
	/* the executable's procedures by address (callees) and their callees, read once */
	uint32_t *by_addr, nby_addr;
	uint32_t **callees, *ncallees;
	uint8_t *callees_read;
	/* /SyncObject (the program's variables, read once) and /Files (open now, read again
	 * every second) resources (tool/dyn/resources.h) */
	struct dyn_resources objs, files;
	uint64_t files_read_ns;
	double dt;      /* seconds of the last step */
	int ended, last_done, memfd;
	int coarse;     /* sampling at the re-test period (the search is settled) */
	char error[256];
};

#define L(src) ((struct lsrc *)(src)->impl)

static enum lm metric_of(const char *name)
{
	size_t i;

	for (i = 0; i < NMETRICS; i++)
		if (!strcmp(metric_names[i].name, name))
			return metric_names[i].m;
	return LM_NONE;
}

/* ---- the program's procedures ---- */

static int boilerplate(const char *name)
{
	return (name[0] == '_' && name[1] != 'Z') || strstr(name, ".cold") != NULL;
}

/* A procedure of the executable the search may instrument. */
static int own_proc(const struct dyn_session *s, uint32_t i)
{
	return !s->procs[i].library && !boilerplate(s->procs[i].name) && s->pinfo[i].size >= 1 &&
	       !s->pinfo[i].ifunc;
}

/* "/Code/MOD" or "/Code/MOD/PROC": 0 with *mod and *proc (NULL: the module) in buf. */
static int code_parts(const char *path, char *buf, size_t cap, const char **mod,
		      const char **proc)
{
	char *slash;

	if (!path || strncmp(path, "/Code/", 6) || !path[6])
		return -1;
	snprintf(buf, cap, "%s", path + 6);
	*mod = buf;
	slash = strchr(buf, '/');
	*proc = NULL;
	if (slash) {
		*slash = 0;
		*proc = slash + 1;
	}
	return 0;
}

static int in_code(const struct dyn_session *s, uint32_t i, const char *mod, const char *proc)
{
	return own_proc(s, i) && !strcmp(s->procs[i].module, mod) &&
	       (!proc || !strcmp(s->procs[i].name, proc));
}

static uint32_t thread_of(const struct cs_focus *f)
{
	const char *t = f->part[H_THREADS];

	return t && !strncmp(t, "/Threads/", 9) ? (uint32_t)strtoul(t + 9, NULL, 10) : 0;
}

static const struct dyn_session *sort_s;

static int by_addr(const void *a, const void *b)
{
	uint64_t x = dyn_proc_addr(sort_s, *(const uint32_t *)a);
	uint64_t y = dyn_proc_addr(sort_s, *(const uint32_t *)b);

	return x < y ? -1 : x > y;
}

static int32_t proc_at(const struct lsrc *ls, uint64_t addr)
{
	uint32_t lo = 0, hi = ls->nby_addr;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		uint64_t a = dyn_proc_addr(ls->s, ls->by_addr[mid]);

		if (a == addr)
			return (int32_t)ls->by_addr[mid];
		if (a < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* The procedures of the executable that p calls directly, read from the process before any
 * patch (an entry patch replaces a call there). */
static void read_callees(struct lsrc *ls, uint32_t p)
{
	const struct dyn_session *s = ls->s;
	struct patch_fn fn;
	uint8_t *code;
	char why[160];
	size_t i;

	ls->callees_read[p] = 1;
	if (ls->memfd < 0 || s->pinfo[p].size > (1u << 20))
		return;
	code = xmalloc(s->pinfo[p].size);
	memset(&fn, 0, sizeof(fn));
	if (pread(ls->memfd, code, s->pinfo[p].size, (off_t)dyn_proc_addr(s, p)) ==
		    (ssize_t)s->pinfo[p].size &&
	    patch_analyze(code, s->pinfo[p].size, dyn_proc_addr(s, p), &fn, why, sizeof(why)) ==
		    0) {
		for (i = 0; i < fn.nr_insns; i++) {
			int32_t q;
			uint32_t k;

			if (fn.insns[i].kind != PI_CALL ||
			    (q = proc_at(ls, fn.insns[i].target)) < 0 || (uint32_t)q == p ||
			    !own_proc(s, (uint32_t)q))
				continue;
			for (k = 0; k < ls->ncallees[p] && ls->callees[p][k] != (uint32_t)q; k++)
				;
			if (k < ls->ncallees[p])
				continue;
			ls->callees[p] = xrealloc(ls->callees[p], (k + 1) * sizeof(uint32_t));
			ls->callees[p][ls->ncallees[p]++] = (uint32_t)q;
		}
		patch_fn_free(&fn);
	}
	free(code);
}

static void push_name(char ***out, uint32_t *n, const char *name)
{
	uint32_t i;

	for (i = 0; i < *n; i++)
		if (!strcmp((*out)[i], name))
			return;
	*out = xrealloc(*out, (*n + 1) * sizeof(char *));
	(*out)[(*n)++] = xstrdup(name);
}

static uint32_t code_children(struct lsrc *ls, const char *path, char ***out)
{
	const struct dyn_session *s = ls->s;
	char buf[4096], name[4200];
	const char *mod, *proc;
	uint32_t n = 0, i, k;

	if (!path) {
		for (i = 0; i < s->nprocs; i++)
			if (own_proc(s, i)) {
				snprintf(name, sizeof(name), "/Code/%s", s->procs[i].module);
				push_name(out, &n, name);
			}
		return n;
	}
	if (code_parts(path, buf, sizeof(buf), &mod, &proc) != 0)
		return 0;
	for (i = 0; i < s->nprocs; i++) {
		if (!in_code(s, i, mod, proc))
			continue;
		if (!proc) {
			snprintf(name, sizeof(name), "/Code/%s/%s", mod, s->procs[i].name);
			push_name(out, &n, name);
			continue;
		}
		for (k = 0; k < ls->ncallees[i]; k++) {
			uint32_t q = ls->callees[i][k];

			snprintf(name, sizeof(name), "/Code/%s/%s", s->procs[q].module,
				 s->procs[q].name);
			push_name(out, &n, name);
		}
	}
	return n;
}

/* ---- sync objects and files ---- */

static int kind_index(const char *kind, size_t len)
{
	size_t k;

	for (k = 0; k < NKINDS; k++)
		if (strlen(sync_kinds[k].kind) == len && !strncmp(sync_kinds[k].kind, kind, len))
			return (int)k;
	return -1;
}

/* The executable's own sync objects only: the C library's internal locks (its aio, getaddrinfo,
 * timer threads') are no refinement a program's author can act on. */
static void own_objects(struct lsrc *ls)
{
	size_t i, k = 0;

	for (i = 0; i < ls->objs.n; i++) {
		struct dyn_resource *r = &ls->objs.v[i];

		if (r->module && !strcmp(r->module, ls->s->exe)) {
			ls->objs.v[k++] = *r;
		} else {
			free(r->path);
			free(r->module);
		}
	}
	ls->objs.n = k;
}

/* The files open now; a new one is a new resource (generation). */
static void read_files(struct lsrc *ls)
{
	struct dyn_resources now = { 0 };
	char err[256];
	size_t i, j;

	ls->files_read_ns = mono_now_ns();
	if (dyn_resources_list(ls->s->pid, DYN_RES_WANT_FILES, &now, err, sizeof(err)) != 0)
		return;
	for (i = 0; i < now.n; i++) {
		for (j = 0; j < ls->files.n && strcmp(ls->files.v[j].path, now.v[i].path); j++)
			;
		if (j == ls->files.n)
			ls->generation++;
	}
	dyn_resources_free(&ls->files);
	ls->files = now;
}

/* Which calls, and which first arguments, a focus's SyncObject or Files part means. */
static int narrow_of(struct lsrc *ls, enum lm m, const struct cs_focus *f, struct narrow *nw)
{
	const char *so = f->part[H_SYNC], *fi = f->part[H_FILES];
	int sync = m == LM_SYNC || m == LM_SYNC_OPS, k;
	size_t i;

	memset(nw, 0, sizeof(*nw));
	nw->timed = sync ? sync_waits : io_calls;
	nw->more = sync ? sync_releases : NULL;
	if ((so && !sync) || (fi && sync) || (so && fi))
		return -1;
	if (so) {
		const char *kind = so + 12, *slash;

		if (strncmp(so, "/SyncObject/", 12))
			return -1;
		slash = strchr(kind, '/');
		k = kind_index(kind, slash ? (size_t)(slash - kind) : strlen(kind));
		if (k < 0)
			return -1;
		nw->on = 1;
		nw->timed = sync_kinds[k].waits;
		nw->more = sync_kinds[k].releases;
		for (i = 0; slash && i < ls->objs.n; i++)
			if (!strcmp(ls->objs.v[i].path, so))
				nw->val[nw->nval++] = ls->objs.v[i].value;
		return slash && !nw->nval ? -1 : 0;
	}
	if (fi) {
		nw->on = 1;
		nw->timed = io_fd_calls;
		for (i = 0; i < ls->files.n && nw->nval < 4; i++)
			if (!strcmp(ls->files.v[i].path, fi))
				nw->val[nw->nval++] = ls->files.v[i].value;
		return nw->nval ? 0 : -1; /* closed now: nothing to measure */
	}
	return 0;
}

static uint32_t sync_children(struct lsrc *ls, const char *part, char ***out)
{
	char name[300];
	uint32_t n = 0;
	size_t i;

	for (i = 0; i < ls->objs.n; i++) {
		const char *kind = ls->objs.v[i].path + 12, *slash = strchr(kind, '/');

		if (!slash || kind_index(kind, (size_t)(slash - kind)) < 0)
			continue;
		if (!part) {
			snprintf(name, sizeof(name), "/SyncObject/%.*s", (int)(slash - kind), kind);
			push_name(out, &n, name);
		} else if (!strncmp(ls->objs.v[i].path, part, strlen(part)) &&
			   ls->objs.v[i].path[strlen(part)] == '/') {
			push_name(out, &n, ls->objs.v[i].path);
		}
	}
	return n;
}

/* ---- threads ---- */

static void read_threads(struct lsrc *ls)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	uint32_t ctl = dyn_live_ctl_tid(ls->l), i, tid;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)ls->s->pid);
	for (i = 0; i < ls->nthr; i++)
		ls->thr[i].alive = 0;
	ls->alive = 0;
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		tid = (uint32_t)strtoul(d->d_name, NULL, 10);
		if (!tid || tid == ctl)
			continue;
		for (i = 0; i < ls->nthr && ls->thr[i].tid != tid; i++)
			;
		if (i == ls->nthr) {
			ls->thr = xrealloc(ls->thr, (ls->nthr + 1) * sizeof(*ls->thr));
			ls->thr[ls->nthr++] = (struct thr){ tid, 0, -1 };
			ls->generation++;
		}
		ls->thr[i].alive = 1;
		ls->alive++;
	}
	closedir(dir);
	/* the control thread is known from the first sample: it was never a program thread */
	for (i = 0; ctl && i < ls->nthr; i++)
		if (ls->thr[i].tid == ctl) {
			ls->thr[i] = ls->thr[--ls->nthr];
			ls->generation++;
		}
}

static int thread_alive(const struct lsrc *ls, uint32_t tid)
{
	uint32_t i;

	for (i = 0; i < ls->nthr; i++)
		if (ls->thr[i].tid == tid)
			return ls->thr[i].alive;
	return 0;
}

/* ---- /proc readings ---- */

static int read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t k;

	if (fd < 0)
		return -1;
	k = read(fd, buf, cap - 1);
	close(fd);
	if (k <= 0)
		return -1;
	buf[k] = 0;
	return 0;
}

/* ns on a CPU of one thread (schedstat's first field). */
static double thread_cpu_ns(const struct lsrc *ls, uint32_t tid)
{
	char path[96], buf[256];

	snprintf(path, sizeof(path), "/proc/%d/task/%u/schedstat", (int)ls->s->pid, tid);
	return read_file(path, buf, sizeof(buf)) == 0 ? strtod(buf, NULL) : -1;
}

/*
 * Load compensation (docs/consult.md): the share of the period the program's threads could
 * have run, 1 - their time waiting for a CPU (schedstat's second field) over their time alive.
 */
static double load_factor(struct lsrc *ls)
{
	char path[96], buf[256], *p;
	double wait = 0, w, load;
	uint32_t i, n = 0;

	for (i = 0; i < ls->nthr; i++) {
		if (!ls->thr[i].alive)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%u/schedstat", (int)ls->s->pid,
			 ls->thr[i].tid);
		if (read_file(path, buf, sizeof(buf)) != 0)
			continue;
		strtod(buf, &p);
		w = strtod(p, NULL);
		if (ls->thr[i].wait_ns >= 0 && w >= ls->thr[i].wait_ns) {
			wait += w - ls->thr[i].wait_ns;
			n++;
		}
		ls->thr[i].wait_ns = w;
	}
	if (!n || ls->dt <= 0)
		return 1;
	load = 1 - wait / 1e9 / ((double)n * ls->dt);
	return load < 0.05 ? 0.05 : load > 1 ? 1 : load;
}

/* Minor and major faults of the process, or of one thread. */
static double faults(const struct lsrc *ls, uint32_t tid)
{
	char path[96], buf[1024], *p;
	double minflt = 0, majflt = 0;
	int field;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%u/stat", (int)ls->s->pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)ls->s->pid);
	if (read_file(path, buf, sizeof(buf)) != 0 || !(p = strrchr(buf, ')')))
		return -1;
	for (field = 3, p += 2; *p && field <= 12; field++) { /* p: field 3 (state) */
		if (field == 10)
			minflt = strtod(p, NULL);
		if (field == 12)
			majflt = strtod(p, NULL);
		p = strchr(p, ' ');
		if (!p)
			break;
		p++;
	}
	return minflt + majflt;
}

/* A tool-side request's cumulative reading now (-1: none: the process or thread is gone). */
static double reading(struct lsrc *ls, const struct req *r)
{
	switch (r->kind) {
	case K_TCPU:
		return thread_cpu_ns(ls, r->tid) * 1e-9;
	case K_FAULTS:
		return faults(ls, r->tid);
	case K_COST:
		return dyn_live_observed_ns(ls->l, r->keep) * 1e-9;
	default:
		return 0;
	}
}

/* ---- requests ---- */

static void add_procs(struct dyn_lspec *sp, const struct dyn_session *s,
		      const char *const *names, const struct dyn_lact *act, uint32_t nact)
{
	uint32_t i, k;

	for (i = 0; i < s->nprocs; i++) {
		if (!s->procs[i].library || s->pinfo[i].ifunc)
			continue;
		for (k = 0; names[k] && strcmp(names[k], s->procs[i].name); k++)
			;
		if (!names[k])
			continue;
		sp->pt = xrealloc(sp->pt, (sp->npt + 1) * sizeof(*sp->pt));
		sp->pt[sp->npt] = (struct dyn_lpoint){ .proc = i, .nact = nact };
		memcpy(sp->pt[sp->npt++].act, act, nact * sizeof(*act));
	}
}

/* Actions at the focus's procedures: both forms of a timer, the value counter, or the flag. */
static void add_focus(struct dyn_lspec *sp, const struct dyn_session *s, const char *mod,
		      const char *proc, const struct dyn_lact *act, uint32_t nact)
{
	uint32_t i;

	for (i = 0; i < s->nprocs; i++) {
		if (!in_code(s, i, mod, proc))
			continue;
		sp->pt = xrealloc(sp->pt, (sp->npt + 1) * sizeof(*sp->pt));
		sp->pt[sp->npt] = (struct dyn_lpoint){ .proc = i, .nact = nact };
		memcpy(sp->pt[sp->npt++].act, act, nact * sizeof(*act));
	}
}

/* An action; guarded by thread counter pv > 0 when pv >= 0. */
#define ACT(w, p, v, pv, x) ((struct dyn_lact){ .when = (w), .prim = (p), .var = (v), \
						.pred_var = (pv), .pred_arg = -1, .op = SPROTO_GT, \
						.value = (x) })
/* An action guarded by the first argument == c, or by thread counter pv >= c. */
#define ACT_ARG(w, p, v, x, c) ((struct dyn_lact){ .when = (w), .prim = (p), .var = (v), \
						   .pred_var = -1, .pred_arg = 0, .op = SPROTO_EQ, \
						   .value = (x), .k = (c) })
#define ACT_GE(w, p, v, pv, x, c) ((struct dyn_lact){ .when = (w), .prim = (p), .var = (v), \
						      .pred_var = (pv), .pred_arg = -1, \
						      .op = SPROTO_GE, .value = (x), .k = (c) })

/*
 * Timed calls (sync or I/O) or their count. Narrowed to a Code focus by a flag (var 1, raised
 * at its procedures' entries, lowered at their exits); to objects by their first argument
 * (an object's address, a file's descriptors). Both (one predicate per action): the flag is
 * lifted by OBJ while the argument is the object's, the timer starts (or the count adds) when
 * it is above OBJ, then it is lowered again — four actions a call.
 */
#define OBJ (INT64_C(1) << 40)
static void calls_spec(struct dyn_lspec *sp, const struct dyn_session *s, const char *mod,
		       const char *proc, const struct narrow *nw, int count)
{
	int8_t flag = mod ? 1 : -1;
	struct dyn_lact a[DYN_LREQ_ACTS];
	uint32_t k = 0, i;

	if (nw->on && nw->nval && !mod && !count) { /* one object: its calls, timed */
		sp->nvars = 1;
		sp->var[0] = DYN_LV_WALL;
		for (i = 0; i < nw->nval && k < 4; i++)
			a[k++] = ACT_ARG(SPROTO_AT_ENTRY, SPROTO_START_WALL, 0, 0, nw->val[i]);
		a[k++] = ACT(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 0, -1, 0);
		add_procs(sp, s, nw->timed, a, k);
		return;
	}
	if (nw->on && nw->nval) { /* an object's calls counted, or inside a Code focus */
		sp->nvars = mod ? 2 : 1;
		sp->var[0] = count ? DYN_LV_TCOUNTER : DYN_LV_WALL;
		sp->var[1] = DYN_LV_TCOUNTER;
		if (!mod) {
			for (i = 0; i < nw->nval && k < 4; i++)
				a[k++] = ACT_ARG(SPROTO_AT_ENTRY, SPROTO_TADD, 0, 1, nw->val[i]);
		} else {
			/* the Code flag (var 1, its procedures' entries) lifted above OBJ for the
			 * moment of the test when the argument is the object's */
			for (i = 0; i < nw->nval && i < 2; i++)
				a[k++] = ACT_ARG(SPROTO_AT_ENTRY, SPROTO_TADD, 1, OBJ, nw->val[i]);
			a[k++] = ACT_GE(SPROTO_AT_ENTRY, count ? SPROTO_TADD : SPROTO_START_WALL, 0, 1,
					count ? 1 : 0, OBJ + 1);
			for (i = 0; i < nw->nval && i < 2; i++)
				a[k++] = ACT_ARG(SPROTO_AT_ENTRY, SPROTO_TSUB, 1, OBJ, nw->val[i]);
			if (!count) /* a stop whose start was not seen does nothing */
				a[k++] = ACT(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 0, -1, 0);
		}
		add_procs(sp, s, nw->timed, a, k);
		if (count && nw->more)
			add_procs(sp, s, nw->more, a, k);
		if (mod) {
			a[0] = ACT(SPROTO_AT_ENTRY, SPROTO_TADD, 1, -1, 1);
			a[1] = ACT(SPROTO_AT_EXIT, SPROTO_TSUB, 1, 1, 1);
			add_focus(sp, s, mod, proc, a, 2);
		}
		return;
	}

	sp->nvars = mod ? 2 : 1;
	sp->var[0] = count ? DYN_LV_TCOUNTER : DYN_LV_WALL;
	sp->var[1] = DYN_LV_TCOUNTER;
	if (count)
		a[0] = ACT(SPROTO_AT_ENTRY, SPROTO_TADD, 0, flag, 1);
	else {
		a[0] = ACT(SPROTO_AT_ENTRY, SPROTO_START_WALL, 0, flag, 0);
		a[1] = ACT(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 0, flag, 0);
	}
	add_procs(sp, s, nw->timed, a, count ? 1 : 2);
	if (count && nw->more)
		add_procs(sp, s, nw->more, a, 1);
	if (mod) {
		a[0] = ACT(SPROTO_AT_ENTRY, SPROTO_TADD, 1, -1, 1);
		a[1] = ACT(SPROTO_AT_EXIT, SPROTO_TSUB, 1, 1, 1); /* never below 0: a call entered
								     * before the request */
		add_focus(sp, s, mod, proc, a, 2);
	}
}

/*
 * io_bytes: the return value of the data calls added at their exits (TADD_RET: a positive
 * return only). Narrowed to a Code focus by its flag (var 1); to a file by a flag of the call
 * (var 1) raised at entry when the descriptor is the file's, tested and lowered at exit. Not
 * both (a file inside a procedure): -1.
 */
static int bytes_spec(struct dyn_lspec *sp, const struct dyn_session *s, const char *mod,
		      const char *proc, const struct narrow *nw)
{
	struct dyn_lact a[DYN_LREQ_ACTS];
	uint32_t k = 0, i;

	if (nw->on && mod)
		return -1;
	sp->nvars = mod || nw->on ? 2 : 1;
	sp->var[0] = DYN_LV_TCOUNTER;
	sp->var[1] = DYN_LV_TCOUNTER;
	for (i = 0; nw->on && i < nw->nval && k < 4; i++)
		a[k++] = ACT_ARG(SPROTO_AT_ENTRY, SPROTO_TADD, 1, 1, nw->val[i]);
	a[k++] = ACT(SPROTO_AT_EXIT, SPROTO_TADD_RET, 0, mod || nw->on ? 1 : -1, 0);
	if (nw->on)
		a[k++] = ACT(SPROTO_AT_EXIT, SPROTO_TSUB, 1, 1, 1);
	add_procs(sp, s, io_data_calls, a, k);
	if (mod) {
		a[0] = ACT(SPROTO_AT_ENTRY, SPROTO_TADD, 1, -1, 1);
		a[1] = ACT(SPROTO_AT_EXIT, SPROTO_TSUB, 1, 1, 1);
		add_focus(sp, s, mod, proc, a, 2);
	}
	return 0;
}

/* The instrumentation of (metric, focus): 0 with sp filled and key named, -1 when none. */
static int dyn_spec(struct lsrc *ls, enum lm m, const struct cs_focus *f, struct dyn_lspec *sp,
		    char *key, size_t cap)
{
	const char *code = f->part[H_CODE], *mod = NULL, *proc = NULL;
	char buf[4096], fs[8192];
	struct dyn_lact a[2];
	struct narrow nw;

	memset(sp, 0, sizeof(*sp));
	sp->tid = thread_of(f);
	if (code && code_parts(code, buf, sizeof(buf), &mod, &proc) != 0)
		return -1;
	cs_focus_str(fs, sizeof(fs), f);
	switch (m) {
	case LM_CPU:
		if (!code) {
			sp->proc_cpu = 1;
			break;
		}
		sp->nvars = 1;
		sp->var[0] = DYN_LV_CPU;
		a[0] = ACT(SPROTO_AT_ENTRY, SPROTO_START_CPU, 0, -1, 0);
		a[1] = ACT(SPROTO_AT_EXIT, SPROTO_STOP_CPU, 0, -1, 0);
		add_focus(sp, ls->s, mod, proc, a, 2);
		break;
	case LM_CALLS:
		if (!code)
			return -1;
		sp->nvars = 1;
		sp->var[0] = DYN_LV_TCOUNTER;
		a[0] = ACT(SPROTO_AT_ENTRY, SPROTO_TADD, 0, -1, 1);
		add_focus(sp, ls->s, mod, proc, a, 1);
		break;
	case LM_SYNC:
	case LM_SYNC_OPS:
	case LM_IO:
	case LM_IO_OPS:
		if (narrow_of(ls, m, f, &nw) != 0)
			return -1;
		calls_spec(sp, ls->s, mod, proc, &nw, m == LM_SYNC_OPS || m == LM_IO_OPS);
		break;
	case LM_IO_BYTES:
		if (narrow_of(ls, LM_IO, f, &nw) != 0 || bytes_spec(sp, ls->s, mod, proc, &nw) != 0)
			return -1;
		break;
	default:
		return -1;
	}
	if (!sp->proc_cpu && !sp->npt) {
		free(sp->pt);
		return -1;
	}
	snprintf(key, cap, "%d %s", (int)m, fs);
	return 0;
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
	ok = dyn_spec(ls, m, f, &sp, key, sizeof(key)) == 0;
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
		return code_children(ls, f->part[H_CODE], out);
	if (h == H_SYNC)
		return sync_children(ls, f->part[H_SYNC], out);
	if (h == H_FILES) {
		for (i = 0; !f->part[H_FILES] && i < ls->files.n; i++)
			push_name(out, &n, ls->files.v[i].path);
		return n;
	}
	if (h != H_THREADS || f->part[H_THREADS])
		return 0;
	for (i = 0; i < ls->nthr; i++) {
		snprintf(name, sizeof(name), "/Threads/%u", ls->thr[i].tid);
		push_name(out, &n, name);
	}
	return n;
}

static int find_ent(struct lsrc *ls, const char *key)
{
	uint32_t i;

	for (i = 0; i < ls->nents; i++)
		if (ls->ents[i].id >= 0 && !strcmp(ls->ents[i].key, key))
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

	if (!code || code_parts(code, buf, sizeof(buf), &mod, &proc) != 0)
		return NULL;
	keep = xcalloc(ls->s->nprocs + 1, 1);
	for (i = 0; i < ls->s->nprocs; i++)
		keep[i] = (uint8_t)in_code(ls->s, i, mod, proc);
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
	r->tid = thread_of(f);
	if (m == LM_ACTIVE || m == LM_FAULTS || m == LM_COST || (m == LM_CPU && r->tid &&
								   !f->part[H_CODE])) {
		r->kind = m == LM_ACTIVE ? K_ACTIVE : m == LM_FAULTS ? K_FAULTS
			: m == LM_COST ? K_COST : K_TCPU;
		if (r->kind == K_COST)
			r->keep = keep_of(ls, f->part[H_CODE]);
		r->prev = reading(ls, r);
		return id;
	}
	r->kind = K_DYN;
	r->scale = m == LM_CPU || m == LM_SYNC || m == LM_IO ? 1e-9 : 1;
	if (dyn_spec(ls, m, f, &sp, key, sizeof(key)) != 0) {
		r->used = 0;
		return -1;
	}
	e = find_ent(ls, key);
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
	if (dyn_spec(ls, m, f, &sp, key, sizeof(key)) != 0 || sp.proc_cpu) {
		if (!sp.proc_cpu)
			return 0;
		free(sp.pt);
		return 0;
	}
	/* no room on a point (16 actions): as if it cost far more than any budget, so the
	 * search defers it until other requests there are gone */
	ns = find_ent(ls, key) >= 0 ? 0 : !dyn_live_room(ls->l, &sp) ? 1e12
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

static void take_all(struct lsrc *ls)
{
	uint32_t i;

	for (i = 0; i < ls->nents; i++)
		if (ls->ents[i].id >= 0) {
			ls->ents[i].last = (double)dyn_live_take(ls->l, ls->ents[i].id);
			ls->ents[i].fresh = dyn_live_fresh(ls->l, ls->ents[i].id);
			ls->ents[i].every_was = dyn_live_every(ls->l, ls->ents[i].id);
		}
	read_threads(ls);
	if (mono_now_ns() - ls->files_read_ns >= 1000000000ull)
		read_files(ls);
	for (i = 0; i < ls->nreqs; i++) {
		struct req *r = &ls->reqs[i];
		double now;

		if (!r->used)
			continue;
		if (r->kind == K_DYN) {
			r->last = r->ent >= 0 ? ls->ents[r->ent].last * r->scale : 0;
			r->fresh = r->ent >= 0 && ls->ents[r->ent].fresh;
		} else if (r->kind == K_ACTIVE) {
			now = r->tid ? (double)thread_alive(ls, r->tid) : (double)ls->alive;
			r->last = ls->dt * now;
			r->fresh = now != r->alive; /* stored when the count changes */
			r->alive = now;
		} else {
			now = reading(ls, r);
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

/* Wait for a sample newer than the last step: 0; 1 when the process ended meanwhile. */
static int wait_sample(struct lsrc *ls)
{
	char err[256];

	while (ls->s->nsamples == ls->nsamples_seen && !ls->s->ended) {
		if (ls->o.stop && *ls->o.stop)
			return 0;
		if (dyn_session_poll(ls->s, 10, err, sizeof(err)) < 0) {
			snprintf(ls->error, sizeof(ls->error), "%s", err);
			ls->ended = 1;
			return 1;
		}
	}
	return ls->s->ended;
}

static int ls_step(struct cs_source *src, struct cs_step *st)
{
	static char name[256];
	struct lsrc *ls = L(src);
	char err[256];
	int gone;

	if (ls->last_done)
		return -1;
	if (!ls->s->ended && dyn_live_commit(ls->l, err, sizeof(err)) != 0) {
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
	st->load = load_factor(ls);
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

/* Settled, the true nodes are re-tested every LIVE_RETEST periods (live_source.h): fewer
 * samples, the same cumulative averages (a bucket's increase is the same whatever its width).
 * Any node to test brings the sample period back. */
/* A request of dynamic instrumentation read only by slow requests is sent every LIVE_RETEST
 * buckets — unless every bucket is that long already (settled). */
static void pace_ent(struct lsrc *ls, int e)
{
	char err[256];
	int slow = !ls->coarse;
	uint32_t i;

	for (i = 0; slow && i < ls->nreqs; i++)
		if (ls->reqs[i].used && ls->reqs[i].kind == K_DYN && ls->reqs[i].ent == e &&
		    !ls->reqs[i].slow)
			slow = 0;
	dyn_live_pace(ls->l, ls->ents[e].id, slow ? LIVE_RETEST : 1, err, sizeof(err));
}

static void ls_pace(struct cs_source *src, int settled)
{
	struct lsrc *ls = L(src);
	char err[256];
	uint32_t i;

	if (settled == ls->coarse || ls->s->ended || ls->last_done)
		return;
	if (dyn_live_sampling(ls->l, ls->s->bucket_ns * (settled ? LIVE_RETEST : 1), err,
			      sizeof(err)) != 0)
		return;
	ls->coarse = settled;
	for (i = 0; i < ls->nents; i++)
		if (ls->ents[i].id >= 0)
			pace_ent(ls, (int)i);
}

static void ls_pace_req(struct cs_source *src, int id, int slow)
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
	uint32_t i;

	src->ops = &live_ops;
	src->impl = ls;
	ls->s = s;
	ls->o = *o;
	ls->l = dyn_live_new(s);
	ls->origin = s->t_open;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)s->pid);
	ls->memfd = open(path, O_RDONLY | O_CLOEXEC);
	ls->by_addr = xmalloc((s->nprocs + 1) * sizeof(uint32_t));
	for (i = 0; i < s->nprocs; i++)
		if (!s->procs[i].library)
			ls->by_addr[ls->nby_addr++] = i;
	sort_s = s;
	qsort(ls->by_addr, ls->nby_addr, sizeof(uint32_t), by_addr);
	ls->callees = xcalloc(s->nprocs + 1, sizeof(uint32_t *));
	ls->ncallees = xcalloc(s->nprocs + 1, sizeof(uint32_t));
	ls->callees_read = xcalloc(s->nprocs + 1, 1);
	for (i = 0; i < s->nprocs; i++)
		if (own_proc(s, i))
			read_callees(ls, i);
	if (dyn_resources_list(s->pid, DYN_RES_WANT_SYNC, &ls->objs, err, cap) != 0)
		ls->objs = (struct dyn_resources){ 0 }; /* no variables to name: no SyncObject */
	own_objects(ls);
	read_files(ls);
	if (dyn_live_commit(ls->l, err, cap) != 0) { /* the runtime's own counters: sampling on */
		live_source_free(src);
		return NULL;
	}
	read_threads(ls);
	ls->nsamples_seen = s->nsamples;
	ls->t_prev = mono_now_ns() - ls->origin;
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
	for (i = 0; i < ls->s->nprocs; i++)
		free(ls->callees[i]);
	if (ls->memfd >= 0)
		close(ls->memfd);
	dyn_resources_free(&ls->objs);
	dyn_resources_free(&ls->files);
	dyn_live_free(ls->l);
	free(ls->callees);
	free(ls->ncallees);
	free(ls->callees_read);
	free(ls->by_addr);
	free(ls->ents);
	free(ls->reqs);
	free(ls->thr);
	free(ls);
	free(src);
}

void live_source_info(struct cs_source *src, struct live_source_info *out)
{
	struct lsrc *ls = L(src);
	const struct dyn_session *s = ls->s;
	char **mods = NULL;
	uint32_t i;

	memset(out, 0, sizeof(*out));
	out->run_ns = ls->t_prev;
	out->threads = ls->nthr;
	out->modules = code_children(ls, NULL, &mods);
	for (i = 0; i < out->modules; i++)
		free(mods[i]);
	free(mods);
	for (i = 0; i < s->nprocs; i++) {
		double rate = dyn_live_rate(ls->l, i);

		out->procedures += own_proc(s, i);
		if (own_proc(s, i) && rate > 0)
			out->full_calls += (uint64_t)llround(rate * (double)ls->t_prev / 1e9);
	}
	out->metrics = 10; /* cpu_time ... observed_cost, calls */
	out->period_ns = s->bucket_ns;
	out->requests = ls->total_reqs;
	out->requests_max = ls->max_reqs;
	dyn_live_stats(ls->l, &out->dyn);
	out->observed_ns = dyn_live_observed_ns(ls->l, NULL);
	out->ended = ls->ended || s->ended;
	snprintf(out->error, sizeof(out->error), "%s", ls->error);
}

double live_source_call_rate(struct cs_source *src, const char *module, const char *proc)
{
	struct lsrc *ls = L(src);
	uint32_t i;

	for (i = 0; i < ls->s->nprocs; i++)
		if (in_code(ls->s, i, module, proc))
			return dyn_live_rate(ls->l, i);
	return -1;
}
