/* SPDX-License-Identifier: MIT */
/*
 * sonde run [OPTIONS] -- PROGRAM ARGS...: run a program with the runtime preloaded and collect
 * one profile per measured process in a run directory. The program's streams are its own; its
 * exit status (or the signal that killed it) becomes sonde's.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmds.h"
#include "dyn/client.h"
#include "dyn/launch.h"
#include "elfinfo.h"
#include "run_io.h"
#include "symbols.h"
#include "util.h"

#define MAX_GLOBS 64

struct run_opts {
	const char *dir;
	const char *depth, *throttle;
	const char *trace_buffer, *trace_rate;
	const char *sample; /* --sample[=HZ]: the rate, "" for the default */
	int cpu, follow_exec, verbose, precise, trace, trace_drop, dynamic;
	int sync; /* --sync: pthread synchronization (runtime/sync_wrap.c) */
	int insitu; /* --insitu: the probes' price measured in situ (runtime/insitu.c) */
	int no_insitu; /* --no-insitu: not even as --mpi-comp's default */
	int mpi, mpi_comp; /* --mpi (or detected), --mpi-comp: libsonde-mpi.so (docs/mpi.md) */
	const char *include[MAX_GLOBS], *exclude[MAX_GLOBS];
	const char *include_file[MAX_GLOBS], *exclude_file[MAX_GLOBS];
	int ninclude, nexclude, ninclude_file, nexclude_file;
	struct run_io rio;
	char **argv; /* the program and its arguments */
};

static void run_usage(FILE *out)
{
	fprintf(out,
		"usage: sonde run [OPTIONS] -- PROGRAM [ARGS...]\n"
		"  -o, --output DIR       run directory (default ./sonde-out)\n"
		"  --cpu                  also measure thread CPU time\n"
		"  --depth N              record calls up to N frames deep\n"
		"  --throttle CALLS:USEC  stop measuring a function after CALLS calls at under USEC\n"
		"                         per call (default 100000:10); 'off' disables\n"
		"  --include GLOB         measure only functions matching (repeatable)\n"
		"  --exclude GLOB         do not measure functions matching (repeatable)\n"
		"  --include-file GLOB    measure only functions from source files matching\n"
		"  --exclude-file GLOB    do not measure functions from source files matching\n"
		"  --follow-exec          keep measuring programs that this one execs\n"
		"  --precise              ordered exit timestamps (rdtscp): short functions' times\n"
		"                         come out closer to the truth, each call costs more\n"
		"  --dynamic              a program built without instrumentation: its functions are\n"
		"                         patched at start (docs/dynamic.md); --include selects them\n"
		"  --trace                record an event trace (trace.PID.strc) instead of a profile\n"
		"  --trace-buffer SIZE    per-thread trace buffer, e.g. 4M (default 1M); implies --trace\n"
		"  --trace-drop           when a thread's buffer is full, drop (and count) events\n"
		"                         instead of flushing it to the file\n"
		"  --trace-rate N         above N events per second of one function, record counts\n"
		"                         instead of events until the rate falls (default: off);\n"
		"                         implies --trace\n"
		"  --sync                 measure pthread locks, condition variables, barriers,\n"
		"                         semaphores and joins, and compensate waits (docs/runtime.md);\n"
		"                         implies --insitu unless --no-insitu or --trace\n"
		"  --insitu               measure what a probe pair costs inside the program's own\n"
		"                         code (each thread's hottest leaf function) and compensate\n"
		"                         with that price (docs/measurement.md); on by default with\n"
		"                         --sync and --mpi-comp (not with --trace)\n"
		"  --no-insitu            calibrated prices only, also with --sync or --mpi-comp:\n"
		"                         every call of each thread's hottest leaf measured\n"
		RUN_IO_USAGE
		"  --mpi                  load the MPI wrappers (libsonde-mpi.so) even where the\n"
		"                         program does not reference MPI_Init itself (docs/mpi.md)\n"
		"  --mpi-comp             MPI parallel overhead compensation: delays ride on every\n"
		"                         message (every rank must run with it); implies --mpi, and\n"
		"                         --insitu unless --no-insitu or --trace (docs/mpi.md)\n"
		"  --sample[=HZ]          statistical sampling of every thread's CPU time at HZ\n"
		"                         (default 1000): works on programs built without\n"
		"                         instrumentation too; with it, both profiles side by side\n"
		"  -v, --verbose          say where the profiles went\n");
}

static int add_glob(const char **list, int *n, const char *v)
{
	if (*n == MAX_GLOBS)
		return error("run: too many globs (at most %d)", MAX_GLOBS);
	list[(*n)++] = v;
	return 0;
}

