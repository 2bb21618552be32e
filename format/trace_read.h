/* SPDX-License-Identifier: MIT */
/*
 * The validating reader of trace files (tool side), and the writer of traces the tool makes
 * (approximated traces from `sonde analyze`). Every byte read is hostile: sizes, ids, chunk
 * offsets and strings are checked before use. A file cut short (a killed process, a full disk)
 * reads up to its last complete record with a warning; anything else wrong refuses the file with
 * a one-line reason.
 */
#ifndef SONDE_FORMAT_TRACE_READ_H
#define SONDE_FORMAT_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "profile_sync.h"
#include "trace.h"

/*
 * One decoded event: every short record but TIME (it only sets the clock) and END (it sets the
 * thread's `complete`). Times are absolute ticks of the trace's clock; a FLUSH's ticks move the
 * clock after it, so the next event is at least that much later.
 */
struct strc_event {
	uint64_t t;
	uint64_t arg;  /* the record's last payload word: CREATE, THREAD_BEGIN: create edge (the
			* tid is in the thread's `tid`); THREAD_END, JOIN: pthread_t; UNWIND: depth;
			* COUNT: calls; FLUSH: ticks; DROPPED: events; USER: the bits of `value`;
			* PROC_END: reason | signal << 32; 0 for one-word records */
	double value;  /* STRC_USER only */
	uint32_t id;   /* function / region / name id, STRC_ID_NONE when none */
	uint16_t type; /* enum strc_type */
	uint16_t depth; /* set by the reader: calls and regions open below this event (an ENTER
			 * and its EXIT have the same depth); saturates at 65535 */
};

struct strc_thread {
	uint32_t index, tid;
	uint64_t self;      /* pthread_t, from THREAD_END (0 if it did not end) */
	uint64_t edge;      /* create edge of THREAD_BEGIN (0: none) */
	uint64_t dropped;   /* events dropped (drop mode), from DROPPED records */
	uint64_t flushes, flush_ticks;
	uint32_t chunks;
	int complete;       /* its stream ended with an END record */
	int final;          /* no END, but its last chunk is final: still running at the end */
	struct strc_event *ev;
	size_t nev;
};

/* A synchronization object (DEF_SYNC, `sonde run --trace --sync`); fields as the profile's SYNC. */
struct strc_sync {
	uint32_t id, kind, flags;
	int32_t site_module;
	uint64_t addr, site, site_vaddr;
};

/*
 * The payload of an MPI event (MPI_SEND, MPI_RECV, MPI_COLL): the event's `arg` is its index in
 * strc_file.mpi, its `id` the communicator (a DEF_COMM id).
 */
struct strc_mpi {
	int32_t peer;   /* SEND, RECV: the partner's rank in the communicator; COLL: the root, -1 */
	int32_t tag;    /* SEND, RECV: the message's tag (never a wildcard); COLL: 0 */
	uint32_t op;    /* COLL: enum strc_coll_op; 0 for messages */
	uint32_t pad;
	uint64_t bytes; /* SEND, RECV: the message's size; COLL: bytes sent */
	uint64_t recvd; /* COLL: bytes received; 0 for messages */
	uint64_t wait;  /* RECV, COLL: ticks from the start of the call that completed it */
};

/* A communicator (DEF_COMM): its size, this process's rank in it, the world rank of each
 * member when listed. */
struct strc_comm {
	uint32_t id, size, flags; /* flags: STRC_COMM_* */
	int32_t rank;
	int32_t *world;           /* size entries when flags has STRC_COMM_LISTED, else NULL */
};

struct strc_func {
	uint32_t id, kind, flags; /* kind: SPROF_FUNC / SPROF_REGION; flags: SPROF_FN_* */
	int32_t module;     /* index in modules, -1 unknown; a function written with -1 gets the
			     * module whose span holds its addr, and vaddr = addr - bias */
	uint64_t addr, vaddr;
	char *name; /* regions, phases, counters: the user's string; functions: "" */
};

struct strc_module {
	uint32_t index, build_id_len;
	uint64_t bias, lo, hi;
	uint8_t build_id[32];
	char *path;
};

struct strc_file {
	uint16_t version;
	uint32_t features;
	uint32_t pid, ppid, run_flags, end_reason, end_signal;
	int ended;             /* a PROC_END record was seen */
	uint64_t start_unix_ns, start_ticks;
	uint64_t rate_limit;   /* events per second per function, 0: off */
	uint64_t chunk_bytes;
	double ticks_per_ns;
	char *exe, *cmdline;   /* never NULL; cmdline: arguments separated by spaces */
	struct sprof_calib calib;     /* the last CALIB record (end of run if present) */
	struct sprof_calib calib_start;
	int has_calib;                /* bit 0: a start CALIB (calib_start), bit 1: an end CALIB */
	struct strc_module *modules; /* modules[i].index == i */
	struct strc_func *funcs;     /* sorted by id */
	struct strc_thread *threads; /* sorted by index */
	uint32_t nmodules, nfuncs, nthreads;
	uint32_t *func_by_id;        /* id -> index in funcs, UINT32_MAX when absent */
	struct strc_sync *syncs;     /* DEF_SYNC records, in file order */
	uint32_t nsyncs;
	struct strc_mpi *mpi;        /* payloads of the MPI events, indexed by their arg */
	size_t nmpi, cap_mpi;
	struct strc_comm *comms;     /* DEF_COMM records, sorted by id */
	uint32_t ncomms;
	uint32_t func_id_cap;
	int truncated;               /* some stream was cut short: see warning */
	char warning[256];
};

/* 0 on success (check `truncated` and `warning`); -1 with a one-line reason in err. */
int strc_read_file(const char *path, struct strc_file **out, char *err, size_t errlen);
int strc_read_mem(const uint8_t *data, size_t len, struct strc_file **out, char *err,
		  size_t errlen);
void strc_free(struct strc_file *f);
const struct strc_func *strc_func_of(const struct strc_file *f, uint32_t id);
double strc_ticks_to_ns(const struct strc_file *f, uint64_t ticks);
/* The communicator of id (a DEF_COMM), or NULL. */
const struct strc_comm *strc_comm_of(const struct strc_file *f, uint32_t id);
/* An MPI event's payload (e: MPI_SEND, MPI_RECV or MPI_COLL of f). */
static inline const struct strc_mpi *strc_mpi_of(const struct strc_file *f,
						 const struct strc_event *e)
{
	return &f->mpi[e->arg];
}
/* A collective operation's name ("Allreduce"), "?" when unknown. */
const char *strc_coll_name(unsigned op);
/* A record type's name as the spec writes it ("ENTER"), "?" when unknown. */
const char *strc_type_name(unsigned type);

/*
 * Write f as a trace file (one closed chunk per thread, threads with distinct indexes). The
 * first thread's stream gets the RUN, CALIB, DEF_MODULE and DEF_FUNC records, and PROC_END if
 * f->ended and no thread has a PROC_END event; END ends the streams that are `complete`. The
 * features are f's: set STRC_F_APPROX for approximated times. 0, or -1 with a reason in err.
 */
int strc_write_file(const char *path, const struct strc_file *f, char *err, size_t errlen);
/* The same into memory: *out (free it) of *len bytes. */
int strc_write_mem(const struct strc_file *f, uint8_t **out, size_t *len, char *err,
		   size_t errlen);

#endif
