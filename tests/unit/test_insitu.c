/* SPDX-License-Identifier: MIT */
/*
 * `sonde run --insitu` (docs/measurement.md, "The probes' price in situ"): the estimator of a
 * probe pair's in-situ price (runtime/insitu_est.h: a pair of windows, rejection, median,
 * spread, the judgement that falls back to the calibrated price), a thread's delay priced with
 * its own price (tool/sync_price.h, runtime/sync_rule.h), and the INSITU record's reader.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../runtime/insitu_est.h"
#include "../../runtime/sync_rule.h"
#include "profile_read.h"
#include "sync_price.h"

/* cmocka's assert_float_equal compares floats: these are doubles */
static void near(double a, double b, double eps)
{
	if (!(a - b <= eps && b - a <= eps))
		fail_msg("%.9g is not %.9g within %g", a, b, eps);
}

/*
 * A pair of windows of 1024 calls: the measured one 1024 * 64 ns longer than the unmeasured one.
 * Calibrated, a measured pair costs o_full = 60, an unmeasured one o_skip = 10: in situ the
 * measured pair costs 64 above the unmeasured one where the calibration says 50, so the
 * unmeasured pair is priced 10 * 64 / 50 = 12.8 and the measured one 64 + 12.8 = 76.8.
 */
static void test_pair(void **state)
{
	(void)state;
	near(insitu_pair_ns(200000 + 1024 * 64, 200000, 1024, 60, 10), 76.8, 1e-9);
	/* the code around the calls as fast as the calibration's loop: o_full itself */
	near(insitu_pair_ns(200000 + 1024 * 50, 200000, 1024, 60, 10), 60, 1e-9);
	/* no unmeasured cost to scale: the difference alone */
	near(insitu_pair_ns(200000 + 1024 * 64, 200000, 1024, 60, 0), 64, 1e-9);
	/* a calibration that cannot scale (o_full not above o_skip): o_skip added as it is */
	near(insitu_pair_ns(200000 + 1024 * 64, 200000, 1024, 10, 10), 74, 1e-9);
	near(insitu_pair_ns(5, 5, 0, 60, 10), 0, 1e-12); /* no calls: no estimate */
	/* the B window longer (the code ran slower then): a negative price, judged later */
	near(insitu_pair_ns(1000, 2024, 1024, 60, 10), -1.2, 1e-9);
}

/* A pair is kept when both windows have a CPU time, made as many synchronization calls and
 * waited as often. */
static void test_clean(void **state)
{
	struct insitu_sync none = { 0, 0 }, three = { 3, 1 };

	(void)state;
	assert_true(insitu_pair_clean(100000, 40000, none, none));
	assert_true(insitu_pair_clean(100000, 40000, three, three));
	assert_false(insitu_pair_clean(0, 40000, none, none)); /* a window with no time */
	assert_false(insitu_pair_clean(100000, 0, none, none));
	assert_false(insitu_pair_clean(100000, 40000, (struct insitu_sync){ 1, 0 }, none));
	/* B waited in its call */
	assert_false(insitu_pair_clean(100000, 40000, (struct insitu_sync){ 2, 0 },
				       (struct insitu_sync){ 2, 1 }));
}

static void test_median(void **state)
{
	float v[] = { 75, 77, 74, 300, 76, 2, 78 }, tmp[8];
	float even[] = { 70, 80, 72, 78 };
	double med, spread;

	(void)state;
	insitu_median(v, 7, tmp, &med, &spread);
	near(med, 76, 1e-6); /* the two wild pairs do not move it */
	/* deviations 1 1 2 224 0 74 2: their median 2, times 1.4826 */
	near(spread, 2 * 1.4826, 1e-5);
	near((double)v[3], 300, 1e-6); /* the pairs themselves stay in their order */
	insitu_median(even, 4, tmp, &med, &spread);
	near(med, 75, 1e-6);
	near(spread, 4 * 1.4826, 1e-5); /* deviations 5 5 3 3 */
	insitu_median(v, 0, tmp, &med, &spread);
	near(med, 0, 1e-12);
	near(spread, 0, 1e-12);
}

