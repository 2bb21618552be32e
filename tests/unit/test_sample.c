/* SPDX-License-Identifier: MIT */
/*
 * Statistical sampling's pieces that need no running program: the runtime's lock-free table of
 * stacks (runtime/sample_table.c) under concurrent inserts and when full, and the SAMPLES
 * record (docs/format-profile.md) read back intact or refused when hostile.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profile.h"
#include "profile_read.h"
#include "sample.h"

/* ---- the table ---- */

#define WORKERS 4
#define ROUNDS 20000
#define STACKS 500

struct seen {
	uint64_t samples[WORKERS][STACKS], periods[WORKERS][STACKS];
	uint32_t entries;
	int bad;
};

/* Stack k of thread w: depth 1 + k % 7, addresses derived from (w, k). */
static uint32_t make_stack(uint32_t w, uint32_t k, uint64_t *pcs)
{
	uint32_t d = 1 + k % 7, i;

	for (i = 0; i < d; i++)
		pcs[i] = 0x400000 + (uint64_t)k * 64 + i * 8 + ((uint64_t)w << 40);
	return d;
}

static void *worker(void *arg)
{
	uint32_t w = (uint32_t)(uintptr_t)arg, r;
	uint64_t pcs[8];

	for (r = 0; r < ROUNDS; r++) {
		uint32_t k = (r * 7919u) % STACKS, d = make_stack(w % 2, k, pcs);

		/* threads 0 and 2 (and 1 and 3) share stacks but not thread indices */
		if (smp_table_add(w, pcs, d, 1 + r % 3) != 0)
			return (void *)1;
	}
	return NULL;
}

static void collect(void *arg, uint32_t slot, uint32_t thread, uint32_t depth, uint64_t samples,
		    uint64_t periods, const uint64_t *pcs)
{
	struct seen *s = arg;
	uint64_t want[8];
	uint32_t k = (uint32_t)((pcs[0] & 0xffffffffull) - 0x400000) / 64;

	(void)slot;
	s->entries++;
	if (thread >= WORKERS || k >= STACKS || make_stack(thread % 2, k, want) != depth ||
	    memcmp(want, pcs, depth * 8) != 0) {
		s->bad = 1;
		return;
	}
	s->samples[thread][k] += samples;
	s->periods[thread][k] += periods;
}

/* Every sample of every thread is counted exactly once, under its own (thread, stack). */
static void test_table_concurrent(void **state)
{
	static struct seen s;
	pthread_t t[WORKERS];
	uint64_t total = 0, periods = 0, want_periods = 0;
	uint32_t i, k, r;

	(void)state;
	assert_int_equal(smp_table_init(), 0);
	for (i = 0; i < WORKERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i), 0);
	for (i = 0; i < WORKERS; i++) {
		void *ret;

		assert_int_equal(pthread_join(t[i], &ret), 0);
		assert_null(ret);
	}
	smp_table_foreach(collect, &s);
	assert_false(s.bad);
	assert_int_equal(s.entries, WORKERS * STACKS); /* no two slots for one stack here */
	for (i = 0; i < WORKERS; i++)
		for (k = 0; k < STACKS; k++) {
			total += s.samples[i][k];
			periods += s.periods[i][k];
			assert_int_equal(s.samples[i][k], ROUNDS / STACKS);
		}
	for (r = 0; r < ROUNDS; r++)
		want_periods += 1 + r % 3;
	assert_int_equal(total, (uint64_t)WORKERS * ROUNDS);
	assert_int_equal(periods, WORKERS * want_periods);
}

static void count(void *arg, uint32_t slot, uint32_t thread, uint32_t depth, uint64_t samples,
		  uint64_t periods, const uint64_t *pcs)
{
	(void)slot, (void)thread, (void)depth, (void)periods, (void)pcs;
	*(uint64_t *)arg += samples;
}

/* More distinct stacks than slots: the rest are refused (the caller counts them dropped). */
static void test_table_full(void **state)
{
	uint64_t pcs[1], stored = 0, refused = 0, i;

	(void)state;
	smp_table_reset();
	for (i = 0; i < SMP_SLOTS + 5000; i++) {
		pcs[0] = 0x1000 + i * 16;
		if (smp_table_add(0, pcs, 1, 1) != 0)
			refused++;
	}
	smp_table_foreach(count, &stored);
	assert_true(refused >= 5000);
	assert_int_equal(stored + refused, SMP_SLOTS + 5000);
	/* a stack already stored is still counted */
	pcs[0] = 0x1000;
	assert_int_equal(smp_table_add(0, pcs, 1, 1), 0);
}

/* ---- the SAMPLES record ---- */

#define CAP (1 << 16)

struct builder {
	struct sprof_buf b;
	size_t rec_at;
};

static void rec_begin(struct builder *w, uint32_t type)
{
	w->rec_at = w->b.len;
	sprof_put_u32(&w->b, type);
	sprof_put_u32(&w->b, 0);
}

static void rec_end(struct builder *w)
{
	uint32_t size = (uint32_t)(w->b.len - w->rec_at - 8);

	memcpy(w->b.p + w->rec_at + 4, &size, 4);
}

static const struct sprof_calib calib = { .clock_kind = SPROF_CLOCK_TSC, .ticks_per_ns = 2.5,
					  .o_in = 10, .o_full = 20, .o_skip = 4 };

/* Hostile variants: which field to break. */
enum breakage { NONE, DEPTH_ZERO, THREAD_OUT, PERIODS_LOW, DEPTH_OVER, TWO_RECORDS, COUNT_LIES };

