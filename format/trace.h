/* SPDX-License-Identifier: MIT */
/*
 * The sonde trace file: one per measured process. Spec: docs/format-trace.md.
 *
 * Shared by the runtime (the writer of measured traces: per-thread chunks of a file mapped
 * MAP_SHARED, appended without locks) and the tool (validating reader; the analysis writes its
 * approximated traces with the same encoders). Little-endian, 8-byte words.
 *
 * A record starts with one header word: bits 0-4 its type, bits 5-7 its length in words (1-7),
 * or 0 for a long record whose length in bytes is in bits 32-63. Event records keep an id in
 * bits 8-27 and the ticks since the thread's previous event in bits 28-63. Type 0 never starts a
 * record: a zero word ends the records of a chunk that was never closed.
 */
#ifndef SONDE_FORMAT_TRACE_H
#define SONDE_FORMAT_TRACE_H

#include <stdint.h>

#define STRC_MAGIC "SONDETRC"
#define STRC_VERSION 1
#define STRC_MIN_VERSION 1
#define STRC_HEADER_SIZE 64
#define STRC_CHUNK_MAGIC 0x4b484353u /* "SCHK" */
#define STRC_CHUNK_HEADER 32

/* header feature bits */
#define STRC_F_CPU 0x1u      /* reserved: events carry no CPU time yet */
#define STRC_F_DROP 0x2u     /* full buffers drop events (counted) instead of flushing */
#define STRC_F_RATE 0x4u     /* rate throttling was on: COUNT records may appear */
#define STRC_F_APPROX 0x8u   /* timestamps are approximated by `sonde analyze` */

/* chunk flags */
#define STRC_CHUNK_CLOSED 0x1u /* `used` is exact; otherwise scan to the first zero word */
#define STRC_CHUNK_FINAL 0x2u  /* the process ended while this stream was open: complete */

enum strc_type {
	STRC_ENTER = 1,        /* id: function */
	STRC_EXIT = 2,         /* id: function */
	STRC_REGION_BEGIN = 3, /* id: region (a function-table entry of kind region) */
	STRC_REGION_END = 4,
	STRC_PHASE = 5,        /* id: phase name; STRC_ID_NONE ends the current phase */
	STRC_TIME = 6,         /* 2 words: sets the thread's clock (absolute ticks in word 1) */
	STRC_USER = 7,         /* 2 words: id: counter name; word 1: f64 value */
	STRC_THREAD_BEGIN = 8, /* 3 words: u32 tid, u32 0; u64 create edge (0: none) */
	STRC_THREAD_END = 9,   /* 2 words: u64 pthread_t of this thread (matches JOIN) */
	STRC_CREATE = 10,      /* 2 words: u64 create edge, matched by a THREAD_BEGIN */
	STRC_JOIN = 11,        /* 2 words: u64 pthread_t joined; after the join returned */
	STRC_FLUSH = 12,       /* 2 words: u64 ticks the flush took; the clock moves by them */
	STRC_COUNT = 13,       /* 2 words: id: function; u64 calls recorded as a count only */
	STRC_UNWIND = 14,      /* 2 words: u64 depth: longjmp closed the calls above it */
	STRC_DROPPED = 15,     /* 2 words: u64 events dropped since the previous DROPPED */
	STRC_END = 16,         /* 1 word: the thread's stream is complete */
	STRC_SYNC_WAIT = 17,   /* reserved (--sync): a blocking synchronization call begins */
	STRC_SYNC_DONE = 18,   /* reserved (--sync): it returned (acquired, woken, joined) */
	STRC_SYNC_RELEASE = 19, /* reserved (--sync): unlock, post, signal, broadcast */
	STRC_DEF_FUNC = 20,    /* long, no time: a function-table entry */
	STRC_DEF_MODULE = 21,  /* long, no time: a loaded image */
	STRC_CALIB = 22,       /* long, no time: probe costs (u32 when: 0 start, 1 end) */
	STRC_RUN = 23,         /* long, no time: pid, ppid, flags, exe, cmdline */
	STRC_PROC_END = 24,    /* 2 words: u32 reason (SPROF_END_*), u32 signal */
	STRC_DEF_SYNC = 25,    /* reserved (--sync): long, no time: a synchronization object */
	STRC_IO = 26,          /* reserved (--io): an I/O call */
	STRC_DEF_FILE = 27,    /* reserved (--io): long, no time: a file */
	STRC_MPI_SEND = 28,    /* 3 words, id: communicator; i32 peer, i32 tag; u64 bytes */
	STRC_MPI_RECV = 29,    /* 4 words, id: communicator; i32 peer, i32 tag; u64 bytes;
				* u64 wait: ticks since the call that completed it began */
	STRC_MPI_COLL = 30,    /* 5 words, id: communicator; u32 op, i32 root; u64 sent;
				* u64 received; u64 wait: ticks since the collective began */
	STRC_DEF_COMM = 31,    /* long, no time: a communicator; the last 5-bit type */
};

