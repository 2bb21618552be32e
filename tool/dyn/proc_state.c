/* SPDX-License-Identifier: MIT */
/* Whether a measured process has ended (proc_state.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc_state.h"

int dyn_proc_stat(pid_t pid, char *state, pid_t *ppid)
{
	char path[64], buf[512], *p;
	FILE *f;
	int ok, parent = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	/* the command name, in parentheses, may hold anything: the fields follow the last ')' */
	ok = fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) &&
	     sscanf(p + 1, " %c %d", state, &parent) == 2;
	fclose(f);
	*ppid = (pid_t)parent;
	return ok ? 0 : -1;
}

int dyn_process_gone(pid_t pid)
{
	char state;
	pid_t ppid;

	return dyn_proc_stat(pid, &state, &ppid) != 0 || state == 'Z' || state == 'X';
}

int dyn_gone_soon(pid_t pid)
{
	struct timespec ms5 = { 0, 5000000 };
	int i;

	for (i = 0; i < 400 && !dyn_process_gone(pid); i++)
		nanosleep(&ms5, NULL);
	return dyn_process_gone(pid);
}

int dyn_program_ended(pid_t pid)
{
	siginfo_t si;
	char path[64];

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0)
		return si.si_pid == pid;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return errno == ECHILD && access(path, F_OK) != 0;
}
