/* SPDX-License-Identifier: MIT */
/*
 * sonde analyze [PATH] [OPTIONS]: perturbation analysis of a trace (docs/analysis.md): the run's
 * time without the probes (MODELS §2.2), the events moved to where they would have happened
 * (§3: sequential, fork-join, event-based), reorderings, the approximated trace (-o), a Gantt
 * chart (--gantt), and the comparison of a full and a partial trace (--compare).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "analyze_mpi.h"
#include "cmds.h"
#include "gantt.h"
#include "perturb.h"
#include "report.h"
#include "symbols.h"
#include "trace_compare.h"
#include "term.h"
#include "util.h"

struct an_opts {
	const char *path, *out, *gantt, *full, *partial;
	int model;          /* enum pt_model, or -1: chosen by the number of threads */
	double t_uninstr;   /* ns, 0: not given */
	double alpha_ns;    /* 0: from the trace's calibration */
	int depth, verbose;
	uint32_t pid;
};

/* One trace under analysis. */
struct an_trace {
	const char *path;
	struct strc_file *f;
	struct pt_costs costs;
	struct pt_trace t;
	struct pt_totals tot;
	double tpn;
	struct symtab *st;
	char **names; /* by function index, resolved on first use */
};

static void analyze_usage(FILE *out)
{
	fprintf(out,
		"usage: sonde analyze [PATH] [OPTIONS]       (PATH: a trace.PID.strc file or a run\n"
		"                                             directory, default ./sonde-out)\n"
		"       sonde analyze --compare FULL PARTIAL [OPTIONS]\n"
		"  --model sequential|forkjoin|events   event-time model (default: events when the\n"
		"                            trace has several threads, else sequential)\n"
		"  --uninstrumented T        the run's time without sonde (1.234s, 1234ms, 12us,\n"
		"                            1234567ns; a plain number is seconds): AE, RE, RAE\n"
		"  --alpha NS                cost of one event record (default: o_full/2 of the trace)\n"
		"  -o OUT.strc               write the approximated trace\n"
		"  --gantt FILE.svg          Gantt chart, measured and approximated lanes per thread\n"
		"  --gantt-depth N           call levels drawn per lane (default 4, at most 16)\n"
		"  --pid P                   the process to analyze in a directory of several\n"
		"  --compare FULL PARTIAL    event time differences of two traces of one program,\n"
		"                            PARTIAL traced with a subset of FULL's instrumentation\n"
		"  -v                        throughput of the analysis on stderr\n");
}

static int parse_model(const char *v, int *m)
{
	if (!strcmp(v, "sequential"))
		*m = PT_SEQUENTIAL;
	else if (!strcmp(v, "forkjoin") || !strcmp(v, "fork-join"))
		*m = PT_FORKJOIN;
	else if (!strcmp(v, "events"))
		*m = PT_EVENTS;
	else
		return error("analyze: --model wants sequential, forkjoin or events, not '%s'", v);
	return 0;
}

/* A duration: a number with s, ms, us or ns after it; a plain number is seconds. */
static int parse_duration(const char *name, const char *v, double *ns)
{
	static const struct { const char *suffix; double scale; } units[] = {
		{ "", 1e9 }, { "s", 1e9 }, { "ms", 1e6 }, { "us", 1e3 }, { "ns", 1 },
	};
	char *end;
	double x = strtod(v, &end);
	size_t i;

	for (i = 0; end != v && i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].suffix) && x > 0 && isfinite(x)) {
			*ns = x * units[i].scale;
			return 0;
		}
	return error("analyze: %s wants a positive duration such as 1.5s, 1500ms or 1500000ns, "
		     "not '%s'", name, v);
}

static int parse_number(const char *name, const char *v, double lo, double hi, double *out)
{
	char *end;
	double x = strtod(v, &end);

	if (end == v || *end || !(x >= lo && x <= hi))
		return error("analyze: %s wants a number from %g to %g, not '%s'", name, lo, hi, v);
	*out = x;
	return 0;
}

