/* SPDX-License-Identifier: MIT */
/*
 * sonde trace dump [--limit N] [--thread I] PATH: a trace as text. A header block per trace
 * file (process, calibration, threads, completeness), then one line per event, the threads
 * merged in time order: thread, ns since the trace's start, indentation by call depth, type,
 * name. Function names come from the symbols of the modules, as in `sonde report`.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cmds.h"
#include "model_sync.h"
#include "elfinfo.h"
#include "symbols.h"
#include "trace_read.h"
#include "util.h"

#define MAX_INDENT 40 /* levels of indentation shown; deeper calls stay at this one */

struct dump_opts {
	const char *path;
	unsigned long long limit; /* events per trace, 0: all */
	int thread;               /* index, -1: all */
};

/* One trace being dumped. */
struct dumper {
	const struct dump_opts *o;
	const struct strc_file *f;
	struct symtab *st;
	const char **names; /* by index in f->funcs: resolved on first use */
	uint8_t *checked;   /* by module: its build id was compared with the file's */
};

static void trace_usage(FILE *out)
{
	fprintf(out,
		"usage: sonde trace dump [OPTIONS] PATH\n"
		"  PATH          a trace file (trace.PID.strc) or a run directory (each of its\n"
		"                traces, sorted): a header per trace, then one line per event\n"
		"  --limit N     at most N events per trace\n"
		"  --thread I    only thread I (its index in the process)\n"
		"Traces are written by 'sonde run --trace' (docs/format-trace.md).\n");
}

/* ---- names ---- */

/* Say once when a binary changed since the run: its symbols may no longer match. */
static void check_module(struct dumper *d, uint32_t m)
{
	const struct strc_module *mod = &d->f->modules[m];
	struct elf_info info;

	if (d->checked[m]++ || !mod->build_id_len || elfinfo__read(mod->path, &info) != 0)
		return;
	if (info.build_id_len != (int)mod->build_id_len ||
	    memcmp(info.build_id, mod->build_id, mod->build_id_len) != 0)
		warning("%s changed since the run: names may be wrong", mod->path);
}

static const char *func_name(struct dumper *d, uint32_t id)
{
	const struct strc_func *fn = strc_func_of(d->f, id);
	uint32_t i;
	struct sym_info si;

	if (!fn)
		return "(unnamed)";
	i = (uint32_t)(fn - d->f->funcs);
	if (d->names[i])
		return d->names[i];
	if (fn->kind != SPROF_FUNC) {
		d->names[i] = fn->name;
		return fn->name;
	}
	if (fn->module >= 0)
		check_module(d, (uint32_t)fn->module);
	symtab__resolve(d->st, fn->module >= 0 ? d->f->modules[fn->module].path : NULL, fn->vaddr,
			&si);
	d->names[i] = si.func;
	return si.func;
}

/* ---- the header block ---- */

static double ns_since_start(const struct strc_file *f, uint64_t t)
{
	return t >= f->start_ticks ? strc_ticks_to_ns(f, t - f->start_ticks)
				   : -strc_ticks_to_ns(f, f->start_ticks - t);
}