/* Collective operations of MPI_COLL records (op). */
enum strc_coll_op {
	STRC_COLL_BARRIER = 1,
	STRC_COLL_BCAST,
	STRC_COLL_GATHER,
	STRC_COLL_GATHERV,
	STRC_COLL_SCATTER,
	STRC_COLL_SCATTERV,
	STRC_COLL_ALLGATHER,
	STRC_COLL_ALLGATHERV,
	STRC_COLL_REDUCE,
	STRC_COLL_ALLREDUCE,
	STRC_COLL_ALLTOALL,
	STRC_COLL_ALLTOALLV,
	STRC_COLL_SCAN,
	STRC_COLL_EXSCAN,
	STRC_COLL_REDUCE_SCATTER,
	STRC_COLL_OPS /* one past the last */
};
/* A flag of op: a non-blocking collective (MPI_Ibarrier... : the operation of its blocking
 * counterpart, MPI_Ireduce_scatter_block's being REDUCE_SCATTER), recorded when the Wait or Test
 * that completed it returns; its wait counts from that call's start. */
#define STRC_COLL_NB 0x100u

static inline unsigned strc_coll_base(uint32_t op)
{
	return op & ~STRC_COLL_NB;
}

static inline int strc_coll_op_valid(uint32_t op)
{
	return strc_coll_base(op) > 0 && strc_coll_base(op) < STRC_COLL_OPS;
}

/* DEF_COMM flags */
#define STRC_COMM_WORLD 0x1u  /* MPI_COMM_WORLD: its ranks are the world ranks */
#define STRC_COMM_LISTED 0x2u /* the record lists the world rank of every member */
#define STRC_COMM_MAX_LISTED 4096 /* members listed at most (a bigger one is not listed) */
/* The root of a collective that has none (MPI_COLL root). */
#define STRC_NO_ROOT (-1)

#define STRC_ID_BITS 20
#define STRC_ID_NONE ((1u << STRC_ID_BITS) - 1)
#define STRC_DELTA_BITS 36
#define STRC_DELTA_MAX ((UINT64_C(1) << STRC_DELTA_BITS) - 1)

/* The header word of an event record of `words` words (1-7). */
static inline uint64_t strc_word(unsigned type, unsigned words, uint32_t id, uint64_t delta)
{
	return (uint64_t)type | (uint64_t)words << 5 | (uint64_t)id << 8 | delta << 28;
}

/* The header word of a long record of `bytes` bytes (a multiple of 8, header included). */
static inline uint64_t strc_long_word(unsigned type, uint32_t bytes)
{
	return (uint64_t)type | (uint64_t)bytes << 32;
}

static inline unsigned strc_type_of(uint64_t w)
{
	return (unsigned)(w & 31);
}

/* Length in bytes of the record that starts with w (0: not a valid length). */
static inline uint64_t strc_size_of(uint64_t w)
{
	unsigned words = (unsigned)(w >> 5) & 7;

	return words ? (uint64_t)words * 8 : w >> 32;
}

static inline uint32_t strc_id_of(uint64_t w)
{
	return (uint32_t)(w >> 8) & STRC_ID_NONE;
}

static inline uint64_t strc_delta_of(uint64_t w)
{
	return w >> 28;
}

/* File header: 64 bytes. */
struct strc_header {
	char magic[8];
	uint16_t version, min_version;
	uint32_t features;
	uint32_t header_size; /* 64 */
	uint32_t pid;
	uint64_t start_unix_ns;
	uint64_t start_ticks; /* clock at the runtime's start */
	double ticks_per_ns;  /* first estimate; CALIB records refine it */
	uint64_t first_chunk; /* offset of the first chunk; 0: right after the header (64) */
	uint64_t reserved;
};

/* Chunk header: 32 bytes, at an 8-aligned offset; records follow. */
struct strc_chunk {
	uint32_t magic;    /* STRC_CHUNK_MAGIC */
	uint32_t thread;   /* the thread's index in its process */
	uint32_t seq;      /* 0, 1, 2 ... per thread */
	uint32_t flags;    /* STRC_CHUNK_* */
	uint64_t capacity; /* bytes, header included: the next chunk starts here */
	uint64_t used;     /* bytes of records (closed chunks) */
};

#endif
