/* SPDX-License-Identifier: MIT */
/*
 * The validating reader of profile files (tool side). Every byte is treated as hostile: sizes,
 * counts, indices and strings are checked before use; the first problem found is reported as one
 * line in `err` and the whole file is refused.
 */
#ifndef SONDE_FORMAT_PROFILE_READ_H
#define SONDE_FORMAT_PROFILE_READ_H

#include "profile.h"
#include "profile_sync.h"

struct sprof_node {
	uint32_t parent, func;
	uint64_t calls, incl, excl, skipped; /* times in ns */
	uint64_t cpu_incl, cpu_excl;
};

struct sprof_thread {
	uint32_t index, tid, flags, nnodes;
	uint64_t start, end, cpu; /* ns since the process's measurement began */
	uint64_t depth_skips, lost_calls;
	struct sprof_node *nodes;
};

struct sprof_module {
	uint32_t id, build_id_len;
	uint64_t bias, lo, hi;
	uint8_t build_id[32];
	char *path;
};

struct sprof_func {
	uint32_t id, kind, flags;
	int32_t module;
	uint64_t addr, vaddr, throttled_at, throttled_calls;
	char *name; /* regions only, else "" */
};

struct sprof_counter {
	uint32_t thread;
	uint64_t count;
	double sum, min, max;
	char *name;
};

struct sprof_phase {
	uint32_t thread;
	uint64_t start, end;
	char *name;
};

struct sprof_run {
	uint32_t pid, ppid, end_reason, end_signal, depth, flags, nthreads;
	uint64_t start_unix_ns, wall_ns, throttle_calls, throttle_ns;
	char *exe, *cmdline; /* cmdline: arguments separated by spaces */
};

struct sprof_file {
	uint16_t version;
	uint32_t features;
	struct sprof_run run;
	struct sprof_calib calib;
	struct sprof_module *modules;
	struct sprof_func *funcs;
	struct sprof_thread *threads;
	struct sprof_counter *counters;
	struct sprof_phase *phases;
	uint32_t nmodules, nfuncs, nthreads, ncounters, nphases;
	uint32_t *func_by_id; /* id -> index in funcs, UINT32_MAX when absent */
	struct sprof_sync *syncs;           /* SYNC records (profile_read_sync.c) */
	struct sprof_sync_comp *sync_comps; /* SYNC_COMP records */
	uint32_t nsyncs, nsync_comps;
	uint32_t func_id_cap;
};

/* 0 on success; -1 with a one-line reason in err. */
int sprof_read_file(const char *path, struct sprof_file **out, char *err, size_t errlen);
int sprof_read_mem(const uint8_t *data, size_t len, struct sprof_file **out, char *err,
		   size_t errlen);
void sprof_free(struct sprof_file *f);
/* The SYNC and SYNC_COMP records (profile_read_sync.c): 0, or -1 with the reason in err. */
int sprof_read_sync(struct sprof_file *f, struct sprof_buf *b, char *err, size_t errlen);
int sprof_read_sync_comp(struct sprof_file *f, struct sprof_buf *b, char *err, size_t errlen);
void sprof_free_sync(struct sprof_file *f);
/* The function of a node, or NULL for a thread's root. */
const struct sprof_func *sprof_func_of(const struct sprof_file *f, uint32_t func_id);

#endif
