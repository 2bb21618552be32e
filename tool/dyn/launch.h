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

/* Patch, set the points, let the program go. 0, or -1 with err (the caller kills it). */
int dyn_launch(const struct dyn_launch_opts *o, char *err, size_t n);

#endif
