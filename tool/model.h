/* SPDX-License-Identifier: MIT */
/*
 * A run directory read into memory: every profile file validated, symbols resolved, each
 * thread's tree compensated (analysis/compensate.c), then merged into one call-path tree and
 * one flat table keyed by resource path (/Code/<file>/<function>). Reports only read this.
 */
#ifndef SONDE_MODEL_H
#define SONDE_MODEL_H

#include <stdint.h>

#include "profile.h"
#include "profile_insitu.h"

#define M_NONE UINT32_MAX

struct m_func {
	char *name, *file, *resource;
	int line, kind;
	uint32_t flags; /* SPROF_FN_* over all processes */
	uint64_t throttled_at, throttled_calls;
	uint64_t calls, child_calls;
	double incl, excl, incl_c, excl_c, cpu_incl, cpu_excl; /* ns; incl counts outermost calls */
	int unreliable; /* time per call below the probe's cost or the clock's period, or more
			 * than half of the measured exclusive time was probe cost */
};

/*
 * How far off a compensated value may be (docs/measurement.md, "Uncertainty"). A thread priced
 * by its calibration: the in-situ cost of a probe pair differs from it by about this fraction in
 * ordinary code (docs/benchmarks.md), so that fraction of what was removed at least, more where
 * the machine lets a program's work hide the probes (comp_calib_err). A thread priced in situ:
 * comp_insitu_err (analysis/compensate.h).
 */
#define M_COMP_UNCERTAINTY 0.10

struct m_node {
	uint32_t func, parent, first_child, next_sibling;
	uint64_t calls, child_calls;
	double incl, excl, incl_c, excl_c, cpu_incl, cpu_excl;
};

/* A thread's probe price measured in situ (`sonde run --insitu`: its INSITU record). */
struct m_insitu {
	int has;                 /* the thread has an INSITU record */
	uint32_t func;           /* index in funcs of its hot function; UINT32_MAX none */
	struct sprof_insitu rec;
	double price;            /* ns per measured pair its compensation used */
	double skip_price;       /* ... and per unmeasured call (sprof_thread_skip_price) */
	double calib_o_full;     /* the file's CALIB price, for comparison */
};

struct m_thread {
	uint32_t proc; /* index in procs: two images of one exec'ing process share a pid */
	uint32_t pid, index, tid;
	double t_m, t_a, overhead; /* ns */
	double t_a_err;            /* ns: how far the truth may lie above t_a (model_thread_err) */
	double t_a_err_low;        /* ... and below it */
	uint64_t probes, unmeasured, depth_skips, lost_calls;
	struct m_insitu insitu;
};

struct m_process {
	uint32_t pid, ppid, end_reason, end_signal;
	char *exe, *cmdline;
	double t_m, t_a; /* ns: measured wall time and its approximation without probes */
	double t_a_err;  /* ns: how far the truth may lie above t_a, its threads' as comp_total
			  * takes them */
	double t_a_err_low; /* ... and below it */
	uint64_t probes, unmeasured;
	struct sprof_calib calib;
	struct sprof_overlap overlap; /* overlap.batches 0 when not measured */
	uint64_t throttle_calls, throttle_ns;
	uint32_t run_flags;     /* RUN's flags (SPROF_RUN_*) */
	uint32_t depth;
};

struct m_counter {
	char *name;
	uint64_t count;
	double sum, min, max;
};

struct m_phase {
	uint32_t pid, thread;
	char *name;
	uint64_t start, end;
};

struct m_ext; /* I/O, OS and hardware counters (model_io.c) */

struct model {
	char *dir;
	int has_cpu;
	struct m_process *procs;
	struct m_thread *threads;
	struct m_func *funcs;
	struct m_node *nodes; /* nodes[0]: the root of all threads */
	struct m_counter *counters;
	struct m_phase *phases;
	uint32_t nprocs, nthreads, nfuncs, nnodes, ncounters, nphases;
	uint32_t cap_funcs, cap_nodes;
	uint32_t *func_hash; /* open addressing over funcs by resource */
	uint32_t hash_cap;
	struct model_sync *sync; /* --sync: objects and compensation (model_sync.c), or NULL */
	struct m_ext *ext;
	struct m_samples *samples; /* statistical samples (sample_model.h); NULL when none */
	struct model_mpi *mpi;     /* MPI ranks (model_mpi.h); NULL when the run had no MPI */
	double err_ratio; /* how far off a compensated value may be, per ns removed from it */
};

/* Which threads to read: a pid (0 = all) and a thread index (-1 = all). */
struct model_filter {
	uint32_t pid;
	int thread;
};

struct sprof_file;
void model_ext_add(struct model *m, const struct sprof_file *f, const struct model_filter *flt);
void model_ext_free(struct model *m);

/* 0, or -1 after printing one "sonde: ..." line. */
int model_load(struct model *m, const char *dir, const struct model_filter *flt);
void model_free(struct model *m);
/* The threads' compensated times summed (T_a of every thread), 1 when there are none: a divisor
 * for shares. */
double model_total_t_a(const struct model *m);
/* The model's function for (file, name), added on first sight; its index. */
uint32_t model_intern_func(struct model *m, const char *name, const char *file, int line,
			   int kind);

#endif
