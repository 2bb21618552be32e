/* SPDX-License-Identifier: MIT */
/*
 * The sonde profile file: one per measured process. Spec: docs/format-profile.md.
 *
 * Shared by the runtime (writer, async-signal-safe, no malloc) and the tool (validating reader).
 * Little-endian; a 32-byte header, then records {u32 type, u32 size} + payload of `size` bytes.
 * A reader skips record types it does not know, so new record types need no version bump.
 */
#ifndef SONDE_FORMAT_PROFILE_H
#define SONDE_FORMAT_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#define SPROF_MAGIC "SONDEPRF"
#define SPROF_VERSION 1
#define SPROF_MIN_VERSION 1 /* oldest reader version that can read what we write */

/* header feature bits */
#define SPROF_F_CPU 0x1u /* nodes carry CPU-time fields */

enum sprof_rec {
	SPROF_REC_RUN = 1,
	SPROF_REC_CALIB = 2,
	SPROF_REC_MODULE = 3,
	SPROF_REC_FUNC = 4,
	SPROF_REC_THREAD = 5,
	SPROF_REC_COUNTER = 6,
	SPROF_REC_PHASE = 7,
	SPROF_REC_SYNC = 8,     /* one per synchronization object (--sync) */
	SPROF_REC_SYNC_COMP = 9, /* per-thread shared-memory compensation (--sync) */
	SPROF_REC_FILE = 10,    /* one per file (--io) */
	SPROF_REC_OS = 11,      /* per-thread operating-system counters (--os) */
	SPROF_REC_OS_INTERVAL = 12, /* process-wide OS counters per interval (--os) */
	SPROF_REC_HW = 13,      /* hardware counters, or why there are none (--hw) */
	SPROF_REC_SAMPLES = 14, /* statistical samples: stacks and counts (--sample) */
	SPROF_REC_MPI_CALL = 15, /* reserved (MPI): per MPI routine: calls, time, bytes */
	SPROF_REC_MPI_PEER = 16, /* reserved (MPI): messages and bytes per peer, communicator, tag */
	SPROF_REC_MPI_COMP = 17, /* reserved (MPI): the rank's local and parallel compensation */
	SPROF_REC_INSITU = 18,  /* per thread: a probe pair's price in situ (--insitu) */
	SPROF_REC_OVERLAP = 19, /* a probe pair's cost around a chain of dependent work */
	SPROF_REC_END = 0xffff,
};

enum sprof_end_reason {
	SPROF_END_EXIT = 0,
	SPROF_END_SIGNAL = 1,
	SPROF_END_EXEC = 2,
	SPROF_END_DETACH = 3, /* an attached tool ended the profile (sonde attach): the process ran on */
};
enum sprof_clock { SPROF_CLOCK_TSC = 1, SPROF_CLOCK_MONOTONIC = 2 };
enum sprof_func_kind { SPROF_FUNC = 0, SPROF_REGION = 1 };

/* RUN flags */
#define SPROF_RUN_CPU 0x1u
#define SPROF_RUN_FOLLOW_EXEC 0x2u
#define SPROF_RUN_PRECISE 0x4u
#define SPROF_RUN_DYNAMIC 0x8u /* probes reached through dynamic instrumentation's trampolines
				* (sonde run --dynamic); CALIB measured through them */

/* function flags */
#define SPROF_FN_EXCLUDED 0x1u  /* never measured: excluded by selection */
#define SPROF_FN_THROTTLED 0x2u /* measured until throttled_at_ns, then not */

#define SPROF_NO_PARENT 0xffffffffu
#define SPROF_ROOT_FUNC 0xffffffffu
#define SPROF_HEADER_SIZE 32
#define SPROF_MAX_STR 4096

/* Probe costs measured in vitro (docs/measurement.md: o_in, o_full, o_skip). */
struct sprof_calib {
	uint32_t clock_kind;
	uint32_t samples;     /* batches measured */
	double ticks_per_ns;  /* 1.0 for the monotonic clock */
	double clock_ns, clock_sd; /* cost of one clock read */
	double dt_ns;         /* timer period: smallest observable change */
	double o_in, o_in_sd;     /* part of an enter+exit pair inside its own interval */
	double o_full, o_full_sd; /* whole enter+exit pair as seen from an enclosing interval */
	double o_skip, o_skip_sd; /* enter+exit pair of an unmeasured (excluded) function */
};

/*
 * The OVERLAP record (19): what a probe pair costs around a chain of `steps` dependent
 * multiply-adds (`work_ns` per call without probes), against o_full around nothing: how much of a
 * pair a program's own work can hide on this machine (docs/measurement.md, "Uncertainty";
 * docs/format-profile.md). At most one per file; none when it was not measured (--dynamic,
 * --trace).
 */
#define SPROF_OVERLAP_SIZE 32
struct sprof_overlap {
	uint32_t steps, batches;
	double work_ns;
	double o_pair, o_pair_sd; /* ns a pair around the work (never below 0) */
};

/* Byte cursor used by both writer and reader: all bounds are checked here. */
struct sprof_buf {
	uint8_t *p;
	size_t len, cap;
	int error; /* sticky: set on overflow or short read */
};

void sprof_put_u16(struct sprof_buf *b, uint16_t v);
void sprof_put_u32(struct sprof_buf *b, uint32_t v);
void sprof_put_u64(struct sprof_buf *b, uint64_t v);
void sprof_put_f64(struct sprof_buf *b, double v);
void sprof_put_str(struct sprof_buf *b, const char *s, size_t n);
void sprof_put_calib(struct sprof_buf *b, const struct sprof_calib *c);
void sprof_put_header(struct sprof_buf *b, uint32_t features);

uint16_t sprof_get_u16(struct sprof_buf *b);
uint32_t sprof_get_u32(struct sprof_buf *b);
uint64_t sprof_get_u64(struct sprof_buf *b);
double sprof_get_f64(struct sprof_buf *b);
/* Returns a pointer into the buffer (not NUL-terminated) and its length in *n. */
const char *sprof_get_str(struct sprof_buf *b, uint32_t *n);
void sprof_get_calib(struct sprof_buf *b, struct sprof_calib *c);

#endif