/* One option at argv[*i]; 1 consumed, -1 error. */
static int parse_one(struct an_opts *o, int argc, char **argv, int *i)
{
	const char *v;
	double x;
	int r;

	if (!strcmp(argv[*i], "-v") || !strcmp(argv[*i], "--verbose"))
		return o->verbose = 1;
	if (!strcmp(argv[*i], "--compare")) {
		if (*i + 2 >= argc)
			return error("analyze: --compare wants two traces: FULL PARTIAL");
		o->full = argv[++*i];
		o->partial = argv[++*i];
		return 1;
	}
	if ((r = opt_value(argc, argv, i, "-o", &o->out)) || (r = opt_value(argc, argv, i, "--gantt", &o->gantt)))
		return r;
	if ((r = opt_value(argc, argv, i, "--model", &v)))
		return r < 0 ? r : parse_model(v, &o->model) ?: 1;
	if ((r = opt_value(argc, argv, i, "--uninstrumented", &v)))
		return r < 0 ? r : parse_duration("--uninstrumented", v, &o->t_uninstr) ?: 1;
	if ((r = opt_value(argc, argv, i, "--alpha", &v)))
		return r < 0 ? r : parse_number("--alpha", v, 1e-3, 1e9, &o->alpha_ns) ?: 1;
	if ((r = opt_value(argc, argv, i, "--gantt-depth", &v))) {
		if (r < 0 || parse_number("--gantt-depth", v, 1, 16, &x))
			return -1;
		o->depth = (int)x;
		return 1;
	}
	if ((r = opt_value(argc, argv, i, "--pid", &v))) {
		if (r < 0 || parse_number("--pid", v, 1, 4294967295.0, &x))
			return -1;
		o->pid = (uint32_t)x;
		return 1;
	}
	return error("analyze: unknown option '%s' (try 'sonde analyze --help')", argv[*i]);
}

static int parse_opts(struct an_opts *o, int argc, char **argv)
{
	int i;

	*o = (struct an_opts){ .path = "sonde-out", .model = -1, .depth = 4 };
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			analyze_usage(stdout);
			exit(0);
		}
		if (argv[i][0] != '-' || !argv[i][1]) {
			o->path = argv[i];
			continue;
		}
		if (parse_one(o, argc, argv, &i) < 0)
			return -1;
	}
	if (o->full && (o->out || o->gantt))
		return error("analyze: -o and --gantt apply to one trace, not to --compare");
	return 0;
}

/* ---- loading ---- */

