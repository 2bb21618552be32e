/* SPDX-License-Identifier: MIT */
/*
 * The control protocol of dynamic instrumentation: the tool (client) and the runtime's control
 * server (runtime/dyn/server.c) talk over a Unix stream socket. Spec: docs/protocol.md.
 *
 * Every message is a frame: a 12-byte header {u32 magic, u16 version, u16 type, u32 length}
 * and `length` bytes of payload. All integers are little-endian; the encoding never depends on
 * C struct layout. One writer (sproto_buf_*, sproto_put_*) and one validating reader
 * (sproto_frame, sproto_decode) serve both sides. Neither allocates memory nor calls stdio: the
 * runtime uses them inside the measured process.
 */
#ifndef SONDE_FORMAT_PROTOCOL_H
#define SONDE_FORMAT_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#define SPROTO_MAGIC 0x43444e53u /* "SNDC" in the byte stream */
/* 2: COSTS (version 1 had no way to ask what the primitives cost); 3: ADD_RET, TADD_RET (the
 * return value added: bytes read or written); 4: METRIC_ENABLE's flags (changes only, every N), 32 actions a point;
 * 5: the RECORD primitive and RESOURCES / RESOURCES_REPLY (the sync objects the process used);
 * 6: SAMPLE in variable-length integers, METRIC_ENABLE's units of 1024 (the live search's data
 * volume); 7: BUCKET / BUCKET_REPLY (buckets that end when the tool asks: fewer of them);
 * 8: BATCH (many requests, one answer), POINT_ACTIONS (a POINT_SET in varints) and
 * RESOURCES' "new only" with a RESOURCES_REPLY in varints (the live search's data volume);
 * 9: short frames from the runtime after its HELLO_REPLY, a SAMPLE without its count and its
 * width in units of 1024 ns (the live MPI search's data volume); 10: a SAMPLE's start, lost and
 * `same` in one head, its entries kept from the previous one named by a mask, a compact
 * HELLO_REPLY in a short frame, a COSTS_REPLY in varints, an empty OK (the same volume); 11: the
 * deltas of a SAMPLE's kept entries led by 2-bit codes, 0 and +-1 in a code alone (the same) */
#define SPROTO_VERSION 11
#define SPROTO_VERSION_TEXT "11"
#define SPROTO_HEADER_SIZE 12
/* version 9: what the runtime sends after its HELLO_REPLY is a short frame, {u8 type, uvarint
 * length}: 2 to 4 bytes */
#define SPROTO_SHORT_HEADER_MAX 4
/* version 9: a SAMPLE's width is in units of 1024 ns (rounded up: sproto_sample_end) */
#define SPROTO_WIDTH_SHIFT 10
/* version 10: a BUCKET_REPLY's width is the one asked for plus a multiple of this many units
 * (65.5 us: the least that makes a bucket that ends a few ms after its ask a 1-byte width) */
#define SPROTO_BUCKET_QUANTUM 64
/* version 10: an entry's delta may be predicted from one of the entries this far before it */
#define SPROTO_LOOK_BACK 8
/* version 11: the first this many kept deltas of a SAMPLE (modes same and kept) have a 2-bit
 * code each, in one uvarint before them: 1 the delta is 0, 2 it is +1, 3 it is -1 (no byte of
 * its own), 0 an svarint follows */
#define SPROTO_CODED 32
#define SPROTO_MAX_PAYLOAD (1u << 20)
#define SPROTO_MAX_MESSAGE (SPROTO_HEADER_SIZE + SPROTO_MAX_PAYLOAD)

/* Limits, the same for every runtime of this version (HELLO_REPLY repeats them). */
#define SPROTO_MAX_POINTS (1u << 18)   /* point ids: 0 .. MAX_POINTS-1 */
#define SPROTO_MAX_ACTIONS 32          /* per point, entry and exit together (16 before version 4) */
#define SPROTO_MAX_COUNTERS (1u << 16) /* counter indices */
#define SPROTO_MAX_TIMERS 4096         /* wall timer indices; CPU timers have as many */
#define SPROTO_MAX_TCOUNTERS 1024      /* thread counter indices (each thread has its own) */
#define SPROTO_SHADOW_DEPTH 4096       /* calls with exit actions open at once per thread */
#define SPROTO_MAX_METRICS 1024        /* metric ids */
#define SPROTO_MAX_TERMS 64            /* counters and timers summed by one metric */
#define SPROTO_MAX_TEXT 512            /* ERROR text, bytes */
#define SPROTO_MAX_NAME 63             /* HELLO client name, runtime build string */
#define SPROTO_MAX_PATH 4095           /* LIST module path */
#define SPROTO_MAX_BUILD_ID 32
#define SPROTO_MAX_COSTS 64            /* COSTS_REPLY figures */
#define SPROTO_MIN_BUCKET_NS 1000000ull            /* 1 ms */
#define SPROTO_MAX_BUCKET_NS 3600000000000ull      /* 1 hour */
#define SPROTO_DEFAULT_BUCKET_NS 100000000ull      /* 100 ms */
/*
 * Counters the runtime itself writes (docs/protocol.md, "Counters the runtime writes"): a tool
 * reads them with METRIC_ENABLE terms of kind counter and never allocates them. The sonde.h
 * phase markers the process ran (a count), the last one's name (its address in the target, 0
 * for SONDE_PHASE(NULL)) and time (CLOCK_MONOTONIC ns); the control thread's id.
 */
