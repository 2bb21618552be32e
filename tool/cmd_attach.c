/* SPDX-License-Identifier: MIT */
/*
 * sonde attach PID [--detach-after SECONDS]: stop a running process, load the runtime into it
 * and call its attach entry, then let it go (tool/inject/README.md). Says how long the process
 * was stopped (the pause) and how long it all took.
 */
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "inject/session.h"
#include "util.h"

struct attach_opts {
	pid_t pid;
	double detach_after; /* seconds held attached (running) before letting go */
	const char *dir;
};

static void attach_usage(FILE *out)
{
	fprintf(out,
		"usage: sonde attach [OPTIONS] PID\n"
		"  load the runtime into the running process PID and let it go on\n"
		"  --detach-after SECONDS  stay attached this long (the process runs) before\n"
		"                          letting go (default: at once)\n"
		"  -o, --output DIR        the runtime's directory (default ./sonde-out)\n"
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
		if ((r = opt_value(argc, argv, &i, "--detach-after", &v)) != 0) {
			if (r < 0 || parse_seconds(v, &o->detach_after) != 0)
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

int cmd_attach(int argc, char **argv)
{
	struct attach_opts o = { 0, 0, "sonde-out" };
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
	r = session(&o, rt, dir, &wake);
	fflush(stdout);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r == 0 ? 0 : 1;
}
