/* SPDX-License-Identifier: MIT */
/*
 * sonde consult [TRACE|RUNDIR] [OPTIONS]: the Performance Consultant (docs/consult.md) — the
 * W3 search for bottlenecks (why, where, when) over a trace recorded with `sonde run --trace`,
 * replayed as time histograms, or live (`sonde consult PID`, `sonde consult -- PROGRAM`) over
 * dynamic instrumentation inserted and removed as the search goes (cmd_consult_live.c); both
 * through the same data-source interface.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmds.h"
#include "consult/engine.h"
#include "consult/hyp.h"
#include "consult/trace_source.h"
#include "consult/trigger.h"
#include "consult/view.h"
#include "consult_live.h"
#include "report.h"
#include "term.h"
#include "util.h"


static void usage(FILE *out)
{
	fprintf(out,
		"usage: sonde consult [TRACE|RUNDIR] [OPTIONS]   (default: ./sonde-out)\n"
		"       sonde consult [OPTIONS] PID\n"
		"       sonde consult [OPTIONS] -- PROGRAM ARGS\n"
		"  the automated bottleneck search (W3: why, where, when) over a trace recorded\n"
		"  with 'sonde run --trace', or live: a running process (attached, let go as it\n"
		"  was at the end) or a program started under the dynamic runtime; docs/consult.md\n"
		"  (the run directory of an MPI program: all its ranks' traces together; live,\n"
		"  '-- mpirun -np N PROGRAM' or the PID of mpirun: every rank attached, together)\n"
		"  --json FILE             the Search History Graph and the findings as JSON\n"
		"  --dot FILE              the graph as Graphviz DOT (and FILE.svg when dot is installed)\n"
		"  --threshold NAME=VALUE  change a hypothesis threshold (repeatable)\n"
		"  --file F.hyp            more hypotheses, or thresholds set again\n"
		"  --period MS             sample period of the replay (default 50)\n"
		"  --min-obs S             minimum observation time before true (default 0.25)\n"
		"  --sufficient S          sufficient observation time: give up after (default 1.0)\n"
		"  --min-fraction F        of an interval observed before concluding (default 0.2)\n"
		"  --hysteresis H          0 < H <= 1 (default 0.9)\n"
		"  --budget CPUS           predicted perturbation the tests may use (default 0.10)\n"
		"  --ignore X              test refinements of hypothesis or focus prefix X last\n"
		"  --priority X            test them first\n"
		"  --no-load-compensation  thresholds are not scaled by the time the program ran\n"
		"  --pid P                 the trace of process P in a run directory (one rank)\n"
		"  --trigger T             start the search when T fires: call:PROC (its first call)\n"
		"                          or METRIC>VALUE, METRIC<VALUE (per second, whole program)\n"
		"  --for DURATION          live: search this long (default: until the process ends\n"
		"                          or Ctrl-C)\n"
		"  -o, --output DIR        live, with a PROGRAM: the runtime's directory (sonde-out)\n"
		"  -q, --quiet             no progress lines\n");
}

static int parse_num(const char *opt, const char *v, double lo, double hi, double *out)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (errno || end == v || *end || !isfinite(x) || x < lo || x > hi)
		return error("consult: %s wants a number from %g to %g, not '%s'", opt, lo, hi, v);
	*out = x;
	return 0;
}

static void push(const char ***arr, uint32_t *n, const char *v)
{
	*arr = xrealloc(*arr, (*n + 1) * sizeof(char *));
	(*arr)[(*n)++] = v;
}

/* One numeric option of the search: 1 when it was one (0 not, -1 bad value). */
static int num_option(int argc, char **argv, int *i, struct co_opts *o)
{
	static const struct { const char *name; double lo, hi; size_t off; } nums[] = {
		{ "--min-obs", 0, 1e6, offsetof(struct cs_params, min_obs) },
		{ "--sufficient", 0, 1e6, offsetof(struct cs_params, suff_obs) },
		{ "--min-fraction", 0, 1, offsetof(struct cs_params, min_fraction) },
		{ "--hysteresis", 1e-6, 1, offsetof(struct cs_params, hyst) },
		{ "--budget", 0, 1e3, offsetof(struct cs_params, budget) },
	};
	const char *v;
	size_t k;
	int r;

	for (k = 0; k < sizeof(nums) / sizeof(nums[0]); k++) {
		r = opt_value(argc, argv, i, nums[k].name, &v);
		if (r)
			return r < 0 ? -1 : parse_num(nums[k].name, v, nums[k].lo, nums[k].hi,
						      (double *)((char *)&o->par + nums[k].off))
						    ? -1 : 1;
	}
	r = opt_value(argc, argv, i, "--period", &v);
	if (r)
		return r < 0 || parse_num("--period", v, 0.1, 1e6, &o->period_ms) ? -1 : 1;
	return 0;
}

