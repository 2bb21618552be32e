/* SPDX-License-Identifier: MIT */
/* Profiling a running process for a while: attach_profile.h. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../inject/session.h"
#include "attach_profile.h"
#include "launch.h"
#include "proc_state.h"
#include "util.h"


/* A request answered by OK; err names it when the runtime refuses. */
static int ask(struct attach_profile *a, const uint8_t *msg, size_t len, char *err, size_t n)
{
	struct sproto_header h = { 0, 0, 0, 0, 0 };
	char why[512] = "";

	if (len >= SPROTO_HEADER_SIZE)
		h.type = (uint16_t)(msg[6] | msg[7] << 8);
	if (ctl_request(&a->c, msg, len, why, sizeof(why)) == 0)
		return 0;
	snprintf(err, n, "%s: %s", sproto_type_name(h.type) ? sproto_type_name(h.type) : "request",
		 why);
	return -1;
}

static int ask_empty(struct attach_profile *a, uint16_t type, char *err, size_t n)
{
	uint8_t msg[64];

	return ask(a, msg, sproto_put_empty(msg, sizeof(msg), type), err, n);
}

static int inject(struct attach_profile *a, char *err, size_t n)
{
	struct inject_session_opts so = { a->runtime, a->ctl_dir, NULL, 1 };
	struct inject_session is;

	if (inject_session_open(&is, a->pid, &so, err, n) != 0)
		return -1;
	snprintf(a->comm, sizeof(a->comm), "%s", is.comm);
	a->threads = is.threads;
	if (inject_session_close(&is, err, n) != 0)
		return -1;
	a->attach_pause_ms += is.pause_ms;
	return 0;
}

static int exe_of(pid_t pid, char *out, size_t cap, char *err, size_t n)
{
	char link[64];
	ssize_t k;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	k = readlink(link, out, cap - 1);
	if (k <= 0)
		return snprintf(err, n, "cannot read %s: %s", link, strerror(errno)), -1;
	out[k] = 0;
	return 0;
}

/* Connected: nothing of an earlier session counts; a profile begins. */
static int begin_profile(struct attach_profile *a, char *err, size_t n)
{
	uint8_t msg[SPROTO_HEADER_SIZE + 8 + SPROTO_MAX_PATH];

	if (a->c.hello.flags & SPROTO_F_AT_START)
		return snprintf(err, n, "process %d runs under sonde run --dynamic: it is profiled "
				"from its start already", (int)a->pid), -1;
	if (ask(a, msg, sproto_put_point_clear(msg, sizeof(msg), 0, SPROTO_MAX_POINTS), err,
		n) != 0)
		return -1;
	return ask(a, msg, sproto_put_profile_begin(msg, sizeof(msg), a->out_dir), err, n);
}

/*
 * The calls running now (main, each thread's start function, what they are in) enter the
 * profile now, outermost first, and their returns are hooked (catchup.h): the call tree has
 * its roots, and their time from now on.
 */
static void catch_up(struct attach_profile *a)
{
	struct dyn_catchup_proc *cp = xcalloc(a->set.n + 1, sizeof(*cp));
	struct sproto_point_set *ps = xcalloc(a->set.n + 1, sizeof(*ps));
	size_t i, k = 0;

	for (i = 0; i < a->set.n; i++) {
		const struct dyn_func *f = &a->set.f[i];

		if (f->state != DYN_INSTALLED || f->kind != PATCH_ENTRY)
			continue;
		dyn_profile_actions(&a->set, i, &ps[k]);
		cp[k] = (struct dyn_catchup_proc){ f->addr, f->addr + f->size, 0, &ps[k] };
		k++;
	}
	dyn_catch_up(a->pid, a->c.hello.entry_addr, cp, k, &a->catchup);
	a->attach_pause_ms += a->catchup.pause_ms;
	free(cp);
	free(ps);
}

/* Every point goes live at once: a caller is never measured without its callees. The calls
 * running are caught up while the points are paused: nothing has entered the profile yet. */
