/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of `--sync`: the shared-memory compensation rule (runtime/sync_rule.h, MODELS §2.4)
 * on synthetic timelines whose uninstrumented times are known, and the validating reader of the
 * SYNC and SYNC_COMP profile records (format/profile_read_sync.c) on encoded and corrupted files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <stdlib.h>

#include "../../runtime/sync_rule.h"
#include "profile_read.h"
#include "sync_price.h"
#include "trace_read.h"

/*
 * A hands a lock to B. True: A works 100 and releases, then works 50; B blocks from 0 and, once
 * it has the lock, works 30. Measured, A's probes add 10 then 5 and B's add 3: A releases at
 * 110 and ends at 165; B waits 110 and ends at 143. Compensated ends must be the true 150, 130.
 */
static void test_handoff(void **state)
{
	int64_t x_a = 10, x_b = 0, w_c;

	(void)state;
	x_b = sync_rule_wait(x_b, 110, x_a, &w_c);
	assert_int_equal(x_b, 10);
	assert_int_equal(w_c, 100); /* B really waits 100 */
	x_b += 3;
	x_a += 5;
	assert_int_equal(143 - x_b, 130);
	assert_int_equal(165 - x_a, 150);
}

/*
 * B would not have waited: A works 100 (+50 of probes) and releases; B works 120 (no probes)
 * and then asks: measured it waits from 120 to 150. Truly it takes the free lock at 120.
 */
static void test_no_wait(void **state)
{
	int64_t w_c, x_b = sync_rule_wait(0, 30, 50, &w_c);

	(void)state;
	assert_int_equal(x_b, 30);
	assert_int_equal(w_c, 0);
	assert_int_equal(150 - x_b, 120);
}

/* A wait that grows: the waiter is more delayed than the releaser. */
static void test_wait_grows(void **state)
{
	int64_t w_c, x = sync_rule_wait(40, 10, 5, &w_c);

	(void)state;
	assert_int_equal(x, 5);
	assert_int_equal(w_c, 45); /* w' = w + x_r - x_r' = 10 + 40 - 5 */
}

/*
 * A barrier of three: true arrivals 100, 200, 150; probe delays 10, 50, 5, so measured arrivals
 * 110, 250, 155. It opens at 250 measured, at 200 truly: every thread's delay becomes 50, and
 * each leaves at its true time (plus its own wake-up latency, kept).
 */
static void test_barrier(void **state)
{
	int64_t x_s = sync_rule_barrier(250, 200), w_c;
	int64_t x1 = sync_rule_wait(10, 140, x_s, &w_c);
	int64_t x2 = sync_rule_wait(50, 0, x_s, &w_c);
	int64_t x3 = sync_rule_wait(5, 95, x_s, &w_c);

	(void)state;
	assert_int_equal(x_s, 50);
	assert_int_equal(x1, 50);
	assert_int_equal(x2, 50);
	assert_int_equal(x3, 50);
	assert_int_equal(260 - sync_rule_wait(10, 150, x_s, &w_c), 210); /* latency 10 kept */
}

/*
 * The wrapper's bookkeeping at a barrier. True: F arrives at 100, L at 300, the barrier opens at
 * 300; L returns at 301 (the real call), F at 310 (a wake-up of 10). Measured: F's probes add 20
 * (arrives at 120), L's 60 (arrives at 360); L's arrival bookkeeping takes 5, so the barrier
 * opens at 365; F returns at 375, L at 366; each then spends 4 in the wrapper (F leaves at 379,
 * L at 370). Compensated leaving times must be the true 310 and 301.
 */
static void test_barrier_own(void **state)
{
	int64_t a = 360 - 60 > 120 - 20 ? 360 - 60 : 120 - 20, w_c;
	int64_t x_s = sync_rule_barrier(365, a); /* measured at entry into the real call */
	int64_t x_f = sync_rule_wait(20, 375 - 120, x_s, &w_c) + sync_rule_own(375, 379, 0);
	int64_t x_l = sync_rule_wait(60, 366 - 360, x_s, &w_c) + sync_rule_own(366, 370, 0);

	(void)state;
	assert_int_equal(x_s, 65);
	assert_int_equal(379 - x_f, 310);
	assert_int_equal(370 - x_l, 301);
	/* measured at arrival and without the wrappers' own time (before 2026-11-22 08:10): F
	 * leaves 9 late, the bookkeeping's 5 + 4 */
	assert_int_equal(379 - sync_rule_wait(20, 375 - 120, sync_rule_barrier(360, a), &w_c), 319);
	/* the clock read adds; a clock that did not advance gives the read alone */
	assert_int_equal(sync_rule_own(375, 379, 20), 24);
	assert_int_equal(sync_rule_own(375, 375, 20), 20);
	assert_int_equal(sync_rule_own(375, 370, 20), 20);
}

