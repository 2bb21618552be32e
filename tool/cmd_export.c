/* SPDX-License-Identifier: MIT */
/* sonde export --chrome|--otf2 [-o OUT] [PATH]: a run's traces for other tools (docs/export.md). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmds.h"
#include "export.h"
#include "symbols.h"
#include "term.h"
#include "util.h"

enum ex_format { EX_CHROME = 1, EX_OTF2 };

struct ex_opts {
	const char *path, *out;
	enum ex_format format;
};

static void export_usage(FILE *out)
{
	fprintf(out,
		"usage: sonde export --chrome|--otf2 [-o OUT] [PATH]\n"
		"  PATH       a run directory of 'sonde run --trace' or one trace.PID.strc file\n"
		"             (default ./sonde-out)\n"
		"  --chrome   Chrome trace-event JSON for Perfetto and chrome://tracing;\n"
		"             OUT is a file, '-' for stdout (default RUNDIR/trace.json)\n"
		"  --otf2     an OTF2 archive (Vampir, otf2-print): OUT/traces.otf2 and its files\n"
		"             (default OUT: RUNDIR/otf2)\n");
}

static int parse_opts(struct ex_opts *o, int argc, char **argv)
{
	int i, r;

	*o = (struct ex_opts){ .path = "sonde-out" };
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			export_usage(stdout);
			exit(0);
		}
		if (!strcmp(argv[i], "--chrome") || !strcmp(argv[i], "--otf2")) {
			if (o->format)
				return error("export: choose one of --chrome and --otf2");
			o->format = argv[i][2] == 'c' ? EX_CHROME : EX_OTF2;
		} else if ((r = opt_value(argc, argv, &i, "-o", &o->out)) != 0) {
			if (r < 0)
				return -1;
		} else if (argv[i][0] != '-') {
			o->path = argv[i];
		} else {
			return error("export: unknown option '%s' (try 'sonde export --help')", argv[i]);
		}
	}
	if (!o->format)
		return error("export: say which format: --chrome or --otf2");
	return 0;
}

/* Names, source files and lines of a process's functions and regions. */
static void name_funcs(struct ex_proc *p, struct symtab *st)
{
	const struct strc_file *f = p->f;
	uint32_t i;

	p->names = xcalloc(f->nfuncs, sizeof(*p->names));
	p->files = xcalloc(f->nfuncs, sizeof(*p->files));
	p->lines = xcalloc(f->nfuncs, sizeof(*p->lines));
	for (i = 0; i < f->nfuncs; i++) {
		const struct strc_func *fn = &f->funcs[i];
		struct sym_info si = { fn->name ? fn->name : "", "", "", 0 };

		if (fn->kind == SPROF_FUNC)
			symtab__resolve(st, fn->module >= 0 && (uint32_t)fn->module < f->nmodules
						    ? f->modules[fn->module].path : NULL,
					fn->vaddr, &si);
		p->names[i] = si.func;
		p->files[i] = si.path;
		p->lines[i] = si.line;
	}
}

/* When each thread ended, and whether a JOIN waited for it (thread create/join edges). */
static void link_threads(struct ex_proc *p)
{
	const struct strc_file *f = p->f;
	uint32_t i, k;
	size_t j;

	p->end_t = xcalloc(f->nthreads, sizeof(*p->end_t));
	p->joined = xcalloc(f->nthreads, 1);
	for (i = 0; i < f->nthreads; i++)
		for (j = 0; j < f->threads[i].nev; j++)
			if (f->threads[i].ev[j].type == STRC_THREAD_END)
				p->end_t[i] = f->threads[i].ev[j].t;
	for (i = 0; i < f->nthreads; i++)
		for (j = 0; j < f->threads[i].nev; j++) {
			const struct strc_event *e = &f->threads[i].ev[j];

			if (e->type == STRC_JOIN && (k = ex_joined(p, e->arg, e->t)) != EX_NONE)
				p->joined[k] = 1;
		}
}

