/* SPDX-License-Identifier: MIT */
/*
 * Why a process cannot be attached to, said in one line before anything is touched: no such
 * process, a thread id, a zombie, traced by someone else, a 32-bit or statically linked
 * program; and after PTRACE_SEIZE fails, why the kernel said no (owner, Yama, dumpable).
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void status_field(struct proc_status *st, const char *line)
{
	if (!strncmp(line, "Name:\t", 6)) {
		size_t n = strcspn(line + 6, "\n");

		n = n < sizeof(st->name) ? n : sizeof(st->name) - 1;
		memcpy(st->name, line + 6, n);
		st->name[n] = 0;
	} else if (!strncmp(line, "State:\t", 7)) {
		st->state = line[7];
	} else if (!strncmp(line, "Tgid:\t", 6)) {
		st->tgid = (pid_t)atoi(line + 6);
	} else if (!strncmp(line, "TracerPid:\t", 11)) {
		st->tracer = (pid_t)atoi(line + 11);
	} else if (!strncmp(line, "Uid:\t", 5)) {
		sscanf(line + 5, "%u %u %u %u", &st->uid[0], &st->uid[1], &st->uid[2], &st->uid[3]);
	}
}

int tgt_proc_status(pid_t pid, struct proc_status *st)
{
	char path[64], line[512];
	FILE *f;

	memset(st, 0, sizeof(*st));
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		status_field(st, line);
	fclose(f);
	return 0;
}

static const char *user_name(unsigned uid, char *buf, size_t cap)
{
	struct passwd *pw = getpwuid(uid);

	snprintf(buf, cap, "%s", pw ? pw->pw_name : "?");
	return buf;
}

static const char *comm_of(pid_t pid, char *buf, size_t cap)
{
	struct proc_status st;

	snprintf(buf, cap, "%s", tgt_proc_status(pid, &st) == 0 ? st.name : "?");
	return buf;
}

/* What the ELF header and program headers of the executable say. */
struct exe_kind {
	int elfclass, machine, interp;
};

static int read_exe_kind(const char *path, struct exe_kind *k)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = -1;
	GElf_Ehdr eh;
	GElf_Phdr ph;
	size_t i, n;
	Elf *e;

	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	memset(k, 0, sizeof(*k));
	if (e && elf_kind(e) == ELF_K_ELF && gelf_getehdr(e, &eh) && !elf_getphdrnum(e, &n)) {
		k->elfclass = gelf_getclass(e);
		k->machine = eh.e_machine;
		for (i = 0; i < n; i++)
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP)
				k->interp = 1;
		r = 0;
	} else {
		errno = ENOEXEC;
	}
	if (e)
		elf_end(e);
	close(fd);
	return r;
}

/* The executable: x86-64 and dynamically linked, or why not. Unreadable: ptrace decides. */
static int check_exe(struct target *t, const struct proc_status *st)
{
	char path[80];
	struct exe_kind k;

	snprintf(path, sizeof(path), "%s/exe", t->proc);
	if (read_exe_kind(path, &k) != 0) {
		if (errno == ENOENT)
			return tgt_fail(t, "process %d (%s) has no executable (a kernel thread?)",
					t->pid, st->name);
		return 0;
	}
	if (k.elfclass == ELFCLASS32)
		return tgt_fail(t, "process %d (%s) is a 32-bit program: sonde attaches to x86-64 "
				"processes only", t->pid, st->name);
	if (k.machine != EM_X86_64)
		return tgt_fail(t, "process %d (%s) is not an x86-64 program (ELF machine %d)",
				t->pid, st->name, k.machine);
	if (!k.interp)
		return tgt_fail(t, "process %d (%s) is statically linked: without a dynamic loader "
				"the runtime cannot be loaded into it", t->pid, st->name);
	return 0;
}

/* The main thread has exited (pthread_exit) but others may live: /proc files of one of them. */
static int live_thread(struct target *t)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);

		if (tid > 0 && !tgt_thread_is_zombie(t->pid, tid)) {
			snprintf(t->proc, sizeof(t->proc), "/proc/%d/task/%d", t->pid, tid);
			break;
		}
	}
	if (d)
		closedir(d);
	return strstr(t->proc, "/task/") ? 0 : -1;
}

