/* SPDX-License-Identifier: MIT */
/*
 * What `sonde run --io`, `--os` and `--hw` measured, gathered over a run directory's profiles
 * (model_io.c) for the report's sections (report_io.c).
 */
#ifndef SONDE_MODEL_IO_H
#define SONDE_MODEL_IO_H

#include <stdio.h>

#include "model.h"
#include "profile_read.h"

/* One file, by path, summed over processes, threads and phases. */
struct m_iofile {
	char *path;
	uint32_t kind;
	uint64_t calls[SPROF_IO_OPS], ns[SPROF_IO_OPS];
	uint64_t bytes_read, bytes_written, errors;
};

struct m_iophase_file {
	uint32_t file; /* index in m_ext.files */
	uint64_t ns, calls, bytes;
};

/* I/O during the phases of one name (any thread, any process). */
struct m_iophase {
	char *name;
	uint64_t ns, calls, bytes;
	double span_ns; /* the phases' summed duration */
	struct m_iophase_file *files;
	uint32_t nfiles;
};

struct m_os {
	uint32_t pid, thread, tid; /* thread SPROF_NO_INDEX: the whole process */
	uint64_t wall_ns;
	struct sprof_os_vals v;
};

struct m_interval {
	uint32_t pid;
	uint64_t start, end;
	struct sprof_os_vals v;
	const char *phase; /* thread 0's phase in the middle of it, or NULL */
};

/* OS counters of the threads in the phases of one name (each thread's own, between markers). */
struct m_osphase {
	char *name;
	uint32_t threads; /* thread-phases summed */
	double span_ns, user_ns, sys_ns, minflt, majflt, nvcsw, nivcsw;
};

struct m_hw {
	uint32_t pid, status;
	uint64_t value, enabled_ns, running_ns;
	char *event, *reason;
};

struct m_ext {
	struct m_iofile *files;
	struct m_iophase *iophases;
	struct m_os *os;
	struct m_interval *intervals;
	struct m_osphase *osphases;
	struct m_hw *hw;
	uint32_t nfiles, niophases, nos, nintervals, nosphases, nhw;
	char **names; /* phase names the intervals point to */
	uint32_t nnames;
};

static inline uint64_t m_io_total_ns(const struct m_iofile *f)
{
	uint64_t t = 0;
	int i;

	for (i = 0; i < SPROF_IO_OPS; i++)
		t += f->ns[i];
	return t;
}

static inline uint64_t m_io_total_calls(const struct m_iofile *f)
{
	uint64_t t = 0;
	int i;

	for (i = 0; i < SPROF_IO_OPS; i++)
		t += f->calls[i];
	return t;
}

void report_io_text(FILE *out, const struct model *m);
void report_io_json(FILE *out, const struct model *m);
void report_io_csv(FILE *out, const struct model *m);

#endif
