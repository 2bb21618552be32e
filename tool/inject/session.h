/* SPDX-License-Identifier: MIT */
/*
 * Attaching to a running process, as commands use it: stop the world, load the runtime and
 * call its attach entry, then (after the caller's own work on the stopped process, e.g.
 * patching) let the process go. Timings of each step, for the user and the benchmarks.
 */
#ifndef SONDE_INJECT_SESSION_H
#define SONDE_INJECT_SESSION_H

#include "target.h"

#define SONDE_ATTACH_ENTRY "sonde__attach"

struct inject_session_opts {
	const char *runtime;	/* absolute path of libsonde.so (or a stand-in with the entry) */
	const char *ctl_dir;	/* absolute; given to the entry: int sonde__attach(const char *) */
	const char *entry;	/* NULL: SONDE_ATTACH_ENTRY */
	int leave_running;	/* nothing to do on the stopped process: do not stop it again */
};

struct inject_session {
	struct target t;
	uint64_t start_ns;	/* inject_session_open called */
	double stop_ms;		/* seizing and stopping every thread */
	double inject_ms;	/* safe point, dlopen, the entry */
	double load_ms;		/* of which dlopen and the entry, on one thread, the others running */
	double detach_ms;	/* letting go */
	double pause_ms;	/* the threads were held stopped (every stop, summed) */
	double total_ms;	/* open to close */
	int threads;		/* when stopped */
	int entry_ret;
	char comm[64];		/* the process's name */
};

/*
 * Attach to pid and inject the runtime. On success the process is left stopped (the caller may
 * patch it; with leave_running, it runs on, still traced) and must be let go with
 * inject_session_close. On failure nothing is held any more
 * and err says why (one line); the entry returning non-zero is a failure too.
 */
int inject_session_open(struct inject_session *s, pid_t pid, const struct inject_session_opts *o,
			char *err, size_t errlen);
/* Let the process go on; fills the timings. */
int inject_session_close(struct inject_session *s, char *err, size_t errlen);

#endif