/* One option at argv[*i]: 1 consumed, 0 not an option of ours, -1 error. */
static int parse_one(struct run_opts *o, int argc, char **argv, int *i)
{
	const char *v;
	int r;

	if (!strcmp(argv[*i], "--cpu"))
		return o->cpu = 1;
	if (!strcmp(argv[*i], "--follow-exec"))
		return o->follow_exec = 1;
	if (!strcmp(argv[*i], "--precise"))
		return o->precise = 1;
	if (!strcmp(argv[*i], "--trace"))
		return o->trace = 1;
	if (!strcmp(argv[*i], "--dynamic"))
		return o->dynamic = 1;
	if (!strcmp(argv[*i], "--sync"))
		return o->sync = 1;
	if (!strcmp(argv[*i], "--insitu"))
		return o->insitu = 1;
	if (!strcmp(argv[*i], "--no-insitu"))
		return o->no_insitu = 1;
	if (!strcmp(argv[*i], "--mpi"))
		return o->mpi = 1;
	if (!strcmp(argv[*i], "--mpi-comp"))
		return o->mpi_comp = o->mpi = 1;
	if (!strcmp(argv[*i], "--trace-drop"))
		return o->trace_drop = o->trace = 1;
	if (!strcmp(argv[*i], "-v") || !strcmp(argv[*i], "--verbose"))
		return o->verbose = 1;
	if ((r = run_io_option(&o->rio, argc, argv, i)))
		return r;
	if (!strcmp(argv[*i], "--sample") || !strncmp(argv[*i], "--sample=", 9)) {
		o->sample = argv[*i][8] ? argv[*i] + 9 : "";
		return 1;
	}
	if ((r = opt_value(argc, argv, i, "--trace-buffer", &o->trace_buffer)) ||
	    (r = opt_value(argc, argv, i, "--trace-rate", &o->trace_rate)))
		return r < 0 ? r : (o->trace = 1);
	if ((r = opt_value(argc, argv, i, "-o", &o->dir)) ||
	    (r = opt_value(argc, argv, i, "--output", &o->dir)) ||
	    (r = opt_value(argc, argv, i, "--depth", &o->depth)) ||
	    (r = opt_value(argc, argv, i, "--throttle", &o->throttle)))
		return r;
	if ((r = opt_value(argc, argv, i, "--include-file", &v)) != 0)
		return r < 0 ? r : add_glob(o->include_file, &o->ninclude_file, v) ?: 1;
	if ((r = opt_value(argc, argv, i, "--exclude-file", &v)) != 0)
		return r < 0 ? r : add_glob(o->exclude_file, &o->nexclude_file, v) ?: 1;
	if ((r = opt_value(argc, argv, i, "--include", &v)) != 0)
		return r < 0 ? r : add_glob(o->include, &o->ninclude, v) ?: 1;
	if ((r = opt_value(argc, argv, i, "--exclude", &v)) != 0)
		return r < 0 ? r : add_glob(o->exclude, &o->nexclude, v) ?: 1;
	return 0;
}

static int check_values(const struct run_opts *o)
{
	unsigned long long n;
	double us;
	char extra;

	if (o->depth && (parse_u64(o->depth, &n) || n == 0 || n > 65536))
		return error("run: --depth wants a number from 1 to 65536, not '%s'", o->depth);
	if (o->throttle && strcmp(o->throttle, "off") != 0 &&
	    (sscanf(o->throttle, "%llu:%lf%c", &n, &us, &extra) != 2 || n == 0 || us <= 0))
		return error("run: --throttle wants CALLS:USEC (e.g. 100000:10) or 'off', not '%s'",
			     o->throttle);
	if (o->trace_buffer && (parse_size(o->trace_buffer, &n) || n < 65536 || n > (1ull << 32)))
		return error("run: --trace-buffer wants a size from 64K to 4G, not '%s'",
			     o->trace_buffer);
	if (o->sample && *o->sample && (parse_u64(o->sample, &n) || n == 0 || n > 10000))
		return error("run: --sample wants a rate from 1 to 10000 Hz, not '%s'", o->sample);
	if (o->sample && o->trace)
		return error("run: --sample records into the profile: it does not go with --trace");
	if (o->insitu && o->trace)
		return error("run: --insitu prices a profile's probes: it does not go with --trace");
	if (o->insitu && o->no_insitu)
		return error("run: --insitu and --no-insitu: one or the other");
	if (o->trace_rate && (parse_u64(o->trace_rate, &n) || n == 0))
		return error("run: --trace-rate wants a positive number of events per second, "
			     "not '%s'", o->trace_rate);
	return run_io_check(&o->rio, o->trace);
}