/*
 * A thread's own pairs in its delay (sync_pairs): 400 at the start-up price 19, then its
 * in-situ price 5 for 400, unusable again for 100 (19), usable at 6 for the last 100. A new
 * price never moves what was counted before it (the delay does not jump); only the pairs
 * counted at 19 are the part the end prices again.
 */
static void test_pairs_price(void **state)
{
	struct sync_pairs p = { 0 };

	(void)state;
	assert_int_equal(sync_pairs_cost(&p, 400, 19), 400 * 19);
	sync_pairs_price(&p, 400, 19, 1, 5);
	assert_int_equal(sync_pairs_cost(&p, 400, 19), 400 * 19); /* no jump */
	assert_int_equal(sync_pairs_cost(&p, 800, 19), 400 * 19 + 400 * 5);
	assert_int_equal(sync_pairs_q(&p, 800, 19), 400 * 19);
	sync_pairs_price(&p, 800, 19, 0, 0);
	assert_int_equal(sync_pairs_cost(&p, 900, 19), 400 * 19 + 400 * 5 + 100 * 19);
	sync_pairs_price(&p, 900, 19, 1, 6);
	assert_int_equal(sync_pairs_cost(&p, 1000, 19), 400 * 19 + 400 * 5 + 100 * 19 + 100 * 6);
	assert_int_equal(sync_pairs_q(&p, 1000, 19), 500 * 19);
	/* a new estimate while priced: the same continuity */
	sync_pairs_price(&p, 1000, 19, 1, 4);
	assert_int_equal(sync_pairs_cost(&p, 1010, 19), 12100 + 10 * 4);
}

/*
 * A mutex and the wake-up latency. A holds the lock from 1000 (delay 100) to 1047 (delay 129:
 * its probes added 29 to a hold of 18); a sleeper runs again 75 after the release. B (delay 100)
 * arrives at 1030, after the release in approximated time (930 against 918): without
 * measurement it takes the lock at once, at 930, so its delay must become 1122 - 930 = 192, its
 * whole wait. Arriving at 1010 (910, before 918) it waits in both runs and wakes as late after
 * the release: its delay becomes A's, 129.
 */
static void test_lock_woken(void **state)
{
	int64_t w_c;

	(void)state;
	assert_int_equal(sync_rule_woken(100, 1122 - 1030, 1047 - 1030, 129, &w_c), 192);
	assert_int_equal(w_c, 0);
	assert_int_equal(sync_rule_wait(100, 1122 - 1030, 129, &w_c), 129); /* 63 too little */
	assert_int_equal(sync_rule_woken(100, 1122 - 1010, 1047 - 1010, 129, &w_c), 129);
	assert_int_equal(w_c, 1122 - 1010 - 29);
	/* the release's time unknown (d = w): the rule without it */
	assert_int_equal(sync_rule_woken(100, 92, 92, 129, &w_c), sync_rule_wait(100, 92, 129, &w_c));
	/* a releaser more delayed than the whole wait: the waiter keeps its own, as before */
	assert_int_equal(sync_rule_woken(100, 92, 17, 500, &w_c), 192);
	/* d beyond w is taken as w */
	assert_int_equal(sync_rule_woken(100, 92, 200, 129, &w_c), 129);
	/* the probe-cost part follows the delay taken */
	assert_int_equal(sync_rule_q(100, 92, 192, 60, 90), 60);
	assert_int_equal(sync_rule_q(100, 112, 129, 60, 90), 90);
}

/*
 * The same two cases from the releaser's side: its release at 1047 (delay 129, 918 in
 * approximated time) woke B. B noted its arrival at 1030 - 100 = 930: unmeasured, the lock was
 * free by then, nobody slept, and A's wake-up is the measurement's. Noted at 1010 - 100 = 910,
 * B slept unmeasured too: the wake-up is the program's. The same line as B's own rule.
 */
