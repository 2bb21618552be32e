/* SPDX-License-Identifier: MIT */
/*
 * The synchronization records of the profile file (`sonde run --sync`): SYNC (8), one per
 * synchronization object, and SYNC_COMP (9), the shared-memory compensation of one thread.
 * Spec: docs/format-profile.md. Shared by the runtime's writer and the tool's reader.
 */
#ifndef SONDE_FORMAT_PROFILE_SYNC_H
#define SONDE_FORMAT_PROFILE_SYNC_H

#include <stdint.h>

enum sprof_sync_kind {
	SPROF_SYNC_MUTEX = 1,
	SPROF_SYNC_RWLOCK = 2,
	SPROF_SYNC_SPIN = 3,
	SPROF_SYNC_COND = 4,
	SPROF_SYNC_BARRIER = 5,
	SPROF_SYNC_SEM = 6,
	SPROF_SYNC_THREAD = 7, /* a thread, as the object of pthread_join */
	SPROF_SYNC_KINDS = 8,
};

/* SYNC flags */
#define SPROF_SYNC_F_INIT 0x1u     /* the site is its initialisation call, not its first use */
#define SPROF_SYNC_F_OVERFLOW 0x2u /* the table was full: every object of this kind not in it */

#define SPROF_SYNC_SIZE 128 /* bytes of a SYNC record */
#define SPROF_SYNC_COMP_SIZE 88 /* bytes of a SYNC_COMP record */

/* One object: counts and times over the whole run (times in ns). */
struct sprof_sync {
	uint32_t kind, flags;
	uint64_t addr;        /* runtime address of the object (pthread_t for a thread) */
	uint64_t site;        /* runtime code address of its init or first use; 0 unknown */
	int32_t site_module;  /* module holding the site, -1 unknown */
	uint64_t site_vaddr;  /* the site as that module's ELF file sees it */
	uint64_t acquires;    /* exclusive acquisitions (lock, wrlock, sem wait, cond wakeups,
			       * barrier and join returns) */
	uint64_t shared;      /* shared acquisitions (rdlock) */
	uint64_t contended;   /* calls that had to wait */
	uint64_t failed;      /* try-calls that found it busy (EBUSY, EAGAIN) */
	uint64_t timeouts;    /* timed calls that returned ETIMEDOUT */
	uint64_t releases;    /* unlock, sem_post, cond signal */
	uint64_t broadcasts;  /* cond broadcasts */
	uint64_t wait_ns, wait_max_ns;
	uint64_t hold_ns;     /* estimated from sampled acquisitions (hold_samples) */
	uint64_t hold_samples;
};

/* One thread's compensation inputs and result (MODELS §2.4, shared memory). */
struct sprof_sync_comp {
	uint32_t thread;      /* THREAD record index */
	uint32_t wakes_unneeded; /* wake-ups it paid that the measurement caused, in its delay
				  * (0 in files of before 2026-12-01) */
	uint64_t probes;      /* measured probe pairs run by the thread (each cost o_full) */
	uint64_t skips;       /* unmeasured probe pairs (each cost o_skip) */
	uint64_t ops;         /* wrapped synchronization calls (each cost o_sync) */
	double o_sync_ns;     /* calibrated cost of one wrapped call */
	uint64_t calib_ns;    /* in-run calibration time of the thread */
	int64_t x0_ns;        /* delay inherited at creation */
	int64_t shift_ns;     /* sum of (w' - w) over its waits: x = o - shift */
	uint64_t waits;       /* waits that inherited a delay */
	uint64_t wait_ns;     /* their measured time */
	int64_t wait_c_ns;    /* their approximated time */
};

#endif
