/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the I/O, OS and hardware-counter records of the profile format (FILE 10, OS 11,
 * OS_INTERVAL 12, HW 13; format/profile_read_io.c): encoded byte for byte as runtime/io.c,
 * os.c and hw.c lay them out, they must read back intact; hostile variants must be refused
 * with a reason (sizes that lie, unknown kinds, rows naming threads or phases that are not
 * there, intervals out of order), and every truncation too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profile.h"
#include "profile_read.h"

#define CAP (1 << 16)

struct builder {
	struct sprof_buf b;
	size_t rec_at;
	uint64_t records;
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
	w->records++;
}

static void put_cstr(struct sprof_buf *b, const char *s)
{
	sprof_put_str(b, s, strlen(s));
}

/* RUN, CALIB, one thread (index 0, root node only) with one phase. */
static void put_base(struct builder *w)
{
	static const struct sprof_calib c = { SPROF_CLOCK_TSC, 10, 2.5, 20, 1, 0.4, 10, 1, 30, 2,
					      5, 1 };
	int i;

	w->b = (struct sprof_buf){ .p = calloc(1, CAP), .cap = CAP };
	assert_non_null(w->b.p);
	sprof_put_header(&w->b, 0);
	rec_begin(w, SPROF_REC_RUN);
	sprof_put_u32(&w->b, 7);
	sprof_put_u32(&w->b, 1);
	for (i = 0; i < 2; i++)
		sprof_put_u64(&w->b, 1000);
	for (i = 0; i < 4; i++)
		sprof_put_u32(&w->b, 0);
	sprof_put_u64(&w->b, 0);
	sprof_put_u64(&w->b, 0);
	sprof_put_u32(&w->b, 1);
	sprof_put_u32(&w->b, 0);
	put_cstr(&w->b, "/bin/prog");
	put_cstr(&w->b, "prog");
	rec_end(w);
	rec_begin(w, SPROF_REC_CALIB);
	sprof_put_calib(&w->b, &c);
	rec_end(w);
	rec_begin(w, SPROF_REC_THREAD);
	sprof_put_u32(&w->b, 0);
	sprof_put_u32(&w->b, 7);
	for (i = 0; i < 3; i++)
		sprof_put_u64(&w->b, 0);
	sprof_put_u32(&w->b, 1);
	sprof_put_u32(&w->b, 1);
	sprof_put_u64(&w->b, 0);
	sprof_put_u64(&w->b, 0);
	sprof_put_u32(&w->b, SPROF_NO_PARENT);
	sprof_put_u32(&w->b, SPROF_ROOT_FUNC);
	for (i = 0; i < 4; i++)
		sprof_put_u64(&w->b, 0);
	rec_end(w);
	rec_begin(w, SPROF_REC_PHASE);
	sprof_put_u32(&w->b, 0);
	sprof_put_u32(&w->b, 0);
	sprof_put_u64(&w->b, 10);
	sprof_put_u64(&w->b, 500);
	put_cstr(&w->b, "io");
	rec_end(w);
}

struct variant {
	uint32_t kind, row_thread, row_phase, errors, interval_start, hw_status, os_phase;
	int nrows_lie;
};

static const struct variant good = { SPROF_IOK_FILE, 0, 0, 1, 100, SPROF_HW_UNAVAILABLE, 0, 0 };

static void put_row(struct sprof_buf *b, uint32_t thread, uint32_t phase, uint32_t errors)
{
	int i;

	sprof_put_u32(b, thread);
	sprof_put_u32(b, phase);
	for (i = 0; i < SPROF_IO_OPS; i++)
		sprof_put_u64(b, (uint64_t)(i + 1)); /* calls: 1 read, 2 writes, ... */
	for (i = 0; i < SPROF_IO_OPS; i++)
		sprof_put_u64(b, (uint64_t)(100 * (i + 1)));
	sprof_put_u64(b, 4096);
	sprof_put_u64(b, 8192);
	sprof_put_u64(b, errors);
}

static void put_vals(struct sprof_buf *b, uint64_t base)
{
	int i;

	for (i = 0; i < 6; i++)
		sprof_put_u64(b, base + (uint64_t)i);
}

static void put_os(struct builder *w, uint32_t thread, uint32_t phase, uint64_t wall,
		   uint64_t base)
{
	rec_begin(w, SPROF_REC_OS);
	sprof_put_u32(&w->b, thread);
	sprof_put_u32(&w->b, 7);
	sprof_put_u32(&w->b, phase);
	sprof_put_u32(&w->b, 0);
	sprof_put_u64(&w->b, wall);
	put_vals(&w->b, base);
	rec_end(w);
}

static struct builder make(const struct variant *v)
{
	struct builder w = { 0 };

