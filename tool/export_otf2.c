/* SPDX-License-Identifier: MIT */
/*
 * An OTF2 archive (Score-P's trace format, read by Vampir, Scalasca, otf2-print) through
 * libotf2: a system-tree node for the machine, a location group per process, a location per
 * thread; Enter/Leave per call, the pthread create/wait events for thread edges, a metric per
 * user counter, a "phase" parameter for phases, BufferFlush for the runtime's flushes; for the
 * traces of an MPI run, MpiSend/MpiRecv and MpiCollectiveBegin/End events with the MPI
 * communicators and their groups in the global definitions.
 * Timestamps are the trace's clock ticks. Mapping and what is left out: docs/export.md.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <otf2/otf2.h>

#include "export.h"
#include "trace_profile.h"
#include "util.h"

/* Strings (or any keys) numbered in order of first sight: the references of OTF2 definitions. */
struct intern {
	char **keys;
	uint32_t n, cap;
	uint32_t *slots, nslots;
};

struct region_def {
	OTF2_StringRef name, file;
	uint32_t line, kind;
};

struct otf2 {
	const struct ex_input *in;
	OTF2_Archive *ar;
	OTF2_EvtWriter *w;
	OTF2_GlobalDefWriter *g;
	uint32_t nwritten;    /* strings defined so far */
	struct intern strings, regions, metrics;
	struct region_def *rdefs;
	uint32_t rcap;
	uint32_t *reg_of;     /* the current process's func index -> region, EX_NONE: none yet */
	uint64_t *nevents;    /* per location */
	const struct ex_proc *p;
	const struct strc_thread *t;
	uint32_t proc, loc, self, nlocs;
	int mpi;              /* every rank of an MPI run is here: MPI events and definitions */
	uint64_t nb_requests;  /* non-blocking collectives written (their OTF2 request ids) */
	char host[256];
	OTF2_ErrorCode err;
	char msg[256];        /* the first error libotf2 reported */
};

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

static void intern_grow(struct intern *h)
{
	uint32_t i, cap = h->nslots ? h->nslots * 2 : 256;

	free(h->slots);
	h->slots = xmalloc(cap * sizeof(*h->slots));
	memset(h->slots, 0xff, cap * sizeof(*h->slots));
	h->nslots = cap;
	for (i = 0; i < h->n; i++) {
		uint32_t s = hash(h->keys[i]) & (cap - 1);

		while (h->slots[s] != UINT32_MAX)
			s = (s + 1) & (cap - 1);
		h->slots[s] = i;
	}
}

/* The number of a key, given on first sight. */
static uint32_t intern(struct intern *h, const char *key)
{
	uint32_t s;

	if (h->n * 2 >= h->nslots)
		intern_grow(h);
	for (s = hash(key) & (h->nslots - 1); h->slots[s] != UINT32_MAX; s = (s + 1) & (h->nslots - 1))
		if (!strcmp(h->keys[h->slots[s]], key))
			return h->slots[s];
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 256;
		h->keys = xrealloc(h->keys, h->cap * sizeof(*h->keys));
	}
	h->keys[h->n] = xstrdup(key);
	h->slots[s] = h->n;
	return h->n++;
}

static void intern_free(struct intern *h)
{
	uint32_t i;

	for (i = 0; i < h->n; i++)
		free(h->keys[i]);
	free(h->keys);
	free(h->slots);
}

/* ---- errors ---- */

static OTF2_ErrorCode __attribute__((format(printf, 6, 0)))
on_error(void *arg, const char *file, uint64_t line, const char *function, OTF2_ErrorCode code,
	 const char *fmt, va_list va)
{
	struct otf2 *o = arg;

	(void)file, (void)line, (void)function;
	if (!o->msg[0])
		vsnprintf(o->msg, sizeof(o->msg), fmt, va);
	return code;
}

/* Remember the first failure of a libotf2 call. */
static void check(struct otf2 *o, OTF2_ErrorCode code)
{
	if (code != OTF2_SUCCESS && o->err == OTF2_SUCCESS)
		o->err = code;
}

