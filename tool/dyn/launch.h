/* SPDX-License-Identifier: MIT */
/* sonde run --dynamic's part after the fork (launch.c). */
#ifndef SONDE_DYN_LAUNCH_H
#define SONDE_DYN_LAUNCH_H

#include <stddef.h>
#include <sys/types.h>

struct dyn_launch_opts {
	pid_t pid;                /* the program, held by the runtime before main */
	const char *exe;          /* its executable's path */
	const char *ctl_dir;      /* where its control socket appears */
	const char *run_dir;      /* for dynamic.txt */
	const char *const *only;  /* functions to patch, NULL-ended; NULL: every one */
	int verbose;
};

/*
 * Start the program at path (argv) with the runtime rt preloaded in dynamic mode and held
 * before main until a tool connects; its profile goes to dir, made if missing. The pid, or -1
 * after a one-line error that names cmd ("watch", "consult").
 */
pid_t dyn_start_held(const char *cmd, const char *dir, const char *path, char *const argv[],
		     const char *rt);
/* waitpid for it, through EINTR: its status, or -1. */
int dyn_wait_program(pid_t pid);
/* The control connection closed: the process is ending, and it may take a moment to be gone
 * (its files are closed before it becomes a zombie): 1 when gone within 2 s. */
int dyn_gone_soon(pid_t pid);

/* Patch, set the points, let the program go. 0, or -1 with err (the caller kills it). */
int dyn_launch(const struct dyn_launch_opts *o, char *err, size_t n);

struct ctl_client;
struct dyn_set;
/* The parts, for sonde attach too: every function of the executable exe of process pid patched
 * (only: NULL, or a NULL-ended list of names), the world stopped meanwhile (pause_ms, when not
 * NULL, grows by how long); */
int dyn_profile_patch(struct ctl_client *c, pid_t pid, const char *exe, const char *const *only,
		      struct dyn_set *s, double *pause_ms, char *err, size_t n);
/* each patched function's point set to PROFILE at entry and exit; */
int dyn_profile_points(struct ctl_client *c, const struct dyn_set *s, char *err, size_t n);
/* Point i's actions in such a profile: PROFILE at its entry and at its exit. */
void dyn_profile_actions(const struct dyn_set *s, size_t i, struct sproto_point_set *ps);
/* the refused ones listed in DIR/dynamic.txt, under a line naming the command. */
void dyn_profile_report(const char *dir, const struct dyn_set *s, const char *command);

#endif
