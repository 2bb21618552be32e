/* SPDX-License-Identifier: MIT */
/*
 * Between the files of the live source (live_source.h): its state, and what each file gives
 * the others — live_code.c the Code hierarchy (the executable's modules, procedures and their
 * callees), live_objects.c the SyncObject and Files hierarchies (and which calls and arguments
 * a focus narrows to), live_proc.c the threads and the readings from /proc, live_spec.c the
 * instrumentation of a (metric, focus), live_source.c the source itself (requests, steps,
 * the pace of the samples), live_phase.c an attached program's phase markers.
 */
#ifndef SONDE_CONSULT_LIVE_INT_H
#define SONDE_CONSULT_LIVE_INT_H

#include <libelf.h>
#include <stdint.h>

#include "../dyn/resources.h"
#include "../dyn/session_int.h"
#include "live_source.h"

enum lm { LM_CPU, LM_ACTIVE, LM_SYNC, LM_SYNC_OPS, LM_IO, LM_IO_OPS, LM_IO_BYTES, LM_FAULTS,
	  LM_COST, LM_CALLS, LM_MPI_P2P, LM_MPI_COLL, LM_MPI, LM_MPI_CPU, LM_WALL, LM_NONE };

/* The objects a /SyncObject or /Files focus narrows the calls to: their functions, and the
 * first argument's values (an object's address, a file's descriptors; none: every object of
 * the kind). */
struct narrow {
	const char *const *timed, *const *more;
	int64_t val[4];
	uint32_t nval;
	int on; /* a SyncObject or Files focus */
};

enum { K_DYN, K_ACTIVE, K_TCPU, K_FAULTS, K_COST };

/* A dynamic-instrumentation request, shared by the source's requests of the same key. */
struct ent {
	char *key;
	int id;        /* dyn_live's, -1: gone */
	uint32_t refs;
	double last;   /* increase over the last step (ns or a count) */
	int fresh;     /* it came as a sample (a value that did not change is not sent) */
	uint32_t every_was; /* sent every N buckets during the last step */
};

struct req {
	int used, kind;
	int ent;        /* K_DYN */
	uint32_t tid;   /* 0: every thread */
	uint8_t *keep;  /* K_COST at a Code focus: its procedures */
	double scale;   /* to seconds (timers) or counts */
	double prev;    /* tool-side readings: the cumulative value at the last step */
	double last;
	double alive;   /* K_ACTIVE: threads alive at the last step, -1: none yet */
	int fresh;      /* the last step's reading counts as a sample (source.h: fresh) */
	double slow;    /* only true nodes read it: the seconds its re-tests can wait; 0: busy
			 * (source.h: pace_req) */
	int sync;       /* a synchronization metric's: its nodes may be refined to the heap's
			 * sync objects (lv_read_heap asks for them only while one is) */
};

struct thr {
	uint32_t tid;
	int alive;
	double wait_ns; /* time waiting for a CPU so far (schedstat), -1: not read yet */
};

#define LV_MPI_MAX 32

/* A rank's MPI channels (live_chan.c): two registers, thread counters set at each MPI_Recv's
 * entry — the peer (its source + 1 on MPI_COMM_WORLD, else 0) and the tag (+ 1) — and the
 * channels their samples showed so far. */
#define LV_CHANS 2
struct lv_chan_seen {
	int64_t peer, tag; /* -1: none (a wildcard; a source not of MPI_COMM_WORLD) */
	int world;         /* a receive on MPI_COMM_WORLD */
};
struct lv_chan {
	uint64_t world;         /* MPI_COMM_WORLD's handle in the process; 0: unknown */
	int req[LV_CHANS];      /* the registers' dyn requests (peer, tag); -1: none */
	int64_t val[LV_CHANS];  /* their values now */
	struct lv_chan_seen *seen;
	uint32_t nseen;
};
/* A condition on a receive: its argument arg == value (reg 0), or the peer register OP value
 * (reg 1: SPROTO_EQ a peer, SPROTO_GT 0 any receive on MPI_COMM_WORLD). */
struct lv_chan_cond {
	int8_t reg, arg;
	uint8_t op;
	int64_t value;
};

