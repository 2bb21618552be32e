/* SPDX-License-Identifier: MIT */
/*
 * The INSITU record (18) of the profile file (`sonde run --insitu`): per thread, what a measured
 * probe pair cost inside the program's own code, and whether the compensation used it. Spec:
 * docs/format-profile.md; method: docs/measurement.md. Shared by the runtime's writer and the
 * tool's reader (format/profile_read_insitu.c).
 */
#ifndef SONDE_FORMAT_PROFILE_INSITU_H
#define SONDE_FORMAT_PROFILE_INSITU_H

#include <stdint.h>

#define SPROF_INSITU_SIZE 96    /* bytes of an INSITU record */
#define SPROF_INSITU_SIZE_V1 80 /* ... written before the bare windows (2026-11-23) */
#define SPROF_INSITU_NO_FUNC 0xffffffffu

enum sprof_insitu_status {
	SPROF_INSITU_NONE = 0,       /* no measured leaf function became hot on the thread */
	SPROF_INSITU_USED = 1,       /* the in-situ price prices the thread's measured pairs */
	SPROF_INSITU_UNSTABLE = 2,   /* too few pairs, or too spread: the calibrated price */
	SPROF_INSITU_IMPLAUSIBLE = 3, /* median outside (o_skip, 4 o_full]: the calibrated price */
	SPROF_INSITU_STATUSES = 4,
};

struct sprof_insitu {
	uint32_t thread;   /* THREAD record index */
	uint32_t status;   /* enum sprof_insitu_status */
	uint32_t func;     /* FUNC id of the hot function; SPROF_INSITU_NO_FUNC with status NONE */
	uint32_t window;   /* calls per window */
	uint32_t pairs;    /* pairs of windows kept */
	uint32_t rejected; /* pairs cut short: a B window that could not end as planned */
	uint32_t period;   /* one unmeasured window per `period` windows at the end (8, 32 used) */
	uint32_t preempted; /* of the pairs kept, those during which the thread was preempted */
	uint64_t b_calls;  /* calls of the function left unmeasured by the B windows */
	uint64_t calls;    /* its measured calls on that call path */
	double price_ns;   /* interquartile mean of the pairs' estimates, 0 when negative or
			    * without pairs */
	double spread_ns;  /* their robust spread: 1.4826 x the median absolute deviation */
	double o_full_ns;  /* the start-up calibration's price of a pair, for comparison */
	double o_skip_ns;  /* the unmeasured pair's price a B window's estimate adds back */
	/* since 2026-11-23 (96 bytes; 0 in an 80-byte record) */
	uint32_t bare_pairs; /* of the pairs, those whose unmeasured window was bare: the
			      * function ran without its probes (docs/measurement.md) */
	uint32_t bare_exits; /* the function's exit call sites rewritten for them */
	double stub_ns;    /* what the bare windows' counting stub costs a call, in a loop */
};

/*
 * What a call taken unmeasured (the skip path: throttled, excluded, a B window) costs a thread
 * whose measured pair costs `price` in situ: the calibration's o_skip scaled as its o_full was,
 * the model the pairs' estimate itself rests on (docs/measurement.md, "The throttle and
 * `--insitu`").
 * o_full and o_skip are the start-up calibration's, as the record keeps them.
 */
static inline double sprof_insitu_skip_price(double price, double o_full, double o_skip)
{
	return o_full > 0 && o_skip >= 0 ? price * o_skip / o_full : o_skip;
}

#endif
