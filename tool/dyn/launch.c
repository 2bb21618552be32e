/* SPDX-License-Identifier: MIT */
/*
 * sonde run --dynamic: the program, built without any instrumentation, starts with the runtime
 * preloaded (SONDE_DYNAMIC=1, SONDE_DYNAMIC_HOLD=1); the runtime holds it before main until the
 * tool has patched every function of the executable and told each point to feed the profile
 * (SPROTO_PROFILE), then the tool says RESUME. The run ends as a profile run does: profile
 * files that `sonde report` reads. Functions the patcher refused are listed, with the reason,
 * in RUNDIR/dynamic.txt.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"
#include "dyn.h"
#include "launch.h"
#include "util.h"

void dyn_profile_actions(const struct dyn_set *s, size_t i, struct sproto_point_set *ps)
{
	memset(ps, 0, sizeof(*ps));
	ps->point = (uint32_t)i;
	ps->n = 2;
	ps->act[0] = (struct sproto_action){ .when = SPROTO_AT_ENTRY, .prim = SPROTO_PROFILE,
					     .value = (int64_t)s->f[i].addr };
	ps->act[1] = ps->act[0];
	ps->act[1].when = SPROTO_AT_EXIT;
}

int dyn_profile_points(struct ctl_client *c, const struct dyn_set *s, char *err, size_t n)
{
	static uint8_t msg[SPROTO_HEADER_SIZE + 64 + SPROTO_MAX_ACTIONS * 32];
	struct sproto_point_set ps;
	size_t i, len;

	for (i = 0; i < s->n; i++) {
		if (s->f[i].state != DYN_INSTALLED)
			continue;
		dyn_profile_actions(s, i, &ps);
		len = sproto_put_point_set(msg, sizeof(msg), &ps);
		if (ctl_request(c, msg, len, err, n) != 0)
			return -1;
	}
	return 0;
}

void dyn_profile_report(const char *dir, const struct dyn_set *s, const char *command)
{
	char path[4200];
	FILE *f;
	size_t i;

	snprintf(path, sizeof(path), "%s/dynamic.txt", dir);
	f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "# %s: %zu functions of %s patched, %zu refused\n", command,
		dyn_count(s, DYN_INSTALLED), s->module, dyn_count(s, DYN_REFUSED));
	for (i = 0; i < s->n; i++)
		if (s->f[i].state == DYN_REFUSED)
			fprintf(f, "refused\t%s\t%s\n", s->f[i].name, s->f[i].why);
	fclose(f);
}

int dyn_profile_patch(struct ctl_client *c, pid_t pid, const char *exe, const char *const *only,
		      struct dyn_set *s, double *pause_ms, char *err, size_t n)
{
	const char *base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	const char *prefixes[] = { base, NULL };
	struct target t;
	struct target_module m;
	int ret = -1;

	if (target_attach(&t, pid, err, n) != 0)
		return -1;
	if (target_find_module(&t, prefixes, &m) != 0)
		snprintf(err, n, "cannot find %s among the process's modules", base);
	else if (dyn_collect(&t, &m, only, s, err, n) == 0 &&
		 dyn_plan(&t, s, c->hello.entry_addr, err, n) == 0 && dyn_install(&t, s, err, n) == 0)
		ret = 0;
	if (target_detach(&t) != 0 && ret == 0) {
		snprintf(err, n, "letting the process go: %s", target_error(&t));
		ret = -1;
	}
	if (pause_ms)
		*pause_ms += (double)t.paused_ns / 1e6;
	return ret;
}

int dyn_launch(const struct dyn_launch_opts *o, char *err, size_t n)
{
	struct ctl_client c;
	struct dyn_set s = { 0 };
	uint8_t msg[64];
	int ret = -1;

	err[0] = 0;
	if (ctl_connect(&c, o->ctl_dir, o->pid, 10000, err, n) != 0)
		return -1;
	if (dyn_profile_patch(&c, o->pid, o->exe, o->only, &s, NULL, err, n) == 0 &&
	    dyn_profile_points(&c, &s, err, n) == 0 &&
	    ctl_request(&c, msg, sproto_put_empty(msg, sizeof(msg), SPROTO_RESUME), err, n) == 0)
		ret = 0;
	if (ret == 0) {
		dyn_profile_report(o->run_dir, &s, "sonde run --dynamic");
		if (o->verbose)
			fprintf(stderr, "sonde: %zu functions patched, %zu refused (%s/dynamic.txt)\n",
				dyn_count(&s, DYN_INSTALLED), dyn_count(&s, DYN_REFUSED), o->run_dir);
	}
	ctl_close(&c); /* no DETACH: the points stay for the whole run */
	dyn_set_free(&s);
	return ret;
}

static void set_child_env(const char *rt, const char *dir)
{
	const char *old = getenv("LD_PRELOAD");
	char preload[PATH_MAX * 2];

	snprintf(preload, sizeof(preload), "%s%s%s", rt, old && *old ? ":" : "", old ? old : "");
	setenv("LD_PRELOAD", preload, 1);
	setenv("SONDE_DIR", dir, 1);
	setenv("SONDE_DYNAMIC", "1", 1);
	setenv("SONDE_DYNAMIC_HOLD", "1", 1);
}

pid_t dyn_start_held(const char *cmd, const char *dir, const char *path, char *const argv[],
		     const char *rt)
{
	char abs[PATH_MAX];
	pid_t pid;

	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return error("%s: cannot make %s: %s", cmd, dir, strerror(errno)), -1;
	if (!realpath(dir, abs))
		return error("%s: %s: %s", cmd, dir, strerror(errno)), -1;
	fflush(stdout); /* not written twice by the child */
	pid = fork();
	if (pid < 0)
		return error("%s: fork: %s", cmd, strerror(errno)), -1;
	if (pid == 0) {
		set_child_env(rt, abs);
		execv(path, argv);
		error("%s: cannot execute '%s': %s", cmd, path, strerror(errno));
		_exit(127);
	}
	return pid;
}

int dyn_wait_program(pid_t pid)
{
	int status = 0;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}
