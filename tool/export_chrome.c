/* SPDX-License-Identifier: MIT */
/*
 * Chrome trace-event JSON ("JSON Object Format"), read by Perfetto and chrome://tracing:
 * B/E events per call, metadata naming processes and threads, counters, phases as async
 * events, thread create/join as flows; MPI messages as flows from send to receive, receives and
 * collectives as slices of their calls' durations. Mapping: docs/export.md.
 */
#include <math.h>
#include <string.h>

#include "export.h"
#include "report.h"
#include "trace_profile.h"

struct chrome {
	const struct ex_input *in;
	const struct ex_proc *p;
	const struct strc_thread *t;
	FILE *out;
	int first;           /* no event written yet */
	uint32_t thread_base; /* threads of the processes before this one (flow ids) */
	uint32_t nthreads;    /* of the whole export: message flows take ids after theirs */
	uint32_t proc;
	uint64_t phases;     /* async ids given to phases so far */
	uint32_t phase;      /* the thread's current phase name, or STRC_ID_NONE */
};

/* The start of an event, up to its timestamp (us); the caller adds fields and the brace. */
static void head_us(struct chrome *c, const char *ph, double us)
{
	fprintf(c->out, "%s\n{\"ph\":\"%s\",\"pid\":%u,\"tid\":%u,\"ts\":%.3f", c->first ? "" : ",",
		ph, c->p->f->pid, c->t->tid, us);
	c->first = 0;
}

static void head(struct chrome *c, const char *ph, uint64_t t)
{
	head_us(c, ph, ex_ns(c->in, c->p, t) / 1000);
}

static void name_field(struct chrome *c, const char *name)
{
	fputs(",\"name\":", c->out);
	json_str(c->out, name);
}

static void on_open(struct replay *r, const struct strc_event *e)
{
	struct chrome *c = r->arg;

	head(c, "B", e->t);
	name_field(c, ex_name(c->p, e->id));
	fprintf(c->out, ",\"cat\":\"%s\"}", e->type == STRC_REGION_BEGIN ? "region" : "function");
}

static void on_close(struct replay *r, const struct replay_frame *f, uint64_t t)
{
	struct chrome *c = r->arg;

	(void)f;
	head(c, "E", t);
	fputc('}', c->out);
}

/* Flow ids: two per thread of the export, one for its creation and one for its join. */
static uint64_t flow_id(const struct chrome *c, uint32_t thread, int join)
{
	return 2 * (uint64_t)(c->thread_base + thread) + 1 + (join ? 1 : 0);
}

static void flow(struct chrome *c, const char *ph, uint64_t t, uint64_t id, const char *name)
{
	head(c, ph, t);
	name_field(c, name);
	fprintf(c->out, ",\"cat\":\"thread\",\"id\":%llu%s}", (unsigned long long)id,
		!strcmp(ph, "f") && !strcmp(name, "join") ? ",\"bp\":\"e\"" : "");
}

static void phase_end(struct chrome *c, uint64_t t)
{
	if (c->phase == STRC_ID_NONE)
		return;
	head(c, "e", t);
	name_field(c, ex_name(c->p, c->phase));
	fprintf(c->out, ",\"cat\":\"phase\",\"id\":%llu}", (unsigned long long)c->phases);
	c->phase = STRC_ID_NONE;
}

static void phase(struct chrome *c, const struct strc_event *e)
{
	phase_end(c, e->t);
	if (e->id == STRC_ID_NONE)
		return;
	c->phase = e->id;
	head(c, "b", e->t);
	name_field(c, ex_name(c->p, e->id));
	fprintf(c->out, ",\"cat\":\"phase\",\"id\":%llu}", (unsigned long long)++c->phases);
}

static void counter(struct chrome *c, const struct strc_event *e)
{
	if (!isfinite(e->value))
		return; /* JSON has no NaN or infinity */
	head(c, "C", e->t);
	name_field(c, ex_name(c->p, e->id));
	fprintf(c->out, ",\"args\":{\"value\":%.17g}}", e->value);
}

