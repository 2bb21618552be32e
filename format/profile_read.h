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
#include "profile_mpi.h"
#include "profile_insitu.h"

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

/* I/O, operating-system and hardware-counter records (profile_read_io.c). */
#define SPROF_IO_OPS 5 /* read, write, open, close, sync */
#define SPROF_NO_INDEX 0xffffffffu
enum sprof_io_kind { SPROF_IOK_UNKNOWN, SPROF_IOK_FILE, SPROF_IOK_PIPE, SPROF_IOK_SOCKET,
		     SPROF_IOK_TERMINAL, SPROF_IOK_DEVICE, SPROF_IOK_OTHER, SPROF_IOK_UNTRACKED };
enum sprof_hw_status { SPROF_HW_COUNTED, SPROF_HW_UNAVAILABLE, SPROF_HW_FORKED };

struct sprof_io_row {
	uint32_t thread, phase; /* thread index and its phase's index; SPROF_NO_INDEX: none */
	uint64_t calls[SPROF_IO_OPS], ns[SPROF_IO_OPS];
	uint64_t bytes_read, bytes_written, errors;
};

struct sprof_iofile {
	uint32_t id, kind, nrows;
	char *path;
	struct sprof_io_row *rows;
};

struct sprof_os_vals {
	uint64_t user_ns, sys_ns, minflt, majflt, nvcsw, nivcsw;
};

struct sprof_os {
	uint32_t thread, tid; /* thread SPROF_NO_INDEX: the whole process */
	uint32_t phase;       /* index among the thread's phases; SPROF_NO_INDEX: its whole life */
	uint64_t wall_ns;
	struct sprof_os_vals v;
};

struct sprof_os_interval {
	uint64_t start, end;
	struct sprof_os_vals v;
};

struct sprof_hw {
	uint32_t status, err;
	uint64_t value, enabled_ns, running_ns;
	char *event, *reason;
};

struct sprof_run {
	uint32_t pid, ppid, end_reason, end_signal, depth, flags, nthreads;
	uint64_t start_unix_ns, wall_ns, throttle_calls, throttle_ns;
	char *exe, *cmdline; /* cmdline: arguments separated by spaces */
};

/* Statistical samples (SAMPLES record, sonde run --sample). */
struct sprof_sample_thread {
	uint32_t index, tid, flags; /* flags: 1 = the thread had ended */
	uint64_t cpu_ns, samples, periods, dropped, truncated;
};

struct sprof_stack {
	uint32_t thread, depth;
	uint64_t samples, periods;
	const uint64_t *pcs; /* depth code addresses: the interrupted one, then return addresses */
};

struct sprof_samples {
	uint32_t hz, signo, nthreads, nstacks, max_depth;
	uint64_t period_ns;
	struct sprof_sample_thread *threads;
	struct sprof_stack *stacks;
	uint64_t *pcs; /* every stack's addresses, one block */
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
	struct sprof_iofile *iofiles;
	struct sprof_os *os;
	struct sprof_os_interval *intervals;
	struct sprof_hw *hw;
	uint32_t niofiles, nos, nintervals, nhw;
	uint32_t *func_by_id; /* id -> index in funcs, UINT32_MAX when absent */
	struct sprof_sync *syncs;           /* SYNC records (profile_read_sync.c) */
	struct sprof_sync_comp *sync_comps; /* SYNC_COMP records */
	uint32_t nsyncs, nsync_comps;
	struct sprof_samples *samples; /* NULL when the run was not sampled */
	struct sprof_mpi_call *mpi_calls; /* MPI records (profile_read_mpi.c) */
	struct sprof_mpi_peer *mpi_peers;
	struct sprof_mpi_comp *mpi_comp;  /* NULL when the process ran no MPI */
	uint32_t nmpi_calls, nmpi_peers;
	uint32_t func_id_cap;
	struct sprof_insitu *insitu; /* INSITU records (profile_read_insitu.c, --insitu) */
	uint32_t ninsitu;
	struct sprof_overlap overlap; /* the OVERLAP record; overlap.batches 0 when absent */
};

/* 0 on success; -1 with a one-line reason in err. */
int sprof_read_file(const char *path, struct sprof_file **out, char *err, size_t errlen);
int sprof_read_mem(const uint8_t *data, size_t len, struct sprof_file **out, char *err,
		   size_t errlen);
void sprof_free(struct sprof_file *f);
/* For the record readers: an array grown by one zeroed element (*count is incremented); NULL
 * when out of memory or past 2^24 elements (the old array is not freed then). */
void *sprof_grow(void *arr, uint32_t *count, size_t elem);
/* The SYNC and SYNC_COMP records (profile_read_sync.c): 0, or -1 with the reason in err. */
int sprof_read_sync(struct sprof_file *f, struct sprof_buf *b, char *err, size_t errlen);
int sprof_read_sync_comp(struct sprof_file *f, struct sprof_buf *b, char *err, size_t errlen);
void sprof_free_sync(struct sprof_file *f);
/* The INSITU record (profile_read_insitu.c): 0, or -1 with the reason in err. */
int sprof_read_insitu(struct sprof_file *f, struct sprof_buf *b, uint32_t size, char *err,
		      size_t errlen);

/* MPI_CALL, MPI_PEER and MPI_COMP (profile_read_mpi.c): 0, or -1 with the reason in err. */
int sprof_read_mpi(struct sprof_file *f, uint32_t type, struct sprof_buf *b, char *err,
		   size_t errlen);
void sprof_free_mpi(struct sprof_file *f);
/* profile_read_io.c: FILE, OS, OS_INTERVAL and HW records; their checks once all is read. */
int sprof_read_io(struct sprof_file *f, uint32_t type, struct sprof_buf *b, uint32_t size,
		  char *err, size_t errlen);
int sprof_check_io(const struct sprof_file *f, char *err, size_t errlen);
void sprof_free_io(struct sprof_file *f);
/* The function of a node, or NULL for a thread's root. */
const struct sprof_func *sprof_func_of(const struct sprof_file *f, uint32_t func_id);

/* A thread's INSITU record (`sonde run --insitu`), or NULL. */
static inline const struct sprof_insitu *sprof_insitu_of(const struct sprof_file *f,
							 uint32_t thread)
{
	uint32_t i;

	for (i = 0; i < f->ninsitu; i++)
		if (f->insitu[i].thread == thread)
			return &f->insitu[i];
	return NULL;
}

/* A thread's price of a measured probe pair: in situ when the runtime used it, else CALIB's. */
static inline double sprof_thread_price(const struct sprof_file *f, uint32_t thread)
{
	const struct sprof_insitu *s = sprof_insitu_of(f, thread);

	return s && s->status == SPROF_INSITU_USED ? s->price_ns : f->calib.o_full;
}

/* A thread's price of an unmeasured call: its in-situ price scaled (sprof_insitu_skip_price)
 * when the runtime used one, else CALIB's. */
static inline double sprof_thread_skip_price(const struct sprof_file *f, uint32_t thread)
{
	const struct sprof_insitu *s = sprof_insitu_of(f, thread);

	if (!s || s->status != SPROF_INSITU_USED)
		return f->calib.o_skip;
	return sprof_insitu_skip_price(s->price_ns, s->o_full_ns, s->o_skip_ns);
}

#endif