const char *ex_base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

uint32_t ex_func(const struct ex_proc *p, uint32_t id)
{
	return id < p->f->func_id_cap ? p->f->func_by_id[id] : EX_NONE;
}

const char *ex_name(const struct ex_proc *p, uint32_t id)
{
	uint32_t i = ex_func(p, id);

	return i == EX_NONE ? "?" : p->names[i];
}

double ex_ns(const struct ex_input *in, const struct ex_proc *p, uint64_t t)
{
	return t >= in->base ? strc_ticks_to_ns(p->f, t - in->base)
			     : -strc_ticks_to_ns(p->f, in->base - t);
}

uint32_t ex_created(const struct ex_proc *p, uint64_t edge)
{
	uint32_t i;

	for (i = 0; edge && i < p->f->nthreads; i++)
		if (p->f->threads[i].edge == edge)
			return i;
	return EX_NONE;
}

uint32_t ex_joined(const struct ex_proc *p, uint64_t self, uint64_t t)
{
	uint32_t i, best = EX_NONE;

	for (i = 0; i < p->f->nthreads; i++)
		if (p->end_t[i] && p->f->threads[i].self == self && p->end_t[i] <= t &&
		    (best == EX_NONE || p->end_t[i] > p->end_t[best]))
			best = i;
	return best;
}

static int read_trace(struct ex_input *in, const char *path, struct symtab *st)
{
	struct ex_proc *p;
	char err[256];
	struct strc_file *f;
	uint32_t i;

	if (strc_read_file(path, &f, err, sizeof(err)) != 0)
		return error("%s: %s", path, err);
	if (f->truncated || f->warning[0])
		warning("%s: %s", path, f->warning[0] ? f->warning : "cut short");
	in->procs = xrealloc(in->procs, (in->nprocs + 1) * sizeof(*in->procs));
	p = &in->procs[in->nprocs++];
	memset(p, 0, sizeof(*p));
	p->f = f;
	name_funcs(p, st);
	link_threads(p);
	for (i = 0; i < f->nthreads; i++) {
		const struct strc_thread *t = &f->threads[i];

		if (t->nev && (!in->base || t->ev[0].t < in->base))
			in->base = t->ev[0].t;
		if (t->nev && t->ev[t->nev - 1].t > in->last)
			in->last = t->ev[t->nev - 1].t;
	}
	return 0;
}

/* Which process forked which: a process whose ppid is another's pid. */
static void link_procs(struct ex_input *in)
{
	uint32_t i, j;

	for (i = 0; i < in->nprocs; i++) {
		in->procs[i].parent = EX_NONE;
		for (j = 0; j < in->nprocs; j++)
			if (j != i && in->procs[j].f->pid == in->procs[i].f->ppid)
				in->procs[i].parent = j;
	}
}

/* The directory of a file's path. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *d;

	if (!slash)
		return xstrdup(".");
	d = xstrdup(path);
	d[slash == path ? 1 : slash - path] = 0;
	return d;
}

/* The MPI events of the traces matched across them (messages, collectives, communicators). */
static int match_mpi(struct ex_input *in)
{
	char err[256];
	uint32_t i;

	in->files = xcalloc(in->nprocs ? in->nprocs : 1, sizeof(*in->files));
	for (i = 0; i < in->nprocs; i++)
		in->files[i] = in->procs[i].f;
	if (!mm_any(in->files, in->nprocs))
		return 0;
	in->mpi = xcalloc(1, sizeof(*in->mpi));
	if (mm_match(in->mpi, in->files, in->nprocs, err, sizeof(err)) == 0)
		return 0;
	free(in->mpi);
	in->mpi = NULL;
	return error("%s: %s", in->rundir, err);
}