static OTF2_FlushType pre_flush(void *arg, OTF2_FileType type, OTF2_LocationRef loc,
				void *caller, bool final)
{
	(void)arg, (void)type, (void)loc, (void)caller, (void)final;
	return OTF2_FLUSH;
}

static const OTF2_FlushCallbacks flush_callbacks = { .otf2_pre_flush = pre_flush,
						     .otf2_post_flush = NULL };

/* ---- events ---- */

/* A string's reference; once the global definitions are being written, new strings are
 * defined at once, before the definition that uses them. */
static OTF2_StringRef str(struct otf2 *o, const char *s)
{
	uint32_t r = intern(&o->strings, s);

	for (; o->g && o->nwritten < o->strings.n; o->nwritten++)
		check(o, OTF2_GlobalDefWriter_WriteString(o->g, o->nwritten,
							  o->strings.keys[o->nwritten]));
	return r;
}

static void add_region(struct otf2 *o, uint32_t r, const char *name, const char *file, int line,
		       uint32_t kind)
{
	if (r == o->rcap) {
		o->rcap = o->rcap ? o->rcap * 2 : 256;
		o->rdefs = xrealloc(o->rdefs, o->rcap * sizeof(*o->rdefs));
	}
	o->rdefs[r] = (struct region_def){ str(o, name), str(o, file),
					   (uint32_t)(line > 0 ? line : 0), kind };
}

/* The region of a function or region of the current process: one per name, file and line. */
static OTF2_RegionRef region_of(struct otf2 *o, uint32_t id)
{
	uint32_t fi = ex_func(o->p, id), slot = fi == EX_NONE ? o->p->f->nfuncs : fi, r, n;
	const char *name = fi == EX_NONE ? "?" : o->p->names[fi];
	const char *file = fi == EX_NONE ? "" : o->p->files[fi];
	int line = fi == EX_NONE ? 0 : o->p->lines[fi];
	uint32_t kind = fi == EX_NONE ? SPROF_FUNC : o->p->f->funcs[fi].kind;
	char key[8192];

	if (o->reg_of[slot] != EX_NONE)
		return o->reg_of[slot];
	snprintf(key, sizeof(key), "%s\x1f%s\x1f%d\x1f%u", name, file, line, kind);
	n = o->regions.n;
	r = intern(&o->regions, key);
	if (o->regions.n != n)
		add_region(o, r, name, file, line, kind);
	return o->reg_of[slot] = r;
}

static void counted(struct otf2 *o, OTF2_ErrorCode code)
{
	check(o, code);
	o->nevents[o->loc]++;
}

static void on_open(struct replay *r, const struct strc_event *e)
{
	struct otf2 *o = r->arg;

	counted(o, OTF2_EvtWriter_Enter(o->w, NULL, e->t, region_of(o, e->id)));
}

static void on_close(struct replay *r, const struct replay_frame *f, uint64_t t)
{
	struct otf2 *o = r->arg;

	counted(o, OTF2_EvtWriter_Leave(o->w, NULL, t, region_of(o, f->id)));
}

static void metric(struct otf2 *o, const struct strc_event *e)
{
	OTF2_Type type = OTF2_TYPE_DOUBLE;
	OTF2_MetricValue v = { .floating_point = e->value };

	counted(o, OTF2_EvtWriter_Metric(o->w, NULL, e->t,
					 intern(&o->metrics, ex_name(o->p, e->id)), 1, &type, &v));
}

/* The pthread create/wait model: the process is the thread contingent, a thread's sequence
 * number is its index + 1 in its process. */
static void thread_edge(struct otf2 *o, const struct strc_event *e)
{
	const struct strc_thread *th = o->p->f->threads;
	uint32_t k;

	if (e->type == STRC_THREAD_BEGIN && o->t->edge)
		counted(o, OTF2_EvtWriter_ThreadBegin(o->w, NULL, e->t, o->proc, o->self + 1));
	else if (e->type == STRC_THREAD_END && o->t->edge)
		counted(o, OTF2_EvtWriter_ThreadEnd(o->w, NULL, e->t, o->proc,
						    o->p->joined[o->self] ? o->self + 1
									   : OTF2_UNDEFINED_UINT64));
	else if (e->type == STRC_CREATE && (k = ex_created(o->p, e->arg)) != EX_NONE)
		counted(o, OTF2_EvtWriter_ThreadCreate(o->w, NULL, e->t, o->proc, k + 1));
	else if (e->type == STRC_JOIN && (k = ex_joined(o->p, e->arg, e->t)) != EX_NONE &&
		 th[k].edge)
		counted(o, OTF2_EvtWriter_ThreadWait(o->w, NULL, e->t, o->proc, k + 1));
}

