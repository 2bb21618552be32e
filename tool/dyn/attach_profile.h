/* SPDX-License-Identifier: MIT */
/*
 * Profiling a running process for a while (`sonde attach PID --for T -o DIR`, docs/dynamic.md):
 * the runtime is injected, told to begin a profile into DIR (PROFILE_BEGIN), every function of
 * the executable patched with a PROFILE point as `sonde run --dynamic` does at start (all made
 * live at once: PAUSE, the points, RESUME); the process runs; at the end PROFILE_END (the
 * runtime clears the points and writes the profile, calls still open counted up to then),
 * DETACH, and the patches come out with the world stopped. The process goes on as before.
 */
#ifndef SONDE_DYN_ATTACH_PROFILE_H
#define SONDE_DYN_ATTACH_PROFILE_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "catchup.h"
#include "client.h"
#include "dyn.h"

struct attach_profile {
	pid_t pid;
	const char *runtime; /* absolute path of libsonde.so */
	const char *out_dir; /* absolute, existing: where the runtime writes the profile */
	char exe[4096], comm[64], ctl_dir[4096];
	int threads;
	struct ctl_client c;
	int connected;
	struct dyn_set set;
	int ended;           /* the process ended during the profile */
	int signo;           /* the signal that ended the wait, 0: the time was up */
	double attach_pause_ms, attach_ms, detach_pause_ms, detach_ms, seconds;
	struct dyn_catchup_stats catchup; /* the calls running when the profile began */
};

/* Inject, begin the profile, patch: profiling from now. 0, or -1 with err (the process is left
 * as it was, but for the runtime loaded and idle). */
int attach_profile_begin(struct attach_profile *a, char *err, size_t n);
/* Let it run for seconds (0: until a signal of wake, which the caller blocked), or until the
 * process ends. */
void attach_profile_wait(struct attach_profile *a, double seconds, const sigset_t *wake);
/* PROFILE_END, DETACH, the patches out (nothing of it when the process ended). 0, or -1. */
int attach_profile_end(struct attach_profile *a, char *err, size_t n);
void attach_profile_free(struct attach_profile *a);

#endif