static void test_wake_unneeded(void **state)
{
	int64_t w_c;

	(void)state;
	assert_true(sync_rule_wake_unneeded(930, 1047, 129));
	assert_int_equal(sync_rule_woken(100, 1122 - 1030, 1047 - 1030, 129, &w_c), 100 + 92);
	assert_false(sync_rule_wake_unneeded(910, 1047, 129));
	assert_int_equal(sync_rule_woken(100, 1122 - 1010, 1047 - 1010, 129, &w_c), 129);
	/* at the line itself (arrival at the approximated release): free, both sides */
	assert_true(sync_rule_wake_unneeded(918, 1047, 129));
	assert_int_equal(sync_rule_woken(100, 1122 - 1018, 1047 - 1018, 129, &w_c), 100 + 104);
	/* no arrival noted */
	assert_false(sync_rule_wake_unneeded(SYNC_NO_ARRIVAL, 1047, 129));
}

/*
 * The collision rule (sync_rule_collide), with s = 5 (a waiter is on its way into the futex sleep
 * for 5 after its arrival), c = 2 (a release that catches it there costs it 2) and l = 20 (a
 * wake-up). B (delay 100) waits for a mutex from 1000 (900 unmeasured); A unlocks at 1030 and B
 * runs at 1050 (measured, it slept: d = 30 >= s, latency 20). A's delay at the unlock decides
 * where the release falls unmeasured, d_c after B's arrival.
 */
#define COLL_S 5
#define COLL_C 2
#define COLL_L 20

static int64_t collide(int64_t x_r, uint64_t w, uint64_t d, int64_t x_s, int64_t *w_c)
{
	return sync_rule_collide(x_r, w, d, x_s, COLL_S, COLL_C, COLL_L, w_c);
}

/* d_c = 3 < s: unmeasured B is still on its way and follows at 903 + c: it runs at 905. */
static void test_collide_followed(void **state)
{
	int64_t w_c;

	(void)state;
	assert_int_equal(sync_rule_collision(100, 30, 127, COLL_S), SYNC_FOLLOWED);
	assert_int_equal(collide(100, 50, 30, 127, &w_c), 1050 - 905);
	assert_int_equal(w_c, 3 + COLL_C);
	/* sync_rule_woken keeps the measured latency: B at 923, 18 too late */
	assert_int_equal(sync_rule_woken(100, 50, 30, 127, &w_c), 127);
	/* a measured latency below c (the measured waiter did not sleep either) is kept */
	assert_int_equal(collide(100, 31, 30, 127, &w_c), 127);
	assert_int_equal(w_c, 3 + 1);
}

/* d_c = 10 >= s: unmeasured B slept too, woken at 910 + 20 = 930, as sync_rule_woken says. */
static void test_collide_slept(void **state)
{
	int64_t w_c, w_o;

	(void)state;
	assert_int_equal(sync_rule_collision(100, 30, 120, COLL_S), SYNC_SLEPT);
	assert_int_equal(collide(100, 50, 30, 120, &w_c), 1050 - 930);
	assert_int_equal(w_c, 10 + 20);
	assert_int_equal(sync_rule_woken(100, 50, 30, 120, &w_o), 120);
	assert_int_equal(w_o, w_c);
	/* d_c = s exactly: asleep */
	assert_int_equal(sync_rule_collision(100, 30, 125, COLL_S), SYNC_SLEPT);
}

/* The release at 890 unmeasured, before B's arrival at 900: B takes the lock free at 900. */
static void test_collide_free(void **state)
{
	int64_t w_c;

	(void)state;
	assert_int_equal(sync_rule_collision(100, 30, 140, COLL_S), SYNC_FREE);
	assert_int_equal(collide(100, 50, 30, 140, &w_c), 1050 - 900);
	assert_int_equal(w_c, 0);
	/* released exactly at the arrival (d_c = 0): free */
	assert_int_equal(sync_rule_collision(100, 30, 130, COLL_S), SYNC_FREE);
}

/*
 * Measured, the release came 3 after B's arrival, before it slept (d < s), and B ran 2 later, at
 * 1005. A's delay 93: the release at 910 unmeasured, d_c = 10: B would have slept and been woken
 * at 930, l after it. sync_rule_woken kept the short latency (B at 912).
 */
static void test_collide_would_sleep(void **state)
{
	int64_t w_c;

	(void)state;
	assert_int_equal(sync_rule_collision(100, 3, 93, COLL_S), SYNC_WOULD_SLEEP);
	assert_int_equal(collide(100, 5, 3, 93, &w_c), 1005 - 930);
	assert_int_equal(w_c, 10 + COLL_L);
	assert_int_equal(sync_rule_woken(100, 5, 3, 93, &w_c), 93);
	/* a measured latency above l is kept */
	assert_int_equal(collide(100, 30, 3, 93, &w_c), 93);
}