static int str_option(int argc, char **argv, int *i, struct co_opts *o)
{
	const char *v;
	unsigned long long pid;
	int r;

	if ((r = opt_value(argc, argv, i, "--json", &o->json)) ||
	    (r = opt_value(argc, argv, i, "--dot", &o->dot)) ||
	    (r = opt_value(argc, argv, i, "--file", &o->file)) ||
	    (r = opt_value(argc, argv, i, "--output", &o->dir)) ||
	    (r = opt_value(argc, argv, i, "-o", &o->dir)))
		return r;
	if ((r = opt_value(argc, argv, i, "--trigger", &o->trigger))) {
		char err[256];

		if (r > 0 && cs_trigger_check(o->trigger, err, sizeof(err)) != 0)
			return error("consult: %s", err), -1;
		return r;
	}
	if ((r = opt_value(argc, argv, i, "--for", &v))) {
		if (r > 0 && (parse_time_span(v, &o->seconds) != 0 || !(o->seconds > 0)))
			return error("consult: --for needs a duration like 10s or 500ms, not '%s'", v),
			       -1;
		return r;
	}
	if ((r = opt_value(argc, argv, i, "--threshold", &v)))
		return r > 0 ? (push(&o->thresholds, &o->nthresholds, v), 1) : r;
	if ((r = opt_value(argc, argv, i, "--ignore", &v)))
		return r > 0 ? (push(&o->par.ignore, &o->par.nignore, v), 1) : r;
	if ((r = opt_value(argc, argv, i, "--priority", &v)))
		return r > 0 ? (push(&o->par.priority, &o->par.npriority, v), 1)
			     : r;
	if ((r = opt_value(argc, argv, i, "--pid", &v)) <= 0)
		return r;
	if (parse_u64(v, &pid) || !pid || pid > UINT32_MAX)
		return error("consult: --pid wants a process id, not '%s'", v), -1;
	o->pid = (uint32_t)pid;
	return r;
}

static int parse_args(int argc, char **argv, struct co_opts *o)
{
	int i, r;

	cs_params_default(&o->par);
	o->period_ms = 50;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 1;
		}
		if (!strcmp(a, "--")) {
			if (i + 1 >= argc)
				return error("consult: which program? (sonde consult -- PROGRAM ARGS)"),
				       -2;
			if (o->path)
				return error("consult: a trace, a PID or a program, not '%s' and a "
					     "program", o->path), -2;
			o->argv = argv + i + 1;
			break;
		}
		if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->quiet = 1;
			continue;
		}
		if (!strcmp(a, "--no-load-compensation")) {
			o->par.load_comp = 0;
			continue;
		}
		if ((r = num_option(argc, argv, &i, o)) || (r = str_option(argc, argv, &i, o))) {
			if (r < 0)
				return -2;
			continue;
		}
		if (a[0] == '-')
			return error("consult: unknown option '%s' (try --help)", a), -2;
		if (o->path)
			return error("consult: one trace or run directory, not '%s' too", a), -2;
		o->path = a;
	}
	if (!o->path && !o->argv)
		o->path = "sonde-out";
	if (!o->dir)
		o->dir = "sonde-out";
	return 0;
}

/* The pid-only argument names a live process: not built yet. */
static int is_pid(const char *s)
{
	struct stat sb;

	if (!*s || strspn(s, "0123456789") != strlen(s))
		return 0;
	return stat(s, &sb) != 0;
}