#define SPROTO_COUNTER_PHASE_NS (SPROTO_MAX_COUNTERS - 4)
#define SPROTO_COUNTER_PHASE_NAME (SPROTO_MAX_COUNTERS - 3)
#define SPROTO_COUNTER_PHASES (SPROTO_MAX_COUNTERS - 2)
#define SPROTO_COUNTER_CTL_TID (SPROTO_MAX_COUNTERS - 1)
#define SPROTO_COUNTERS_OWN (SPROTO_MAX_COUNTERS - 4) /* counters a tool may use: below */

/* Message types: requests (tool -> runtime) below 0x80, replies and the stream above. */
enum sproto_type {
	SPROTO_HELLO = 1,          /* must come first; versions the tool speaks, its name */
	SPROTO_LIST = 2,           /* empty; reply LIST_REPLY */
	SPROTO_POINT_SET = 3,      /* point id + actions; replaces the point's actions */
	SPROTO_POINT_CLEAR = 4,    /* a range of point ids */
	SPROTO_METRIC_ENABLE = 5,  /* metric id + the counters/timers it sums */
	SPROTO_METRIC_DISABLE = 6, /* metric id */
	SPROTO_SAMPLING = 7,       /* bucket width in ns */
	SPROTO_PAUSE = 8,          /* empty: every point acts as inactive */
	SPROTO_RESUME = 9,         /* empty */
	SPROTO_DETACH = 10,        /* empty: stop sampling, clear points, close */
	SPROTO_COSTS = 11,         /* empty; reply COSTS_REPLY (version 2) */
	SPROTO_PROFILE_BEGIN = 12, /* a directory: an attached runtime starts a profile */
	SPROTO_PROFILE_END = 13,   /* empty: every point cleared, the profile written */
	SPROTO_RESOURCES = 14,     /* the objects RECORD saw, by kind; reply RESOURCES_REPLY (v5) */
	SPROTO_BUCKET = 15,        /* end the bucket in progress this long after its start; reply
				    * BUCKET_REPLY; buckets end only when asked from then (v7) */
	SPROTO_BATCH = 16,         /* POINT_SET, POINT_CLEAR, METRIC_ENABLE, METRIC_DISABLE in
				    * one, done in order; one OK, or one ERROR at the first refused
				    * (version 8) */
	SPROTO_POINT_ACTIONS = 17, /* POINT_SET in variable-length integers (version 8) */
	SPROTO_HELLO_REPLY = 0x81, /* version chosen, pid, limits, addresses, build */
	SPROTO_LIST_REPLY = 0x82,  /* modules and threads */
	SPROTO_OK = 0x83,          /* the request (its type) was done */
	SPROTO_ERROR = 0x84,       /* the request (its type) was refused: one line of text */
	SPROTO_SAMPLE = 0x85,      /* unrequested, every bucket: the enabled metrics' values */
	SPROTO_COSTS_REPLY = 0x86, /* what primitives and trampolines cost here (version 2) */
	SPROTO_RESOURCES_REPLY = 0x87, /* the objects seen since the session began (version 5) */
	SPROTO_BUCKET_REPLY = 0x88, /* the SAMPLE of the bucket a BUCKET ended (version 7) */
	SPROTO_BUCKET_SAME = 0x89,  /* version 10: a BUCKET_REPLY whose head (1 byte) is
				     * `same` alone, left out */
	SPROTO_BUCKET_KEPT = 0x8a,  /* version 10: one whose head is `kept` alone, left out */
};