static void test_judge(void **state)
{
	(void)state;
	/* enough, tight, plausible: used */
	assert_int_equal(insitu_judge(10, 76, 3, 63), SPROF_INSITU_USED);
	/* too few pairs */
	assert_int_equal(insitu_judge(4, 76, 0, 63), SPROF_INSITU_UNSTABLE);
	/* the standard error 1.2533 * 12 / sqrt(9) = 5.01 above 5 % of 70 = 3.5, and 63 within
	 * two of them: the pairs cannot tell the price from the calibration */
	assert_int_equal(insitu_judge(9, 70, 12, 63), SPROF_INSITU_UNSTABLE);
	/* ... they can at 80 (5.01 above 5 % of 80 = 4.0, 63 more than 10.03 away) */
	assert_int_equal(insitu_judge(9, 80, 12, 63), SPROF_INSITU_USED);
	/* the same spread over 64 pairs: 1.88, within 5 % of 70 */
	assert_int_equal(insitu_judge(64, 70, 12, 63), SPROF_INSITU_USED);
	/* above four calibrated pairs: implausible */
	assert_int_equal(insitu_judge(20, 253, 1, 63), SPROF_INSITU_IMPLAUSIBLE);
	assert_int_equal(insitu_judge(20, 252, 1, 63), SPROF_INSITU_USED);
}

/*
 * A probe pair whose work overlaps with the program's (bench/sync_comp.c's step, a chain of
 * dependent multiplies, on this machine's CPU): in situ it costs a fraction of a ns against a
 * calibrated 18.9, o_skip 2.6. Before, an estimate at or below o_skip was implausible, and the
 * thread fell back to 18.9 ns.
 */
static void test_judge_overlapped(void **state)
{
	(void)state;
	/* 0.45 ns, spread 0.1 over 64 pairs (bench/sync_comp.c lock's workers): used */
	assert_int_equal(insitu_judge(64, 0.45, 0.1, 18.9), SPROF_INSITU_USED);
	/* the standard error's scale is the calibrated price when the estimate is below it:
	 * 1.2533 * 3.4 / 8 = 0.53 ns, within 5 % of 18.9 = 0.945 (within 5 % of 0.24: no) */
	assert_int_equal(insitu_judge(64, 0.24, 3.4, 18.9), SPROF_INSITU_USED);
	/* 1.2533 * 7 / 8 = 1.10, above 0.945, but 18.9 is 16 standard errors away: used */
	assert_int_equal(insitu_judge(64, 0.24, 7, 18.9), SPROF_INSITU_USED);
	/* pinned apart under load (bench/sync_comp.c handoff's worker): 0.31 +- 1.65, used */
	assert_int_equal(insitu_judge(64, 0.31, 10.53, 18.9), SPROF_INSITU_USED);
	/* too spread to tell from the calibration (18.9 within 2 * 2.76): unstable */
	assert_int_equal(insitu_judge(64, 14, 17.6, 18.9), SPROF_INSITU_UNSTABLE);
	assert_int_equal(insitu_judge(64, 13, 17.6, 18.9), SPROF_INSITU_USED); /* 5.9 > 5.51 */
	/* a little below 0 (B dearer by 0.8 ns, within a tenth of 18.6), however precise: nothing
	 * measurable, used (at 0); far below it: the windows' work differed */
	assert_int_equal(insitu_judge(64, -0.8, 1.3, 18.6), SPROF_INSITU_USED);
	assert_int_equal(insitu_judge(64, -2.0, 1.3, 18.6), SPROF_INSITU_IMPLAUSIBLE);
	assert_int_equal(insitu_judge(64, -2.0, 15, 18.6), SPROF_INSITU_USED); /* -2 se = -4.7 */
	/* below 0 by less than two standard errors (2 * 0.53): nothing measurable, used (at 0) */
	assert_int_equal(insitu_judge(64, -1.0, 3.4, 18.9), SPROF_INSITU_USED);
	near(insitu_used_price(-1.0), 0, 1e-12);
	near(insitu_used_price(0.24), 0.24, 1e-12);
	/* by more, but within a tenth of 18.9: nothing measurable still (implausible before the
	 * tenth); beyond both, the unmeasured windows clearly dearer: implausible */
	assert_int_equal(insitu_judge(64, -1.1, 3.4, 18.9), SPROF_INSITU_USED);
	assert_int_equal(insitu_judge(64, -1.9, 3.4, 18.9), SPROF_INSITU_IMPLAUSIBLE);
	/* exactly: no spread, 0; a hair below it too */
	assert_int_equal(insitu_judge(20, 0, 0, 18.9), SPROF_INSITU_USED);
	assert_int_equal(insitu_judge(20, -0.01, 0, 18.9), SPROF_INSITU_USED);
}