/* The runtime's own time writing its buffers: a slice of its own. */
static void flush(struct chrome *c, const struct strc_event *e)
{
	head(c, "X", e->t);
	fprintf(c->out, ",\"dur\":%.3f,\"name\":\"[sonde flush]\",\"cat\":\"sonde\"}",
		strc_ticks_to_ns(c->p->f, e->arg) / 1000);
}

static void instant(struct chrome *c, uint64_t t, const char *scope, const char *name)
{
	head(c, "i", t);
	name_field(c, name);
	fprintf(c->out, ",\"cat\":\"sonde\",\"s\":\"%s\"}", scope);
}

static void thread_edge(struct chrome *c, const struct strc_event *e)
{
	uint32_t k, self = (uint32_t)(c->t - c->p->f->threads);

	switch (e->type) {
	case STRC_THREAD_BEGIN:
		if (c->t->edge)
			flow(c, "f", e->t, flow_id(c, self, 0), "create");
		break;
	case STRC_CREATE:
		if ((k = ex_created(c->p, e->arg)) != EX_NONE)
			flow(c, "s", e->t, flow_id(c, k, 0), "create");
		break;
	case STRC_THREAD_END:
		if (c->p->joined[self])
			flow(c, "s", e->t, flow_id(c, self, 1), "join");
		break;
	case STRC_JOIN:
		if ((k = ex_joined(c->p, e->arg, e->t)) != EX_NONE)
			flow(c, "f", e->t, flow_id(c, k, 1), "join");
		break;
	default:
		break;
	}
}

/* ---- MPI ---- */

static void mpi_flow(struct chrome *c, int recv, const struct strc_event *e)
{
	const struct mm_run *m = c->in->mpi;
	size_t i = m ? mm_msg_of(m, recv, c->proc, (uint32_t)(c->t - c->p->f->threads),
				 (size_t)(e - c->t->ev))
		     : SIZE_MAX;

	if (i == SIZE_MAX)
		return;
	head(c, recv ? "f" : "s", e->t);
	fprintf(c->out, ",\"name\":\"message\",\"cat\":\"mpi\",\"id\":%llu%s}",
		(unsigned long long)(2 * (uint64_t)c->nthreads + 1 + i), recv ? ",\"bp\":\"e\"" : "");
}

/* A receive or a collective: a slice of the call's duration, ending at the event. */
static void mpi_slice(struct chrome *c, const struct strc_event *e, const char *name)
{
	const struct strc_mpi *m = strc_mpi_of(c->p->f, e);
	uint64_t begin = e->t > m->wait ? e->t - m->wait : 0;

	head(c, "X", begin);
	name_field(c, name);
	fprintf(c->out, ",\"dur\":%.3f,\"cat\":\"mpi\",\"args\":{\"comm\":%u,\"bytes\":%llu",
		strc_ticks_to_ns(c->p->f, e->t - begin) / 1000, e->id,
		(unsigned long long)m->bytes);
	if (e->type == STRC_MPI_COLL)
		fprintf(c->out, ",\"received\":%llu,\"root\":%d}}", (unsigned long long)m->recvd,
			m->peer);
	else
		fprintf(c->out, ",\"from\":%d,\"tag\":%d}}", m->peer, m->tag);
}

static void mpi_event(struct chrome *c, const struct strc_event *e)
{
	const struct strc_mpi *m = strc_mpi_of(c->p->f, e);
	char name[96];

	if (e->type == STRC_MPI_SEND) {
		head(c, "i", e->t);
		snprintf(name, sizeof(name), "MPI send to %d tag %d", m->peer, m->tag);
		name_field(c, name);
		fprintf(c->out, ",\"cat\":\"mpi\",\"s\":\"t\",\"args\":{\"comm\":%u,\"bytes\":%llu}}",
			e->id, (unsigned long long)m->bytes);
		mpi_flow(c, 0, e);
	} else if (e->type == STRC_MPI_RECV) {
		snprintf(name, sizeof(name), "MPI recv from %d tag %d", m->peer, m->tag);
		mpi_slice(c, e, name);
		mpi_flow(c, 1, e);
	} else {
		snprintf(name, sizeof(name), "MPI_%s", strc_coll_name(m->op));
		mpi_slice(c, e, name);
	}
}