/* Instrumentation: an action is {when, primitive, target, value, optional predicate}. */
enum sproto_when { SPROTO_AT_ENTRY = 0, SPROTO_AT_EXIT = 1 };
enum sproto_prim {
	SPROTO_SET = 0,       /* counter[target] = value */
	SPROTO_ADD = 1,       /* counter[target] += value */
	SPROTO_SUB = 2,       /* counter[target] -= value */
	SPROTO_START_WALL = 3, /* wall timer[target]: the outermost start of a thread reads the clock */
	SPROTO_STOP_WALL = 4,  /* the matching outermost stop adds the elapsed time */
	SPROTO_START_CPU = 5,  /* CPU timer[target] (the thread's CPU time) */
	SPROTO_STOP_CPU = 6,
	SPROTO_TSET = 7,       /* this thread's counter[target] = value */
	SPROTO_TADD = 8,       /* this thread's counter[target] += value */
	SPROTO_TSUB = 9,       /* this thread's counter[target] -= value */
	SPROTO_PROFILE = 10,   /* the profile runtime's enter (at entry) or exit (at exit) of the
				* function at address `value`, as -finstrument-functions calls it */
	SPROTO_ADD_RET = 11,   /* counter[target] += rax when rax > 0 (signed; at exit only;
				* version 3) */
	SPROTO_TADD_RET = 12,  /* this thread's counter[target] += rax when rax > 0 (version 3) */
	SPROTO_RECORD = 13,    /* arg[0], an object of kind `target`, into the process's object table
				* (entry only): value 0 a use, counted; 1 its initialisation, the
				* call's return address kept as its site (version 5) */
	SPROTO_TSET_ARG = 14,  /* this thread's counter[target] = arg[value] + 1 (entry only; value
				* 0-5: rdi rsi rdx rcx r8 r9): the argument of the last call, 0
				* while none ran (the live search's MPI channels) */
	SPROTO_START_WALL_IF = 15, /* START_WALL when also this thread's counter[value & 0xffff]
				    * OP (value >> 16 & 0xff) value >> 24 (signed): a second
				    * guard beside the predicate (SPROTO_GUARD) */
	SPROTO_PRIM_COUNT
};
enum sproto_pred {
	SPROTO_PRED_NONE = 0,
	SPROTO_PRED_COUNTER = 1, /* counter[pred_index] OP pred_value */
	SPROTO_PRED_ARG = 2,     /* arg[pred_index] OP pred_value (entry only; rdi rsi rdx rcx r8 r9) */
	SPROTO_PRED_RETVAL = 3,  /* rax OP pred_value (exit only) */
	SPROTO_PRED_TCOUNTER = 4, /* this thread's counter[pred_index] OP pred_value */
	SPROTO_PRED_COUNT
};
enum sproto_op { /* signed 64-bit comparisons */
	SPROTO_EQ = 0, SPROTO_NE = 1, SPROTO_LT = 2, SPROTO_LE = 3, SPROTO_GT = 4, SPROTO_GE = 5,
	SPROTO_OP_COUNT
};
/* What a metric sums. */
enum sproto_term_kind {
	SPROTO_TERM_COUNTER = 0,  /* a counter's value */
	SPROTO_TERM_WALL = 1,     /* a wall timer, ns, over the threads (or one thread) */
	SPROTO_TERM_CPU = 2,      /* a CPU timer, ns, likewise */
	SPROTO_TERM_PROC_CPU = 3, /* the process's CPU time, ns, without the control thread's */
	SPROTO_TERM_TCOUNTER = 4, /* a thread counter, over the threads (or one thread) */
	SPROTO_TERM_KIND_COUNT
};

/* Kinds of objects RECORD keeps apart (the tool's /SyncObject kinds). */
enum sproto_obj_kind {
	SPROTO_OBJ_MUTEX = 0, SPROTO_OBJ_RWLOCK = 1, SPROTO_OBJ_COND = 2, SPROTO_OBJ_BARRIER = 3,
	SPROTO_OBJ_SEM = 4,
	SPROTO_OBJ_KINDS
};
/* START_WALL_IF's value: the guard's thread counter, comparison (sproto_op) and constant
 * (-2^39 to 2^39 - 1). */
#define SPROTO_GUARD(tc, op, k) ((int64_t)(((uint64_t)(k) << 24) | ((uint64_t)(op) & 0xff) << 16 | \
					   ((uint64_t)(tc) & 0xffff)))
#define SPROTO_RECORD_USE 0
#define SPROTO_RECORD_INIT 1
#define SPROTO_OBJ_ADDR_LIMIT (1ull << 56) /* an address at or above it is not recorded */
#define SPROTO_MAX_OBJECTS 8192             /* entries of a RESOURCES_REPLY (the table's size) */
/* RESOURCES (version 8): only the objects no RESOURCES_REPLY of the session has sent yet, and
 * those sent without a use that have been used since (a reader that wants the objects, not
 * their counts: the live search) */
#define SPROTO_RES_NEW 0x100u
#define SPROTO_MAX_BATCH 4096 /* requests in one BATCH */

/* HELLO_REPLY flags */
#define SPROTO_F_AT_START 0x1u /* started with the process (sonde run --dynamic), not attached */
#define SPROTO_F_PROFILE 0x2u  /* the profile/trace runtime is measuring this process too */
#define SPROTO_F_TSC 0x4u      /* wall timers count TSC ticks (converted to ns in samples) */