static int parse_opts(struct run_opts *o, int argc, char **argv)
{
	int i, r;

	o->dir = "sonde-out";
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			run_usage(stdout);
			exit(0);
		}
		r = parse_one(o, argc, argv, &i);
		if (r < 0)
			return -1;
		if (r == 0 && argv[i][0] == '-')
			return error("run: unknown option '%s' (try 'sonde run --help')", argv[i]);
		if (r == 0)
			break; /* the program, without "--" */
	}
	if (i >= argc)
		return error("run: no program given (sonde run -- ./app args)");
	o->argv = argv + i;
	if (check_values(o) < 0)
		return -1;
	/* the delays --mpi-comp hands on and the waits --sync compensates at the probes' in-situ
	 * price: seed 001's Table 1 and the sync bench within 2 and 5 % of the uninstrumented run
	 * only so (docs/mpi.md, docs/benchmarks.md); a trace prices nothing */
	if ((o->mpi_comp || o->sync) && !o->no_insitu && !o->trace)
		o->insitu = 1;
	return 0;
}

/* Refuse what cannot be measured, with the reason and the fix. Scripts are let through. */
static int check_program(const char *name, char *path, size_t cap, int uninstrumented_ok,
			 int *probes, int *mpi)
{
	struct elf_info info;
	int kind;

	if (find_program(name, path, cap) != 0)
		return errno == EACCES ? error("run: '%s' is not an executable file", name)
				       : error("run: '%s': no such program", name);
	kind = elfinfo__read(path, &info);
	*probes = 1;
	if (kind == ELFK_NOT_ELF)
		return 0;
	if (kind != 0)
		return error("run: cannot read '%s': %s", path, strerror(errno));
	if (info.is_static)
		return error("run: '%s' is statically linked: the runtime cannot be preloaded "
			     "(link it dynamically)", name);
	*probes = info.has_instrument_hooks || info.has_sonde_api;
	*mpi |= info.has_mpi;
	if (!uninstrumented_ok && !*mpi && !info.has_instrument_hooks && !info.has_sonde_api)
		return error("run: '%s' was built without instrumentation: rebuild it with "
			     "'sonde cc -- gcc ...' (or -finstrument-functions), or use --dynamic "
			     "or --sample", name);
	return 0;
}

/* Under mpirun, the rank's number (OpenMPI, or PMI for MPICH); -1 outside. */
static int mpi_launch_rank(void)
{
	const char *v = getenv("OMPI_COMM_WORLD_RANK");

	if (!v)
		v = getenv("PMI_RANK");
	return v && *v ? atoi(v) : -1;
}

/* Empty the run directory of an earlier run's files, so a report shows only this run. Under
 * mpirun only rank 0 does (every rank's sonde starts before any rank's MPI_Init returns). */