uint32_t ex_rank_proc(const struct ex_input *in, int32_t r)
{
	uint32_t i;

	for (i = 0; in->mpi && r >= 0 && i < in->nprocs; i++)
		if (in->mpi->rank[i] == r)
			return i;
	return EX_NONE;
}

/* On a terminal's stderr, after a second: reading the traces is the first half, writing the
 * second (by stage, not by event: the writers are one pass each). */
static struct progress prog;

static int load_input(struct ex_input *in, const char *path, struct symtab *st)
{
	struct stat sb;
	char **paths = NULL;
	uint32_t n = 0, i;
	int ret = 0;

	memset(in, 0, sizeof(*in));
	if (stat(path, &sb) != 0)
		return error("%s: no such run directory or trace file", path);
	if (S_ISDIR(sb.st_mode)) {
		in->rundir = xstrdup(path);
		size_t k;

		paths = trace_files(path, 0, &k);
		n = (uint32_t)k;
		if (!n)
			return error("%s: no traces here (record them with 'sonde run --trace')", path);
	} else {
		in->rundir = dir_of(path);
		paths = xmalloc(sizeof(*paths));
		paths[n++] = xstrdup(path);
	}
	for (i = 0; i < n && !ret; i++) {
		progress_update(&prog, 0.5 * i / n, "reading the traces");
		ret = read_trace(in, paths[i], st);
	}
	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	link_procs(in);
	return ret ? ret : match_mpi(in);
}

static void free_input(struct ex_input *in)
{
	uint32_t i;

	for (i = 0; i < in->nprocs; i++) {
		struct ex_proc *p = &in->procs[i];

		free(p->names);
		free(p->files);
		free(p->lines);
		free(p->end_t);
		free(p->joined);
		strc_free(p->f);
	}
	if (in->mpi)
		mm_free(in->mpi);
	free(in->mpi);
	free(in->files);
	free(in->procs);
	free(in->rundir);
}

static int write_chrome(const struct ex_input *in, const char *out)
{
	char path[4096];
	FILE *fp;
	int ret;

	if (out && !strcmp(out, "-"))
		return export_chrome(in, stdout) || fflush(stdout) != 0
			       ? error("export: cannot write the output")
			       : 0;
	if (!out)
		snprintf(path, sizeof(path), "%s/trace.json", in->rundir);
	else
		snprintf(path, sizeof(path), "%s", out);
	fp = fopen(path, "w");
	if (!fp)
		return error("export: cannot create %s: %m", path);
	ret = export_chrome(in, fp);
	if (fclose(fp) != 0 || ret)
		return error("export: cannot write %s (disk full?)", path);
	progress_end(&prog);
	fprintf(stderr, "sonde: wrote %s\n", path);
	return 0;
}

static int write_otf2(const struct ex_input *in, const char *out)
{
	char dir[4096];

	if (out)
		snprintf(dir, sizeof(dir), "%s", out);
	else
		snprintf(dir, sizeof(dir), "%s/otf2", in->rundir);
	if (export_otf2(in, dir))
		return -1;
	progress_end(&prog);
	fprintf(stderr, "sonde: wrote %s/traces.otf2\n", dir);
	return 0;
}

int cmd_export(int argc, char **argv)
{
	struct ex_opts o;
	struct ex_input in;
	struct symtab *st;
	int ret;

	if (parse_opts(&o, argc, argv))
		return EXIT_USAGE;
	unsetenv("DEBUGINFOD_URLS"); /* symbols come from the files at hand, never the network */
	st = symtab__new();
	progress_start(&prog, "export");
	ret = load_input(&in, o.path, st);
	progress_update(&prog, 0.5, o.format == EX_CHROME ? "writing Chrome JSON" : "writing OTF2");
	if (!ret)
		ret = o.format == EX_CHROME ? write_chrome(&in, o.out) : write_otf2(&in, o.out);
	progress_end(&prog);
	free_input(&in);
	symtab__delete(st);
	return ret ? 1 : 0;
}
