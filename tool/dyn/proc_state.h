/* SPDX-License-Identifier: MIT */
/* Whether a measured process has ended (proc_state.c): /proc and waitid, never a reap. */
#ifndef SONDE_DYN_PROC_STATE_H
#define SONDE_DYN_PROC_STATE_H

#include <sys/types.h>

/* 1 when process pid is gone or a zombie (an ended child its parent has not waited for yet).
 * Only after its connection closed: a leader thread that ended before the others is a zombie
 * too. */
int dyn_process_gone(pid_t pid);
/* From /proc/PID/stat: the state letter ('R', 'S', 'Z'...) and the parent; -1 when pid is
 * not there. */
int dyn_proc_stat(pid_t pid, char *state, pid_t *ppid);
/* The control connection closed: the process is ending, and it may take a moment to be gone
 * (its files are closed before it becomes a zombie): 1 when gone within 2 s. */
int dyn_gone_soon(pid_t pid);
/* 1 when pid has ended for sure, at any time: a child of ours whose every thread ended (it is
 * not reaped: waitpid still sees it), or another process no longer in /proc. */
int dyn_program_ended(pid_t pid);

#endif