/*
 * COSTS_REPLY figures: what one execution costs, measured in the target through the patcher's
 * trampolines (runtime/calib_dyn.c). Items a reader does not know are skipped.
 */
enum sproto_cost_item {
	SPROTO_COST_CALL = 0,  /* a call of an empty function: the baseline, absolute */
	SPROTO_COST_ENTRY = 1, /* entry trampoline and the handler of an inactive point */
	SPROTO_COST_EXIT = 2,  /* the return hook: shadow stack, return trampoline, exit handler */
	SPROTO_COST_PRED = 3,  /* testing one predicate */
	SPROTO_COST_PRIM = 16, /* + sproto_prim: one execution of that primitive; for PROFILE the
				* entry and exit pair, trampolines included (the profile's o_full) */
	SPROTO_COST_ITEM_END = SPROTO_COST_PRIM + SPROTO_PRIM_COUNT
};
#define SPROTO_COSTS_MEASURED 0x1u /* the figures are there (else n is 0) */
#define SPROTO_COSTS_PROFILE 0x2u  /* the PROFILE pair is the profile's own calibration */

/* SAMPLE entry flags */
#define SPROTO_S_FIRST 0x1u /* the first sample since the metric was enabled */
#define SPROTO_S_LAST 0x2u  /* the process is ending (exit, a signal): no sample follows */
#define SPROTO_S_VALUE 0x4u /* the entry carries the value (version 6: the first ones) */
#define SPROTO_S_FLAGS (SPROTO_S_FIRST | SPROTO_S_LAST | SPROTO_S_VALUE)

struct sproto_header {
	uint32_t magic;
	uint16_t version, type;
	uint32_t length;
	uint32_t size; /* the header's own bytes: SPROTO_HEADER_SIZE, or a short frame's (2-4) */
};

struct sproto_action {
	uint8_t when, prim, pred, op; /* sproto_when, sproto_prim, sproto_pred, sproto_op */
	uint32_t target;              /* counter, timer or thread counter index */
	uint32_t pred_index;          /* (thread) counter index or argument number */
	int64_t value;                /* SET/ADD/SUB operand */
	int64_t pred_value;           /* the predicate's constant */
};

struct sproto_term {
	uint8_t kind;   /* sproto_term_kind */
	uint32_t index; /* counter, timer or thread counter index (0 for PROC_CPU) */
	uint32_t tid;   /* timers, thread counters: only this thread; 0: every thread */
};

struct sproto_hello {
	uint16_t min_version, max_version;
	char client[SPROTO_MAX_NAME + 1];
};

struct sproto_hello_reply {
	uint16_t version;
	uint32_t pid, flags;
	uint32_t max_points, max_actions, max_counters, max_timers, max_metrics, max_terms;
	uint32_t shadow_depth; /* calls with exit actions open at once per thread */
	uint32_t max_tcounters;
	uint64_t bucket_ns;    /* the current bucket width */
	uint64_t entry_addr, exit_addr, ret_tramp_addr; /* sonde__dyn_entry, _exit, _ret_tramp */
	char build[SPROTO_MAX_NAME + 1];
};

struct sproto_point_set {
	uint32_t point;
	uint16_t n;
	struct sproto_action act[SPROTO_MAX_ACTIONS];
};

struct sproto_range {
	uint32_t first, count;
};

/* METRIC_ENABLE flags (version 4): a SAMPLE leaves the metric out when its value did not
 * change since the previous sample (its first and last entries are always sent) */
#define SPROTO_M_CHANGES 0x1u
/* (version 6) its value and delta sent in units of 1024 (the value shifted right by 10): a
 * timer's to about a microsecond, in fewer bytes */
#define SPROTO_M_KILO 0x2u
/* (version 7) in units of 65536 (shifted right by 16): a timer's to about 66 us, a bucket's
 * quarter second of waiting in 2 bytes; not with SPROTO_M_KILO */
#define SPROTO_M_K64 0x4u
/* (version 7) deltas only: no entry carries the value, and with SPROTO_M_CHANGES the first
 * entry is sent only when the value changed (a reader that needs the increases only) */
#define SPROTO_M_DELTAS 0x8u
#define SPROTO_M_FLAGS (SPROTO_M_CHANGES | SPROTO_M_KILO | SPROTO_M_K64 | SPROTO_M_DELTAS)
#define SPROTO_M_UNITS (SPROTO_M_KILO | SPROTO_M_K64)

struct sproto_metric {
	uint32_t id;
	uint16_t n;     /* 0 only in METRIC_DISABLE */
	uint8_t flags;  /* SPROTO_M_*: METRIC_ENABLE only (version 4) */
	uint8_t every;  /* sent in every Nth bucket only (0, 1: each); version 4 */
	struct sproto_term term[SPROTO_MAX_TERMS];
};