/* With s = 0 (no collision measured) the rule is sync_rule_woken, whatever c and l. */
static void test_collide_no_step(void **state)
{
	static const int64_t xr[] = { 0, 100, 5000 }, xs[] = { 0, 50, 127, 4000, 9000 };
	static const uint64_t ws[] = { 1, 50, 800 }, ds[] = { 0, 3, 30, 49, 900 };
	int64_t a, b;
	unsigned i, j, k, m;

	(void)state;
	for (i = 0; i < 3; i++)
		for (j = 0; j < 5; j++)
			for (k = 0; k < 3; k++)
				for (m = 0; m < 5; m++) {
					int64_t x = sync_rule_collide(xr[i], ws[k], ds[m], xs[j], 0,
								      COLL_C, COLL_L, &a);

					assert_int_equal(x, sync_rule_woken(xr[i], ws[k], ds[m],
									    xs[j], &b));
					assert_int_equal(a, b);
				}
	/* d beyond w is taken as w (the release time unknown) */
	assert_int_equal(collide(100, 50, 80, 127, &a), sync_rule_woken(100, 50, 50, 127, &b));
}

/* The calibration's line between a collision's latency and a wake-up's. */
static void test_collide_mid(void **state)
{
	(void)state;
	assert_int_equal(sync_collide_mid(700, 7200), 3950);
	assert_int_equal(sync_collide_mid(700, 1400), 1050);
	assert_int_equal(sync_collide_mid(700, 1399), 0); /* no step worth telling */
	assert_int_equal(sync_collide_mid(0, 0), 0);
}

/*
 * A condition wait that needed the signal and then the mutex. B (delay 10) waits from 1000; A
 * signals at 1040 with delay 30, runs 60 more with the mutex held, its probes adding 25, and
 * unlocks at 1100 with delay 55; B runs at 1108. Approximated: B waits from 990, signal at 1010,
 * unlock at 1045: B runs 8 after the unlock, at 1053: delay 1108 - 1053 = 55, the unlocker's
 * (the signaller's, 30, would put B at 1078: 25 too late). Had A's delay not grown after the
 * signal, both releases give 30 + 60 = 90 > 30: the unlock's again.
 */
static void test_cond_then_mutex(void **state)
{
	int64_t x, w_c;

	(void)state;
	assert_int_equal(sync_rule_then(30, 1100 - 1040, 55, &x), 0);
	assert_int_equal(x, 55);
	assert_int_equal(sync_rule_woken(10, 1108 - 1000, 1100 - 1000, x, &w_c), 55);
	assert_int_equal(w_c, 108 + 10 - 55);
	/* the unlock's releaser less delayed than the signaller by more than the gap: the signal
	 * came last in approximated time, and its delay counts with the gap */
	assert_int_equal(sync_rule_then(100, 20, 300, &x), 1);
	assert_int_equal(x, 120);
	/* equal: the unlock's */
	assert_int_equal(sync_rule_then(100, 20, 120, &x), 0);
	assert_int_equal(x, 120);
}

/* pthread_join takes the exiting thread's delay when it ended the wait. */
static void test_join(void **state)
{
	int64_t w_c, x = sync_rule_wait(5, 100, 40, &w_c);

	(void)state;
	assert_int_equal(x, 40);
	assert_int_equal(w_c, 65);
}

/*
 * main joins T1 then T2. True: T1 ends at 1000, T2 at 400, main blocks in the first join from
 * 0 and returns from the second at once. Measured: T1's probes add 100 (ends 1100), T2's add 20
 * (ends 420); main returns from the first join at 1100 (delay 100), then joins T2, which ended
 * 680 before. Truly main ends at 1000; taking T2's delay as if its end had ended the join
 * (sync_rule_wait) would give 1100 - 20 = 1080.
 */
static void test_join_late(void **state)
{
	int64_t w_c, x = sync_rule_wait(0, 1100, 100, &w_c);

	(void)state;
	assert_int_equal(1100 - x, 1000);
	assert_int_equal(1100 - sync_rule_wait(x, 0, 20, &w_c), 1080); /* the error */
	x = sync_rule_late(x, 0, 20, 1100 - 420, &w_c);
	assert_int_equal(x, 100);
	assert_int_equal(w_c, 0);
	assert_int_equal(1100 - x, 1000);
}

