/* SPDX-License-Identifier: MIT */
/*
 * sonde attach PID [--for DURATION] [-o DIR]: profile a running process for a while, as
 * `sonde run --dynamic` profiles a program from its start (tool/dyn/attach_profile.h): every
 * function of its executable patched, the process let run (for DURATION, or until Ctrl-C), then
 * the profile written into DIR, the instrumentation removed, the process let go as it was.
 *
 * sonde attach --load-only PID [--detach-after SECONDS] [-o DIR]: only stop the process, load
 * the runtime into it and call its attach entry with DIR, then let it go (tool/inject/README.md;
 * what `sonde watch` does first). Says how long the process was stopped and it all took.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmds.h"
#include "dyn/attach_profile.h"
#include "dyn/launch.h"
#include "inject/session.h"
#include "util.h"

struct attach_opts {
	pid_t pid;
	double seconds;      /* profile this long; 0: until Ctrl-C (or the process ends) */
	double detach_after; /* --load-only: seconds held attached (running) before letting go */
	int load_only;
	const char *dir;
};

static void attach_usage(FILE *out)
{
	fprintf(out,
		"usage: sonde attach [OPTIONS] PID\n"
		"  profile the running process PID: every function of its executable is\n"
		"  instrumented, the process runs on, then the instrumentation comes out and the\n"
		"  profile is written for 'sonde report DIR'; the process goes on untouched\n"
		"  --for DURATION          profile this long (500ms, 10s, 2m; default: until\n"
		"                          Ctrl-C or the process ends)\n"
		"  -o, --output DIR        where the profile goes (default ./sonde-out)\n"
		"  --load-only             only load the runtime and start its control server\n"
		"                          (what 'sonde watch' does first); -o DIR is then the\n"
		"                          control directory given to it\n"
		"  --detach-after SECONDS  with --load-only: stay attached (traced, the process\n"
		"                          running) this long before letting go; without: --for\n"
		"  $SONDE_RUNTIME          the library to load instead of ../lib/libsonde.so\n");
}

static int parse_seconds(const char *v, double *out)
{
	char *end;

	*out = strtod(v, &end);
	if (end == v || *end || !(*out >= 0) || *out > 86400 * 365)
		return error("attach: --detach-after needs seconds (0 to a year), got '%s'", v);
	return 0;
}

static int parse_for(const char *v, double *out)
{
	if (parse_time_span(v, out) != 0)
		return error("attach: --for needs a duration like 10s, 500ms or 2m, got '%s'", v);
	return 0;
}

static int parse_pid(const char *v, pid_t *pid)
{
	unsigned long long n;

	if (parse_u64(v, &n) != 0 || n == 0 || n > INT_MAX)
		return error("attach: '%s' is not a process id", v);
	*pid = (pid_t)n;
	return 0;
}

/* 0 parsed, 1 help shown, -1 usage error. */
static int parse_args(struct attach_opts *o, int argc, char **argv)
{
	const char *v;
	int i, r, have_pid = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return attach_usage(stdout), 1;
		if (!strcmp(argv[i], "--load-only")) {
			o->load_only = 1;
		} else if ((r = opt_value(argc, argv, &i, "--detach-after", &v)) != 0) {
			if (r < 0 || parse_seconds(v, &o->detach_after) != 0)
				return -1;
		} else if ((r = opt_value(argc, argv, &i, "--for", &v)) != 0) {
			if (r < 0 || parse_for(v, &o->seconds) != 0)
				return -1;
		} else if ((r = opt_value(argc, argv, &i, "--output", &v)) != 0 ||
			   (r = opt_value(argc, argv, &i, "-o", &v)) != 0) {
			if (r < 0)
				return -1;
			o->dir = v;
		} else if (argv[i][0] == '-' || have_pid) {
			return error("attach: unexpected argument '%s' (try 'sonde attach --help')",
				     argv[i]);
		} else if (parse_pid(argv[i], &o->pid) != 0) {
			return -1;
		} else {
			have_pid = 1;
		}
	}
	if (!have_pid)
		return error("attach: which process? (sonde attach PID)");
	if (o->load_only && o->seconds > 0)
		return error("attach: --for profiles; --load-only only loads the runtime");
	if (!o->load_only && !o->seconds)
		o->seconds = o->detach_after; /* the old name of a window, folded into --for */
	return 0;
}

/* The runtime and the directory, as absolute paths the target can use. */
static int paths(const struct attach_opts *o, char *rt, char *dir)
{
	char found[PATH_MAX], cwd[PATH_MAX];

	if (runtime_path(found, sizeof(found)) != 0 || !realpath(found, rt))
		return error("attach: the runtime library is missing (looked for %s)", found);
	if (o->dir[0] == '/') {
		snprintf(dir, PATH_MAX, "%s", o->dir);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return error("attach: cannot tell the current directory");
		if (snprintf(dir, PATH_MAX, "%s/%s", cwd, o->dir) >= PATH_MAX)
			return error("attach: the path of %s is too long", o->dir);
	}
	return 0;
}

/* Stay attached with the process running; 1 when it ended meanwhile. */
static int hold(struct inject_session *s, double seconds, const sigset_t *wake)
{
	double ms = seconds * 1000.0;
	int r = target_run_for(&s->t, ms > 4e9 ? 4000000000u : (unsigned)ms, wake);

	if (r == 1)
		printf("process %d ended while attached\n", s->t.pid);
	else if (r < 0)
		warning("attach: %s", target_error(&s->t));
	return r == 1;
}