struct sproto_status { /* OK and ERROR */
	uint16_t type;     /* of the request answered */
	char text[SPROTO_MAX_TEXT + 1];
};

/* LIST_REPLY: read with sproto_list_module / sproto_list_tid after sproto_decode. */
struct sproto_list {
	uint32_t nmodules, nthreads;
	const uint8_t *modules; /* nmodules encoded modules (validated) */
	const uint8_t *tids;    /* nthreads u32 */
};

struct sproto_module {
	uint64_t bias, lo, hi; /* load bias; span of its executable segments [lo, hi) */
	uint8_t build_id_len;
	uint8_t build_id[SPROTO_MAX_BUILD_ID];
	char path[SPROTO_MAX_PATH + 1];
};

/* SAMPLE: read entries with sproto_sample_entry after sproto_decode (entries are of variable
 * length: the reader notes where each begins). */
struct sproto_sample {
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC: the bucket; with `follows`, from the end
				    * of the previous SAMPLE (sproto_sample_follow) */
	int follows;               /* its start is given from the previous SAMPLE's end */
	uint64_t lost;             /* calls whose exit could not be hooked, since the start */
	uint64_t units;            /* its width in units of 1024 ns (version 9) */
	int same;                  /* version 9: its entries have no keys, their metrics are
				    * those of the previous SAMPLE (sproto_sample_resolve) */
	int kept;                  /* version 10: its first `keyed` entries have keys, the others
				    * are the previous SAMPLE's metrics but those in `dropped` */
	uint32_t keyed;
	uint64_t dropped;          /* bit i: the previous SAMPLE's entry i is not in this one */
	int last;                  /* version 10: every entry is flagged SPROTO_S_LAST */
	int rel;                   /* version 10, a BUCKET_REPLY: its width is wdiff quanta from
				    * its BUCKET's (sproto_sample_asked); units, end_ns not known */
	int64_t wdiff;
	uint64_t codes;            /* version 11: the kept deltas' codes (SPROTO_CODED) */
	const struct sproto_sample_entry *resolved; /* set by sproto_sample_resolve */
	uint32_t n;
	uint32_t size;             /* the payload's bytes, entries_size of them the entries' */
	uint32_t entries_size;
	const uint8_t *entries;
	uint16_t off[SPROTO_MAX_METRICS]; /* where entry i begins in entries (at most 22 bytes
					   * an entry: below 64 KiB) */
};

struct sproto_sample_entry {
	uint32_t metric, flags;
	int64_t value; /* the metric's sum at end_ns (timers in ns): with SPROTO_S_VALUE only
			* (version 6), else 0 — a reader adds the deltas to the value it has */
	int64_t delta; /* value minus the previous sample's (or the value at enable) */
};

/*
 * What the SAMPLEs of a connection refer to (version 9, docs/protocol.md "SAMPLE"): the metric
 * ids of the previous SAMPLE (one with the same ids gives none) and each metric's delta in its
 * last entry with the width of the SAMPLE that carried it (an entry gives its delta less the
 * one predicted from them). The runtime's writer and the tool's reader keep one each per
 * connection, zeroed when it begins; writing and reading the same SAMPLEs in order keeps them
 * equal. About 60 KB: static in the runtime, allocated by the tool.
 */
struct sproto_sctx {
	uint32_t nprev, nnext;
	uint16_t prev[SPROTO_MAX_METRICS], next[SPROTO_MAX_METRICS];
	int64_t delta[SPROTO_MAX_METRICS];  /* by metric id: its delta in its last entry */
	uint64_t width[SPROTO_MAX_METRICS]; /* the width (units) of the SAMPLE that carried it */
	int64_t pend[SPROTO_MAX_METRICS];   /* the deltas of the SAMPLE being written or read */
	struct sproto_sample_entry e[SPROTO_MAX_METRICS]; /* the SAMPLE read last, resolved;
							   * the writer's: the entries added */
	uint16_t mark[SPROTO_MAX_METRICS]; /* scratch, all 0 between SAMPLEs */
};

struct sproto_cost {
	uint16_t item;            /* sproto_cost_item */
	uint32_t mean_ps, sd_ps;  /* picoseconds */
};

struct sproto_costs {
	uint32_t flags, n;        /* SPROTO_COSTS_*; figures */
	uint64_t when_ns;         /* CLOCK_MONOTONIC of the target when measured */
	uint64_t elapsed_ns;      /* how long measuring took */
	struct sproto_cost c[SPROTO_MAX_COSTS];
};

/* RESOURCES: which kinds are wanted (bit k: sproto_obj_kind k; at least one), and
 * SPROTO_RES_NEW (version 8). */
struct sproto_resources {
	uint32_t kinds;
};