static int prepare_dir(const char *dir)
{
	DIR *d;
	struct dirent *e;
	char path[PATH_MAX];

	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return error("run: cannot create '%s': %s", dir, strerror(errno));
	if (mpi_launch_rank() > 0)
		return 0;
	d = opendir(dir);
	if (!d)
		return error("run: cannot open '%s': %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		if (fnmatch("profile.*.sprof*", e->d_name, 0) &&
		    fnmatch("trace.*.strc", e->d_name, 0) && strcmp(e->d_name, "runtime.log") &&
		    strcmp(e->d_name, "select.txt"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	return 0;
}

struct select_ctx {
	const struct run_opts *o;
	struct symtab *st;
	const char *module;
	uint64_t *excluded;
	size_t n, cap;
};

static int any_match(const char *const *globs, int n, const char *s)
{
	int i;

	for (i = 0; i < n; i++)
		if (fnmatch(globs[i], s, 0) == 0)
			return 1;
	return 0;
}

static int match_name(const char *const *globs, int n, const char *sym, const struct sym_info *si)
{
	return any_match(globs, n, sym) || any_match(globs, n, si->func);
}

/* A file glob may name the source file alone ("app.c") or its path ("src/x.c"). */
static int match_file(const char *const *globs, int n, const struct sym_info *si)
{
	return any_match(globs, n, si->file) || any_match(globs, n, si->path);
}

/* Whether the user's globs leave a function measured. */
static int selected(const struct run_opts *o, const char *sym, const struct sym_info *si)
{
	if (o->ninclude && !match_name(o->include, o->ninclude, sym, si))
		return 0;
	if (o->ninclude_file && !match_file(o->include_file, o->ninclude_file, si))
		return 0;
	return !match_name(o->exclude, o->nexclude, sym, si) &&
	       !match_file(o->exclude_file, o->nexclude_file, si);
}

static int select_cb(const char *name, uint64_t vaddr, void *arg)
{
	struct select_ctx *c = arg;
	struct sym_info si;

	symtab__resolve(c->st, c->module, vaddr, &si);
	if (selected(c->o, name, &si))
		return 0;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 256;
		c->excluded = xrealloc(c->excluded, c->cap * sizeof(*c->excluded));
	}
	c->excluded[c->n++] = vaddr;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The runtime cannot read DWARF: resolve the globs here into addresses (docs/runtime.md). */
static int write_selection(const struct run_opts *o, const char *exe, const char *dir,
			   char *out, size_t cap)
{
	struct select_ctx c = { .o = o, .module = exe };
	const char *urls = getenv("DEBUGINFOD_URLS");
	char *saved = urls ? xstrdup(urls) : NULL;
	FILE *fp;
	size_t i;
	int bad, n;

	unsetenv("DEBUGINFOD_URLS"); /* no network; put back for the program below */
	c.st = symtab__new();
	bad = !c.st || symtab__foreach(c.st, exe, select_cb, &c) < 0;
	if (saved)
		setenv("DEBUGINFOD_URLS", saved, 1);
	free(saved);
	if (bad) {
		symtab__delete(c.st);
		return error("run: cannot read the symbols of '%s' to apply the globs", exe);
	}
	qsort(c.excluded, c.n, sizeof(*c.excluded), cmp_u64);
	/* one file per sonde run: under mpirun every rank's sonde writes its own while the others'
	 * runtimes read theirs (a shared select.txt was read half rewritten) */
	n = snprintf(out, cap, "%s/select.%ld.txt", dir, (long)getpid());
	if (n < 0 || (size_t)n >= cap)
		errno = ENAMETOOLONG;
	fp = n > 0 && (size_t)n < cap ? fopen(out, "w") : NULL;
	if (!fp) {
		symtab__delete(c.st);
		free(c.excluded);
		return error("run: cannot write '%s': %s", out, strerror(errno));
	}
	fprintf(fp, "sonde-select 1\nmodule %s\n", exe);
	for (i = 0; i < c.n; i++)
		if (!i || c.excluded[i] != c.excluded[i - 1])
			fprintf(fp, "%llx\n", (unsigned long long)c.excluded[i]);
	fclose(fp);
	symtab__delete(c.st);
	free(c.excluded);
	return 0;
}

static int set_trace_env(const struct run_opts *o)
{
	unsigned long long n;
	char v[32];

	if (!o->trace)
		return 0;
	setenv("SONDE_TRACE", "1", 1);
	if (o->trace_drop)
		setenv("SONDE_TRACE_DROP", "1", 1);
	if (o->trace_rate)
		setenv("SONDE_TRACE_RATE", o->trace_rate, 1);
	if (o->trace_buffer && parse_size(o->trace_buffer, &n) == 0) {
		snprintf(v, sizeof(v), "%llu", n);
		setenv("SONDE_TRACE_BUFFER", v, 1);
	}
	return 0;
}

/* libsonde-mpi.so sits next to libsonde.so. */
static int mpi_runtime_path(const char *rt, char *out, size_t cap)
{
	size_t n = strlen(rt);

	if (n < 11 || n + 5 > cap)
		return -1;
	snprintf(out, cap, "%.*slibsonde-mpi.so", (int)(n - 11), rt);
	return access(out, R_OK);
}

static int set_env(const struct run_opts *o, const char *dir, const char *select)
{
	char rt[PATH_MAX], mpi[PATH_MAX], preload[PATH_MAX * 3];
	const char *old = getenv("LD_PRELOAD");

	if (runtime_path(rt, sizeof(rt)) != 0)
		return error("run: the runtime library is missing (looked for %s)", rt);
	if (o->mpi && mpi_runtime_path(rt, mpi, sizeof(mpi)) != 0)
		return error("run: the MPI runtime library is missing (looked for %s)", mpi);
	snprintf(preload, sizeof(preload), "%s%s%s%s%s", rt, o->mpi ? ":" : "", o->mpi ? mpi : "",
		 old && *old ? ":" : "", old ? old : "");
	if (o->mpi_comp)
		setenv("SONDE_MPI_COMP", "1", 1);
	setenv("LD_PRELOAD", preload, 1);
	setenv("SONDE_DIR", dir, 1);
	if (o->depth)
		setenv("SONDE_DEPTH", o->depth, 1);
	if (o->throttle)
		setenv("SONDE_THROTTLE", o->throttle, 1);
	if (o->cpu)
		setenv("SONDE_CPU", "1", 1);
	if (o->follow_exec)
		setenv("SONDE_FOLLOW_EXEC", "1", 1);
	if (o->precise)
		setenv("SONDE_PRECISE", "1", 1);
	if (o->sync)
		setenv("SONDE_SYNC", "1", 1);
	if (o->insitu)
		setenv("SONDE_INSITU", "1", 1);
	if (o->sample)
		setenv("SONDE_SAMPLE", *o->sample ? o->sample : "1000", 1);
	if (o->dynamic) {
		setenv("SONDE_DYNAMIC", "1", 1);
		setenv("SONDE_DYNAMIC_HOLD", "1", 1);
	}
	if (select)
		setenv("SONDE_SELECT", select, 1);
	run_io_env(&o->rio);
	return set_trace_env(o);
}

/* Become what the program became: the same exit code, or death by the same signal. */
static int pass_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		sigset_t set;

		signal(sig, SIG_DFL);
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		return 128 + sig;
	}
	return 1;
}