static void report(const struct attach_opts *o, const struct inject_session *s,
		   const char *rt, const char *dir)
{
	printf("attached to process %d (%s), %d thread%s: loaded %s, %s(\"%s\") returned %d\n",
	       o->pid, s->comm, s->threads, s->threads == 1 ? "" : "s", rt, SONDE_ATTACH_ENTRY,
	       dir, s->entry_ret);
	printf("pause %.2f ms (every thread stopped: to attach, check, detach), load %.2f ms "
	       "(thread %d alone; the others ran), total %.2f ms\n", s->pause_ms, s->load_ms,
	       s->t.load_tid, s->total_ms);
	if (s->t.busy_waits)
		printf("let the process run %d time%s until no thread was in the dynamic loader or "
		       "malloc\n", s->t.busy_waits, s->t.busy_waits == 1 ? "" : "s");
}

static int session(const struct attach_opts *o, const char *rt, const char *dir,
		   const sigset_t *wake)
{
	struct inject_session_opts so = { rt, dir, NULL, 1 }; /* nothing to patch yet */
	struct inject_session s;
	char err[TARGET_ERR];

	if (inject_session_open(&s, o->pid, &so, err, sizeof(err)) != 0)
		return error("attach: %s", err);
	if (o->detach_after > 0 && hold(&s, o->detach_after, wake))
		return 0;
	if (inject_session_close(&s, err, sizeof(err)) != 0)
		return error("attach: letting go of process %d: %s", o->pid, err);
	report(o, &s, rt, dir);
	return 0;
}

/* ---- profiling (the default) ---- */

static int out_dir(const char *dir, char *abs)
{
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return error("attach: cannot make %s: %s", dir, strerror(errno));
	if (!realpath(dir, abs))
		return error("attach: %s: %s", dir, strerror(errno));
	return 0;
}

static void say_profiling(const struct attach_profile *a, double seconds)
{
	size_t refused = dyn_count(&a->set, DYN_REFUSED);

	printf("profiling process %d (%s), %d thread%s: %zu functions of %s patched", (int)a->pid,
	       a->comm, a->threads, a->threads == 1 ? "" : "s", dyn_count(&a->set, DYN_INSTALLED),
	       a->exe);
	if (refused)
		printf(", %zu refused (%s/dynamic.txt)", refused, a->out_dir);
	if (a->catchup.failed)
		printf("; calls already running not caught up (%s)", a->catchup.why);
	else
		printf("; %u call%s already running caught up", a->catchup.calls,
		       a->catchup.calls == 1 ? "" : "s");
	printf("; pause %.2f ms, %.1f ms to attach; ", a->attach_pause_ms, a->attach_ms);
	if (seconds > 0)
		printf("for %.3g s\n", seconds);
	else
		printf("until Ctrl-C\n");
	fflush(stdout);
}

/* Whether the runtime left profile.PID*.sprof in dir (the process wrote it at its end). */
static int profile_written(const char *dir, pid_t pid)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/profile.%d.sprof", dir, (int)pid);
	return access(path, F_OK) == 0;
}

static void say_done(const struct attach_profile *a)
{
	if (a->ended && profile_written(a->out_dir, a->pid))
		printf("process %d ended after %.2f s of profile; it wrote its profile at its end "
		       "into %s ('sonde report %s')\n", (int)a->pid, a->seconds, a->out_dir,
		       a->out_dir);
	else if (a->ended)
		printf("process %d ended after %.2f s of profile without writing it (killed?): "
		       "nothing in %s\n", (int)a->pid, a->seconds, a->out_dir);
	else
		printf("profile of process %d over %.2f s written into %s ('sonde report %s'); "
		       "detach: pause %.2f ms (every thread stopped: unpatching), %.1f ms in all\n",
		       (int)a->pid, a->seconds, a->out_dir, a->out_dir, a->detach_pause_ms,
		       a->detach_ms);
}

static int profile(const struct attach_opts *o, const char *rt, const sigset_t *wake)
{
	struct attach_profile a;
	char dir[PATH_MAX], err[600];
	int r = -1;

	if (out_dir(o->dir, dir) != 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.pid = o->pid;
	a.runtime = rt;
	a.out_dir = dir;
	if (attach_profile_begin(&a, err, sizeof(err)) != 0) {
		error("attach: %s", err);
	} else {
		dyn_profile_report(dir, &a.set, "sonde attach");
		say_profiling(&a, o->seconds);
		attach_profile_wait(&a, o->seconds, wake);
		if (attach_profile_end(&a, err, sizeof(err)) != 0)
			error("attach: detaching from process %d: %s", (int)o->pid, err);
		else
			r = 0;
		say_done(&a);
	}
	attach_profile_free(&a);
	return r;
}

int cmd_attach(int argc, char **argv)
{
	struct attach_opts o = { 0, 0, 0, 0, "sonde-out" };
	char rt[PATH_MAX], dir[PATH_MAX];
	sigset_t wake, old;
	int r = parse_args(&o, argc, argv);

	if (r != 0)
		return r > 0 ? 0 : EXIT_USAGE;
	if (paths(&o, rt, dir) != 0)
		return 1;
	/* a ^C must not leave the process stopped halfway: it ends the wait, then we let go */
	sigemptyset(&wake);
	sigaddset(&wake, SIGINT);
	sigaddset(&wake, SIGTERM);
	sigaddset(&wake, SIGHUP);
	sigaddset(&wake, SIGQUIT);
	sigprocmask(SIG_BLOCK, &wake, &old);
	r = o.load_only ? session(&o, rt, dir, &wake) : profile(&o, rt, &wake);
	fflush(stdout);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r == 0 ? 0 : 1;
}