/* BATCH (version 8): n requests, read one by one with sproto_batch_next after sproto_decode
 * (which has validated them all). */
/* version 10: BATCH's count with this bit: answered only when refused (no OK) */
#define SPROTO_BATCH_QUIET 0x8000u

struct sproto_batch {
	uint32_t n;
	int quiet;            /* version 10: SPROTO_BATCH_QUIET: no OK when all are done */
	const uint8_t *items; /* n × {u8 type, u16 length, payload} */
	uint32_t size;
};

/* RESOURCES_REPLY: read entries with sproto_object after sproto_decode. */
struct sproto_objects {
	uint32_t n;        /* entries */
	uint32_t slots;    /* the table's size (0: nothing was ever recorded, no table) */
	uint64_t dropped[SPROTO_OBJ_KINDS]; /* recordings not kept since the session began: the
					     * table full around the object's place, or an address
					     * out of range */
	const uint8_t *entries; /* of variable length (version 8): read with sproto_object_next */
	uint32_t size;          /* their bytes */
};

/* Where sproto_object_next is in a RESOURCES_REPLY's entries: zeroed to start. */
struct sproto_object_cursor {
	uint32_t off, i;
	uint8_t kind;
	uint64_t addr;
};

struct sproto_object {
	uint64_t addr;  /* the object's address (arg[0]) */
	uint64_t uses;  /* RECORD uses since the session began */
	uint32_t inits; /* RECORD initialisations since the session began */
	uint8_t kind;   /* sproto_obj_kind */
	uint64_t site;  /* the return address of its last initialisation seen; 0: none seen */
};

struct sproto_msg {
	struct sproto_header h;
	union {
		struct sproto_hello hello;
		struct sproto_hello_reply hello_reply;
		struct sproto_point_set point_set;
		struct sproto_range clear;
		struct sproto_metric metric;
		uint64_t bucket_ns; /* SAMPLING; BUCKET: the bucket's width */
		char dir[SPROTO_MAX_PATH + 1]; /* PROFILE_BEGIN */
		struct sproto_status status;
		struct sproto_list list;
		struct sproto_sample sample;
		struct sproto_costs costs;
		struct sproto_resources resources;
		struct sproto_objects objects;
		struct sproto_batch batch;
	} u;
};

/* ---- reading ---- */

/*
 * Look at the start of a byte stream: the size of the whole first message when it is all
 * there, 0 when more bytes are needed, -1 when the header is invalid (err says why; the
 * stream cannot be resynchronised). *h is filled when the header is complete.
 */
long sproto_frame(const void *buf, size_t len, struct sproto_header *h, char *err, size_t cap);
/*
 * The same for a short frame (version 9: what the runtime sends after its HELLO_REPLY): u8
 * type, a reply's; uvarint length, at most SPROTO_MAX_PAYLOAD, in as few bytes as it takes.
 * *h is filled as sproto_frame fills it (this version, the magic), h->size the short header's.
 */
long sproto_frame_short(const void *buf, size_t len, struct sproto_header *h, char *err,
			size_t cap);

/* Validate and decode one message's payload; 0, or -1 with a one-line reason in err. */
int sproto_decode(const struct sproto_header *h, const void *payload, struct sproto_msg *m,
		  char *err, size_t cap);

/* Module i of a decoded LIST_REPLY, walked in order: *off starts at 0. 0, or -1 at the end. */
int sproto_list_module(const struct sproto_list *l, size_t *off, struct sproto_module *m);
uint32_t sproto_list_tid(const struct sproto_list *l, uint32_t i);
void sproto_sample_entry(const struct sproto_sample *s, uint32_t i, struct sproto_sample_entry *e);
/* The next entry of a decoded RESOURCES_REPLY (c zeroed before the first): 0, or -1 after the
 * last (the entries are read in order: addresses are given from the previous one). */
int sproto_object_next(const struct sproto_objects *o, struct sproto_object_cursor *c,
		       struct sproto_object *e);
/* Entry i (zeroes past the last): a walk from the first (sproto_object_next walks once). */
void sproto_object(const struct sproto_objects *o, uint32_t i, struct sproto_object *e);
/* BATCH: the next request (the cursor *off starts at 0), decoded into m as sproto_decode
 * would (its header the request's own, as if it came alone): 0, or -1 after the last. */
int sproto_batch_next(const struct sproto_batch *b, size_t *off, struct sproto_msg *m,
		      char *err, size_t cap);
/* Version 10: a BUCKET_REPLY's width from the width its BUCKET asked for (asked_ns; the
 * reader keeps the widths of the BUCKETs it sent, answered in order): units and end_ns set.
 * Before sproto_sample_follow and sproto_sample_resolve; nothing for a SAMPLE. 0, or -1 (a
 * width below 0, or past 2^64 ns). */