/*
 * Pairs in two modes about the price (a barrier wait once per 600 calls, windows of 1024: a
 * window holds it once more or once less than its neighbour), one more pair in the lower mode,
 * and a preempted pair far out. The median is the lower mode's edge; the interquartile mean is
 * near the modes' middle (bench/sync_comp.c barrier's worker 0: medians -0.10 to -0.14 ns, a
 * price of about 0.2).
 */
static void test_estimate_modes(void **state)
{
	float v[17] = { 2.5f, -2.1f, 2.5f, -2.1f, 2.5f, -2.1f, 2.5f, -2.1f, 2.5f, -2.1f,
			2.5f, -2.1f, 2.5f, -2.1f, 2.5f, -2.1f, -2.1f },
	      tmp[17];
	float out[6] = { 75, 77, 74, 300, 76, 78 }; /* 300: preempted */
	double est, spread;

	(void)state;
	insitu_median(v, 17, tmp, &est, &spread);
	near(est, -2.1, 1e-6);
	/* 4 dropped at each end: 4 * 2.5 and 5 * -2.1 left, (10 - 10.5) / 9 */
	insitu_estimate(v, 17, tmp, &est, &spread);
	near(est, -0.5 / 9, 1e-6);
	near(spread, 1.4826 * 0, 1e-6); /* the median's deviations: 9 of 17 are 0 */
	/* one dropped at each end: 74 and 300 */
	insitu_estimate(out, 6, tmp, &est, &spread);
	near(est, (75 + 76 + 77 + 78) / 4.0, 1e-9);
	near(spread, 1.4826 * 1.5, 1e-5); /* median 76.5, deviations .5 .5 1.5 1.5 2.5 223.5 */
	insitu_estimate(out, 0, tmp, &est, &spread);
	near(est, 0, 1e-12);
	/* fewer than four: nothing dropped */
	insitu_estimate(out, 3, tmp, &est, &spread);
	near(est, (75 + 77 + 74) / 3.0, 1e-9);
}

/*
 * A thread's delay at its in-situ price. Worker W ran 1000 measured pairs (in situ 77 ns,
 * calibrated 63 at start-up) and 30 unmeasured (10 ns); main M joined it, inheriting its delay
 * as the runtime counted it (start-up prices) with its probe-cost part q. The file prices W's
 * own pairs at W's in-situ price; the writer reprices M's inherited part with k = the mean
 * in-situ price over the start-up one: M's delay then equals W's.
 */