/*
 * A join that the end did end (g = 0): T2 truly ends at 400 but its probes add 800, so it ends
 * at 1200 measured; main (delay 100, truly at 1000) joins it at 1100 and waits 100. Truly main
 * does not wait and ends at 1000: min(100 + 100, 800) = 200, and 1200 - 200 = 1000.
 */
static void test_join_waited(void **state)
{
	int64_t w_c, x = sync_rule_late(100, 100, 800, 0, &w_c);

	(void)state;
	assert_int_equal(x, 200);
	assert_int_equal(1200 - x, 1000);
	assert_int_equal(w_c, 0);
}

/* ---- which costs: delays inherited from other threads, priced again ---- */

/*
 * The runtime prices a probe pair at its start-up calibration, rt = 50 ns; the run's in-run
 * batches then say 40 (the file's CALIB). Thread A runs 1000 probe pairs and 10 wrapped calls
 * (o_sync 6, not repriced), then releases; main waited 90000 from 0 and takes A's delay through
 * the rule as the runtime computes it (x and its probe-cost part q side by side, at rt). The
 * writer prices main's shift again (runtime/sync_table.c); main's final delay, as the report
 * computes it (tool/sync_price.h), must be A's as the report prices A's own: 1000 * 40 + 10 * 6
 * = 40060, not the 50060 at start-up costs (what it was before the repricing).
 */
static void test_price_inherited(void **state)
{
	const double rt = 50, fin = 40, k = fin / rt;
	struct sprof_calib cal = { .o_full = fin, .o_skip = 0 };
	int64_t x_a = (int64_t)(1000 * rt) + 10 * 6, q_a = (int64_t)(1000 * rt), w_c;
	int64_t x_m = 0, q_m = 0, x_new = sync_rule_wait(x_m, 90000, x_a, &w_c);
	int64_t q_new = sync_rule_q(x_m, 90000, x_new, q_m, q_a);
	struct sprof_sync_comp a = { .probes = 1000, .ops = 10, .o_sync_ns = 6 };
	struct sprof_sync_comp m = { .probes = 0 };
	double x_a_fin = sync_comp_x(&a, &cal, NULL);

	(void)state;
	assert_int_equal(x_new, 50060);
	assert_int_equal(q_new, 50000);
	assert_float_equal(x_a_fin, 40060, 1e-9);
	m.shift_ns = (int64_t)sync_reprice((double)(x_m - x_new), (double)(q_m - q_new), k);
	assert_float_equal(sync_comp_x(&m, &cal, NULL), x_a_fin, 1e-9);
	m.shift_ns = x_m - x_new; /* written as the runtime counted it: start-up costs stay */
	assert_float_equal(sync_comp_x(&m, &cal, NULL), 50060, 1e-9);
	/* a wait the rule kept as the waiter's own (x_r + w < x_s): time, nothing repriced */
	x_new = sync_rule_wait(1000, 200, x_a, &w_c);
	assert_int_equal(x_new, 1200);
	assert_int_equal(sync_rule_q(1000, 200, x_new, 700, q_a), 700);
	assert_float_equal(sync_reprice(-200, 700 - 700, k), -200, 1e-9);
}

/*
 * A new thread and a barrier: the creator's delay arrives as x0 (probe part x0q); a barrier
 * gives the latest approximated arrival's delay with that thread's probe part. Thread B starts
 * with its creator's x0 = 5000 (all probe costs at rt = 50: 100 pairs), runs 200 pairs itself;
 * at the file's 40 ns its delay is 300 * 40 = 12000.
 */
static void test_price_barrier(void **state)
{
	const double k = 40.0 / 50.0;
	struct sprof_calib cal = { .o_full = 40 };
	struct sprof_sync_comp b = { .probes = 200, .x0_ns = (int64_t)sync_reprice(5000, 5000, k) };
	int64_t x_s = sync_rule_barrier(100000, 100000 - 15000), w_c;
	int64_t x_new = sync_rule_wait(1000, 20000, x_s, &w_c);

	(void)state;
	assert_int_equal(b.x0_ns, 4000);
	assert_float_equal(sync_comp_x(&b, &cal, NULL), 12000, 1e-9);
	/* a thread (x 1000, q 1000) that waited 20000 at a barrier opened late by one whose x is
	 * 15000 (a wake-up of 0), q 15000, leaves with that thread's delay and probe part; with
	 * 25 pairs of its own in its record, its delay at the file's price is 25 * 40 plus the
	 * 14000 it inherited, all probe costs, at 40/50 */
	assert_int_equal(x_new, 15000);
	assert_int_equal(sync_rule_q(1000, 20000, x_new, 1000, 15000), 15000);
	b = (struct sprof_sync_comp){ .probes = 25,
				      .shift_ns = (int64_t)sync_reprice(1000 - 15000, 1000 - 15000, k) };
	assert_float_equal(sync_comp_x(&b, &cal, NULL), 12200, 1e-9); /* 25 * 40 + 11200 */
}