static void free_paths(char **paths, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

/* The trace files PATH names: itself, or those of the directory. NULL after an error. */
static char **input_paths(const char *path, uint32_t pid, uint32_t *n)
{
	struct stat sb;
	char **paths;

	*n = 0;
	if (stat(path, &sb) != 0)
		return error("analyze: %s: no such trace file or run directory", path), NULL;
	if (!S_ISDIR(sb.st_mode)) {
		paths = xmalloc(sizeof(*paths));
		paths[(*n)++] = xstrdup(path);
		return paths;
	}
	{
		size_t k;

		paths = trace_files(path, pid, &k);
		*n = (uint32_t)k;
	}
	if (!*n) {
		if (pid)
			error("analyze: %s holds no trace of process %u", path, pid);
		else
			error("analyze: %s holds no trace (record one with 'sonde run --trace')",
			      path);
	}
	return paths;
}

/* Seconds of the clock c (CLOCK_MONOTONIC: wall; CLOCK_THREAD_CPUTIME_ID: this core's work). */
static double seconds(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct stopwatch {
	double wall, cpu;
};

static struct stopwatch stopwatch(void)
{
	return (struct stopwatch){ seconds(CLOCK_MONOTONIC), seconds(CLOCK_THREAD_CPUTIME_ID) };
}

static int load(struct an_trace *a, const char *path, const struct an_opts *o)
{
	char err[256];

	memset(a, 0, sizeof(*a));
	a->path = path;
	if (strc_read_file(path, &a->f, err, sizeof(err)) != 0)
		return error("analyze: %s: %s", path, err);
	if (a->f->truncated || a->f->warning[0])
		warning("%s: %s", path, a->f->warning[0] ? a->f->warning : "cut short");
	if (a->f->features & STRC_F_APPROX)
		warning("%s: its times are approximated already: its probes are removed twice", path);
	if (pt_costs_of(a->f, o->alpha_ns, &a->costs) != 0)
		return error("analyze: %s has no calibration record; give the probe cost with "
			     "--alpha NS", path);
	a->tpn = pt_ticks_per_ns(a->f);
	return 0;
}

/* Threads, edges and phases: the first part of the analysis proper. */
static int prepare(struct an_trace *a)
{
	if (pt_init(&a->t, a->f, &a->costs) != 0)
		return error("analyze: %s holds no event", a->path);
	return 0;
}

static void unload(struct an_trace *a)
{
	uint32_t i;

	if (a->names)
		for (i = 0; i < a->f->nfuncs; i++)
			free(a->names[i]);
	free(a->names);
	if (a->st)
		symtab__delete(a->st);
	pt_free(&a->t);
	if (a->f)
		strc_free(a->f);
}

static enum pt_model model_for(const struct an_opts *o, const struct strc_file *f)
{
	if (o->model >= 0)
		return (enum pt_model)o->model;
	return f->nthreads > 1 ? PT_EVENTS : PT_SEQUENTIAL;
}

/* ---- names ---- */

static const char *func_name(struct an_trace *a, uint32_t fi)
{
	const struct strc_func *fn = &a->f->funcs[fi];
	struct sym_info si = { fn->name && *fn->name ? fn->name : "?", "", "", 0 };
	int32_t m = fn->module;

	if (!a->names)
		a->names = xcalloc(a->f->nfuncs, sizeof(*a->names));
	if (a->names[fi])
		return a->names[fi];
	if (fn->kind == SPROF_FUNC) {
		if (!a->st)
			a->st = symtab__new();
		symtab__resolve(a->st, m >= 0 && (uint32_t)m < a->f->nmodules
					       ? a->f->modules[m].path : NULL,
				fn->vaddr, &si);
	}
	return a->names[fi] = xstrdup(si.func);
}

static const char *const *all_names(struct an_trace *a)
{
	uint32_t i;

	for (i = 0; i < a->f->nfuncs; i++)
		func_name(a, i);
	return (const char *const *)a->names;
}

static const char *model_name(enum pt_model m)
{
	return m == PT_SEQUENTIAL ? "sequential" : m == PT_FORKJOIN ? "fork-join" : "events";
}

/* ---- the report ---- */

static const char *ns_str(char *buf, size_t cap, double ticks, double tpn)
{
	double ns = ticks / tpn;

	if (ns < 0) {
		char tmp[32];

		snprintf(buf, cap, "-%s", fmt_time(tmp, sizeof(tmp), -ns));
		return buf;
	}
	return fmt_time(buf, cap, ns);
}

/* What the trace is of: the program, else its command line, else the file. */
static const char *program_of(const struct an_trace *a)
{
	if (a->f->exe && *a->f->exe)
		return a->f->exe;
	return a->f->cmdline && *a->f->cmdline ? a->f->cmdline : a->path;
}

static void print_header(const struct an_trace *a)
{
	const struct strc_file *f = a->f;
	uint64_t flushes = 0, flush_ticks = 0, dropped = 0;
	char b1[32], b2[32], b3[32], b4[32];
	uint32_t k;

	for (k = 0; k < f->nthreads; k++) {
		flushes += f->threads[k].flushes;
		flush_ticks += f->threads[k].flush_ticks;
		dropped += f->threads[k].dropped;
	}
	term_text(stdout, "trace %s: pid %u, %s", a->path, f->pid, program_of(a));
	term_text(stdout, "  %u thread%s, %llu events; probe cost per event record %s (%s), per "
			  "counted call %s, clock resolution %s",
	       f->nthreads, f->nthreads == 1 ? "" : "s", (unsigned long long)a->t.nevents,
	       ns_str(b1, sizeof(b1), a->t.c.alpha, a->tpn),
	       f->has_calib && a->t.c.alpha == f->calib.o_full / 2 * a->tpn ? "o_full/2" : "--alpha",
	       ns_str(b2, sizeof(b2), a->t.c.skip, a->tpn), ns_str(b3, sizeof(b3), a->t.c.dt, a->tpn));
	if (flushes)
		term_text(stdout, "  %llu buffer flushes took %s: removed", (unsigned long long)flushes,
		       ns_str(b4, sizeof(b4), (double)flush_ticks, a->tpn));
	if (dropped)
		term_text(stdout, "  %llu events dropped (drop mode): their probes are counted, "
				  "their times are lost", (unsigned long long)dropped);
}

static void print_errors(const struct pt_totals *tt, double tpn, double t_ns)
{
	double t = t_ns * tpn;
	struct pt_errors s = pt_errors(tt->t_m, tt->t_a_seq, t);
	struct pt_errors fj = pt_errors(tt->t_m, tt->t_a_fj, t);
	struct pt_errors ev = pt_errors(tt->t_m, tt->end, t);
	char b1[32], b2[32];

	term_text(stdout, "  uninstrumented T %s: AE %s, RE %.2f %%; RAE sequential %+.2f %%, "
			  "fork-join %+.2f %%, approximated trace %+.2f %%",
	       /* T as given: through ticks and back it could come out 999999.99 ns, "1000.0 us" */
	       ns_str(b1, sizeof(b1), t_ns, 1.0), ns_str(b2, sizeof(b2), s.ae, tpn), 100 * s.re,
	       100 * s.rae, 100 * fj.rae, 100 * ev.rae);
}

static void print_totals(const struct an_trace *a, const struct an_opts *o)
{
	const struct pt_totals tt = a->tot;
	char b1[32], b2[32], b3[32], b4[32];

	printf("\nTotal time (MODELS §2.2)\n");
	printf("  T_m %s, first to last event\n", ns_str(b1, sizeof(b1), tt.t_m, a->tpn));
	term_text(stdout, "  sequential  T_a %s   DP %s: the main thread's %llu probes",
	       ns_str(b1, sizeof(b1), tt.t_a_seq, a->tpn), ns_str(b2, sizeof(b2), tt.dp_seq, a->tpn),
	       (unsigned long long)tt.n_seq);
	term_text(stdout, "  fork-join   T_a %s   DP %s = DP^s %s (%llu probes) + DP^c %s (N_max "
			  "%llu, %u phase%s)",
	       ns_str(b1, sizeof(b1), tt.t_a_fj, a->tpn),
	       ns_str(b2, sizeof(b2), tt.dp_s + tt.dp_c, a->tpn),
	       ns_str(b3, sizeof(b3), tt.dp_s, a->tpn), (unsigned long long)tt.n_s,
	       ns_str(b4, sizeof(b4), tt.dp_c, a->tpn), (unsigned long long)tt.n_max,
	       a->t.nphases, a->t.nphases == 1 ? "" : "s");
	term_text(stdout, "  %-11s T_a %s   the approximated trace, first to last event",
	       model_name(a->t.model), ns_str(b1, sizeof(b1), tt.end, a->tpn));
	if (o->t_uninstr > 0)
		print_errors(&tt, a->tpn, o->t_uninstr);
}

static const struct term_col thread_cols[] = {
	{ "thread", 7, 0, TC_LEFT, 0 },	   { "tid", 8, 1, 0, 3 },	{ "events", 10, 1, 0, 0 },
	{ "measured end", 13, 1, 0, 0 }, { "approx. end", 13, 1, 0, 0 }, { "removed", 12, 1, 0, 2 },
	{ "simultaneous", 12, 1, 0, 1 },
};

static void print_threads(const struct an_trace *a)
{
	struct term_table t;
	char b[32];
	uint32_t k;

	term_text(stdout, "\nEvent times (model: %s)", model_name(a->t.model));
	term_table_init(&t, stdout, "  ", thread_cols, 7);
	term_table_head(&t);
	for (k = 0; k < a->t.nth; k++) {
		const struct pt_thread *th = &a->t.th[k];
		double tm, ta;

		if (!th->nev)
			continue;
		tm = (double)(th->ev[th->nev - 1].t - a->t.t0);
		ta = th->ta[th->nev - 1];
		term_cell(&t, "%u", th->index);
		term_cell(&t, "%u", a->f->threads[k].tid);
		term_cell(&t, "%zu", th->nev);
		term_cell(&t, "%s", ns_str(b, sizeof(b), tm, a->tpn));
		term_cell(&t, "%s", ns_str(b, sizeof(b), ta, a->tpn));
		term_cell(&t, "%s", ns_str(b, sizeof(b), tm - ta, a->tpn));
		term_cell(&t, "%llu", (unsigned long long)th->simultaneous);
		term_row(&t);
	}
}

/* One event of the reorderings listed, as text in out. */
static const char *event_str(char *out, size_t cap, struct an_trace *a, uint32_t thr, uint64_t i)
{
	const struct pt_thread *th = &a->t.th[thr];
	const struct strc_event *e = &th->ev[i];
	uint32_t fi = e->id < a->f->func_id_cap ? a->f->func_by_id[e->id] : PT_NONE;
	char b1[32], b2[32];

	snprintf(out, cap, "thread %u %s%s%s at %s (approx. %s)", th->index,
		 strc_type_name(e->type), fi != PT_NONE ? " " : "",
		 fi != PT_NONE ? func_name(a, fi) : "",
		 ns_str(b1, sizeof(b1), (double)(e->t - a->t.t0), a->tpn),
		 ns_str(b2, sizeof(b2), th->ta[i], a->tpn));
	return out;
}

static void print_order(struct an_trace *a)
{
	size_t i, creates = 0, locks = 0;
	char line[1024];
	uint32_t k;
	int n;

	for (i = 0; i < a->t.nedges; i++) {
		creates += a->t.edges[i].kind == PT_EDGE_CREATE;
		locks += a->t.edges[i].kind == PT_EDGE_LOCK;
	}
	n = snprintf(line, sizeof(line), "  happens-before edges: %zu create, %zu join", creates,
		     a->t.nedges - creates - locks);
	if (locks)
		n += snprintf(line + n, sizeof(line) - n, ", %zu synchronization (--sync)", locks);
	if (a->t.model == PT_EVENTS)
		n += snprintf(line + n, sizeof(line) - n,
			      "; dependents that waited for their source: %llu",
			      (unsigned long long)a->t.waited);
	if (a->t.broken)
		snprintf(line + n, sizeof(line) - n, "; %llu ignored (they closed a cycle)",
			 (unsigned long long)a->t.broken);
	term_text(stdout, "%s", line);
	n = snprintf(line, sizeof(line), "  reorderings: %llu across threads (and %llu ties within "
		     "dt)", (unsigned long long)a->t.reorders, (unsigned long long)a->t.ties);
	if (a->t.model == PT_EVENTS)
		snprintf(line + n, sizeof(line) - n,
			 "; %llu dependents whose local approximation fell before their source",
			 (unsigned long long)a->t.dep_before);
	term_text(stdout, "%s", line);
	for (k = 0; k < a->t.nlisted; k++) {
		const struct pt_reorder *r = &a->t.listed[k];

		term_text(stdout, "    %s", event_str(line, sizeof(line), a, r->thr_b, r->b));
		term_text(stdout, "      %s %s", r->kind == PT_RE_PAIR ? "now before" : "depends on",
			  event_str(line, sizeof(line), a, r->thr_a, r->a));
	}
}

/* ---- outputs ---- */

/* The approximated trace (pt_approx_file), feature STRC_F_APPROX. */
static int write_approx(const struct an_trace *a, const char *path)
{
	struct strc_file out;
	char err[256];
	int ret;

	pt_approx_file(&a->t, a->f, &out);
	ret = strc_write_file(path, &out, err, sizeof(err));
	pt_approx_free(&out);
	if (ret != 0)
		return error("analyze: %s: %s", path, err);
	return 0;
}

static int write_gantt(struct an_trace *a, const char *path, int depth)
{
	struct gantt_opts go = { .depth = depth, .width = 1400 };
	char title[512];
	FILE *out = fopen(path, "w");
	int ret;

	if (!out)
		return error("analyze: cannot write %s", path);
	snprintf(title, sizeof(title), "%s (pid %u): measured and approximated (%s model)",
		 program_of(a), a->f->pid, model_name(a->t.model));
	go.title = title;
	ret = gantt_write(out, a->f, &a->t, all_names(a), &go);
	if (fclose(out) != 0 || ret != 0)
		return error("analyze: cannot write %s", path);
	return 0;
}

/* The analysis proper (reading the file apart): events per second of CPU time on one core, so
 * that other work on the machine does not count; the wall time is shown too. */
static void throughput(const struct an_opts *o, uint64_t events, struct stopwatch since)
{
	struct stopwatch end = stopwatch();
	double cpu = end.cpu - since.cpu;

	if (o->verbose)
		fprintf(stderr, "sonde: analyze: %llu events in %.6f s (cpu; %.6f s wall): %.0f "
				"events/s\n",
			(unsigned long long)events, cpu, end.wall - since.wall,
			cpu > 0 ? (double)events / cpu : 0);
}

/* Model, reorderings and totals: the part whose speed matters. */
static void approximate(struct an_trace *a, enum pt_model m)
{
	pt_run(&a->t, m);
	pt_reorders(&a->t);
	pt_totals(&a->t, &a->tot);
}

/* On a terminal's stderr, after a second, by stage: reading, the model, writing. */
static struct progress prog;

static int analyze_one(const char *path, const struct an_opts *o, double done, double share)
{
	struct an_trace a;
	struct stopwatch t;
	int ret = 0;

	progress_update(&prog, done, "reading the trace");
	if (load(&a, path, o) != 0) {
		unload(&a);
		return 1;
	}
	t = stopwatch();
	if (prepare(&a) != 0) {
		unload(&a);
		return 1;
	}
	progress_update(&prog, done + share / 2, "approximating");
	approximate(&a, model_for(o, a.f));
	throughput(o, a.t.nevents, t);
	progress_end(&prog);
	print_header(&a);
	print_totals(&a, o);
	print_threads(&a);
	print_order(&a);
	fflush(stdout);
	if (o->out || o->gantt)
		progress_update(&prog, done + share * 0.9, "writing");
	if (o->out && write_approx(&a, o->out) != 0)
		ret = 1;
	if (o->gantt && write_gantt(&a, o->gantt, o->depth) != 0)
		ret = 1;
	progress_end(&prog);
	unload(&a);
	return ret;
}

/* ---- --compare ---- */

static const struct term_col cmp_cols[] = {
	{ "thread", 7, 0, TC_LEFT, 0 },	  { "ref.events", 10, 1, 0, 4 }, { "ref.time", 12, 1, 0, 2 },
	{ "events", 10, 1, 0, 5 },	  { "time", 12, 1, 0, 3 },	 { "matched", 10, 1, 0, 6 },
	{ "total delta", 12, 1, 0, 1 }, { "mean delta", 12, 1, 0, 0 }, { "percent", 8, 1, 0, 0 },
};

static void print_table(const char *title, const struct tc_table *tb)
{
	struct term_table t;
	char b[32];
	uint32_t k;

	term_text(stdout, "\n%s", title);
	term_table_init(&t, stdout, "  ", cmp_cols, 9);
	term_table_head(&t);
	for (k = 0; k <= tb->nrows; k++) {
		const struct tc_row *r = k < tb->nrows ? &tb->rows[k] : &tb->all;

		if (k < tb->nrows)
			term_cell(&t, "%u", r->thread);
		else
			term_cell(&t, "all");
		term_cell(&t, "%llu", (unsigned long long)r->ref_events);
		term_cell(&t, "%s", fmt_time(b, sizeof(b), r->ref_time));
		term_cell(&t, "%llu", (unsigned long long)r->an_events);
		term_cell(&t, "%s", fmt_time(b, sizeof(b), r->an_time));
		term_cell(&t, "%llu", (unsigned long long)r->matched);
		term_cell(&t, "%s", fmt_time(b, sizeof(b), r->total));
		term_cell(&t, "%s", fmt_time(b, sizeof(b), r->mean));
		term_cell(&t, "%.2f%%", r->percent);
		term_row(&t);
	}
}

static char *single_trace(const char *path)
{
	uint32_t n;
	char **paths = input_paths(path, 0, &n), *one;

	if (!paths)
		return NULL;
	if (n != 1) {
		error("analyze: %s holds %u traces; name one file for --compare", path, n);
		free_paths(paths, n);
		return NULL;
	}
	one = paths[0];
	free(paths);
	return one;
}

static int compare(const struct an_opts *o)
{
	char *fp = single_trace(o->full), *pp = fp ? single_trace(o->partial) : NULL;
	struct an_trace full, part;
	struct tc_result r;
	enum pt_model m;
	struct stopwatch t;
	int ret = 1;

	memset(&full, 0, sizeof(full));
	memset(&part, 0, sizeof(part));
	if (!pp || load(&full, fp, o) != 0 || load(&part, pp, o) != 0)
		goto out;
	m = o->model >= 0 ? (enum pt_model)o->model
			  : full.f->nthreads > 1 || part.f->nthreads > 1 ? PT_EVENTS : PT_SEQUENTIAL;
	t = stopwatch();
	if (prepare(&full) != 0 || prepare(&part) != 0)
		goto out;
	pt_run(&full.t, m);
	pt_run(&part.t, m);
	tc_compare(full.f, &full.t, part.f, &part.t, &r);
	throughput(o, full.t.nevents + part.t.nevents, t);
	term_text(stdout, "compare %s (reference, %llu events) with %s (%llu events), model %s", fp,
	       (unsigned long long)full.t.nevents, pp, (unsigned long long)part.t.nevents,
	       model_name(m));
	print_table("Approximated event times: |t_a(full) - t_a(partial)|", &r.approx);
	print_table("Measured event times: |t_m(full) - t_m(partial)|", &r.measured);
	if (r.measured.all.mean > 0)
		printf("\n  the model removed %.1f %% of the mean event delta\n",
		       100 * (1 - r.approx.all.mean / r.measured.all.mean));
	if (r.unmatched || r.ref_only_threads)
		term_text(stdout, "  %llu events of the partial trace have no counterpart; %u threads "
				  "only in the full trace", (unsigned long long)r.unmatched, r.ref_only_threads);
	tc_free(&r);
	ret = 0;
out:
	unload(&full);
	unload(&part);
	free(fp);
	free(pp);
	return ret;
}

/* The traces of PATH: those of an MPI run's ranks together (with the event model), the others
 * one by one. */
static int analyze_traces(char **paths, uint32_t n, const struct an_opts *o)
{
	char *done = xcalloc(n ? n : 1, 1);
	int ret = 0, sep = 0;
	uint32_t i;

	if (n > 1 && (o->model < 0 || o->model == PT_EVENTS)) {
		ret = analyze_mpi(paths, n, o->alpha_ns, done);
		sep = ret >= 0;
		ret = ret > 0;
	}
	progress_start(&prog, "analyze");
	for (i = 0; i < n; i++) {
		if (done[i])
			continue;
		if (sep++)
			printf("\n");
		fflush(stdout);
		ret |= analyze_one(paths[i], o, (double)i / n, 1.0 / n);
	}
	progress_end(&prog);
	free(done);
	return ret;
}

int cmd_analyze(int argc, char **argv)
{
	struct an_opts o;
	char **paths;
	uint32_t n;
	int ret = 0;

	if (parse_opts(&o, argc, argv))
		return EXIT_USAGE;
	unsetenv("DEBUGINFOD_URLS"); /* symbols come from the files at hand, never the network */
	if (o.full)
		return compare(&o);
	if (!(paths = input_paths(o.path, o.pid, &n)))
		return 1;
	if (n > 1 && (o.out || o.gantt)) {
		error("analyze: %s holds %u traces; choose one with --pid P for -o and --gantt",
		      o.path, n);
		free_paths(paths, n);
		return EXIT_USAGE;
	}
	ret = analyze_traces(paths, n, &o);
	free_paths(paths, n);
	if (fflush(stdout) != 0)
		return error("analyze: cannot write the output"), 1;
	return ret;
}