struct lsrc {
	struct dyn_session *s;
	struct dyn_live *l;
	struct live_source_opts o;
	uint64_t origin, t_prev; /* CLOCK_MONOTONIC of t = 0; the last step's end (since origin) */
	uint64_t nsamples_seen;
	struct ent *ents;
	uint32_t nents;
	struct req *reqs;
	uint32_t nreqs, live_reqs, max_reqs, total_reqs;
	struct thr *thr;
	uint32_t nthr, alive;
	uint64_t generation, phases_seen;
	/* the executable's procedures by address (callees) and their callees, read once */
	uint32_t *by_addr, nby_addr;
	uint32_t **callees, *ncallees;
	uint8_t *callees_read;
	/* /SyncObject (the program's variables, read once) and /Files (open now, read again
	 * every second) resources (tool/dyn/resources.h) */
	struct dyn_resources objs, files;
	uint64_t files_read_ns;
	/* heap sync objects: the runtime records the objects the sync calls take (RECORD) for as
	 * long as the search runs, read every second (heap_req: the request, -1 none) */
	int heap_req;
	uint64_t heap_read_ns;
	double dt;      /* seconds of the last step */
	int ended, last_done, memfd;
	uint32_t coarse; /* the periods of a bucket when LIVE_RETEST or more; 0: fewer */
	uint64_t next_ns; /* the width of the next bucket, asked for with BUCKET (ls_pace) */
	double ctl_cpu_ns; /* the runtime's control thread's CPU time at its last reading */
	uint32_t phase_linked; /* sonde__phase slots pointed at the runtime (live_phase.c) */
	/* the MPI calls of lv_mpi_*_calls the program imports (live_objects.c: lv_mpi_imports) */
	const char *mpi_p2p[LV_MPI_MAX], *mpi_coll[LV_MPI_MAX], *mpi_all[2 * LV_MPI_MAX];
	struct lv_chan chan;
	char error[256];
};

#define L(src) ((struct lsrc *)(src)->impl)

/* live_code.c */
int lv_own_proc(const struct dyn_session *s, uint32_t i);
int lv_code_parts(const char *path, char *buf, size_t cap, const char **mod, const char **proc);
int lv_in_code(const struct dyn_session *s, uint32_t i, const char *mod, const char *proc);
uint32_t lv_thread_of(const struct cs_focus *f);
void lv_push_name(char ***out, uint32_t *n, const char *name);
uint32_t lv_code_children(struct lsrc *ls, const char *path, char ***out);
void lv_code_init(struct lsrc *ls);
void lv_code_free(struct lsrc *ls);

/* live_objects.c */
extern const char *const lv_io_data_calls[];
/* MPI's blocking point-to-point calls (receives, waits, probes), its collectives, both */
extern const char *const lv_mpi_p2p_calls[], *const lv_mpi_coll_calls[], *const lv_mpi_calls[];
int lv_has_mpi(const struct dyn_session *s);
void lv_mpi_imports(struct lsrc *ls);
void lv_own_objects(struct lsrc *ls);
void lv_read_files(struct lsrc *ls);
void lv_heap_start(struct lsrc *ls);
void lv_read_heap(struct lsrc *ls);
int lv_narrow_of(struct lsrc *ls, enum lm m, const struct cs_focus *f, struct narrow *nw);
uint32_t lv_sync_children(struct lsrc *ls, const char *part, char ***out);

/* live_chan.c: the Communicator, Peer and Tag hierarchies */
void lv_chan_start(struct lsrc *ls);
void lv_chan_read(struct lsrc *ls);
void lv_chan_free(struct lsrc *ls);
uint32_t lv_chan_children(struct lsrc *ls, const struct cs_focus *f, int h, char ***out);
/* The receives a focus's Communicator, Peer and Tag parts mean: up to 3 conditions on their
 * arguments (0 with *n; none: no such part), or -1 when they cannot be measured. */
int lv_chan_narrow(const struct lsrc *ls, const struct cs_focus *f, struct lv_chan_cond *cond,
		   uint32_t *n);
/* The calls those conditions apply to (MPI_Recv); the peer register's dyn request (-1). */
const char *const *lv_chan_calls(void);
int lv_chan_reg(const struct lsrc *ls);
/* Whether the rank was seen receiving on a channel that agrees with f's parts (1 without). */
int lv_chan_used(struct lsrc *ls, const struct cs_focus *f);
/* A register's value as a rank (-1: none, or a wildcard). */
int64_t lv_chan_decode(int64_t recorded);

/* live_proc.c */
void lv_read_threads(struct lsrc *ls);
int lv_thread_alive(const struct lsrc *ls, uint32_t tid);
double lv_load_factor(struct lsrc *ls);
void lv_read_ctl_cpu(struct lsrc *ls);
double lv_reading(struct lsrc *ls, const struct req *r);

/* live_phase.c: point an attached program's unresolved sonde__phase at the runtime's; the
 * slots so linked (0: none, or resolved at start already) */
#define LV_PHASE_SLOTS 4
uint32_t lv_phase_link(struct lsrc *ls);
/* Open path's ELF and call fn on it: 0, or -1 when it cannot be read. */
int lv_with_elf(const char *path, void (*fn)(Elf *e, void *arg), void *arg);
/* The value of a symbol e defines in its dynamic symbol table; 0: none. */
uint64_t lv_dynsym_value(Elf *e, const char *name);

/* live_spec.c */
int lv_dyn_spec(struct lsrc *ls, enum lm m, const struct cs_focus *f, struct dyn_lspec *sp,
		char *key, size_t cap);

#endif