/* ---- MPI ---- */

/* References of the MPI definitions: after the thread contingents (groups 0 .. nprocs,
 * communicators 0 .. nprocs - 1), the group of the ranks' locations, then per communicator of the
 * run a group and a communicator. */
#define MPI_LOCATIONS(o) ((o)->in->nprocs + 1)
#define MPI_GROUP(o, c) ((o)->in->nprocs + 2 + (c))
#define MPI_COMM(o, c) ((o)->in->nprocs + (c))

static OTF2_CollectiveOp coll_op(unsigned op)
{
	static const OTF2_CollectiveOp ops[STRC_COLL_OPS] = {
		[STRC_COLL_BARRIER] = OTF2_COLLECTIVE_OP_BARRIER,
		[STRC_COLL_BCAST] = OTF2_COLLECTIVE_OP_BCAST,
		[STRC_COLL_GATHER] = OTF2_COLLECTIVE_OP_GATHER,
		[STRC_COLL_GATHERV] = OTF2_COLLECTIVE_OP_GATHERV,
		[STRC_COLL_SCATTER] = OTF2_COLLECTIVE_OP_SCATTER,
		[STRC_COLL_SCATTERV] = OTF2_COLLECTIVE_OP_SCATTERV,
		[STRC_COLL_ALLGATHER] = OTF2_COLLECTIVE_OP_ALLGATHER,
		[STRC_COLL_ALLGATHERV] = OTF2_COLLECTIVE_OP_ALLGATHERV,
		[STRC_COLL_REDUCE] = OTF2_COLLECTIVE_OP_REDUCE,
		[STRC_COLL_ALLREDUCE] = OTF2_COLLECTIVE_OP_ALLREDUCE,
		[STRC_COLL_ALLTOALL] = OTF2_COLLECTIVE_OP_ALLTOALL,
		[STRC_COLL_ALLTOALLV] = OTF2_COLLECTIVE_OP_ALLTOALLV,
		[STRC_COLL_SCAN] = OTF2_COLLECTIVE_OP_SCAN,
		[STRC_COLL_EXSCAN] = OTF2_COLLECTIVE_OP_EXSCAN,
		[STRC_COLL_REDUCE_SCATTER] = OTF2_COLLECTIVE_OP_REDUCE_SCATTER,
	};

	return op < STRC_COLL_OPS ? ops[op] : OTF2_COLLECTIVE_OP_BARRIER;
}

/* Every rank 0 .. size - 1 of MPI_COMM_WORLD has its trace here. */
static int mpi_complete(const struct ex_input *in)
{
	const struct mm_run *m = in->mpi;
	uint32_t c;

	if (!m)
		return 0;
	for (c = 0; c < m->ncomms; c++)
		if (m->comms[c].world)
			return m->nranks == m->comms[c].size;
	return 0;
}

/* A collective is recorded when it ends, with its duration: its begin is that much earlier,
 * but not before the location's previous event (OTF2 wants them in order). */