static void put_samples(struct builder *w, enum breakage br)
{
	static const uint64_t pcs[] = { 0x401000, 0x402010, 0x403020 };
	uint32_t t;

	rec_begin(w, SPROF_REC_SAMPLES);
	sprof_put_u32(&w->b, 1000);                 /* hz */
	sprof_put_u32(&w->b, 62);                   /* signal */
	sprof_put_u32(&w->b, 2);                    /* threads */
	sprof_put_u32(&w->b, br == COUNT_LIES ? 3 : 2); /* stacks */
	sprof_put_u32(&w->b, 128);                  /* max depth */
	sprof_put_u32(&w->b, 0);
	sprof_put_u64(&w->b, 1000000);              /* period ns */
	for (t = 0; t < 2; t++) {
		sprof_put_u32(&w->b, t);
		sprof_put_u32(&w->b, 100 + t);
		sprof_put_u32(&w->b, t);            /* flags: thread 1 ended */
		sprof_put_u32(&w->b, 0);
		sprof_put_u64(&w->b, 5000000 + t);  /* cpu ns */
		sprof_put_u64(&w->b, 20);           /* signals */
		sprof_put_u64(&w->b, 80);           /* periods */
		sprof_put_u64(&w->b, 1);            /* dropped */
		sprof_put_u64(&w->b, 2);            /* truncated */
	}
	sprof_put_u32(&w->b, 0);
	sprof_put_u32(&w->b, br == DEPTH_ZERO ? 0 : br == DEPTH_OVER ? 129 : 3);
	sprof_put_u64(&w->b, 12);
	sprof_put_u64(&w->b, br == PERIODS_LOW ? 11 : 48);
	for (t = 0; t < 3; t++)
		sprof_put_u64(&w->b, pcs[t]);
	sprof_put_u32(&w->b, br == THREAD_OUT ? 2 : 1);
	sprof_put_u32(&w->b, 1);
	sprof_put_u64(&w->b, 7);
	sprof_put_u64(&w->b, 7);
	sprof_put_u64(&w->b, pcs[0]);
	rec_end(w);
}

static struct builder make(enum breakage br)
{
	struct builder w = { .b = { .p = calloc(1, CAP), .cap = CAP } };
	uint32_t records = 3;

	assert_non_null(w.b.p);
	sprof_put_header(&w.b, 0);
	rec_begin(&w, SPROF_REC_RUN);
	sprof_put_u32(&w.b, 7);
	sprof_put_u32(&w.b, 6);
	sprof_put_u64(&w.b, 1);
	sprof_put_u64(&w.b, 2);
	for (int i = 0; i < 4; i++)
		sprof_put_u32(&w.b, 0);
	sprof_put_u64(&w.b, 0);
	sprof_put_u64(&w.b, 0);
	sprof_put_u32(&w.b, 0);
	sprof_put_u32(&w.b, 0);
	sprof_put_str(&w.b, "/bin/x", 6);
	sprof_put_str(&w.b, "x", 1);
	rec_end(&w);
	rec_begin(&w, SPROF_REC_CALIB);
	sprof_put_calib(&w.b, &calib);
	rec_end(&w);
	put_samples(&w, br);
	if (br == TWO_RECORDS)
		put_samples(&w, NONE), records++;
	rec_begin(&w, SPROF_REC_END);
	sprof_put_u64(&w.b, records);
	rec_end(&w);
	assert_int_equal(w.b.error, 0);
	return w;
}

static void test_record_round_trip(void **state)
{
	struct builder w = make(NONE);
	struct sprof_file *f = NULL;
	const struct sprof_samples *s;
	char err[256] = "";

	(void)state;
	assert_int_equal(sprof_read_mem(w.b.p, w.b.len, &f, err, sizeof(err)), 0);
	s = f->samples;
	assert_non_null(s);
	assert_int_equal(s->hz, 1000);
	assert_int_equal(s->signo, 62);
	assert_int_equal(s->period_ns, 1000000);
	assert_int_equal(s->nthreads, 2);
	assert_int_equal(s->threads[1].tid, 101);
	assert_int_equal(s->threads[1].flags, 1);
	assert_int_equal(s->threads[1].cpu_ns, 5000001);
	assert_int_equal(s->threads[0].periods, 80);
	assert_int_equal(s->threads[0].truncated, 2);
	assert_int_equal(s->nstacks, 2);
	assert_int_equal(s->stacks[0].depth, 3);
	assert_int_equal(s->stacks[0].samples, 12);
	assert_int_equal(s->stacks[0].periods, 48);
	assert_int_equal(s->stacks[0].pcs[2], 0x403020);
	assert_int_equal(s->stacks[1].thread, 1);
	assert_int_equal(s->stacks[1].pcs[0], 0x401000);
	sprof_free(f);
	free(w.b.p);
}

static void expect_refused(const uint8_t *p, size_t len)
{
	struct sprof_file *f = (struct sprof_file *)1;
	char err[256] = "";

	assert_int_equal(sprof_read_mem(p, len, &f, err, sizeof(err)), -1);
	assert_null(f);
	assert_true(err[0] != 0);
}

static void test_record_hostile(void **state)
{
	enum breakage br[] = { DEPTH_ZERO, THREAD_OUT, PERIODS_LOW, DEPTH_OVER, TWO_RECORDS,
			       COUNT_LIES };
	struct builder w;
	size_t i, cut;

	(void)state;
	for (i = 0; i < sizeof(br) / sizeof(br[0]); i++) {
		w = make(br[i]);
		expect_refused(w.b.p, w.b.len);
		free(w.b.p);
	}
	w = make(NONE);
	for (cut = 0; cut < w.b.len; cut++) /* every truncation */
		expect_refused(w.b.p, cut);
	free(w.b.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_concurrent),
		cmocka_unit_test(test_table_full),
		cmocka_unit_test(test_record_round_trip),
		cmocka_unit_test(test_record_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
