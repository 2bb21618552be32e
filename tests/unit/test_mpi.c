/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of MPI parallel compensation and records: the point-to-point and collective rules
 * (runtime/sync_rule.h, runtime/mpi/mpi_rule.h; MODELS §2.4) on synthetic timelines whose
 * uninstrumented times are known, and the MPI_CALL, MPI_PEER and MPI_COMP records encoded by the
 * writer's encoders (format/profile_mpi.h) and read back by the validating reader
 * (format/profile_read_mpi.c), whole, truncated and corrupted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <stdlib.h>

#include "../../runtime/mpi/mpi_rule.h"
#include "../../runtime/sync_rule.h"
#include "profile_read.h"

/*
 * Seed 001's master/worker: the worker computes 100 (true), its probes add 40, and sends; the
 * master posts its receive at 10 and waits until 140. True: the message leaves at 100, the master
 * ends its receive at 100. The master inherits x = 40 and its wait becomes 90.
 */
static void test_master_worker(void **state)
{
	int64_t x_w = 40, x_m = 0, w_c;

	(void)state;
	x_m = sync_rule_wait(x_m, 130, x_w, &w_c);
	assert_int_equal(x_m, 40);
	assert_int_equal(w_c, 90);
	assert_int_equal(140 - x_m, 100); /* the receive's end, compensated */
}

/* The receiver's own overhead exceeds the sender's plus its wait: it would not have waited. */
static void test_no_wait(void **state)
{
	int64_t w_c, x = sync_rule_wait(50, 5, 100, &w_c);

	(void)state;
	assert_int_equal(x, 55); /* the wait becomes overhead */
	assert_int_equal(w_c, 0);
}

/* A pipeline P1 -> P2 -> P3: the delay travels on (seed 001, "Pipeline"). */
static void test_pipeline(void **state)
{
	int64_t x1 = 30, x2 = 5, x3 = 0, w_c;

	(void)state;
	x2 = sync_rule_wait(x2, 60, x1, &w_c); /* P2 waited 60 for P1 */
	assert_int_equal(x2, 30);
	x2 += 7;                               /* P2's probes before it sends on */
	x3 = sync_rule_wait(x3, 80, x2, &w_c);
	assert_int_equal(x3, 37);
	assert_int_equal(w_c, 43);
}

/*
 * A request that waited in the master's queue. True: worker W sends its request at 100; the
 * master, busy until 300, receives it then without waiting. Measured: W's probes add 20 (it
 * sends at 120, approximated 100) and the master's 200 (it reaches the receive at 500 and ends it
 * at 500). Without measurement the master reaches the receive at 300 and finds the request: its
 * delay stays 200. The seed's form, taking the message to arrive at the receive's end, would drop
 * it to W's 20; with the approximated send time the message carries, it is kept.
 */
static void test_queued_message(void **state)
{
	int64_t w_c, x_s = mpi_rule_sender(20, 100, 500);

	(void)state;
	assert_int_equal(x_s, 400); /* it was there 380 measured before the receive: 20 + 380 */
	assert_int_equal(sync_rule_wait(200, 0, x_s, &w_c), 200);
	assert_int_equal(w_c, 0);
	/* the seed's case: sent (at 140, approximated 100) after the receive began at 130 */
	assert_int_equal(mpi_rule_sender(40, 100, 130), 40);
	/* in flight when the receive began, arriving during the wait: the seed's rule, its latency
	 * aside: sent at 140 (approximated 100), the receive began at 150 */
	assert_int_equal(mpi_rule_sender(40, 100, 150), 50);
}

/*
 * Four ranks at a barrier: true arrivals T, delays x, measured arrivals T + x; the barrier's
 * own time c. Every rank must leave with delay E - (max T + c), whatever its own arrival.
 */
static void check_barrier(const int64_t *t, const int64_t *x, int n, int64_t c)
{
	int64_t a[8], max_a = INT64_MIN, max_t = INT64_MIN, e, min_xw = INT64_MAX, min_w = INT64_MAX;
	int i;

	for (i = 0; i < n; i++) {
		a[i] = t[i] + x[i];
		max_a = a[i] > max_a ? a[i] : max_a;
		max_t = t[i] > max_t ? t[i] : max_t;
	}
	e = max_a + c;
	for (i = 0; i < n; i++) {
		int64_t w = e - a[i];

		min_xw = x[i] + w < min_xw ? x[i] + w : min_xw;
		min_w = w < min_w ? w : min_w;
	}
	for (i = 0; i < n; i++)
		assert_int_equal(mpi_rule_collective(min_xw, min_w, x[i], (uint64_t)(e - a[i])),
				 e - (max_t + c));
}