static void mpi_collective(struct otf2 *o, const struct strc_event *e, const struct strc_mpi *m,
			   OTF2_CommRef comm)
{
	uint64_t begin = e->t > m->wait ? e->t - m->wait : 0;

	if (e > o->t->ev && begin < e[-1].t)
		begin = e[-1].t;
	if (m->op & STRC_COLL_NB) { /* its request at the completing call's start (format-trace.md) */
		uint64_t id = o->nb_requests++;

		counted(o, OTF2_EvtWriter_NonBlockingCollectiveRequest(o->w, NULL, begin, id));
		counted(o, OTF2_EvtWriter_NonBlockingCollectiveComplete(
				   o->w, NULL, e->t, coll_op(strc_coll_base(m->op)), comm,
				   m->peer < 0 ? OTF2_UNDEFINED_UINT32 : (uint32_t)m->peer, m->bytes,
				   m->recvd, id));
		return;
	}
	counted(o, OTF2_EvtWriter_MpiCollectiveBegin(o->w, NULL, begin));
	counted(o, OTF2_EvtWriter_MpiCollectiveEnd(o->w, NULL, e->t, coll_op(m->op), comm,
						   m->peer < 0 ? OTF2_UNDEFINED_UINT32
							       : (uint32_t)m->peer,
						   m->bytes, m->recvd));
}

static void mpi_event(struct otf2 *o, const struct strc_event *e)
{
	const struct strc_mpi *m = strc_mpi_of(o->p->f, e);
	uint32_t c = o->mpi ? mm_comm_index(o->in->mpi, o->proc, e->id) : MM_NONE;

	if (c == MM_NONE)
		return; /* not an MPI run whose ranks are all here: no MPI definitions */
	if (e->type == STRC_MPI_SEND)
		counted(o, OTF2_EvtWriter_MpiSend(o->w, NULL, e->t, (uint32_t)m->peer,
						  MPI_COMM(o, c), (uint32_t)m->tag, m->bytes));
	else if (e->type == STRC_MPI_RECV)
		counted(o, OTF2_EvtWriter_MpiRecv(o->w, NULL, e->t, (uint32_t)m->peer,
						  MPI_COMM(o, c), (uint32_t)m->tag, m->bytes));
	else
		mpi_collective(o, e, m, MPI_COMM(o, c));
}

static void on_other(struct replay *r, const struct strc_event *e)
{
	struct otf2 *o = r->arg;

	switch (e->type) {
	case STRC_MPI_SEND:
	case STRC_MPI_RECV:
	case STRC_MPI_COLL:
		mpi_event(o, e);
		break;
	case STRC_USER:
		metric(o, e);
		break;
	case STRC_PHASE: /* parameter 0, "phase": the name, or "" when the phase ends */
		counted(o, OTF2_EvtWriter_ParameterString(
				   o->w, NULL, e->t, 0,
				   str(o, e->id == STRC_ID_NONE ? "" : ex_name(o->p, e->id))));
		break;
	case STRC_FLUSH:
		counted(o, OTF2_EvtWriter_BufferFlush(o->w, NULL, e->t, e->t + e->arg));
		break;
	default:
		thread_edge(o, e);
	}
}

static void write_events(struct otf2 *o)
{
	struct replay r = { .arg = o, .open = on_open, .close = on_close, .other = on_other };
	uint32_t i, k;

	for (i = 0, o->loc = 0; i < o->in->nprocs && o->err == OTF2_SUCCESS; i++) {
		o->p = &o->in->procs[i];
		o->proc = i;
		o->reg_of = xrealloc(o->reg_of, (o->p->f->nfuncs + 1) * sizeof(*o->reg_of));
		memset(o->reg_of, 0xff, (o->p->f->nfuncs + 1) * sizeof(*o->reg_of));
		for (k = 0; k < o->p->f->nthreads && o->err == OTF2_SUCCESS; k++, o->loc++) {
			o->t = &o->p->f->threads[k];
			o->self = k;
			o->w = OTF2_Archive_GetEvtWriter(o->ar, o->loc);
			if (!o->w) {
				check(o, OTF2_ERROR_INVALID);
				break;
			}
			replay_thread(&r, o->t);
			check(o, OTF2_Archive_CloseEvtWriter(o->ar, o->w));
		}
	}
	replay_free(&r);
}

/* Every location has a (here empty) local definition file. */
static void write_local_defs(struct otf2 *o)
{
	uint32_t i;

	check(o, OTF2_Archive_OpenDefFiles(o->ar));
	for (i = 0; i < o->nlocs; i++) {
		OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(o->ar, i);

		if (dw)
			check(o, OTF2_Archive_CloseDefWriter(o->ar, dw));
	}
	check(o, OTF2_Archive_CloseDefFiles(o->ar));
}