static int count_profiles(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += fnmatch("profile.*.sprof", e->d_name, 0) == 0 ||
		     fnmatch("trace.*.strc", e->d_name, 0) == 0;
	if (d)
		closedir(d);
	return n;
}

/* --dynamic: the runtime holds the child before main until its functions are patched. */
static int instrument_child(const struct run_opts *o, pid_t pid, const char *path,
			    const char *dir)
{
	char ctl[PATH_MAX], exe[PATH_MAX], err[512];
	struct dyn_launch_opts d = { .pid = pid, .run_dir = dir, .verbose = o->verbose };

	if (ctl_default_dir(ctl, sizeof(ctl)) != 0 || !realpath(path, exe))
		return error("run: --dynamic: no directory for the control socket");
	d.exe = exe;
	d.ctl_dir = ctl;
	if (dyn_launch(&d, err, sizeof(err)) != 0)
		return error("run: --dynamic: %s", err);
	return 0;
}

/* Run the program and wait; like system(), let the terminal's signals reach only the child. */
static int launch(const struct run_opts *o, char **argv, const char *path, const char *dir,
		  int *status)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_int, old_quit;
	pid_t pid;

	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	pid = fork();
	if (pid < 0)
		return error("run: fork: %s", strerror(errno));
	if (pid == 0) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		execv(path, argv);
		error("run: cannot execute '%s': %s", path, strerror(errno));
		_exit(127);
	}
	if (o->dynamic && instrument_child(o, pid, path, dir) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, status, 0);
		return -1;
	}
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return error("run: waitpid: %s", strerror(errno));
	return 0;
}

int cmd_run(int argc, char **argv)
{
	struct run_opts o = { 0 };
	char path[PATH_MAX], dir[PATH_MAX], exe[PATH_MAX], select[PATH_MAX + 16];
	int status = 0, nprof, probes = 1, select_made;

	if (parse_opts(&o, argc, argv) || check_program(o.argv[0], path, sizeof(path),
						     o.dynamic || o.sample, &probes, &o.mpi))
		return EXIT_USAGE;
	if (prepare_dir(o.dir) || !realpath(o.dir, dir))
		return 1;
	select_made = o.ninclude || o.nexclude || o.ninclude_file || o.nexclude_file;
	if (select_made &&
	    (!realpath(path, exe) || write_selection(&o, exe, dir, select, sizeof(select))))
		return 1;
	if (set_env(&o, dir, select_made ? select : NULL)) {
		if (select_made)
			unlink(select);
		return 1;
	}
	/* sampling alone: there are no probes to calibrate (docs/runtime.md) */
	if (o.sample && !o.dynamic && !o.sync && !o.rio.io && !o.rio.os && !o.rio.hw && !probes)
		setenv("SONDE_SAMPLE_ONLY", "1", 1);
	if (launch(&o, o.argv, path, dir, &status)) {
		if (select_made)
			unlink(select);
		return 1;
	}
	if (select_made)
		unlink(select); /* read by the runtime at start: the run is over */
	nprof = count_profiles(dir);
	if (!nprof)
		warning("no %s was written to %s (see %s/runtime.log if present)",
			o.trace ? "trace" : "profile", o.dir, o.dir);
	else if (o.verbose)
		fprintf(stderr, "sonde: %d %s%s in %s\n", nprof, o.trace ? "trace" : "profile",
			nprof > 1 ? "s" : "", o.dir);
	return pass_status(status);
}
