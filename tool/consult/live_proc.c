/* SPDX-License-Identifier: MIT */
/*
 * The live source's readings of the process (live_int.h): its threads (/proc/PID/task, the
 * runtime's control thread left out), their CPU clocks and run-queue waits (schedstat: the load
 * factor), page faults (/proc/PID/stat), and the tool-side readings of a request.
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "live_int.h"
#include "util.h"

/* ---- threads ---- */

void lv_read_threads(struct lsrc *ls)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	uint32_t ctl = dyn_live_ctl_tid(ls->l), i, tid;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)ls->s->pid);
	for (i = 0; i < ls->nthr; i++)
		ls->thr[i].alive = 0;
	ls->alive = 0;
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		tid = (uint32_t)strtoul(d->d_name, NULL, 10);
		if (!tid || tid == ctl)
			continue;
		for (i = 0; i < ls->nthr && ls->thr[i].tid != tid; i++)
			;
		if (i == ls->nthr) {
			ls->thr = xrealloc(ls->thr, (ls->nthr + 1) * sizeof(*ls->thr));
			ls->thr[ls->nthr++] = (struct thr){ tid, 0, -1 };
			ls->generation++;
		}
		ls->thr[i].alive = 1;
		ls->alive++;
	}
	closedir(dir);
	/* the control thread is known from the first sample: it was never a program thread */
	for (i = 0; ctl && i < ls->nthr; i++)
		if (ls->thr[i].tid == ctl) {
			ls->thr[i] = ls->thr[--ls->nthr];
			ls->generation++;
		}
}

int lv_thread_alive(const struct lsrc *ls, uint32_t tid)
{
	uint32_t i;

	for (i = 0; i < ls->nthr; i++)
		if (ls->thr[i].tid == tid)
			return ls->thr[i].alive;
	return 0;
}

/* ---- /proc readings ---- */

static int read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t k;

	if (fd < 0)
		return -1;
	k = read(fd, buf, cap - 1);
	close(fd);
	if (k <= 0)
		return -1;
	buf[k] = 0;
	return 0;
}

/* ns on a CPU of one thread (schedstat's first field). */
static double thread_cpu_ns(const struct lsrc *ls, uint32_t tid)
{
	char path[96], buf[256];

	snprintf(path, sizeof(path), "/proc/%d/task/%u/schedstat", (int)ls->s->pid, tid);
	return read_file(path, buf, sizeof(buf)) == 0 ? strtod(buf, NULL) : -1;
}

/* The runtime's control thread's CPU time (sampling, serving the tool): a cost of the search
 * the points' counters do not see. Kept from the last reading (the process may be gone). */
void lv_read_ctl_cpu(struct lsrc *ls)
{
	uint32_t ctl = dyn_live_ctl_tid(ls->l);
	double v = ctl ? thread_cpu_ns(ls, ctl) : -1;

	if (v > ls->ctl_cpu_ns)
		ls->ctl_cpu_ns = v;
}

/*
 * Load compensation (docs/consult.md): the share of the period the program's threads could
 * have run, 1 - their time waiting for a CPU (schedstat's second field) over their time alive.
 */
double lv_load_factor(struct lsrc *ls)
{
	char path[96], buf[256], *p;
	double wait = 0, w, load;
	uint32_t i, n = 0;

	for (i = 0; i < ls->nthr; i++) {
		if (!ls->thr[i].alive)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%u/schedstat", (int)ls->s->pid,
			 ls->thr[i].tid);
		if (read_file(path, buf, sizeof(buf)) != 0)
			continue;
		strtod(buf, &p);
		w = strtod(p, NULL);
		if (ls->thr[i].wait_ns >= 0 && w >= ls->thr[i].wait_ns) {
			wait += w - ls->thr[i].wait_ns;
			n++;
		}
		ls->thr[i].wait_ns = w;
	}
	if (!n || ls->dt <= 0)
		return 1;
	load = 1 - wait / 1e9 / ((double)n * ls->dt);
	return load < 0.05 ? 0.05 : load > 1 ? 1 : load;
}

/* Minor and major faults of the process, or of one thread. */
static double faults(const struct lsrc *ls, uint32_t tid)
{
	char path[96], buf[1024], *p;
	double minflt = 0, majflt = 0;
	int field;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%u/stat", (int)ls->s->pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)ls->s->pid);
	if (read_file(path, buf, sizeof(buf)) != 0 || !(p = strrchr(buf, ')')))
		return -1;
	for (field = 3, p += 2; *p && field <= 12; field++) { /* p: field 3 (state) */
		if (field == 10)
			minflt = strtod(p, NULL);
		if (field == 12)
			majflt = strtod(p, NULL);
		p = strchr(p, ' ');
		if (!p)
			break;
		p++;
	}
	return minflt + majflt;
}

/* A tool-side request's cumulative reading now (-1: none: the process or thread is gone). */
double lv_reading(struct lsrc *ls, const struct req *r)
{
	switch (r->kind) {
	case K_TCPU:
		return thread_cpu_ns(ls, r->tid) * 1e-9;
	case K_FAULTS:
		return faults(ls, r->tid);
	case K_COST:
		return dyn_live_observed_ns(ls->l, r->keep) * 1e-9;
	default:
		return 0;
	}
}