	put_base(&w);
	rec_begin(&w, SPROF_REC_FILE);
	sprof_put_u32(&w.b, 3);
	sprof_put_u32(&w.b, v->kind);
	sprof_put_u32(&w.b, (uint32_t)(2 + v->nrows_lie));
	sprof_put_u32(&w.b, 0);
	put_cstr(&w.b, "/data/in.dat");
	put_row(&w.b, v->row_thread, v->row_phase, v->errors);
	put_row(&w.b, 0, SPROF_NO_INDEX, 0);
	rec_end(&w);
	put_os(&w, 0, SPROF_NO_INDEX, 5000, 10);
	put_os(&w, 0, v->os_phase, 400, 30);
	put_os(&w, SPROF_NO_INDEX, SPROF_NO_INDEX, 6000, 20);
	rec_begin(&w, SPROF_REC_OS_INTERVAL);
	sprof_put_u64(&w.b, 0);
	sprof_put_u64(&w.b, 100);
	put_vals(&w.b, 1);
	rec_end(&w);
	rec_begin(&w, SPROF_REC_OS_INTERVAL);
	sprof_put_u64(&w.b, v->interval_start);
	sprof_put_u64(&w.b, 200);
	put_vals(&w.b, 2);
	rec_end(&w);
	rec_begin(&w, SPROF_REC_HW);
	sprof_put_u32(&w.b, v->hw_status);
	sprof_put_u32(&w.b, 2);
	sprof_put_u64(&w.b, 0);
	sprof_put_u64(&w.b, 0);
	sprof_put_u64(&w.b, 0);
	put_cstr(&w.b, "cycles");
	put_cstr(&w.b, "no PMU");
	rec_end(&w);
	rec_begin(&w, SPROF_REC_END);
	sprof_put_u64(&w.b, w.records);
	rec_end(&w);
	assert_int_equal(w.b.error, 0);
	return w;
}

static void expect_refused(const uint8_t *data, size_t len)
{
	struct sprof_file *f = (struct sprof_file *)1;
	char err[256] = "";

	assert_int_equal(sprof_read_mem(data, len, &f, err, sizeof(err)), -1);
	assert_null(f);
	assert_true(err[0] != 0);
	assert_null(strchr(err, '\n'));
}

static void refused(const struct variant *v)
{
	struct builder w = make(v);

	expect_refused(w.b.p, w.b.len);
	free(w.b.p);
}

static void test_round_trip(void **state)
{
	struct builder w = make(&good);
	struct sprof_file *f;
	char err[256];
	const struct sprof_io_row *r;

	(void)state;
	assert_int_equal(sprof_read_mem(w.b.p, w.b.len, &f, err, sizeof(err)), 0);
	assert_int_equal(f->niofiles, 1);
	assert_string_equal(f->iofiles[0].path, "/data/in.dat");
	assert_int_equal(f->iofiles[0].kind, SPROF_IOK_FILE);
	assert_int_equal(f->iofiles[0].nrows, 2);
	r = &f->iofiles[0].rows[0];
	assert_int_equal(r->thread, 0);
	assert_int_equal(r->phase, 0);
	assert_int_equal(r->calls[1], 2);
	assert_int_equal(r->ns[4], 500);
	assert_int_equal(r->bytes_read, 4096);
	assert_int_equal(r->bytes_written, 8192);
	assert_int_equal(r->errors, 1);
	assert_int_equal(f->iofiles[0].rows[1].phase, SPROF_NO_INDEX);
	assert_int_equal(f->nos, 3);
	assert_int_equal(f->os[0].wall_ns, 5000);
	assert_int_equal(f->os[0].v.nivcsw, 15);
	assert_int_equal(f->os[0].phase, SPROF_NO_INDEX);
	assert_int_equal(f->os[1].phase, 0);
	assert_int_equal(f->os[1].v.minflt, 32);
	assert_int_equal(f->os[2].thread, SPROF_NO_INDEX);
	assert_int_equal(f->nintervals, 2);
	assert_int_equal(f->intervals[1].start, 100);
	assert_int_equal(f->intervals[1].v.minflt, 4);
	assert_int_equal(f->nhw, 1);
	assert_string_equal(f->hw[0].event, "cycles");
	assert_string_equal(f->hw[0].reason, "no PMU");
	assert_int_equal(f->hw[0].status, SPROF_HW_UNAVAILABLE);
	sprof_free(f);
	free(w.b.p);
}

static void test_truncated_everywhere(void **state)
{
	struct builder w = make(&good);
	size_t n;

	(void)state;
	for (n = 0; n < w.b.len; n++)
		expect_refused(w.b.p, n);
	free(w.b.p);
}

static void test_hostile(void **state)
{
	struct variant v;

	(void)state;
	v = good, v.nrows_lie = 1; /* more rows than the record holds */
	refused(&v);
	v = good, v.nrows_lie = -1;
	refused(&v);
	v = good, v.kind = 99;
	refused(&v);
	v = good, v.row_thread = 5; /* no such thread */
	refused(&v);
	v = good, v.row_phase = 1; /* thread 0 has one phase */
	refused(&v);
	v = good, v.row_thread = SPROF_NO_INDEX; /* a phase without a thread */
	refused(&v);
	v = good, v.errors = 100; /* more errors than calls */
	refused(&v);
	v = good, v.interval_start = 50; /* overlaps the one before */
	refused(&v);
	v = good, v.hw_status = 7;
	refused(&v);
	v = good, v.os_phase = 3; /* an OS record for a phase the thread does not have */
	refused(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_truncated_everywhere),
		cmocka_unit_test(test_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