static void test_barrier(void **state)
{
	static const int64_t t1[] = { 100, 120, 90, 110 }, x1[] = { 0, 40, 5, 0 };
	static const int64_t t2[] = { 100, 100, 100, 100 }, x2[] = { 0, 0, 0, 0 };
	static const int64_t t3[] = { 10, 300, 20, 30 }, x3[] = { 50, 1, 70, 0 };

	(void)state;
	check_barrier(t1, x1, 4, 7);
	check_barrier(t2, x2, 4, 3); /* no delays: nothing moves, the barrier's time stays */
	check_barrier(t3, x3, 4, 0); /* the late rank was barely delayed: the others' delays vanish */
}

/*
 * A non-blocking collective (mpi_rule_icoll) on a synthetic timeline: member j starts it at
 * true time t[j] with delay x[j] (measured s_j = t_j + x_j); the result is there c after the last
 * start. Rank i begins its completing Wait at true time tb[i] with delay xr[i]. Measured, it
 * ends at max(rb, S + c); without measurement at max(tb, T + c). The rule's new delay must be
 * the difference exactly when the rank would have waited for the last start (tb < T), and
 * within c otherwise (the rule cannot tell the collective's own time after the last start,
 * which it keeps whole, from a wait).
 */
static void check_icoll(const int64_t *t, const int64_t *x, const int64_t *tb,
			const int64_t *xr, int n, int64_t c)
{
	int64_t S = INT64_MIN, T = INT64_MIN;
	int i;

	for (i = 0; i < n; i++) {
		S = t[i] + x[i] > S ? t[i] + x[i] : S;
		T = t[i] > T ? t[i] : T;
	}
	for (i = 0; i < n; i++) {
		int64_t rb = tb[i] + xr[i], e = rb > S + c ? rb : S + c;
		int64_t e_true = tb[i] > T + c ? tb[i] : T + c;
		int64_t got = mpi_rule_icoll(xr[i], (uint64_t)(e - rb), rb, S, T);

		if (tb[i] < T)
			assert_int_equal(got, e - e_true);
		else
			assert_true(got <= e - e_true + c && got >= e - e_true - c);
		assert_true(got <= xr[i] + (e - rb)); /* never leaves later than it did */
	}
}

static void test_icoll(void **state)
{
	/* rank 1 starts late, delayed by 40; the others wait for it in their Wait */
	static const int64_t t1[] = { 100, 120, 90, 110 }, x1[] = { 0, 40, 5, 0 };
	static const int64_t tb1[] = { 101, 121, 95, 112 }, xr1[] = { 2, 41, 6, 1 };
	/* the result is there before rank 3 comes to its Wait (true and measured) */
	static const int64_t tb2[] = { 101, 121, 95, 400 }, xr2[] = { 2, 41, 6, 30 };
	/* blocking-like: each waits from its start; the rule is then mpi_rule_collective's */
	static const int64_t t3[] = { 10, 300, 20, 30 }, x3[] = { 50, 1, 70, 0 };
	int64_t S = INT64_MIN, T = INT64_MIN, min_xw = INT64_MAX, min_w = INT64_MAX, e, c = 7;
	int i;

	(void)state;
	check_icoll(t1, x1, tb1, xr1, 4, 7);
	check_icoll(t1, x1, tb1, xr1, 4, 0);
	check_icoll(t1, x1, tb2, xr2, 4, 7);
	check_icoll(t3, x3, t3, x3, 4, 3);
	for (i = 0; i < 4; i++) {
		S = t3[i] + x3[i] > S ? t3[i] + x3[i] : S;
		T = t3[i] > T ? t3[i] : T;
	}
	e = S + c;
	for (i = 0; i < 4; i++) {
		int64_t w = e - (t3[i] + x3[i]);

		min_xw = x3[i] + w < min_xw ? x3[i] + w : min_xw;
		min_w = w < min_w ? w : min_w;
	}
	for (i = 0; i < 4; i++)
		assert_int_equal(mpi_rule_icoll(x3[i], (uint64_t)(e - t3[i] - x3[i]), t3[i] + x3[i],
						S, T),
				 mpi_rule_collective(min_xw, min_w, x3[i],
						     (uint64_t)(e - t3[i] - x3[i])));
}

/* ---- the records ---- */

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

struct vals {
	struct sprof_mpi_call call[2];
	struct sprof_mpi_peer peer[2];
	struct sprof_mpi_comp comp;
	int ncomp, peer_size;
};