static void print_start(FILE *out, const struct strc_file *f)
{
	time_t sec = (time_t)(f->start_unix_ns / 1000000000u);
	struct tm tm;
	char when[64] = "?";

	if (localtime_r(&sec, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(out, "  started   %s.%03u (clock at %llu ticks)\n", when,
		(unsigned)(f->start_unix_ns % 1000000000u / 1000000u),
		(unsigned long long)f->start_ticks);
}

static void print_features(FILE *out, const struct strc_file *f)
{
	fprintf(out, "  features ");
	if (f->features & STRC_F_DROP)
		fprintf(out, " drop mode;");
	if (f->features & STRC_F_RATE)
		fprintf(out, " rate throttling above %llu events/s per function;",
			(unsigned long long)f->rate_limit);
	if (f->features & STRC_F_APPROX)
		fprintf(out, " approximated times (sonde analyze);");
	if (!(f->features & (STRC_F_DROP | STRC_F_RATE | STRC_F_APPROX)))
		fprintf(out, " none;");
	fprintf(out, " chunks of %llu bytes\n", (unsigned long long)f->chunk_bytes);
}

static void print_calib(FILE *out, const struct strc_file *f)
{
	const struct sprof_calib *c = &f->calib;

	if (!f->has_calib) {
		fprintf(out, "  clock     %.3f ticks/ns (first estimate; no calibration)\n",
			f->ticks_per_ns);
		return;
	}
	fprintf(out, "  clock     %s, %.3f ticks/ns, read %.2f ns, period %.2f ns (%s)\n",
		c->clock_kind == SPROF_CLOCK_TSC ? "TSC" : "CLOCK_MONOTONIC", c->ticks_per_ns,
		c->clock_ns, c->dt_ns,
		f->has_calib & 2 ? "end-of-run calibration" : "start-of-run calibration");
	fprintf(out, "  probes    o_in %.2f ns, o_full %.2f ns, o_skip %.2f ns\n", c->o_in,
		c->o_full, c->o_skip);
}

/* How the process ended: PROC_END's reason and signal. */
static const char *end_text(uint32_t reason, uint32_t sig, char *buf, size_t cap)
{
	if (reason == SPROF_END_SIGNAL)
		snprintf(buf, cap, "signal %u", sig);
	else if (reason == SPROF_END_EXEC || reason == SPROF_END_EXIT)
		snprintf(buf, cap, "%s", reason == SPROF_END_EXEC ? "exec" : "exit");
	else
		snprintf(buf, cap, "reason %u", reason);
	return buf;
}

static void print_thread(FILE *out, const struct strc_file *f, const struct strc_thread *t)
{
	fprintf(out, "    thread %-4u tid %-8u %10zu events  %llu dropped  %llu flush%s (%.3f ns)"
		"  %s\n", t->index, t->tid, t->nev, (unsigned long long)t->dropped,
		(unsigned long long)t->flushes, t->flushes == 1 ? "" : "es",
		strc_ticks_to_ns(f, t->flush_ticks),
		t->complete ? "complete" : t->final ? "still running at the end (final)"
						    : "cut short");
}

/* "  mpi       rank 2 of 4 (MPI_COMM_WORLD), 2 communicators" and one line per communicator. */
static void print_comms(FILE *out, const struct strc_file *f)
{
	uint32_t i, j;

	for (i = 0; i < f->ncomms; i++)
		if (f->comms[i].flags & STRC_COMM_WORLD)
			break;
	if (!f->ncomms)
		return;
	if (i < f->ncomms)
		fprintf(out, "  mpi       rank %d of %u, %u communicator%s\n", f->comms[i].rank,
			f->comms[i].size, f->ncomms, f->ncomms == 1 ? "" : "s");
	else
		fprintf(out, "  mpi       %u communicator%s\n", f->ncomms, f->ncomms == 1 ? "" : "s");
	for (i = 0; i < f->ncomms; i++) {
		const struct strc_comm *c = &f->comms[i];

		fprintf(out, "    comm %-6u rank %d of %u%s", c->id, c->rank, c->size,
			c->flags & STRC_COMM_WORLD ? ", MPI_COMM_WORLD" : "");
		if (c->world) {
			fprintf(out, ", world ranks");
			for (j = 0; j < c->size && j < 16; j++)
				fprintf(out, " %d", c->world[j]);
			if (c->size > 16)
				fprintf(out, " ...");
		}
		fprintf(out, "\n");
	}
}

static void print_header(FILE *out, const char *path, const struct strc_file *f)
{
	char buf[64];
	const char *end = f->ended ? end_text(f->end_reason, f->end_signal, buf, sizeof(buf))
				   : "not recorded";
	uint32_t i;

	fprintf(out, "trace %s\n", path);
	fprintf(out, "  process   pid %u, parent %u\n", f->pid, f->ppid);
	fprintf(out, "  program   %s\n", f->exe[0] ? f->exe : "(unknown)");
	fprintf(out, "  command   %s\n", f->cmdline);
	print_start(out, f);
	print_features(out, f);
	print_calib(out, f);
	fprintf(out, "  end       %s\n", end);
	fprintf(out, "  complete  %s%s\n", f->truncated ? "no: " : "yes",
		f->truncated ? f->warning : "");
	fprintf(out, "  threads   %u\n", f->nthreads);
	for (i = 0; i < f->nthreads; i++)
		print_thread(out, f, &f->threads[i]);
	if (f->nsyncs)
		fprintf(out, "  sync      %u objects (--sync)\n", f->nsyncs);
	for (i = 0; i < f->nsyncs; i++)
		fprintf(out, "    sync object %-6u %-8s at 0x%llx, %s site 0x%llx\n", f->syncs[i].id,
			sync_kind_name(f->syncs[i].kind), (unsigned long long)f->syncs[i].addr,
			f->syncs[i].flags & SPROF_SYNC_F_INIT ? "init" : "first-use",
			(unsigned long long)f->syncs[i].site);
	print_comms(out, f);
}

/* ---- events ---- */

/* "to 1 tag 7 comm 0, 64 bytes"; a receive adds how long the call that completed it took. */
static void print_message(FILE *out, const struct strc_file *f, const struct strc_event *e)
{
	const struct strc_mpi *m = strc_mpi_of(f, e);

	fprintf(out, "%s %d tag %d comm %u, %llu bytes", e->type == STRC_MPI_SEND ? "to" : "from",
		m->peer, m->tag, e->id, (unsigned long long)m->bytes);
	if (e->type == STRC_MPI_RECV)
		fprintf(out, ", waited %.3f ns", strc_ticks_to_ns(f, m->wait));
}

/* "Allreduce comm 0 root -, sent 8 received 8 bytes, took 1200.000 ns" */
static void print_collective(FILE *out, const struct strc_file *f, const struct strc_event *e)
{
	const struct strc_mpi *m = strc_mpi_of(f, e);

	fprintf(out, "%s comm %u root ", strc_coll_name(m->op), e->id);
	if (m->peer < 0)
		fprintf(out, "-");
	else
		fprintf(out, "%d", m->peer);
	fprintf(out, ", sent %llu received %llu bytes, took %.3f ns", (unsigned long long)m->bytes,
		(unsigned long long)m->recvd, strc_ticks_to_ns(f, m->wait));
}

/* What follows the type on an event's line. */
static void print_detail(FILE *out, struct dumper *d, const struct strc_thread *t,
			 const struct strc_event *e)
{
	char buf[64];

	switch (e->type) {
	case STRC_ENTER: case STRC_EXIT: case STRC_REGION_BEGIN: case STRC_REGION_END:
		fputs(func_name(d, e->id), out);
		break;
	case STRC_PHASE:
		fputs(e->id == STRC_ID_NONE ? "(end of the phase)" : func_name(d, e->id), out);
		break;
	case STRC_USER:
		fprintf(out, "%s = %.17g", func_name(d, e->id), e->value);
		break;
	case STRC_COUNT:
		fprintf(out, "%s (%llu calls counted)", func_name(d, e->id),
			(unsigned long long)e->arg);
		break;
	case STRC_THREAD_BEGIN:
		fprintf(out, "tid %u", t->tid);
		if (e->arg)
			fprintf(out, ", create edge 0x%llx", (unsigned long long)e->arg);
		break;
	case STRC_THREAD_END: case STRC_JOIN:
		fprintf(out, "pthread 0x%llx", (unsigned long long)e->arg);
		break;
	case STRC_CREATE:
		fprintf(out, "edge 0x%llx", (unsigned long long)e->arg);
		break;
	case STRC_FLUSH:
		fprintf(out, "took %.3f ns", strc_ticks_to_ns(d->f, e->arg));
		break;
	case STRC_UNWIND:
		fprintf(out, "to depth %llu", (unsigned long long)e->arg);
		break;
	case STRC_DROPPED:
		fprintf(out, "%llu events", (unsigned long long)e->arg);
		break;
	case STRC_PROC_END:
		fputs(end_text((uint32_t)e->arg, (uint32_t)(e->arg >> 32), buf, sizeof(buf)), out);
		break;
	case STRC_SYNC_WAIT:
		fprintf(out, "sync object %u", e->id);
		break;
	case STRC_SYNC_DONE: case STRC_SYNC_RELEASE:
		fprintf(out, "sync object %u, seq %llu", e->id, (unsigned long long)e->arg);
		break;
	case STRC_MPI_SEND: case STRC_MPI_RECV:
		print_message(out, d->f, e);
		break;
	case STRC_MPI_COLL:
		print_collective(out, d->f, e);
		break;
	}
}

static void print_event(FILE *out, struct dumper *d, const struct strc_thread *t,
			const struct strc_event *e)
{
	unsigned indent = e->depth < MAX_INDENT ? e->depth : MAX_INDENT;

	fprintf(out, "%6u %18.3f  %*s%-12s ", t->index, ns_since_start(d->f, e->t), (int)indent * 2,
		"", strc_type_name(e->type));
	print_detail(out, d, t, e);
	fputc('\n', out);
}

/* The threads' next events, in a binary heap by (time, thread). */
struct merge {
	uint32_t *heap; /* indexes in f->threads */
	size_t *pos;    /* by thread: its next event */
	uint32_t n;
	const struct strc_file *f;
};

static int before(const struct merge *m, uint32_t a, uint32_t b)
{
	uint64_t ta = m->f->threads[a].ev[m->pos[a]].t, tb = m->f->threads[b].ev[m->pos[b]].t;

	return ta < tb || (ta == tb && a < b);
}

static void sift_down(struct merge *m, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, best = i, x;

		if (l < m->n && before(m, m->heap[l], m->heap[best]))
			best = l;
		if (l + 1 < m->n && before(m, m->heap[l + 1], m->heap[best]))
			best = l + 1;
		if (best == i)
			return;
		x = m->heap[i];
		m->heap[i] = m->heap[best];
		m->heap[best] = x;
		i = best;
	}
}

static void merge_init(struct merge *m, const struct strc_file *f, int only)
{
	uint32_t i;

	m->f = f;
	m->n = 0;
	m->heap = xmalloc((f->nthreads ? f->nthreads : 1) * sizeof(*m->heap));
	m->pos = xcalloc(f->nthreads, sizeof(*m->pos));
	for (i = 0; i < f->nthreads; i++)
		if (f->threads[i].nev && (only < 0 || f->threads[i].index == (uint32_t)only))
			m->heap[m->n++] = i;
	for (i = m->n / 2; i-- > 0;)
		sift_down(m, i);
}

/* The thread of the earliest next event, its cursor moved past it; UINT32_MAX at the end. */
static uint32_t merge_next(struct merge *m, size_t *at)
{
	uint32_t t;

	if (!m->n)
		return UINT32_MAX;
	t = m->heap[0];
	*at = m->pos[t]++;
	if (m->pos[t] == m->f->threads[t].nev)
		m->heap[0] = m->heap[--m->n];
	sift_down(m, 0);
	return t;
}

static void print_events(FILE *out, struct dumper *d)
{
	const struct strc_file *f = d->f;
	unsigned long long shown = 0, total = 0;
	struct merge m;
	uint32_t t, i;
	size_t at;

	merge_init(&m, f, d->o->thread);
	for (i = 0; i < m.n; i++)
		total += f->threads[m.heap[i]].nev;
	fprintf(out, "\n%6s %18s  %s\n", "thread", "time (ns)", "event");
	while ((!d->o->limit || shown < d->o->limit) && (t = merge_next(&m, &at)) != UINT32_MAX) {
		print_event(out, d, &f->threads[t], &f->threads[t].ev[at]);
		shown++;
	}
	if (shown < total)
		fprintf(out, "... %llu more events (--limit %llu)\n", total - shown, d->o->limit);
	free(m.heap);
	free(m.pos);
}

/* ---- files ---- */

static int has_thread(const struct strc_file *f, int index)
{
	uint32_t i;

	for (i = 0; i < f->nthreads; i++)
		if (f->threads[i].index == (uint32_t)index)
			return 1;
	return index < 0;
}

static int dump_file(const char *path, const struct dump_opts *o, struct symtab *st, int first)
{
	struct strc_file *f;
	struct dumper d = { .o = o, .st = st };
	char err[256];

	if (strc_read_file(path, &f, err, sizeof(err)) != 0)
		return error("%s: %s", path, err);
	if (f->truncated)
		warning("%s: %s", path, f->warning);
	if (!has_thread(f, o->thread))
		warning("%s: no thread %d in this trace", path, o->thread);
	d.f = f;
	d.names = xcalloc(f->nfuncs, sizeof(*d.names));
	d.checked = xcalloc(f->nmodules, 1);
	if (!first)
		putchar('\n');
	print_header(stdout, path, f);
	print_events(stdout, &d);
	free(d.names);
	free(d.checked);
	strc_free(f);
	return 0;
}

static int dump_dir(const char *dir, const struct dump_opts *o, struct symtab *st)
{
	size_t n, i;
	char **names = trace_files(dir, 0, &n);
	int ret = 0;

	if (!n) {
		free(names);
		return error("%s: no traces here (is it a run directory of 'sonde run --trace'?)",
			     dir);
	}
	for (i = 0; i < n; i++) {
		if (dump_file(names[i], o, st, i == 0))
			ret = -1;
		free(names[i]);
	}
	free(names);
	return ret;
}

/* ---- options ---- */

static int parse_number(const char *name, const char *v, unsigned long long max,
			unsigned long long *out)
{
	if (parse_u64(v, out) || *out > max)
		return error("trace dump: %s wants a number, not '%s'", name, v);
	return 0;
}

/* One option at argv[*i]: 0, or -1 (said why). */
static int parse_one(struct dump_opts *o, int argc, char **argv, int *i)
{
	unsigned long long n;
	const char *v;
	int r;

	if ((r = opt_value(argc, argv, i, "--limit", &v)))
		return r < 0 ? r : parse_number("--limit", v, ~0ull, &o->limit);
	if ((r = opt_value(argc, argv, i, "--thread", &v))) {
		if (r < 0 || parse_number("--thread", v, 0x7fffffff, &n))
			return -1;
		o->thread = (int)n;
		return 0;
	}
	return error("trace dump: unknown option '%s' (try 'sonde trace --help')", argv[*i]);
}

/* 0, 1 when help was asked for, -1 on a usage error (said why). */
static int parse_dump(struct dump_opts *o, int argc, char **argv)
{
	int i;

	*o = (struct dump_opts){ .thread = -1 };
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
		if (argv[i][0] == '-') {
			if (parse_one(o, argc, argv, &i))
				return -1;
		} else if (o->path) {
			return error("trace dump: one PATH only ('%s' and '%s')", o->path, argv[i]);
		} else {
			o->path = argv[i];
		}
	}
	if (!o->path)
		return error("trace dump: which trace? (a trace file or a run directory)");
	return 0;
}

static int cmd_dump(int argc, char **argv)
{
	struct dump_opts o;
	struct symtab *st;
	struct stat sb;
	int r = parse_dump(&o, argc, argv);

	if (r)
		return r > 0 ? (trace_usage(stdout), 0) : EXIT_USAGE;
	if (stat(o.path, &sb) != 0)
		return error("%s: no such file or directory", o.path), 1;
	unsetenv("DEBUGINFOD_URLS"); /* symbols come from the files at hand, never the network */
	st = symtab__new();
	r = S_ISDIR(sb.st_mode) ? dump_dir(o.path, &o, st) : dump_file(o.path, &o, st, 1);
	symtab__delete(st);
	if (fflush(stdout) != 0)
		return error("trace: cannot write the output"), 1;
	return r ? 1 : 0;
}

int cmd_trace(int argc, char **argv)
{
	if (argc < 2) {
		trace_usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		trace_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "dump"))
		return cmd_dump(argc - 1, argv + 1);
	error("trace: unknown subcommand '%s' (try 'sonde trace --help')", argv[1]);
	return EXIT_USAGE;
}