static void test_price_per_thread(void **state)
{
	const double start = 63, situ = 77, k = situ / start;
	struct sprof_calib cal = { .o_full = 60, .o_skip = 10 };
	struct sprof_sync_comp w = { .probes = 1000, .skips = 30 };
	struct sprof_sync_comp m = { .probes = 0 };
	int64_t q_w = 1000 * 63 + 30 * 10, x_w = q_w, w_c;
	int64_t x_new = sync_rule_wait(0, 5000000, x_w, &w_c);
	int64_t q_new = sync_rule_q(0, 5000000, x_new, 0, q_w);
	struct sprof_calib own = cal;
	double xw;

	(void)state;
	own.o_full = situ;
	xw = sync_comp_x(&w, &own, NULL);
	near(xw, 1000 * 77 + 300, 1e-9);
	near(sync_comp_x(&w, &cal, NULL), 1000 * 60 + 300, 1e-9); /* CALIB's */
	/* the unmeasured pairs' part is repriced with the measured ones' ratio too (as the in-run
	 * batches scale o_skip alike): 300 * k, 63000 * k = 77000 */
	m.shift_ns = (int64_t)sync_reprice((double)(0 - x_new), (double)(0 - q_new), k);
	near(sync_comp_x(&m, &cal, NULL), 77000 + 300.0 * k, 1.0);
}

/* ---- the INSITU record's reader ---- */

struct enc {
	uint8_t mem[2048];
	struct sprof_buf b;
	uint64_t records;
};

static void rec(struct enc *e, uint32_t type, uint32_t size)
{
	sprof_put_u32(&e->b, type);
	sprof_put_u32(&e->b, size);
	e->records++;
}

static void put_thread(struct enc *e, uint32_t index)
{
	int i;

	rec(e, SPROF_REC_THREAD, 56 + 40);
	sprof_put_u32(&e->b, index);
	sprof_put_u32(&e->b, 7 + index);
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
}

static void put_insitu(struct enc *e, const struct sprof_insitu *s, uint32_t size)
{
	rec(e, SPROF_REC_INSITU, size);
	sprof_put_u32(&e->b, s->thread);
	sprof_put_u32(&e->b, s->status);
	sprof_put_u32(&e->b, s->func);
	sprof_put_u32(&e->b, s->window);
	sprof_put_u32(&e->b, s->pairs);
	sprof_put_u32(&e->b, s->rejected);
	sprof_put_u32(&e->b, s->period);
	sprof_put_u32(&e->b, s->preempted);
	sprof_put_u64(&e->b, s->b_calls);
	sprof_put_u64(&e->b, s->calls);
	sprof_put_f64(&e->b, s->price_ns);
	sprof_put_f64(&e->b, s->spread_ns);
	sprof_put_f64(&e->b, s->o_full_ns);
	sprof_put_f64(&e->b, s->o_skip_ns);
	if (size >= SPROF_INSITU_SIZE) { /* the 80-byte record of before ends above */
		sprof_put_u32(&e->b, s->bare_pairs);
		sprof_put_u32(&e->b, s->bare_exits);
		sprof_put_f64(&e->b, s->stub_ns);
	}
	if (size > SPROF_INSITU_SIZE)
		sprof_put_u64(&e->b, 0);
}

/* OVERLAP records (19) that encode() writes after CALIB, with their declared size. */
static const struct sprof_overlap *enc_overlap;
static uint32_t enc_noverlap, enc_overlap_size = SPROF_OVERLAP_SIZE;

static void put_overlaps(struct enc *e)
{
	uint32_t i;

	for (i = 0; i < enc_noverlap; i++) {
		rec(e, SPROF_REC_OVERLAP, enc_overlap_size);
		sprof_put_u32(&e->b, enc_overlap[i].steps);
		sprof_put_u32(&e->b, enc_overlap[i].batches);
		sprof_put_f64(&e->b, enc_overlap[i].work_ns);
		sprof_put_f64(&e->b, enc_overlap[i].o_pair);
		sprof_put_f64(&e->b, enc_overlap[i].o_pair_sd);
		if (enc_overlap_size > SPROF_OVERLAP_SIZE)
			sprof_put_u64(&e->b, 0);
	}
}