static const struct vals good = {
	.call = { { .routine = SPROF_MPI_SEND, .calls = 10, .ns = 5000, .max_ns = 900,
		    .bytes_sent = 4000, .comp_ns = 4000 },
		  { .routine = SPROF_MPI_RECV, .calls = 10, .ns = 9000, .max_ns = 2000,
		    .bytes_recv = 4000, .comp_ns = -5 } },
	.peer = { { .comm = 0, .dir = SPROF_MPI_SENT, .peer = 1, .tag = 7, .messages = 10,
		    .bytes = 4000 },
		  { .comm = 0, .dir = SPROF_MPI_RECEIVED, .peer = -1,
		    .flags = SPROF_MPI_PEER_OVERFLOW, .messages = 3, .bytes = 12 } },
	.comp = { .rank = 2, .size = 4, .flags = SPROF_MPI_PIGGYBACK | SPROF_MPI_FINALIZED,
		  .thread_level = 0, .init_ns = 1000, .fin_ns = 90000, .calls = 25, .pb_calls = 20,
		  .o_call_ns = 41.5, .o_pb_ns = 30.25, .o_init_ns = 10, .o_fin_ns = 7000,
		  .x_init_ns = 10, .x_fin_ns = -300, .extra_ns = 400, .waits = 12, .wait_ns = 8000,
		  .wait_c_ns = 700, .wildcard = 3, .reorders = 1 },
	.ncomp = 1, .peer_size = SPROF_MPI_PEER_SIZE,
};

static size_t encode(struct enc *e, const struct vals *v)
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
	for (i = 0; i < 2; i++) {
		rec(e, SPROF_REC_MPI_CALL, SPROF_MPI_CALL_SIZE);
		sprof_put_mpi_call(&e->b, &v->call[i]);
	}
	for (i = 0; i < 2; i++) {
		rec(e, SPROF_REC_MPI_PEER, (uint32_t)v->peer_size);
		sprof_put_mpi_peer(&e->b, &v->peer[i]);
		if (v->peer_size > SPROF_MPI_PEER_SIZE)
			sprof_put_u32(&e->b, 0);
	}
	for (i = 0; i < v->ncomp; i++) {
		rec(e, SPROF_REC_MPI_COMP, SPROF_MPI_COMP_SIZE);
		sprof_put_mpi_comp(&e->b, &v->comp);
	}
	rec(e, SPROF_REC_END, 8);
	sprof_put_u64(&e->b, e->records - 1);
	assert_false(e->b.error);
	return e->b.len;
}

static int read_enc(const struct vals *v, struct sprof_file **f, char *err)
{
	static struct enc e;
	size_t n = encode(&e, v);

	return sprof_read_mem(e.mem, n, f, err, 256);
}

static void test_read_good(void **state)
{
	struct sprof_file *f;
	char err[256] = "";
	int i;

	(void)state;
	assert_int_equal(read_enc(&good, &f, err), 0);
	assert_int_equal(f->nmpi_calls, 2);
	assert_int_equal(f->nmpi_peers, 2);
	for (i = 0; i < 2; i++) {
		assert_memory_equal(&f->mpi_calls[i], &good.call[i], sizeof(good.call[i]));
		assert_memory_equal(&f->mpi_peers[i], &good.peer[i], sizeof(good.peer[i]));
	}
	assert_non_null(f->mpi_comp);
	assert_memory_equal(f->mpi_comp, &good.comp, sizeof(good.comp));
	sprof_free(f);
}

static void expect_refused(const struct vals *v, const char *why)
{
	struct sprof_file *f = NULL;
	char err[256] = "";

	assert_int_equal(read_enc(v, &f, err), -1);
	assert_null(f);
	if (!strstr(err, why))
		fail_msg("expected '%s' in '%s'", why, err);
}

static void test_read_bad(void **state)
{
	struct vals v;

	(void)state;
	v = good;
	v.call[1].routine = SPROF_MPI_ROUTINES;
	expect_refused(&v, "unknown routine");
	v = good;
	v.call[1].routine = SPROF_MPI_SEND;
	expect_refused(&v, "two MPI_CALL records");
	v = good;
	v.call[0].max_ns = 6000;
	expect_refused(&v, "impossible times");
	v = good;
	v.peer[0].dir = 2;
	expect_refused(&v, "unknown direction");
	v = good;
	v.peer[0].flags = 0x10;
	expect_refused(&v, "unknown flags");
	v = good;
	v.peer[0].peer = -1;
	expect_refused(&v, "peer -1");
	v = good;
	v.comp.rank = 4;
	expect_refused(&v, "rank 4 of 4");
	v = good;
	v.comp.flags = 0x40;
	expect_refused(&v, "unknown flags");
	v = good;
	v.comp.reorders = 4;
	expect_refused(&v, "impossible values");
	v = good;
	v.comp.pb_calls = 26;
	expect_refused(&v, "impossible values");
	v = good;
	v.comp.fin_ns = 10;
	expect_refused(&v, "impossible values");
	v = good;
	v.ncomp = 2;
	expect_refused(&v, "a second MPI_COMP");
	v = good;
	v.peer_size = SPROF_MPI_PEER_SIZE + 4;
	expect_refused(&v, "MPI_PEER record of 44 bytes is malformed");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_master_worker), cmocka_unit_test(test_no_wait),
		cmocka_unit_test(test_pipeline),      cmocka_unit_test(test_queued_message),
		cmocka_unit_test(test_barrier),       cmocka_unit_test(test_icoll),
		cmocka_unit_test(test_read_good),     cmocka_unit_test(test_read_bad),
		cmocka_unit_test(test_read_truncated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