int sproto_sample_asked(struct sproto_sample *s, uint64_t asked_ns);
/* A SAMPLE whose start follows the previous one's end (prev_end_ns; 0: none received): its
 * times made whole. 0, or -1 (no previous SAMPLE, or times past 2^64). */
int sproto_sample_follow(struct sproto_sample *s, uint64_t prev_end_ns);
/*
 * A decoded SAMPLE of a connection, read in order, made whole with the connection's context
 * (version 9): each entry's metric (a SAMPLE of the previous one's metrics gives none) and its
 * delta (given less the one predicted), into c->e, which s->resolved points to from then on
 * (sproto_sample_entry reads it); the context moves on. 0, or -1 with err (a SAMPLE of the
 * previous metrics whose count is not theirs).
 */
int sproto_sample_resolve(struct sproto_sample *s, struct sproto_sctx *c, char *err, size_t cap);

const char *sproto_type_name(uint16_t type);
int sproto_is_request(uint16_t type);
/* SAMPLE or BUCKET_REPLY: a bucket's samples (the same payload) */
int sproto_is_sample(uint16_t type);

/* ---- writing ---- */

struct sproto_buf {
	uint8_t *p;
	size_t cap, len;
	int overflow;   /* something did not fit: sproto_end returns 0 */
	size_t count_at; /* LIST_REPLY, SAMPLE, RESOURCES_REPLY, BATCH: where the counts are */
	uint32_t n1, n2; /* counts; SAMPLE: entries, the next metric id allowed */
	uint64_t last;   /* RESOURCES_REPLY: the last entry's address and kind */
	uint32_t last_kind;
	/* SAMPLE (version 9): the context it is written in (NULL: none, every entry whole), its
	 * width in units, where its head (version 10) and its entries begin */
	struct sproto_sctx *ctx;
	uint64_t units;
	int all_last;   /* version 10: every entry added is flagged SPROTO_S_LAST so far */
	size_t head_at, entries_at;
};

void sproto_begin(struct sproto_buf *b, void *mem, size_t cap, uint16_t type);
void sproto_u8(struct sproto_buf *b, uint8_t v);
void sproto_u16(struct sproto_buf *b, uint16_t v);
void sproto_u32(struct sproto_buf *b, uint32_t v);
void sproto_u64(struct sproto_buf *b, uint64_t v);
void sproto_bytes(struct sproto_buf *b, const void *p, size_t n);
/* Patch the header's length (and counts); the message's size, or 0 when it did not fit. */
size_t sproto_end(struct sproto_buf *b);
/*
 * A whole message of n bytes (as sproto_put_* and sproto_end write it: a 12-byte header) made
 * a short frame in place (version 9), its payload where it is: the short frame's size, *off
 * where it begins in msg; 0 when msg is not such a message. Only the runtime's messages after
 * its HELLO_REPLY are short (docs/protocol.md, "Frames").
 */
size_t sproto_shorten(void *msg, size_t n, size_t *off);

/* Whole messages into mem: their size, or 0 when cap is too small or the input is invalid. */
size_t sproto_put_hello(void *mem, size_t cap, const struct sproto_hello *h);
size_t sproto_put_hello_reply(void *mem, size_t cap, const struct sproto_hello_reply *r);
size_t sproto_put_point_set(void *mem, size_t cap, const struct sproto_point_set *p);
/* The same as POINT_ACTIONS (version 8: about 5 bytes an action, not 32); 0 also for a field
 * its encoding has no room for (when > 1, a primitive ≥ 16, a predicate or comparison ≥ 8, a
 * point ≥ SPROTO_MAX_POINTS) and for a predicate's index or constant without a predicate
 * (the encoding would drop them: POINT_SET's reader refuses them). */
size_t sproto_put_point_actions(void *mem, size_t cap, const struct sproto_point_set *p);
size_t sproto_put_point_clear(void *mem, size_t cap, uint32_t first, uint32_t count);
size_t sproto_put_metric_enable(void *mem, size_t cap, const struct sproto_metric *m);
size_t sproto_put_metric_disable(void *mem, size_t cap, uint32_t id);
size_t sproto_put_sampling(void *mem, size_t cap, uint64_t bucket_ns);
/* BUCKET (version 7): width 1 ms to 1 hour, else 0. */
size_t sproto_put_bucket(void *mem, size_t cap, uint64_t width_ns);
/* LIST, PAUSE, RESUME, DETACH, COSTS, PROFILE_END */
size_t sproto_put_empty(void *mem, size_t cap, uint16_t type);
size_t sproto_put_costs_reply(void *mem, size_t cap, const struct sproto_costs *c);
/* dir: absolute, one line, at most SPROTO_MAX_PATH bytes; else 0. */
size_t sproto_put_profile_begin(void *mem, size_t cap, const char *dir);
size_t sproto_put_ok(void *mem, size_t cap, uint16_t request);
/* The text is cut at SPROTO_MAX_TEXT bytes and at its first newline. */
size_t sproto_put_error(void *mem, size_t cap, uint16_t request, const char *text);