/* A file of one function (id 3), threads 0 and 1, and the INSITU records given. */
static size_t encode(struct enc *e, const struct sprof_insitu *s, uint32_t n, uint32_t size)
{
	struct sprof_calib c = { .clock_kind = 1, .ticks_per_ns = 1, .o_full = 60, .o_in = 25,
				 .o_skip = 10 };
	uint32_t i;

	e->b = (struct sprof_buf){ .p = e->mem, .cap = sizeof(e->mem) };
	e->records = 0;
	sprof_put_header(&e->b, 0);
	rec(e, SPROF_REC_RUN, 72);
	for (i = 0; i < 9; i++)
		sprof_put_u64(&e->b, 0);
	rec(e, SPROF_REC_CALIB, 88);
	sprof_put_calib(&e->b, &c);
	put_overlaps(e);
	rec(e, SPROF_REC_FUNC, 52);
	sprof_put_u32(&e->b, 3);
	sprof_put_u32(&e->b, SPROF_FUNC);
	sprof_put_u32(&e->b, UINT32_MAX);
	sprof_put_u32(&e->b, 0);
	for (i = 0; i < 4; i++)
		sprof_put_u64(&e->b, 0x1000);
	sprof_put_u32(&e->b, 0);
	put_thread(e, 0);
	put_thread(e, 1);
	for (i = 0; i < n; i++)
		put_insitu(e, &s[i], size);
	rec(e, SPROF_REC_END, 8);
	sprof_put_u64(&e->b, e->records - 1);
	assert_false(e->b.error);
	return e->b.len;
}

static const struct sprof_insitu used = {
	.thread = 1, .status = SPROF_INSITU_USED, .func = 3, .window = 1024, .pairs = 12,
	.rejected = 2, .period = 32, .preempted = 3, .b_calls = 12288, .calls = 400000,
	.price_ns = 76.5,
	.spread_ns = 2.5, .o_full_ns = 63, .o_skip_ns = 10,
	.bare_pairs = 9, .bare_exits = 2, .stub_ns = 1.25
};
static const struct sprof_insitu none = { .thread = 0, .status = SPROF_INSITU_NONE,
					  .func = SPROF_INSITU_NO_FUNC, .o_full_ns = 63,
					  .o_skip_ns = 10 };

static int read_enc(const struct sprof_insitu *s, uint32_t n, uint32_t size,
		    struct sprof_file **f, char *err)
{
	static struct enc e;
	size_t len = encode(&e, s, n, size);

	*f = NULL;
	return sprof_read_mem(e.mem, len, f, err, 256);
}

/* The price of an unmeasured call in situ: o_skip scaled by the pair's in-situ price over o_full;
 * o_skip itself when the calibration has no o_full to scale by. */
static void test_skip_price(void **state)
{
	(void)state;
	near(sprof_insitu_skip_price(6, 18, 4.5), 1.5, 1e-12);
	near(sprof_insitu_skip_price(0, 18, 4.5), 0, 1e-12);
	near(sprof_insitu_skip_price(36, 18, 4.5), 9, 1e-12);
	near(sprof_insitu_skip_price(6, 0, 4.5), 4.5, 1e-12);
}

