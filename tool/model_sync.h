/* SPDX-License-Identifier: MIT */
/*
 * The synchronization part of a model (`sonde run --sync`): every object with its name and
 * counts, and the shared-memory compensation of every thread and process (MODELS §2.4).
 */
#ifndef SONDE_MODEL_SYNC_H
#define SONDE_MODEL_SYNC_H

#include <stdint.h>

struct model;
struct sprof_file;
struct model_filter;

struct m_sync {
	uint32_t pid, kind, flags;
	char *name;
	uint64_t addr;
	uint64_t acquires, shared, contended, failed, timeouts, releases, broadcasts;
	double wait, wait_max; /* ns */
	double hold;           /* ns, estimated: sampled holds scaled to all acquisitions */
	uint64_t hold_samples;
};

struct m_sync_thread {
	uint32_t pid, index;
	double t_m;            /* measured lifetime */
	double o;              /* local overhead: probes, wrapped calls, in-run calibration */
	double x0, x;          /* delay inherited at creation, and at the end */
	double t_local;        /* t_m - o */
	double t_par;          /* t_m - (x - x0) */
	uint64_t waits, ops;
	double wait, wait_c;
	uint32_t wakes_unneeded; /* wake-ups the measurement caused (SYNC_COMP) */
};

struct m_sync_proc {
	uint32_t pid;
	double t_m, t_a;       /* as in struct m_process */
	double t_par;          /* measured wall time minus the main thread's final delay */
};

struct model_sync {
	struct m_sync *objs;
	struct m_sync_thread *threads;
	struct m_sync_proc *procs;
	uint32_t nobjs, nthreads, nprocs;
};

/* After a file's threads are merged: its SYNC and SYNC_COMP records into m->sync. */
void model_sync_merge(struct model *m, const struct sprof_file *f, const struct model_filter *flt);
void model_sync_free(struct model *m);
/* The thread's x at its end from its compensation record: sync_price.h. */
/* "mutex", "rwlock", ... */
const char *sync_kind_name(uint32_t kind);

#endif