int tgt_preflight(struct target *t)
{
	struct proc_status st;
	char who[64];

	if (t->pid <= 0)
		return tgt_fail(t, "invalid process id %d", t->pid);
	snprintf(t->proc, sizeof(t->proc), "/proc/%d", t->pid);
	if (t->pid == getpid())
		return tgt_fail(t, "process %d is sonde itself", t->pid);
	if (t->pid == 1)
		return tgt_fail(t, "refusing to stop process 1 (init): the whole system waits on it");
	if (tgt_proc_status(t->pid, &st) != 0)
		return tgt_fail(t, "no such process %d", t->pid);
	if (st.tgid != t->pid)
		return tgt_fail(t, "%d is a thread of process %d (%s): attach to the process",
				t->pid, st.tgid, st.name);
	if ((st.state == 'Z' || st.state == 'X') && live_thread(t) != 0)
		return tgt_fail(t, "process %d (%s) has exited (a zombie)", t->pid, st.name);
	if (st.tracer)
		return tgt_fail(t, "process %d (%s) is already traced by process %d (%s): a debugger "
				"or tracer must let go of it first", t->pid, st.name, st.tracer,
				comm_of(st.tracer, who, sizeof(who)));
	return check_exe(t, &st);
}

/* kernel.yama.ptrace_scope, -1 without Yama. */
static int yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Yama's part in an EPERM, in parentheses at the end of the message. */
static const char *yama_says(int scope, int root, char *buf, size_t cap)
{
	if (scope < 0)
		snprintf(buf, cap, "(no Yama here: kernel.yama.ptrace_scope does not exist)");
	else if (scope == 0 || (root && scope < 3))
		snprintf(buf, cap, "(kernel.yama.ptrace_scope is %d: not the reason)", scope);
	else if (scope == 1)
		snprintf(buf, cap, "(kernel.yama.ptrace_scope is 1: only a parent may trace its "
			 "descendants; run sonde as root or `sysctl kernel.yama.ptrace_scope=0`)");
	else if (scope == 2)
		snprintf(buf, cap, "(kernel.yama.ptrace_scope is 2: only with CAP_SYS_PTRACE; run "
			 "sonde as root)");
	else
		snprintf(buf, cap, "(kernel.yama.ptrace_scope is 3: no tracing at all until reboot)");
	return buf;
}

static int other_user(const struct proc_status *st, unsigned me)
{
	return st->uid[0] != me || st->uid[1] != me || st->uid[2] != me;
}

/* The process's /proc files belong to root when it is not dumpable (setuid, setcap...). */
static int undumpable(pid_t pid, const struct proc_status *st)
{
	char path[64];
	struct stat sb;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	return stat(path, &sb) == 0 && sb.st_uid == 0 && st->uid[1] != 0;
}

static int explain_eperm(struct target *t)
{
	struct proc_status st;
	unsigned me = (unsigned)geteuid();
	int scope = yama_scope();
	char y[200], u[64];

	if (tgt_proc_status(t->pid, &st) != 0)
		return tgt_fail(t, "no such process %d", t->pid);
	yama_says(scope, me == 0, y, sizeof(y));
	if (st.tracer)
		return tgt_fail(t, "process %d (%s) is already traced by process %d", t->pid,
				st.name, st.tracer);
	if (me != 0 && other_user(&st, me))
		return tgt_fail(t, "ptrace not permitted: process %d (%s) belongs to user %s (uid %u) "
				"and sonde runs as uid %u: run sonde as that user or as root %s", t->pid,
				st.name, user_name(st.uid[1], u, sizeof(u)), st.uid[1], me, y);
	if (me != 0 && undumpable(t->pid, &st))
		return tgt_fail(t, "ptrace not permitted: process %d (%s) is not dumpable (setuid or "
				"setcap program, or prctl PR_SET_DUMPABLE 0): only root may trace it %s",
				t->pid, st.name, y);
	if (scope >= 1 && !(me == 0 && scope < 3))
		return tgt_fail(t, "ptrace not permitted on process %d (%s) %s", t->pid, st.name, y);
	/* neither owner nor Yama: a security module, a container, seccomp */
	return tgt_fail(t, "ptrace not permitted on process %d (%s): a container, seccomp or a "
			"security module forbids it (CAP_SYS_PTRACE may be needed) %s", t->pid,
			st.name, y);
}

int tgt_explain_seize(struct target *t, int err)
{
	if (err == EPERM)
		return explain_eperm(t);
	if (err == ESRCH)
		return tgt_fail(t, "no such process %d", t->pid);
	return tgt_fail(t, "cannot attach to process %d: %s", t->pid, strerror(err));
}