static void test_read_good(void **state)
{
	struct sprof_insitu two[2] = { none, used };
	const struct sprof_insitu *s;
	struct sprof_file *f;
	char err[256] = "";

	(void)state;
	assert_int_equal(read_enc(two, 2, SPROF_INSITU_SIZE, &f, err), 0);
	assert_int_equal(f->ninsitu, 2);
	s = sprof_insitu_of(f, 1);
	if (!s) {
		fail_msg("no INSITU record for thread 1");
		return;
	}
	assert_int_equal(s->func, 3);
	assert_int_equal(s->b_calls, 12288);
	assert_int_equal(s->preempted, 3);
	near(s->spread_ns, 2.5, 1e-12);
	assert_int_equal(s->bare_pairs, 9);
	assert_int_equal(s->bare_exits, 2);
	near(s->stub_ns, 1.25, 1e-12);
	/* thread 1 is priced in situ, thread 0 (no hot function) at CALIB's price */
	near(sprof_thread_price(f, 1), 76.5, 1e-12);
	near(sprof_thread_price(f, 0), 60, 1e-12);
	/* an unmeasured call: o_skip scaled as o_full was at start-up (76.5 / 63), or CALIB's */
	near(sprof_thread_skip_price(f, 1), 76.5 * 10 / 63, 1e-12);
	near(sprof_thread_skip_price(f, 0), 10, 1e-12);
	sprof_free(f);
	/* a used price of 0 (probes that cost nothing measurable in situ): read, and used */
	two[1].price_ns = 0;
	assert_int_equal(read_enc(two, 2, SPROF_INSITU_SIZE, &f, err), 0);
	near(sprof_thread_price(f, 1), 0, 1e-12);
	sprof_free(f);
	two[1].price_ns = used.price_ns;
	/* an unstable estimate is shown, not used */
	two[1].status = SPROF_INSITU_UNSTABLE;
	assert_int_equal(read_enc(two, 2, SPROF_INSITU_SIZE, &f, err), 0);
	near(sprof_thread_price(f, 1), 60, 1e-12);
	near(sprof_thread_skip_price(f, 1), 10, 1e-12);
	sprof_free(f);
	/* a record of before the bare windows (80 bytes): read, none of them */
	assert_int_equal(read_enc(two, 2, SPROF_INSITU_SIZE_V1, &f, err), 0);
	s = sprof_insitu_of(f, 1);
	assert_non_null(s);
	assert_int_equal(s ? s->bare_pairs : 1, 0);
	assert_int_equal(s ? s->bare_exits : 1, 0);
	near(sprof_thread_price(f, 1), 60, 1e-12);
	sprof_free(f);
	/* without --insitu: no record, CALIB's price */
	assert_int_equal(read_enc(two, 0, SPROF_INSITU_SIZE, &f, err), 0);
	assert_int_equal(f->ninsitu, 0);
	assert_null(sprof_insitu_of(f, 1));
	near(sprof_thread_price(f, 1), 60, 1e-12);
	sprof_free(f);
}

static void refused(const struct sprof_insitu *s, uint32_t n, uint32_t size, const char *why)
{
	struct sprof_file *f;
	char err[256] = "";

	assert_int_equal(read_enc(s, n, size, &f, err), -1);
	assert_null(f);
	if (!strstr(err, why))
		fail_msg("'%s' does not say '%s'", err, why);
}

static void test_read_bad(void **state)
{
	struct sprof_insitu v[2] = { used, used };

	(void)state;
	v[0].thread = 5;
	refused(v, 1, SPROF_INSITU_SIZE, "no such thread");
	v[0] = used;
	refused(v, 2, SPROF_INSITU_SIZE, "a second record");
	v[0].status = SPROF_INSITU_STATUSES;
	refused(v, 1, SPROF_INSITU_SIZE, "unknown status");
	v[0] = used;
	v[0].func = 4;
	refused(v, 1, SPROF_INSITU_SIZE, "unknown function");
	v[0].func = SPROF_INSITU_NO_FUNC;
	refused(v, 1, SPROF_INSITU_SIZE, "without a function");
	v[0] = none;
	v[0].func = 3;
	refused(v, 1, SPROF_INSITU_SIZE, "without a status");
	v[0] = used;
	v[0].window = 0;
	refused(v, 1, SPROF_INSITU_SIZE, "no window");
	v[0] = used;
	v[0].preempted = 13;
	refused(v, 1, SPROF_INSITU_SIZE, "more pairs preempted");
	v[0] = used;
	v[0].price_ns = -1;
	refused(v, 1, SPROF_INSITU_SIZE, "out of range");
	v[0] = used;
	v[0].pairs = 0;
	v[0].preempted = 0;
	refused(v, 1, SPROF_INSITU_SIZE, "without pairs");
	v[0] = used;
	v[0].bare_pairs = 13;
	refused(v, 1, SPROF_INSITU_SIZE, "more than the pairs");
	v[0] = used;
	v[0].bare_exits = 0;
	refused(v, 1, SPROF_INSITU_SIZE, "bare pairs without exits");
	v[0] = used;
	v[0].bare_pairs = v[0].bare_exits = 0;
	refused(v, 1, SPROF_INSITU_SIZE, "a stub without them");
	v[0] = used;
	v[0].stub_ns = -0.5;
	refused(v, 1, SPROF_INSITU_SIZE, "stub cost out of range");
	v[0] = used;
	refused(v, 1, SPROF_INSITU_SIZE + 8, "INSITU record of 104 bytes is malformed");
	refused(v, 1, SPROF_INSITU_SIZE - 8, "INSITU record of 88 bytes is malformed");
}