/* ---- reader ---- */

struct enc {
	uint8_t mem[4096];
	struct sprof_buf b;
	uint64_t records;
};

static void rec(struct enc *e, uint32_t type, uint32_t size)
{
	sprof_put_u32(&e->b, type);
	sprof_put_u32(&e->b, size);
	e->records++;
}

struct sync_vals {
	uint32_t kind, flags;
	uint64_t wait, wait_max, acquires, hold_samples;
	uint32_t comp_thread;
	uint32_t sync_size;
};

static size_t encode(struct enc *e, const struct sync_vals *v)
{
	struct sprof_calib c = { .clock_kind = 1, .ticks_per_ns = 1, .o_full = 20, .o_in = 8 };
	int i;

	e->b = (struct sprof_buf){ .p = e->mem, .cap = sizeof(e->mem) };
	e->records = 0;
	sprof_put_header(&e->b, 0);
	rec(e, SPROF_REC_RUN, 72); /* every field 0, empty strings */
	for (i = 0; i < 9; i++)
		sprof_put_u64(&e->b, 0);
	rec(e, SPROF_REC_CALIB, 88);
	sprof_put_calib(&e->b, &c);
	rec(e, SPROF_REC_THREAD, 56 + 40);
	sprof_put_u32(&e->b, 0);
	sprof_put_u32(&e->b, 7);
	for (i = 0; i < 3; i++)
		sprof_put_u64(&e->b, 0);
	sprof_put_u32(&e->b, 0);
	sprof_put_u32(&e->b, 1);
	sprof_put_u64(&e->b, 0);
	sprof_put_u64(&e->b, 0);
	sprof_put_u32(&e->b, SPROF_NO_PARENT);
	sprof_put_u32(&e->b, SPROF_ROOT_FUNC);
	for (i = 0; i < 4; i++)
		sprof_put_u64(&e->b, 0);
	rec(e, SPROF_REC_SYNC, v->sync_size);
	sprof_put_u32(&e->b, v->kind);
	sprof_put_u32(&e->b, v->flags);
	sprof_put_u64(&e->b, 0x601040);
	sprof_put_u64(&e->b, 0);
	sprof_put_u32(&e->b, UINT32_MAX);
	sprof_put_u32(&e->b, 0);
	sprof_put_u64(&e->b, 0);
	sprof_put_u64(&e->b, v->acquires);
	for (i = 0; i < 6; i++)
		sprof_put_u64(&e->b, (uint64_t)i);
	sprof_put_u64(&e->b, v->wait);
	sprof_put_u64(&e->b, v->wait_max);
	sprof_put_u64(&e->b, 500);
	sprof_put_u64(&e->b, v->hold_samples);
	if (v->sync_size > SPROF_SYNC_SIZE)
		sprof_put_u64(&e->b, 0);
	rec(e, SPROF_REC_SYNC_COMP, SPROF_SYNC_COMP_SIZE);
	sprof_put_u32(&e->b, v->comp_thread);
	sprof_put_u32(&e->b, 7); /* wakes_unneeded */
	sprof_put_u64(&e->b, 1000);
	sprof_put_u64(&e->b, 10);
	sprof_put_u64(&e->b, 200);
	sprof_put_f64(&e->b, 6.5);
	sprof_put_u64(&e->b, 300);
	sprof_put_u64(&e->b, 0);
	sprof_put_u64(&e->b, (uint64_t)(int64_t)-40);
	sprof_put_u64(&e->b, 3);
	sprof_put_u64(&e->b, 900);
	sprof_put_u64(&e->b, 940);
	rec(e, SPROF_REC_END, 8);
	sprof_put_u64(&e->b, e->records - 1);
	assert_false(e->b.error);
	return e->b.len;
}