static void proc_end(struct chrome *c, const struct strc_event *e)
{
	const struct strc_file *f = c->p->f;
	char name[64];

	if (f->end_reason == SPROF_END_SIGNAL)
		snprintf(name, sizeof(name), "process killed by signal %u", f->end_signal);
	else
		snprintf(name, sizeof(name), "process %s",
			 f->end_reason == SPROF_END_EXEC ? "exec" : "exit");
	instant(c, e->t, "p", name);
}

static void on_other(struct replay *r, const struct strc_event *e)
{
	struct chrome *c = r->arg;
	char name[64];

	switch (e->type) {
	case STRC_USER:
		counter(c, e);
		break;
	case STRC_PHASE:
		phase(c, e);
		break;
	case STRC_FLUSH:
		flush(c, e);
		break;
	case STRC_DROPPED:
		snprintf(name, sizeof(name), "%llu events dropped", (unsigned long long)e->arg);
		instant(c, e->t, "t", name);
		break;
	case STRC_PROC_END:
		proc_end(c, e);
		break;
	case STRC_MPI_SEND:
	case STRC_MPI_RECV:
	case STRC_MPI_COLL:
		mpi_event(c, e);
		break;
	default:
		thread_edge(c, e);
	}
}

static void metadata(struct chrome *c, const char *what, const char *name, uint32_t sort)
{
	head_us(c, "M", 0);
	fprintf(c->out, ",\"name\":\"%s\",\"args\":{\"name\":", what);
	json_str(c->out, name);
	fprintf(c->out, "}}");
	head_us(c, "M", 0);
	fprintf(c->out, ",\"name\":\"%s_sort_index\",\"args\":{\"sort_index\":%u}}",
		!strcmp(what, "process_name") ? "process" : "thread", sort);
}

static void thread_events(struct chrome *c, struct replay *r, uint32_t proc)
{
	char name[64];

	if (c->t == c->p->f->threads)
		metadata(c, "process_name", ex_base_name(trace_exe(c->p->f)), proc);
	if (c->t->index == 0)
		snprintf(name, sizeof(name), "main thread");
	else
		snprintf(name, sizeof(name), "thread %u", c->t->index);
	metadata(c, "thread_name", name, c->t->index);
	c->phase = STRC_ID_NONE;
	replay_thread(r, c->t);
	phase_end(c, c->t->nev ? c->t->ev[c->t->nev - 1].t : 0);
}

int export_chrome(const struct ex_input *in, FILE *out)
{
	struct chrome c = { .in = in, .out = out, .first = 1 };
	struct replay r = { .arg = &c, .open = on_open, .close = on_close, .other = on_other };
	uint32_t i, k;

	fprintf(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"sonde %s\","
		     "\"run_dir\":", SONDE_VERSION);
	json_str(out, in->rundir);
	fprintf(out, "},\"traceEvents\":[");
	for (i = 0; i < in->nprocs; i++)
		c.nthreads += in->procs[i].f->nthreads;
	for (i = 0; i < in->nprocs; i++) {
		c.p = &in->procs[i];
		c.proc = i;
		for (k = 0; k < c.p->f->nthreads; k++) {
			c.t = &c.p->f->threads[k];
			thread_events(&c, &r, i);
		}
		c.thread_base += c.p->f->nthreads;
	}
	fprintf(out, "\n]}\n");
	replay_free(&r);
	return ferror(out) ? -1 : 0;
}