/* The OVERLAP record read back, or absent, or refused for its values, repetition and size. */
static void overlap_refused(const struct sprof_overlap *o, uint32_t n, uint32_t size,
			    const char *why)
{
	enc_overlap = o;
	enc_noverlap = n;
	enc_overlap_size = size;
	refused(&none, 1, SPROF_INSITU_SIZE, why);
}

static void test_read_overlap(void **state)
{
	const struct sprof_overlap good = { .steps = 16, .batches = 100, .work_ns = 24.7,
					    .o_pair = 5.0, .o_pair_sd = 0.1 };
	struct sprof_overlap v[2] = { good, good };
	struct sprof_file *f;
	char err[256] = "";

	(void)state;
	enc_overlap = v;
	enc_noverlap = 1;
	assert_int_equal(read_enc(&none, 1, SPROF_INSITU_SIZE, &f, err), 0);
	assert_int_equal(f->overlap.steps, 16);
	assert_int_equal(f->overlap.batches, 100);
	near(f->overlap.work_ns, 24.7, 1e-12);
	near(f->overlap.o_pair, 5.0, 1e-12);
	near(f->overlap.o_pair_sd, 0.1, 1e-12);
	sprof_free(f);
	enc_noverlap = 0; /* not measured (--dynamic): absent, batches 0 */
	assert_int_equal(read_enc(&none, 1, SPROF_INSITU_SIZE, &f, err), 0);
	assert_int_equal(f->overlap.batches, 0);
	sprof_free(f);
	overlap_refused(v, 2, SPROF_OVERLAP_SIZE, "two OVERLAP records");
	v[0].steps = 0;
	overlap_refused(v, 1, SPROF_OVERLAP_SIZE, "OVERLAP values out of range");
	v[0] = good;
	v[0].o_pair = -0.5;
	overlap_refused(v, 1, SPROF_OVERLAP_SIZE, "OVERLAP values out of range");
	v[0] = good;
	v[0].work_ns = __builtin_nan("");
	overlap_refused(v, 1, SPROF_OVERLAP_SIZE, "OVERLAP values out of range");
	v[0] = good;
	overlap_refused(v, 1, SPROF_OVERLAP_SIZE + 8, "OVERLAP record of 40 bytes is malformed");
	enc_noverlap = 0;
	enc_overlap_size = SPROF_OVERLAP_SIZE;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pair),	  cmocka_unit_test(test_clean),
		cmocka_unit_test(test_median),	  cmocka_unit_test(test_judge),
		cmocka_unit_test(test_judge_overlapped), cmocka_unit_test(test_estimate_modes),
		cmocka_unit_test(test_price_per_thread), cmocka_unit_test(test_skip_price),
		cmocka_unit_test(test_read_good), cmocka_unit_test(test_read_bad),
		cmocka_unit_test(test_read_overlap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