static const struct sync_vals good = { .kind = SPROF_SYNC_MUTEX, .wait = 1000, .wait_max = 600,
				       .acquires = 12, .hold_samples = 2,
				       .sync_size = SPROF_SYNC_SIZE };

static int read_enc(const struct sync_vals *v, struct sprof_file **f, char *err)
{
	static struct enc e;
	size_t n = encode(&e, v);

	return sprof_read_mem(e.mem, n, f, err, 256);
}

static void test_read_good(void **state)
{
	struct sprof_file *f;
	char err[256] = "";

	(void)state;
	assert_int_equal(read_enc(&good, &f, err), 0);
	assert_int_equal(f->nsyncs, 1);
	assert_int_equal(f->syncs[0].kind, SPROF_SYNC_MUTEX);
	assert_int_equal(f->syncs[0].addr, 0x601040);
	assert_int_equal(f->syncs[0].acquires, 12);
	assert_int_equal(f->syncs[0].contended, 1);
	assert_int_equal(f->syncs[0].wait_ns, 1000);
	assert_int_equal(f->syncs[0].hold_ns, 500);
	assert_int_equal(f->syncs[0].site_module, -1);
	assert_int_equal(f->nsync_comps, 1);
	assert_int_equal(f->sync_comps[0].probes, 1000);
	assert_int_equal(f->sync_comps[0].wakes_unneeded, 7);
	assert_int_equal(f->sync_comps[0].shift_ns, -40);
	assert_float_equal(f->sync_comps[0].o_sync_ns, 6.5, 1e-12);
	sprof_free(f);
}

static void expect_refused(const struct sync_vals *v, const char *why)
{
	struct sprof_file *f = NULL;
	char err[256] = "";

	assert_int_equal(read_enc(v, &f, err), -1);
	assert_null(f);
	assert_non_null(strstr(err, why));
}

static void test_read_bad(void **state)
{
	struct sync_vals v;

	(void)state;
	v = good;
	v.kind = 0;
	expect_refused(&v, "unknown kind");
	v = good;
	v.kind = SPROF_SYNC_KINDS;
	expect_refused(&v, "unknown kind");
	v = good;
	v.flags = 0x80;
	expect_refused(&v, "unknown flags");
	v = good;
	v.wait_max = 2000;
	expect_refused(&v, "inconsistent");
	v = good;
	v.hold_samples = 13;
	expect_refused(&v, "inconsistent");
	v = good;
	v.comp_thread = 3;
	expect_refused(&v, "no such thread");
	v = good;
	v.sync_size = SPROF_SYNC_SIZE + 8;
	expect_refused(&v, "SYNC record of 136 bytes is malformed");
}

static void test_read_truncated(void **state)
{
	static struct enc e;
	size_t n = encode(&e, &good), cut;
	char err[256];

	(void)state;
	for (cut = 0; cut < n; cut++) {
		struct sprof_file *f = NULL;

		assert_int_equal(sprof_read_mem(e.mem, cut, &f, err, sizeof(err)), -1);
		assert_null(f);
	}
}

/* ---- traces: DEF_SYNC and the SYNC events ---- */

static void event(struct strc_thread *t, unsigned type, uint32_t id, uint64_t at, uint64_t arg)
{
	t->ev = realloc(t->ev, (t->nev + 1) * sizeof(*t->ev));
	assert_non_null(t->ev);
	t->ev[t->nev++] = (struct strc_event){ .t = at, .arg = arg, .id = id,
					       .type = (uint16_t)type };
}

/* A one-thread trace: a lock waited for (object 7), a release of it, a semaphore (object 9). */
static uint8_t *sync_trace(size_t *len, uint32_t def_kind, uint32_t used_id)
{
	struct strc_file *f = calloc(1, sizeof(*f));
	struct strc_thread *t;
	uint8_t *data = NULL;
	char err[256] = "";

	assert_non_null(f);
	f->version = STRC_VERSION;
	f->pid = 77;
	f->ticks_per_ns = 1;
	f->start_ticks = 1000;
	f->exe = strdup("/bin/x");
	f->cmdline = strdup("x");
	f->threads = calloc(1, sizeof(*f->threads));
	f->nthreads = 1;
	t = &f->threads[0];
	t->complete = 1;
	t->chunks = 1;
	t->tid = 77;
	f->syncs = calloc(2, sizeof(*f->syncs));
	f->nsyncs = 2;
	f->syncs[0] = (struct strc_sync){ .id = 7, .kind = def_kind, .flags = SPROF_SYNC_F_INIT,
					  .site_module = -1, .addr = 0x601040, .site = 0x401234 };
	f->syncs[1] = (struct strc_sync){ .id = 9, .kind = SPROF_SYNC_SEM, .site_module = -1,
					  .addr = 0x601080 };
	event(t, STRC_THREAD_BEGIN, STRC_ID_NONE, 1000, 0);
	event(t, STRC_SYNC_WAIT, used_id, 1100, 0);
	event(t, STRC_SYNC_DONE, used_id, 1500, 3);
	event(t, STRC_SYNC_RELEASE, 7, 1600, 4);
	event(t, STRC_SYNC_RELEASE, 9, 1700, 1);
	event(t, STRC_THREAD_END, STRC_ID_NONE, 1800, 0x7f00);
	assert_int_equal(strc_write_mem(f, &data, len, err, sizeof(err)), 0);
	strc_free(f);
	return data;
}