static int patch_all(struct attach_profile *a, char *err, size_t n)
{
	if (ask_empty(a, SPROTO_PAUSE, err, n) != 0 ||
	    dyn_profile_patch(&a->c, a->pid, a->exe, NULL, &a->set, &a->attach_pause_ms, err,
			      n) != 0 ||
	    dyn_profile_points(&a->c, &a->set, err, n) != 0)
		return -1;
	catch_up(a);
	return ask_empty(a, SPROTO_RESUME, err, n);
}

static int unpatch(struct attach_profile *a, char *err, size_t n)
{
	struct target t;
	int r;

	if (!dyn_count(&a->set, DYN_INSTALLED))
		return 0;
	if (target_attach(&t, a->pid, err, n) != 0)
		return -1;
	r = dyn_remove(&t, &a->set, err, n);
	if (target_detach(&t) != 0 && r == 0) {
		snprintf(err, n, "letting the process go: %s", target_error(&t));
		r = -1;
	}
	a->detach_pause_ms += (double)t.paused_ns / 1e6;
	return r;
}

int attach_profile_begin(struct attach_profile *a, char *err, size_t n)
{
	uint64_t t0 = mono_now_ns();
	char e2[256];

	a->c.fd = -1;
	if (ctl_default_dir(a->ctl_dir, sizeof(a->ctl_dir)) != 0)
		return snprintf(err, n, "no directory for the control socket"), -1;
	if (exe_of(a->pid, a->exe, sizeof(a->exe), err, n) != 0 || inject(a, err, n) != 0)
		return -1;
	if (ctl_connect(&a->c, a->ctl_dir, a->pid, 2000, err, n) != 0)
		return -1;
	a->connected = 1;
	if (begin_profile(a, err, n) == 0 && patch_all(a, err, n) == 0) {
		a->attach_ms = elapsed_ms(t0);
		return 0;
	}
	ask_empty(a, SPROTO_DETACH, e2, sizeof(e2)); /* points cleared; the patches come out */
	ctl_close(&a->c);
	a->connected = 0;
	unpatch(a, e2, sizeof(e2));
	return -1;
}

static int pending(const sigset_t *wake)
{
	struct timespec zero = { 0, 0 };
	int sig = wake ? sigtimedwait(wake, NULL, &zero) : -1;

	return sig > 0 ? sig : 0;
}

void attach_profile_wait(struct attach_profile *a, double seconds, const sigset_t *wake)
{
	uint64_t t0 = mono_now_ns(), end = t0 + (uint64_t)(seconds * 1e9);
	struct sproto_msg m;
	char err[256];

	while (!a->ended && !(a->signo = pending(wake)) && (seconds <= 0 || mono_now_ns() < end)) {
		int r = ctl_recv(&a->c, &m, 50, err, sizeof(err));

		if (r < 0)
			a->ended = dyn_gone_soon(a->pid);
		if (r < 0 && !a->ended)
			break; /* the connection broke, the process lives: end as usual */
	}
	a->seconds = (double)(mono_now_ns() - t0) / 1e9;
}

int attach_profile_end(struct attach_profile *a, char *err, size_t n)
{
	uint64_t t0 = mono_now_ns();
	char e2[256];
	int r = 0;

	if (a->ended)
		return 0;
	if (ask_empty(a, SPROTO_PROFILE_END, err, n) != 0)
		r = -1;
	if (ask_empty(a, SPROTO_DETACH, r ? e2 : err, r ? sizeof(e2) : n) != 0)
		r = -1;
	else
		ctl_wait_end(&a->c, 2000);
	ctl_close(&a->c);
	a->connected = 0;
	if (unpatch(a, r ? e2 : err, r ? sizeof(e2) : n) != 0) /* even when DETACH failed */
		r = -1;
	a->detach_ms = elapsed_ms(t0);
	return r;
}

void attach_profile_free(struct attach_profile *a)
{
	if (a->connected)
		ctl_close(&a->c);
	a->connected = 0;
	dyn_set_free(&a->set);
}