/* RESOURCES: kinds a mask of bits below SPROTO_OBJ_KINDS, not 0, and SPROTO_RES_NEW;
 * else 0. */
size_t sproto_put_resources(void *mem, size_t cap, uint32_t kinds);

/* BATCH, built in place: begin, then each request as a whole message from its sproto_put_*
 * (POINT_SET, POINT_CLEAR, METRIC_ENABLE, METRIC_DISABLE; its frame header left out of the
 * batch), then sproto_end (0 when one was not such a message, or more than SPROTO_MAX_BATCH). */
void sproto_batch_begin(struct sproto_buf *b, void *mem, size_t cap);
void sproto_batch_add(struct sproto_buf *b, const void *msg, size_t len);
/* Version 10: a BATCH written (sproto_end) made quiet: the runtime answers it only when it
 * refuses it (an ERROR), not with an OK. */
void sproto_batch_quiet(void *msg, size_t len);
/* Whether a request of this type may go in a BATCH. */
int sproto_batchable(uint16_t type);

/* RESOURCES_REPLY, built in place: begin, entries, then sproto_end (0 when one was invalid:
 * kind out of range, address 0 or above SPROTO_OBJ_ADDR_LIMIT, out of (kind, address) order,
 * neither used nor initialised, more than slots or SPROTO_MAX_OBJECTS). Version 8: the
 * entries in variable-length integers (docs/protocol.md); the counts are patched at the end. */
void sproto_objects_begin(struct sproto_buf *b, void *mem, size_t cap, uint32_t slots,
			  const uint64_t dropped[SPROTO_OBJ_KINDS]);
void sproto_objects_add(struct sproto_buf *b, const struct sproto_object *e);

/* LIST_REPLY, built in place: begin, modules, then thread ids, then sproto_end. */
void sproto_list_begin(struct sproto_buf *b, void *mem, size_t cap);
void sproto_list_add_module(struct sproto_buf *b, const struct sproto_module *m);
void sproto_list_add_tid(struct sproto_buf *b, uint32_t tid);

/* SAMPLE, likewise; entries in increasing metric order, the value written only with
 * SPROTO_S_VALUE (anything else makes sproto_end return 0). after_ns: the end of the SAMPLE
 * sent before it on the connection, from which its start is then given (a few bytes instead of
 * a whole time); 0, or a time after start_ns: the start is given whole. */
void sproto_sample_begin(struct sproto_buf *b, void *mem, size_t cap, uint64_t after_ns,
			 uint64_t start_ns, uint64_t end_ns, uint64_t lost);
/* The same, as the BUCKET_REPLY answering a BUCKET (version 7); version 10: asked_ns, the
 * width its BUCKET asked for (its width is written from it: end_ns as sproto_bucket_end says
 * it, else the message is refused); sproto_end makes it a BUCKET_SAME or BUCKET_KEPT when its
 * head is `same` or `kept` alone. */
void sproto_bucket_reply_begin(struct sproto_buf *b, void *mem, size_t cap, uint64_t asked_ns,
			       uint64_t after_ns, uint64_t start_ns, uint64_t end_ns,
			       uint64_t lost);
/* Version 9: the SAMPLE begun is written in the connection's context c (sproto_sctx): the
 * entries added are kept, and sproto_end writes them in the shortest mode (version 10: keyed,
 * `same`, `kept`), each without SPROTO_S_FIRST as its delta less the predicted one, then moves
 * c on (the SAMPLE must then be sent). Without it every entry has its key and its whole delta,
 * as a reader reads it without a context (sproto_sample_entry) or in one where none of its
 * metrics has come yet. */
void sproto_sample_context(struct sproto_buf *b, struct sproto_sctx *c);
void sproto_sample_add(struct sproto_buf *b, const struct sproto_sample_entry *e);
/* The end a SAMPLE of a bucket from start_ns to end_ns (end_ns >= start_ns) says: its width
 * rounded up to whole units of 1024 ns (version 9). The writer's next bucket starts there. */
uint64_t sproto_sample_end(uint64_t start_ns, uint64_t end_ns);
/* Version 10: the end a BUCKET_REPLY of that bucket says, its BUCKET having asked for asked_ns:
 * its width the units asked for (ceil(asked_ns / 1024)) plus a multiple of
 * SPROTO_BUCKET_QUANTUM units, the least not below sproto_sample_end's. The runtime's next
 * bucket starts there; the reply gives the multiple (sproto_sample_asked). */
uint64_t sproto_bucket_end(uint64_t start_ns, uint64_t end_ns, uint64_t asked_ns);

#endif