static void test_trace_round_trip(void **state)
{
	struct strc_file *f = NULL;
	char err[256] = "";
	size_t len;
	uint8_t *data = sync_trace(&len, SPROF_SYNC_MUTEX, 7);
	const struct strc_thread *t;

	(void)state;
	if (strc_read_mem(data, len, &f, err, sizeof(err)) != 0)
		fail_msg("refused: %s", err);
	assert_int_equal(f->nsyncs, 2);
	assert_int_equal(f->syncs[0].id, 7);
	assert_int_equal(f->syncs[0].kind, SPROF_SYNC_MUTEX);
	assert_int_equal(f->syncs[0].flags, SPROF_SYNC_F_INIT);
	assert_int_equal(f->syncs[0].addr, 0x601040);
	assert_int_equal(f->syncs[0].site, 0x401234);
	assert_int_equal(f->syncs[0].site_module, -1);
	t = &f->threads[0];
	assert_true(t->nev >= 6);
	assert_int_equal(t->ev[1].type, STRC_SYNC_WAIT);
	assert_int_equal(t->ev[1].id, 7);
	assert_int_equal(t->ev[2].type, STRC_SYNC_DONE);
	assert_int_equal(t->ev[2].arg, 3);
	assert_int_equal(t->ev[2].t - t->ev[1].t, 400);
	assert_int_equal(t->ev[4].type, STRC_SYNC_RELEASE);
	assert_int_equal(t->ev[4].id, 9);
	assert_int_equal(t->ev[4].arg, 1);
	strc_free(f);
	free(data);
}

static void expect_trace_refused(uint32_t def_kind, uint32_t used_id, const char *why)
{
	struct strc_file *f = NULL;
	char err[256] = "";
	size_t len;
	uint8_t *data = sync_trace(&len, def_kind, used_id);

	assert_int_equal(strc_read_mem(data, len, &f, err, sizeof(err)), -1);
	assert_null(f);
	if (!strstr(err, why))
		fail_msg("refused for another reason: %s", err);
	free(data);
}

static void test_trace_refused(void **state)
{
	(void)state;
	expect_trace_refused(SPROF_SYNC_MUTEX, 8, "defined nowhere");
	expect_trace_refused(0, 7, "DEF_SYNC record");
	expect_trace_refused(SPROF_SYNC_KINDS, 7, "DEF_SYNC record");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handoff),      cmocka_unit_test(test_no_wait),
		cmocka_unit_test(test_wait_grows),   cmocka_unit_test(test_barrier),
		cmocka_unit_test(test_barrier_own), cmocka_unit_test(test_lock_woken),
		cmocka_unit_test(test_wake_unneeded),
		cmocka_unit_test(test_pairs_price),
		cmocka_unit_test(test_join),         cmocka_unit_test(test_join_late),
		cmocka_unit_test(test_join_waited),  cmocka_unit_test(test_read_good),
		cmocka_unit_test(test_read_bad),     cmocka_unit_test(test_read_truncated),
		cmocka_unit_test(test_price_inherited),
		cmocka_unit_test(test_cond_then_mutex),
		cmocka_unit_test(test_collide_followed), cmocka_unit_test(test_collide_slept),
		cmocka_unit_test(test_collide_free), cmocka_unit_test(test_collide_would_sleep),
		cmocka_unit_test(test_collide_no_step), cmocka_unit_test(test_collide_mid),
		cmocka_unit_test(test_price_barrier),
		cmocka_unit_test(test_trace_round_trip), cmocka_unit_test(test_trace_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