/* ---- global definitions ---- */

static OTF2_StringRef thread_name(struct otf2 *o, const struct strc_thread *t)
{
	char name[64];

	if (t->index)
		snprintf(name, sizeof(name), "thread %u (tid %u)", t->index, t->tid);
	else
		snprintf(name, sizeof(name), "main thread (tid %u)", t->tid);
	return str(o, name);
}

/* The clock's rate: one for the whole archive, the first process's (they share the clock). */
static uint64_t ticks_per_second(const struct ex_input *in)
{
	double ns = strc_ticks_to_ns(in->procs[0].f, 1000000000u);

	return ns > 0 ? (uint64_t)llround(1e18 / ns) : 1000000000u;
}

/* Wall-clock time of the export's time 0, from the first process's start. */
static uint64_t realtime(const struct ex_input *in)
{
	const struct strc_file *f = in->procs[0].f;
	int64_t since = (int64_t)llround(-ex_ns(in, &in->procs[0], f->start_ticks));

	return since >= 0 || (uint64_t)-since < f->start_unix_ns
		       ? f->start_unix_ns + (uint64_t)since
		       : OTF2_UNDEFINED_TIMESTAMP;
}

static OTF2_StringRef strf(struct otf2 *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static OTF2_StringRef strf(struct otf2 *o, const char *fmt, ...)
{
	char name[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	return str(o, name);
}

static void def_system(struct otf2 *o, OTF2_GlobalDefWriter *g)
{
	uint32_t i, k, loc = 0;

	check(o, OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, str(o, o->host), str(o, "node"),
							  OTF2_UNDEFINED_SYSTEM_TREE_NODE));
	for (i = 0; i < o->in->nprocs; i++) {
		const struct ex_proc *p = &o->in->procs[i];

		check(o, OTF2_GlobalDefWriter_WriteLocationGroup(
				 g, i, strf(o, "process %u (%s)", p->f->pid, ex_base_name(trace_exe(p->f))),
				 OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
				 p->parent == EX_NONE ? OTF2_UNDEFINED_LOCATION_GROUP : p->parent));
		for (k = 0; k < p->f->nthreads; k++, loc++) {
			const struct strc_thread *t = &p->f->threads[k];

			check(o, OTF2_GlobalDefWriter_WriteLocation(g, loc, thread_name(o, t),
								    OTF2_LOCATION_TYPE_CPU_THREAD,
								    o->nevents[loc], i));
		}
	}
}

static void def_regions(struct otf2 *o, OTF2_GlobalDefWriter *g)
{
	uint32_t i;

	for (i = 0; i < o->regions.n; i++) {
		const struct region_def *r = &o->rdefs[i];
		int user = r->kind == SPROF_REGION;

		check(o, OTF2_GlobalDefWriter_WriteRegion(
				 g, i, r->name, r->name, str(o, ""),
				 user ? OTF2_REGION_ROLE_CODE : OTF2_REGION_ROLE_FUNCTION,
				 user ? OTF2_PARADIGM_USER : OTF2_PARADIGM_COMPILER, OTF2_REGION_FLAG_NONE,
				 r->file == str(o, "") ? OTF2_UNDEFINED_STRING : r->file, r->line, 0));
	}
}

/* A thread contingent per process: group 0 lists every location, group 1 + i those of
 * process i (as ranks in group 0, which are the location numbers), communicator i. */
static void def_threads(struct otf2 *o, OTF2_GlobalDefWriter *g)
{
	uint32_t nlocs = o->nlocs;
	uint64_t *members = xmalloc((nlocs ? nlocs : 1) * sizeof(*members));
	uint32_t i, k, loc = 0;

	for (i = 0; i < nlocs; i++)
		members[i] = i;
	check(o, OTF2_GlobalDefWriter_WriteGroup(g, 0, str(o, "pthread threads"),
						 OTF2_GROUP_TYPE_COMM_LOCATIONS,
						 OTF2_PARADIGM_PTHREAD, OTF2_GROUP_FLAG_NONE, nlocs,
						 members));
	for (i = 0; i < o->in->nprocs; i++) {
		const struct strc_file *f = o->in->procs[i].f;

		for (k = 0; k < f->nthreads; k++)
			members[k] = loc + k;
		check(o, OTF2_GlobalDefWriter_WriteGroup(
				 g, 1 + i, strf(o, "threads of process %u", f->pid),
				 OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_PTHREAD, OTF2_GROUP_FLAG_NONE,
				 f->nthreads, members));
		check(o, OTF2_GlobalDefWriter_WriteComm(g, i, strf(o, "threads of process %u", f->pid),
							1 + i, OTF2_UNDEFINED_COMM,
							OTF2_COMM_FLAG_NONE));
		loc += f->nthreads;
	}
	free(members);
}

/* The ranks' locations (each rank's first thread), in rank order, then each communicator of
 * the run: a group of its members' world ranks, and the communicator. */
static void def_mpi(struct otf2 *o, OTF2_GlobalDefWriter *g)
{
	const struct mm_run *m = o->in->mpi;
	uint32_t size = m->nranks, *first = xcalloc(o->in->nprocs + 1, sizeof(*first));
	uint64_t *members = xmalloc((size ? size : 1) * sizeof(*members));
	uint32_t i, c;

	for (i = 0; i < o->in->nprocs; i++)
		first[i + 1] = first[i] + o->in->procs[i].f->nthreads;
	for (i = 0; i < size; i++)
		members[i] = first[ex_rank_proc(o->in, (int32_t)i)];
	check(o, OTF2_GlobalDefWriter_WriteGroup(g, MPI_LOCATIONS(o), str(o, "MPI ranks"),
						 OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
						 OTF2_GROUP_FLAG_NONE, size, members));
	for (c = 0; c < m->ncomms; c++) {
		const struct mm_comm *mc = &m->comms[c];
		OTF2_StringRef name = mc->world ? str(o, "MPI_COMM_WORLD")
					 : strf(o, "MPI communicator %u (%u ranks)", c, mc->size);

		for (i = 0; i < mc->size && i < size; i++)
			members[i] = (uint64_t)mm_world_of(m, c, (int32_t)i);
		check(o, OTF2_GlobalDefWriter_WriteGroup(g, MPI_GROUP(o, c), name,
							 OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
							 OTF2_GROUP_FLAG_NONE, i, members));
		check(o, OTF2_GlobalDefWriter_WriteComm(g, MPI_COMM(o, c), name, MPI_GROUP(o, c),
							OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE));
	}
	free(members);
	free(first);
}

static void def_user(struct otf2 *o, OTF2_GlobalDefWriter *g)
{
	uint32_t i;

	check(o, OTF2_GlobalDefWriter_WriteParameter(g, 0, str(o, "phase"),
						     OTF2_PARAMETER_TYPE_STRING));
	for (i = 0; i < o->metrics.n; i++) {
		OTF2_MetricMemberRef m = i;

		check(o, OTF2_GlobalDefWriter_WriteMetricMember(
				 g, i, str(o, o->metrics.keys[i]), str(o, ""), OTF2_METRIC_TYPE_USER,
				 OTF2_METRIC_ABSOLUTE_POINT, OTF2_TYPE_DOUBLE, OTF2_BASE_DECIMAL, 0,
				 str(o, "")));
		check(o, OTF2_GlobalDefWriter_WriteMetricClass(g, i, 1, &m, OTF2_METRIC_ASYNCHRONOUS,
							       OTF2_RECORDER_KIND_ABSTRACT));
	}
}

static void write_global_defs(struct otf2 *o)
{
	OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(o->ar);

	if (!g) {
		check(o, OTF2_ERROR_INVALID);
		return;
	}
	check(o, OTF2_GlobalDefWriter_WriteClockProperties(g, ticks_per_second(o->in), o->in->base,
							   o->in->last - o->in->base,
							   realtime(o->in)));
	o->g = g;
	str(o, ""); /* and the strings of the events' regions and phases */
	def_system(o, g);
	def_regions(o, g);
	def_threads(o, g);
	if (o->mpi)
		def_mpi(o, g);
	def_user(o, g);
	o->g = NULL;
	check(o, OTF2_Archive_CloseGlobalDefWriter(o->ar, g));
}

/* ---- the archive ---- */

/* An earlier export's files: DIR/traces.otf2, DIR/traces.def, DIR/traces/ *.evt and *.def. */
static int remove_archive(const char *dir)
{
	char path[4096];
	struct dirent *e;
	DIR *d;
	int bad = 0;

	snprintf(path, sizeof(path), "%s/traces", dir);
	d = opendir(path);
	while (d && (e = readdir(d)))
		if (!fnmatch("*.evt", e->d_name, 0) || !fnmatch("*.def", e->d_name, 0)) {
			snprintf(path, sizeof(path), "%s/traces/%s", dir, e->d_name);
			bad |= unlink(path);
		}
	if (d)
		closedir(d);
	snprintf(path, sizeof(path), "%s/traces", dir);
	bad |= rmdir(path) != 0 && errno != ENOENT;
	snprintf(path, sizeof(path), "%s/traces.def", dir);
	bad |= unlink(path) != 0 && errno != ENOENT;
	snprintf(path, sizeof(path), "%s/traces.otf2", dir);
	bad |= unlink(path) != 0 && errno != ENOENT;
	return bad ? error("export: cannot replace the archive in %s: %m", dir) : 0;
}

/* The directory of the archive, made if needed; an archive of an earlier export is replaced. */
static int prepare_dir(const char *dir)
{
	char path[4096];

	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return error("export: cannot create the directory %s: %m", dir);
	snprintf(path, sizeof(path), "%s/traces.otf2", dir);
	return access(path, F_OK) == 0 ? remove_archive(dir) : 0;
}

static uint32_t count_locations(const struct ex_input *in)
{
	uint32_t i, n = 0;

	for (i = 0; i < in->nprocs; i++)
		n += in->procs[i].f->nthreads;
	return n;
}

static void free_otf2(struct otf2 *o)
{
	intern_free(&o->strings);
	intern_free(&o->regions);
	intern_free(&o->metrics);
	free(o->rdefs);
	free(o->reg_of);
	free(o->nevents);
}

int export_otf2(const struct ex_input *in, const char *dir)
{
	struct otf2 o = { .in = in, .nlocs = count_locations(in), .mpi = mpi_complete(in) };
	OTF2_ErrorCallback old;

	if (prepare_dir(dir))
		return -1;
	old = OTF2_Error_RegisterCallback(on_error, &o);
	o.nevents = xcalloc(o.nlocs, sizeof(*o.nevents));
	if (gethostname(o.host, sizeof(o.host)) != 0)
		snprintf(o.host, sizeof(o.host), "localhost");
	o.host[sizeof(o.host) - 1] = 0;
	o.ar = OTF2_Archive_Open(dir, "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
				 OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
	if (!o.ar) {
		check(&o, OTF2_ERROR_INVALID);
	} else {
		check(&o, OTF2_Archive_SetFlushCallbacks(o.ar, &flush_callbacks, NULL));
		check(&o, OTF2_Archive_SetSerialCollectiveCallbacks(o.ar));
		check(&o, OTF2_Archive_SetCreator(o.ar, "sonde " SONDE_VERSION));
		check(&o, OTF2_Archive_SetDescription(o.ar, "sonde run --trace, exported"));
		check(&o, OTF2_Archive_SetMachineName(o.ar, o.host));
		check(&o, OTF2_Archive_OpenEvtFiles(o.ar));
		write_events(&o);
		check(&o, OTF2_Archive_CloseEvtFiles(o.ar));
		write_local_defs(&o);
		write_global_defs(&o);
		check(&o, OTF2_Archive_Close(o.ar));
	}
	OTF2_Error_RegisterCallback(old, NULL);
	free_otf2(&o);
	if (o.err != OTF2_SUCCESS)
		return error("export: writing the OTF2 archive in %s failed: %s", dir,
			     o.msg[0] ? o.msg : OTF2_Error_GetDescription(o.err));
	return 0;
}