static void free_paths(char **paths, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

/* The traces PATH names: itself, the only one (or --pid's) of a directory, or all of them
 * (the ranks of an MPI run: search() checks). NULL with an error said. */
static char **trace_paths(const struct co_opts *o, size_t *n)
{
	struct stat sb;
	char **paths;

	if (stat(o->path, &sb) != 0)
		return error("consult: %s: no such trace file or run directory", o->path), NULL;
	if (!S_ISDIR(sb.st_mode)) {
		paths = xmalloc(sizeof(char *));
		paths[0] = xstrdup(o->path);
		*n = 1;
		return paths;
	}
	paths = trace_files(o->path, o->pid, n);
	if (!*n) {
		error("consult: %s holds no trace%s (record one with 'sonde run --trace')", o->path,
		      o->pid ? " of that process" : "");
		free(paths);
		return NULL;
	}
	return paths;
}

/* The world rank of an MPI rank's trace, -1 when it is not one. */
static int32_t world_rank_of(const struct strc_file *f)
{
	uint32_t i;

	for (i = 0; i < f->ncomms; i++)
		if (f->comms[i].flags & STRC_COMM_WORLD)
			return f->comms[i].rank;
	return -1;
}

/* Read the traces; several must be the ranks of an MPI run (put in rank order). */
static int read_traces(const struct co_opts *o, char **paths, size_t n, struct strc_file **f)
{
	char err[512];
	size_t i, j;

	for (i = 0; i < n; i++) {
		if (strc_read_file(paths[i], &f[i], err, sizeof(err)) != 0)
			return error("consult: %s: %s", paths[i], err);
		if (f[i]->truncated || f[i]->warning[0])
			warning("%s: %s", paths[i], f[i]->warning[0] ? f[i]->warning : "cut short");
		if (n > 1 && world_rank_of(f[i]) < 0)
			return error("consult: %s holds %zu traces: choose one with --pid P (only the "
				     "ranks of an MPI run are searched together)", o->path, n);
	}
	for (i = 1; i < n; i++) /* insertion sort by rank: paths move with their files */
		for (j = i; j > 0 && world_rank_of(f[j - 1]) > world_rank_of(f[j]); j--) {
			struct strc_file *x = f[j];
			char *p = paths[j];

			f[j] = f[j - 1];
			f[j - 1] = x;
			paths[j] = paths[j - 1];
			paths[j - 1] = p;
		}
	return 0;
}

struct hyp_lib *consult_hypotheses(const struct co_opts *o)
{
	struct hyp_lib *lib = hyp_lib_new();
	char path[PATH_MAX];
	uint32_t i;

	if (hyp_builtin_path(path, sizeof(path)) != 0) {
		error("consult: the built-in hypotheses are missing (looked for %s)", path);
		return hyp_lib_free(lib), NULL;
	}
	if (hyp_load_file(lib, path) != 0 || (o->file && hyp_load_file(lib, o->file) != 0)) {
		error("%s", lib->err);
		return hyp_lib_free(lib), NULL;
	}
	for (i = 0; i < o->nthresholds; i++)
		if (hyp_set_threshold(lib, o->thresholds[i]) != 0) {
			error("consult: %s", lib->err);
			return hyp_lib_free(lib), NULL;
		}
	for (i = 0; i < lib->nhyps; i++)
		if (lib->hyps[i].nmetrics > CS_MAX_TERMS) {
			error("consult: hypothesis %s reads more than %d metrics", lib->hyps[i].name,
			      CS_MAX_TERMS);
			return hyp_lib_free(lib), NULL;
		}
	return lib;
}

static uint32_t profile_cb(void *arg, const struct cs_focus *f, uint64_t t0, uint64_t t1,
			   struct ts_row *rows, uint32_t max, double *span)
{
	return trace_source_profile(arg, f, t0, t1, rows, max, span);
}

/* What the search used against full periodic sampling and the trace (seed 003 Figs. 4.2-4.7). */
struct volume {
	uint64_t samples, bytes, full_samples, trace_bytes, trace_events;
	uint32_t pairs, pairs_available;
};

static void volume_of(const struct cs_engine *e, const struct trace_source_info *ti,
		      char *const *paths, size_t npaths, double sample_bytes, struct volume *v)
{
	struct stat sb;
	uint64_t foci = 1 + ti->modules + ti->procedures + ti->call_paths + ti->sync_objects +
			ti->ranks + ti->comms + ti->peers + ti->tags;
	size_t i;

	memset(v, 0, sizeof(*v));
	v->samples = e->st.samples;
	v->bytes = (uint64_t)llround((double)e->st.samples * sample_bytes);
	v->pairs = e->st.foci_used;
	v->pairs_available = (uint32_t)(ti->metrics * foci * (ti->threads > 1 ? ti->threads + 1 : 1));
	v->full_samples = (uint64_t)v->pairs_available * e->st.steps;
	for (i = 0; i < npaths; i++)
		v->trace_bytes += stat(paths[i], &sb) == 0 ? (uint64_t)sb.st_size : 0;
	v->trace_events = ti->events;
}

static void print_volume(FILE *out, const struct volume *v, const struct trace_source_info *ti,
			 uint64_t steps)
{
	fprintf(out, "\nData: the search used %llu samples (%llu bytes at 12 bytes a sample) of %u "
		"(metric, focus) pairs, over %llu periods of %.0f ms\n",
		(unsigned long long)v->samples, (unsigned long long)v->bytes, v->pairs,
		(unsigned long long)steps, (double)ti->period_ns / 1e6);
	fprintf(out, "      full periodic sampling of all %u pairs: %llu samples (%.1fx more)\n",
		v->pairs_available, (unsigned long long)v->full_samples,
		v->samples ? (double)v->full_samples / (double)v->samples : 0.0);
	fprintf(out, "      the trace: %llu bytes, %llu events (%.1fx more than the search used)\n",
		(unsigned long long)v->trace_bytes, (unsigned long long)v->trace_events,
		v->bytes ? (double)v->trace_bytes / (double)v->bytes : 0.0);
}

static int write_json(const char *path, const struct cs_engine *e, const char *trace,
		      const struct volume *v, const struct trace_source_info *ti)
{
	FILE *out = fopen(path, "w");
	uint32_t i;

	if (!out)
		return error("consult: %s: %s", path, strerror(errno));
	fprintf(out, "{\"sonde_consult\":1,\"trace\":");
	json_str(out, trace);
	fprintf(out, ",\"ranks\":%u,\"run_ns\":%llu,\"period_ns\":%llu,\"params\":{\"min_obs_s\":%g,"
		"\"sufficient_obs_s\":%g,\"min_fraction\":%g,\"hysteresis\":%g,\"budget\":%g,"
		"\"load_compensation\":%s},\"thresholds\":{",
		ti->ranks, (unsigned long long)ti->run_ns, (unsigned long long)ti->period_ns, e->par.min_obs,
		e->par.suff_obs, e->par.min_fraction, e->par.hyst, e->par.budget,
		e->par.load_comp ? "true" : "false");
	for (i = 0; i < e->lib->nthresholds; i++) {
		fprintf(out, "%s", i ? "," : "");
		json_str(out, e->lib->thresholds[i].name);
		fprintf(out, ":%g", e->lib->thresholds[i].value);
	}
	fprintf(out, "},\"data\":{\"samples\":%llu,\"bytes\":%llu,\"pairs\":%u,"
		"\"pairs_available\":%u,\"full_sampling_samples\":%llu,\"trace_bytes\":%llu,"
		"\"trace_events\":%llu,\"steps\":%llu,\"cost_max\":%g},",
		(unsigned long long)v->samples, (unsigned long long)v->bytes, v->pairs,
		v->pairs_available, (unsigned long long)v->full_samples,
		(unsigned long long)v->trace_bytes, (unsigned long long)v->trace_events,
		(unsigned long long)e->st.steps, e->st.cost_max);
	cs_write_json_members(out, e);
	fprintf(out, "}\n");
	if (fclose(out) != 0)
		return error("consult: %s: %s", path, strerror(errno));
	return 0;
}

/* DOT, and SVG beside it when Graphviz's dot is installed. */
int consult_write_dot(const char *path, const struct cs_engine *e, const char *title)
{
	FILE *out = fopen(path, "w");
	char dot[PATH_MAX], svg[PATH_MAX + 8];
	const char *ext;
	pid_t pid;
	int status;

	if (!out)
		return error("consult: %s: %s", path, strerror(errno));
	cs_write_dot(out, e, title);
	if (fclose(out) != 0)
		return error("consult: %s: %s", path, strerror(errno));
	if (find_program("dot", dot, sizeof(dot)) != 0)
		return 0;
	ext = strrchr(path, '.');
	snprintf(svg, sizeof(svg), "%.*s.svg", ext && !strchr(ext, '/') ? (int)(ext - path)
								     : (int)strlen(path), path);
	pid = fork();
	if (pid == 0) {
		execl(dot, "dot", "-Tsvg", "-o", svg, path, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		warning("consult: dot could not draw %s", svg);
	return 0;
}

/*
 * The engine's callback: the state changes on stdout (unless -q), and where stdout is not the
 * terminal (-q, or redirected) a progress line on a terminal's stderr, after a second.
 */
struct co_progress {
	struct cs_view *view;
	struct progress prog;
	uint64_t run_ns;
	int show;
};

static void on_step(struct cs_engine *e, void *arg)
{
	struct co_progress *p = arg;

	cs_view_progress(e, p->view);
	if (p->show)
		progress_update(&p->prog, p->run_ns ? (double)e->now / (double)p->run_ns : -1,
				"replaying the trace");
}

static void close_traces(struct strc_file **f, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		strc_free(f[i]);
	free(f);
}

static int search(const struct co_opts *o, struct hyp_lib *lib, char **paths, size_t npaths)
{
	char err[512];
	struct strc_file **files = xcalloc(npaths, sizeof(*files)), *f;
	const char *trace = npaths > 1 ? o->path : paths[0];
	struct cs_source *src, *trig = NULL;
	struct cs_engine *e;
	struct cs_view view = { .quiet = o->quiet };
	FILE *out;
	struct co_progress pr = { 0 };
	struct trace_source_info ti;
	struct volume v;
	int rc = 0;

	if (read_traces(o, paths, npaths, files) != 0) {
		close_traces(files, npaths);
		return 1;
	}
	f = files[0];
	src = trace_source_new_run((const struct strc_file *const *)files, (uint32_t)npaths,
				   (uint64_t)llround(o->period_ms * 1e6), err, sizeof(err));
	if (!src) {
		close_traces(files, npaths);
		return error("consult: %s: %s", trace, err);
	}
	trace_source_info(src, &ti);
	out = term_fitted(stdout); /* every line fitted to a terminal */
	view.out = out;
	fprintf(out, "sonde consult: %s (%s), ", trace, f->exe && *f->exe ? f->exe : "?");
	if (ti.ranks)
		fprintf(out, "%u MPI ranks, ", ti.ranks);
	fprintf(out, "%.3f s, %u thread%s; samples every %.0f ms\n", (double)ti.run_ns / 1e9,
		ti.threads, ti.threads == 1 ? "" : "s", o->period_ms);
	if (o->trigger && !(trig = cs_trigger_new(src, o->trigger, 0, err, sizeof(err)))) {
		trace_source_free(src);
		close_traces(files, npaths);
		term_fitted_close(out, stdout);
		error("consult: %s", err);
		return 1;
	}
	e = cs_engine_new(lib, &o->par, trig ? trig : src);
	pr.view = &view;
	pr.run_ns = ti.run_ns;
	pr.show = o->quiet || !isatty(STDOUT_FILENO);
	fflush(out);
	fflush(stdout);
	progress_start(&pr.prog, "consult");
	e->progress = on_step;
	e->progress_arg = &pr;
	cs_view_progress(e, &view);
	cs_engine_run(e);
	progress_end(&pr.prog);
	cs_view_progress(e, &view);
	if (trig)
		fprintf(out, cs_trigger_fired(trig)
				     ? "trigger %s fired at %.3f s: times count from there\n"
				     : "trigger %s never fired: nothing searched\n",
			o->trigger, (double)cs_trigger_fired(trig) / 1e9);
	cs_view_tree(out, e);
	cs_view_explain(out, e, trig ? ti.run_ns - cs_trigger_fired(trig) : ti.run_ns,
			trig ? NULL : profile_cb, src);
	volume_of(e, &ti, paths, npaths, src->ops->sample_bytes, &v);
	print_volume(out, &v, &ti, e->st.steps);
	term_fitted_close(out, stdout);
	if (o->json)
		rc |= write_json(o->json, e, trace, &v, &ti);
	if (o->dot)
		rc |= consult_write_dot(o->dot, e, trace);
	cs_view_free(&view);
	cs_engine_free(e);
	cs_trigger_free(trig);
	trace_source_free(src);
	close_traces(files, npaths);
	return rc ? 1 : 0;
}

int cmd_consult(int argc, char **argv)
{
	struct co_opts o = { 0 };
	struct hyp_lib *lib = NULL;
	char **paths = NULL;
	size_t npaths = 0;
	int r = parse_args(argc, argv, &o), rc = 1;

	if (r)
		rc = r > 0 ? 0 : EXIT_USAGE;
	else if (!(lib = consult_hypotheses(&o)))
		rc = 1;
	else if (o.argv || is_pid(o.path))
		rc = consult_live(&o, lib);
	else if ((paths = trace_paths(&o, &npaths)))
		rc = search(&o, lib, paths, npaths) != 0; /* 1 for a bad trace, as documented */
	free_paths(paths, npaths);
	hyp_lib_free(lib);
	free(o.thresholds);
	free(o.par.ignore);
	free(o.par.priority);
	return rc;
}
