/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the profile format (format/profile.h, format/profile_read.h): a complete profile
 * encoded with the sprof_put_* primitives, byte for byte as runtime/writer.c lays it out, must
 * read back with every field intact; hostile inputs must be refused (-1, a reason, no crash).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "profile.h"
#include "profile_read.h"

#define CAP (1 << 16)

/* ---- building profiles ---- */

struct builder {
	struct sprof_buf b;
	size_t rec_at; /* offset of the open record's header */
};

static void b_init(struct builder *w, uint32_t features)
{
	w->b = (struct sprof_buf){ .p = calloc(1, CAP), .cap = CAP };
	assert_non_null(w->b.p);
	sprof_put_header(&w->b, features);
}

static void rec_begin(struct builder *w, uint32_t type)
{
	w->rec_at = w->b.len;
	sprof_put_u32(&w->b, type);
	sprof_put_u32(&w->b, 0); /* size, patched by rec_end */
}

static void rec_end(struct builder *w)
{
	uint32_t size = (uint32_t)(w->b.len - w->rec_at - 8);

	memcpy(w->b.p + w->rec_at + 4, &size, 4);
}

static void put_cstr(struct sprof_buf *b, const char *s)
{
	sprof_put_str(b, s, strlen(s));
}

static void put_run(struct builder *w, const char *exe, const char *cmdline, size_t cmdline_len)
{
	rec_begin(w, SPROF_REC_RUN);
	sprof_put_u32(&w->b, 4242);               /* pid */
	sprof_put_u32(&w->b, 4241);               /* ppid */
	sprof_put_u64(&w->b, 1700000000000000000ull); /* start, unix ns */
	sprof_put_u64(&w->b, 123456789);          /* wall ns */
	sprof_put_u32(&w->b, SPROF_END_SIGNAL);
	sprof_put_u32(&w->b, 15);
	sprof_put_u32(&w->b, 64);                 /* depth */
	sprof_put_u32(&w->b, 3);                  /* flags */
	sprof_put_u64(&w->b, 100000);             /* throttle calls */
	sprof_put_u64(&w->b, 10000);              /* throttle ns */
	sprof_put_u32(&w->b, 2);                  /* nthreads */
	sprof_put_u32(&w->b, 0);
	put_cstr(&w->b, exe);
	sprof_put_str(&w->b, cmdline, cmdline_len);
	rec_end(w);
}

static const struct sprof_calib calib = {
	.clock_kind = SPROF_CLOCK_TSC, .samples = 200, .ticks_per_ns = 2.5, .clock_ns = 7.25,
	.clock_sd = 0.5, .dt_ns = 0.4, .o_in = 11.5, .o_in_sd = 1.25, .o_full = 23.75,
	.o_full_sd = 2.5, .o_skip = 4.125, .o_skip_sd = 0.75,
};

static void put_calib(struct builder *w, const struct sprof_calib *c)
{
	rec_begin(w, SPROF_REC_CALIB);
	sprof_put_calib(&w->b, c);
	rec_end(w);
}

static void put_module(struct builder *w, uint32_t id, const char *path)
{
	int i;

	rec_begin(w, SPROF_REC_MODULE);
	sprof_put_u32(&w->b, id);
	sprof_put_u32(&w->b, 20); /* build id length */
	sprof_put_u64(&w->b, 0x555500000000ull + id);
	sprof_put_u64(&w->b, 0x555500001000ull);
	sprof_put_u64(&w->b, 0x555500009000ull);
	for (i = 0; i < 4; i++) /* build id bytes 0x10, 0x11, ... */
		sprof_put_u64(&w->b, 0x1716151413121110ull + 0x0808080808080808ull * (uint64_t)i);
	put_cstr(&w->b, path);
	rec_end(w);
}

static void put_func(struct builder *w, uint32_t id, uint32_t kind, int32_t module,
		     uint32_t flags, const char *name)
{
	rec_begin(w, SPROF_REC_FUNC);
	sprof_put_u32(&w->b, id);
	sprof_put_u32(&w->b, kind);
	sprof_put_u32(&w->b, (uint32_t)module);
	sprof_put_u32(&w->b, flags);
	sprof_put_u64(&w->b, 0x555500001100ull + id * 16);
	sprof_put_u64(&w->b, 0x1100ull + id * 16);
	sprof_put_u64(&w->b, flags & SPROF_FN_THROTTLED ? 777000 : 0);
	sprof_put_u64(&w->b, flags & SPROF_FN_THROTTLED ? 100352 : 0);
	put_cstr(&w->b, name);
	rec_end(w);
}

struct tnode {
	uint32_t parent, func;
	uint64_t calls, incl, excl, skipped, cpu_incl, cpu_excl;
};

static void put_thread(struct builder *w, uint32_t index, uint32_t tid, const struct tnode *n,
		       uint32_t nn, int cpu)
{
	uint32_t i;

	rec_begin(w, SPROF_REC_THREAD);
	sprof_put_u32(&w->b, index);
	sprof_put_u32(&w->b, tid);
	sprof_put_u64(&w->b, 1000 * index);  /* start */
	sprof_put_u64(&w->b, 900000);        /* end */
	sprof_put_u64(&w->b, cpu ? 880000 : 0);
	sprof_put_u32(&w->b, 1);             /* flags: exited */
	sprof_put_u32(&w->b, nn);
	sprof_put_u64(&w->b, 5 + index);     /* depth skips */
	sprof_put_u64(&w->b, 7 + index);     /* lost calls */
	for (i = 0; i < nn; i++) {
		sprof_put_u32(&w->b, n[i].parent);
		sprof_put_u32(&w->b, n[i].func);
		sprof_put_u64(&w->b, n[i].calls);
		sprof_put_u64(&w->b, n[i].incl);
		sprof_put_u64(&w->b, n[i].excl);
		sprof_put_u64(&w->b, n[i].skipped);
		if (cpu) {
			sprof_put_u64(&w->b, n[i].cpu_incl);
			sprof_put_u64(&w->b, n[i].cpu_excl);
		}
	}
	rec_end(w);
}

static void put_counter(struct builder *w, uint32_t thread, const char *name)
{
	rec_begin(w, SPROF_REC_COUNTER);
	sprof_put_u32(&w->b, thread);
	sprof_put_u32(&w->b, 0);
	sprof_put_u64(&w->b, 10);
	sprof_put_f64(&w->b, 55.5);
	sprof_put_f64(&w->b, -1.5);
	sprof_put_f64(&w->b, 10.25);
	put_cstr(&w->b, name);
	rec_end(w);
}

static void put_phase(struct builder *w, uint32_t thread, uint64_t start, uint64_t end,
		      const char *name)
{
	rec_begin(w, SPROF_REC_PHASE);
	sprof_put_u32(&w->b, thread);
	sprof_put_u32(&w->b, 0);
	sprof_put_u64(&w->b, start);
	sprof_put_u64(&w->b, end);
	put_cstr(&w->b, name);
	rec_end(w);
}

static void put_end(struct builder *w, uint64_t records)
{
	rec_begin(w, SPROF_REC_END);
	sprof_put_u64(&w->b, records);
	rec_end(w);
}

/* main(1) -> leaf(2); main -> region "solve"(3); thread 1: worker(4) -> leaf */
static const struct tnode t0_nodes[] = {
	{ SPROF_NO_PARENT, SPROF_ROOT_FUNC, 0, 1000, 100, 0, 900, 90 },
	{ 0, 1, 1, 900, 300, 2, 800, 250 },
	{ 1, 2, 40, 400, 400, 0, 390, 390 },
	{ 1, 3, 3, 200, 150, 1, 180, 140 },
	{ 3, 2, 5, 50, 50, 0, 40, 40 },
};
static const struct tnode t1_nodes[] = {
	{ SPROF_NO_PARENT, SPROF_ROOT_FUNC, 0, 500, 10, 0, 0, 0 },
	{ 0, 4, 1, 490, 90, 0, 0, 0 },
	{ 1, 2, 1000, 400, 400, 0, 0, 0 },
};

static const char cmdline[] = "./prog\0--flag\0value\0";
#define CMDLINE_LEN (sizeof(cmdline) - 1)

/* Which records to write, so hostile variants can drop, repeat or break one. */
struct variant {
	int cpu;
	int no_calib, no_run, two_runs, bad_phase, unknown_record, module_in_func, empty_thread;
	uint32_t dup_func;
};

static struct builder make_profile(const struct variant *v)
{
	struct builder w;
	uint64_t records = 0;

	b_init(&w, v->cpu ? SPROF_F_CPU : 0);
	if (!v->no_run)
		put_run(&w, "/usr/bin/prog", cmdline, CMDLINE_LEN), records++;
	if (v->two_runs)
		put_run(&w, "/usr/bin/prog", cmdline, CMDLINE_LEN), records++;
	if (!v->no_calib)
		put_calib(&w, &calib), records++;
	if (v->unknown_record) { /* a record type from a newer writer: skipped */
		rec_begin(&w, 99);
		sprof_put_u64(&w.b, 0xdeadbeef);
		sprof_put_u32(&w.b, 1);
		sprof_put_u16(&w.b, 2);
		rec_end(&w);
		records++;
	}
	put_module(&w, 0, "/usr/bin/prog"), records++;
	put_module(&w, 1, "/lib/x86_64-linux-gnu/libm.so.6"), records++;
	put_func(&w, 1, SPROF_FUNC, 0, 0, ""), records++;
	put_func(&w, 2, SPROF_FUNC, v->module_in_func ? 5 : 1, SPROF_FN_THROTTLED, ""), records++;
	put_func(&w, 3, SPROF_REGION, -1, 0, "solve"), records++;
	put_func(&w, v->dup_func ? v->dup_func : 4, SPROF_FUNC, 0, SPROF_FN_EXCLUDED, ""), records++;
	put_thread(&w, 0, 4242, t0_nodes, 5, v->cpu), records++;
	put_thread(&w, 1, 4250, t1_nodes, v->empty_thread ? 0 : 3, v->cpu), records++;
	put_counter(&w, 0, "bytes"), records++;
	put_phase(&w, 0, 10, 500, "setup"), records++;
	if (v->bad_phase)
		put_phase(&w, 1, 600, 599, "backwards"), records++;
	else
		put_phase(&w, 1, 600, 700, "compute"), records++;
	put_end(&w, records);
	assert_int_equal(w.b.error, 0);
	return w;
}

static int parse(const struct builder *w, struct sprof_file **f, char *err, size_t errlen)
{
	return sprof_read_mem(w->b.p, w->b.len, f, err, errlen);
}

/* Parsing must fail with a reason and no file. */
static void expect_refused(const uint8_t *data, size_t len)
{
	struct sprof_file *f = (struct sprof_file *)1;
	char err[256] = "";

	assert_int_equal(sprof_read_mem(data, len, &f, err, sizeof(err)), -1);
	assert_null(f);
	assert_true(err[0] != 0);
	assert_null(strchr(err, '\n'));
}

static void expect_refused_w(struct builder *w)
{
	expect_refused(w->b.p, w->b.len);
	free(w->b.p);
}

/* Byte offset of the n-th record (0 = the first after the header) of a given type. */
static size_t find_record(const struct builder *w, uint32_t type, int nth)
{
	size_t at = SPROF_HEADER_SIZE;

	while (at + 8 <= w->b.len) {
		uint32_t t, size;

		memcpy(&t, w->b.p + at, 4);
		memcpy(&size, w->b.p + at + 4, 4);
		if (t == type && nth-- == 0)
			return at;
		at += 8 + size;
	}
	fail_msg("record type %u not found", type);
	return 0;
}

/* ---- round trip ---- */

static void check_nodes(const struct sprof_thread *t, const struct tnode *n, uint32_t nn, int cpu)
{
	uint32_t i;

	assert_int_equal(t->nnodes, nn);
	for (i = 0; i < nn; i++) {
		assert_int_equal(t->nodes[i].parent, n[i].parent);
		assert_int_equal(t->nodes[i].func, n[i].func);
		assert_int_equal(t->nodes[i].calls, n[i].calls);
		assert_int_equal(t->nodes[i].incl, n[i].incl);
		assert_int_equal(t->nodes[i].excl, n[i].excl);
		assert_int_equal(t->nodes[i].skipped, n[i].skipped);
		assert_int_equal(t->nodes[i].cpu_incl, cpu ? n[i].cpu_incl : 0);
		assert_int_equal(t->nodes[i].cpu_excl, cpu ? n[i].cpu_excl : 0);
	}
}

static void round_trip(int cpu)
{
	struct variant v = { .cpu = cpu };
	struct builder w = make_profile(&v);
	struct sprof_file *f = NULL;
	const struct sprof_func *fn;
	char err[256] = "";
	int i;

	assert_int_equal(parse(&w, &f, err, sizeof(err)), 0);
	assert_non_null(f);
	assert_int_equal(f->version, SPROF_VERSION);
	assert_int_equal(f->features, cpu ? SPROF_F_CPU : 0);

	/* RUN */
	assert_int_equal(f->run.pid, 4242);
	assert_int_equal(f->run.ppid, 4241);
	assert_int_equal(f->run.start_unix_ns, 1700000000000000000ull);
	assert_int_equal(f->run.wall_ns, 123456789);
	assert_int_equal(f->run.end_reason, SPROF_END_SIGNAL);
	assert_int_equal(f->run.end_signal, 15);
	assert_int_equal(f->run.depth, 64);
	assert_int_equal(f->run.flags, 3);
	assert_int_equal(f->run.throttle_calls, 100000);
	assert_int_equal(f->run.throttle_ns, 10000);
	assert_int_equal(f->run.nthreads, 2);
	assert_string_equal(f->run.exe, "/usr/bin/prog");
	assert_string_equal(f->run.cmdline, "./prog --flag value"); /* NULs become spaces */

	/* CALIB */
	assert_int_equal(f->calib.clock_kind, SPROF_CLOCK_TSC);
	assert_int_equal(f->calib.samples, 200);
	assert_memory_equal(&f->calib.ticks_per_ns, &calib.ticks_per_ns,
			    sizeof(struct sprof_calib) - offsetof(struct sprof_calib, ticks_per_ns));

	/* MODULE */
	assert_int_equal(f->nmodules, 2);
	for (i = 0; i < 2; i++) {
		int k;

		assert_int_equal(f->modules[i].id, (uint32_t)i);
		assert_int_equal(f->modules[i].build_id_len, 20);
		assert_int_equal(f->modules[i].bias, 0x555500000000ull + (uint64_t)i);
		assert_int_equal(f->modules[i].lo, 0x555500001000ull);
		assert_int_equal(f->modules[i].hi, 0x555500009000ull);
		for (k = 0; k < 32; k++)
			assert_int_equal(f->modules[i].build_id[k], 0x10 + k);
	}
	assert_string_equal(f->modules[0].path, "/usr/bin/prog");
	assert_string_equal(f->modules[1].path, "/lib/x86_64-linux-gnu/libm.so.6");

	/* FUNC */
	assert_int_equal(f->nfuncs, 4);
	for (i = 1; i <= 4; i++) {
		fn = sprof_func_of(f, (uint32_t)i);
		assert_non_null(fn);
		assert_int_equal(fn->id, (uint32_t)i);
		assert_int_equal(fn->addr, 0x555500001100ull + (uint64_t)i * 16);
		assert_int_equal(fn->vaddr, 0x1100ull + (uint64_t)i * 16);
	}
	assert_null(sprof_func_of(f, 0));
	assert_null(sprof_func_of(f, 5));
	assert_null(sprof_func_of(f, SPROF_ROOT_FUNC));
	fn = sprof_func_of(f, 1);
	assert_int_equal(fn->kind, SPROF_FUNC);
	assert_int_equal(fn->module, 0);
	assert_int_equal(fn->flags, 0);
	assert_string_equal(fn->name, "");
	fn = sprof_func_of(f, 2);
	assert_int_equal(fn->module, 1);
	assert_int_equal(fn->flags, SPROF_FN_THROTTLED);
	assert_int_equal(fn->throttled_at, 777000);
	assert_int_equal(fn->throttled_calls, 100352);
	fn = sprof_func_of(f, 3);
	assert_int_equal(fn->kind, SPROF_REGION);
	assert_int_equal(fn->module, -1);
	assert_string_equal(fn->name, "solve");
	fn = sprof_func_of(f, 4);
	assert_int_equal(fn->flags, SPROF_FN_EXCLUDED);
	assert_int_equal(fn->throttled_at, 0);

	/* THREAD */
	assert_int_equal(f->nthreads, 2);
	for (i = 0; i < 2; i++) {
		const struct sprof_thread *t = &f->threads[i];

		assert_int_equal(t->index, (uint32_t)i);
		assert_int_equal(t->start, 1000 * (uint64_t)i);
		assert_int_equal(t->end, 900000);
		assert_int_equal(t->cpu, cpu ? 880000 : 0);
		assert_int_equal(t->flags, 1);
		assert_int_equal(t->depth_skips, 5 + (uint64_t)i);
		assert_int_equal(t->lost_calls, 7 + (uint64_t)i);
	}
	assert_int_equal(f->threads[0].tid, 4242);
	assert_int_equal(f->threads[1].tid, 4250);
	check_nodes(&f->threads[0], t0_nodes, 5, cpu);
	check_nodes(&f->threads[1], t1_nodes, 3, cpu);

	/* COUNTER, PHASE */
	assert_int_equal(f->ncounters, 1);
	assert_int_equal(f->counters[0].thread, 0);
	assert_int_equal(f->counters[0].count, 10);
	assert_true(f->counters[0].sum == 55.5);
	assert_true(f->counters[0].min == -1.5);
	assert_true(f->counters[0].max == 10.25);
	assert_string_equal(f->counters[0].name, "bytes");
	assert_int_equal(f->nphases, 2);
	assert_int_equal(f->phases[0].thread, 0);
	assert_int_equal(f->phases[0].start, 10);
	assert_int_equal(f->phases[0].end, 500);
	assert_string_equal(f->phases[0].name, "setup");
	assert_int_equal(f->phases[1].thread, 1);
	assert_int_equal(f->phases[1].start, 600);
	assert_int_equal(f->phases[1].end, 700);
	assert_string_equal(f->phases[1].name, "compute");

	sprof_free(f);
	free(w.b.p);
}

static void test_round_trip(void **state)
{
	(void)state;
	round_trip(0);
}

static void test_round_trip_cpu(void **state)
{
	(void)state;
	round_trip(1);
}

/* The header as the writer lays it out: magic, version, min_version, features, 16 zero bytes. */
static void test_header_layout(void **state)
{
	uint8_t mem[SPROF_HEADER_SIZE + 1];
	struct sprof_buf b = { .p = mem, .cap = sizeof(mem) };
	uint16_t v;
	uint32_t feat;
	int i;

	(void)state;
	sprof_put_header(&b, SPROF_F_CPU);
	assert_int_equal(b.error, 0);
	assert_int_equal(b.len, SPROF_HEADER_SIZE);
	assert_memory_equal(mem, SPROF_MAGIC, 8);
	memcpy(&v, mem + 8, 2);
	assert_int_equal(v, SPROF_VERSION);
	memcpy(&v, mem + 10, 2);
	assert_int_equal(v, SPROF_MIN_VERSION);
	memcpy(&feat, mem + 12, 4);
	assert_int_equal(feat, SPROF_F_CPU);
	for (i = 16; i < SPROF_HEADER_SIZE; i++)
		assert_int_equal(mem[i], 0);
}

/* Primitives: little-endian values, sticky errors, nothing written past the end. */
static void test_primitives(void **state)
{
	uint8_t mem[16];
	struct sprof_buf b = { .p = mem, .cap = sizeof(mem) };
	uint32_t n;
	const char *s;

	(void)state;
	memset(mem, 0xaa, sizeof(mem));
	sprof_put_u16(&b, 0x0102);
	sprof_put_u32(&b, 0x03040506);
	sprof_put_u64(&b, 0x0708090a0b0c0d0eull);
	assert_int_equal(b.len, 14);
	assert_int_equal(mem[0], 0x02);
	assert_int_equal(mem[2], 0x06);
	assert_int_equal(mem[6], 0x0e);
	sprof_put_u32(&b, 1); /* 2 bytes left: refused whole */
	assert_int_equal(b.error, 1);
	assert_int_equal(b.len, 14);
	assert_int_equal(mem[14], 0xaa);
	sprof_put_u16(&b, 1); /* the error is sticky */
	assert_int_equal(b.len, 14);

	b = (struct sprof_buf){ .p = mem, .cap = 14 };
	assert_int_equal(sprof_get_u16(&b), 0x0102);
	assert_int_equal(sprof_get_u32(&b), 0x03040506);
	assert_int_equal(sprof_get_u64(&b), 0x0708090a0b0c0d0eull);
	assert_int_equal(b.error, 0);
	assert_int_equal(sprof_get_u16(&b), 0); /* past the end: 0 and an error */
	assert_int_equal(b.error, 1);

	/* a string longer than what remains */
	memset(mem, 0, sizeof(mem));
	n = 100;
	memcpy(mem, &n, 4);
	b = (struct sprof_buf){ .p = mem, .cap = sizeof(mem) };
	s = sprof_get_str(&b, &n);
	assert_int_equal(n, 0);
	assert_non_null(s);
	assert_int_equal(b.error, 1);
}

/* Strings: a u32 length and the bytes; longer than SPROF_MAX_STR is cut when written and
 * refused when read. */
static void test_strings(void **state)
{
	size_t cap = SPROF_MAX_STR + 64;
	uint8_t *mem = malloc(cap);
	char *big = malloc(SPROF_MAX_STR + 10);
	struct sprof_buf b = { .p = mem, .cap = cap };
	uint32_t n;
	const char *s;

	(void)state;
	assert_non_null(mem);
	assert_non_null(big);
	memset(big, 'x', SPROF_MAX_STR + 10);
	sprof_put_str(&b, big, SPROF_MAX_STR + 10);
	assert_int_equal(b.error, 0);
	assert_int_equal(b.len, 4 + SPROF_MAX_STR);
	b.cap = b.len;
	b.len = 0;
	s = sprof_get_str(&b, &n);
	assert_int_equal(n, SPROF_MAX_STR);
	assert_ptr_equal(s, (const char *)mem + 4);
	assert_int_equal(b.error, 0);

	n = SPROF_MAX_STR + 1; /* a length above the limit is an error even if the bytes exist */
	memcpy(mem, &n, 4);
	b = (struct sprof_buf){ .p = mem, .cap = cap };
	sprof_get_str(&b, &n);
	assert_int_equal(b.error, 1);
	free(big);
	free(mem);
}

/* ---- hostile inputs ---- */

static void test_bad_magic(void **state)
{
	struct variant v = { 0 };
	struct builder w = make_profile(&v);

	(void)state;
	w.b.p[0] = 'X';
	expect_refused_w(&w);
	expect_refused((const uint8_t *)"", 0);
	expect_refused((const uint8_t *)"SONDEPRF", 8);
}

static void test_newer_min_version(void **state)
{
	struct variant v = { 0 };
	struct builder w = make_profile(&v);
	struct sprof_file *f;
	char err[256];
	uint16_t ver = SPROF_VERSION + 1;

	(void)state;
	memcpy(w.b.p + 8, &ver, 2); /* a newer version readable by us: fine */
	assert_int_equal(parse(&w, &f, err, sizeof(err)), 0);
	assert_int_equal(f->version, SPROF_VERSION + 1);
	sprof_free(f);
	memcpy(w.b.p + 10, &ver, 2); /* needs a newer reader */
	expect_refused_w(&w);
}

static void test_truncated_everywhere(void **state)
{
	struct variant v = { .cpu = 1 };
	struct builder w = make_profile(&v);
	size_t len;

	(void)state;
	for (len = 0; len < w.b.len; len++) {
		/* an exact-size copy, so a read past the end is a memory error */
		uint8_t *copy = malloc(len ? len : 1);

		assert_non_null(copy);
		memcpy(copy, w.b.p, len);
		expect_refused(copy, len);
		free(copy);
	}
	free(w.b.p);
}

/* A record whose size disagrees with its content. */
static void test_record_size_lies(void **state)
{
	static const uint32_t types[] = { SPROF_REC_RUN, SPROF_REC_CALIB, SPROF_REC_MODULE,
					  SPROF_REC_FUNC, SPROF_REC_THREAD, SPROF_REC_COUNTER,
					  SPROF_REC_PHASE, SPROF_REC_END };
	size_t i;
	int delta;

	(void)state;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		for (delta = -4; delta <= 4; delta += 8) {
			struct variant v = { 0 };
			struct builder w = make_profile(&v);
			size_t at = find_record(&w, types[i], 0);
			uint32_t size;

			memcpy(&size, w.b.p + at + 4, 4);
			size = (uint32_t)((int)size + delta);
			memcpy(w.b.p + at + 4, &size, 4);
			expect_refused_w(&w);
		}
	}
	{ /* a size beyond the end of the file */
		struct variant v = { 0 };
		struct builder w = make_profile(&v);
		uint32_t size = 0xfffffff0u;

		memcpy(w.b.p + find_record(&w, SPROF_REC_FUNC, 0) + 4, &size, 4);
		expect_refused_w(&w);
	}
}

/* Patch field `off` (bytes into the payload) of node `node` of thread record `nth`. */
static void patch_node(struct builder *w, int nth, uint32_t node, size_t off, uint64_t val,
		       size_t width)
{
	size_t at = find_record(w, SPROF_REC_THREAD, nth) + 8 + 56 + node * 40 + off;

	memcpy(w->b.p + at, &val, width);
}

static void test_bad_parent(void **state)
{
	struct variant v = { 0 };
	struct builder w;

	(void)state;
	w = make_profile(&v);
	patch_node(&w, 0, 2, 0, 2, 4); /* its own index */
	expect_refused_w(&w);
	w = make_profile(&v);
	patch_node(&w, 0, 2, 0, 4, 4); /* a later node */
	expect_refused_w(&w);
	w = make_profile(&v);
	patch_node(&w, 0, 2, 0, SPROF_NO_PARENT, 4);
	expect_refused_w(&w);
	w = make_profile(&v);
	patch_node(&w, 0, 0, 0, 0, 4); /* node 0 must be the root */
	expect_refused_w(&w);
	w = make_profile(&v);
	patch_node(&w, 1, 0, 4, 1, 4); /* root with a function */
	expect_refused_w(&w);
}

static void test_unknown_func(void **state)
{
	struct variant v = { 0 };
	struct builder w;

	(void)state;
	w = make_profile(&v);
	patch_node(&w, 0, 3, 4, 9, 4);
	expect_refused_w(&w);
	w = make_profile(&v);
	patch_node(&w, 1, 2, 4, 0, 4); /* id 0 was never declared */
	expect_refused_w(&w);
	w = make_profile(&v);
	patch_node(&w, 1, 2, 4, SPROF_ROOT_FUNC, 4); /* the root's id below the root */
	expect_refused_w(&w);
}

static void test_excl_above_incl(void **state)
{
	struct variant v = { 0 };
	struct builder w = make_profile(&v);
	struct sprof_file *f;
	char err[256];

	(void)state;
	patch_node(&w, 0, 2, 24, 400, 8); /* excl == incl: fine */
	assert_int_equal(parse(&w, &f, err, sizeof(err)), 0);
	sprof_free(f);
	patch_node(&w, 0, 2, 24, 401, 8);
	expect_refused_w(&w);
}

/* A record type the reader does not know is skipped: the same file as without it. */
static void test_unknown_record_skipped(void **state)
{
	struct variant v = { .unknown_record = 1 };
	struct builder w = make_profile(&v);
	struct sprof_file *f = NULL;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse(&w, &f, err, sizeof(err)), 0);
	assert_int_equal(f->run.pid, 4242);
	assert_int_equal(f->nfuncs, 4);
	assert_int_equal(f->nthreads, 2);
	check_nodes(&f->threads[0], t0_nodes, 5, 0);
	sprof_free(f);
	free(w.b.p);
}

static void test_missing_or_repeated_records(void **state)
{
	struct variant no_calib = { .no_calib = 1 }, no_run = { .no_run = 1 },
		       two_runs = { .two_runs = 1 }, dup = { .dup_func = 2 },
		       phase = { .bad_phase = 1 }, module = { .module_in_func = 1 };
	struct builder w;

	(void)state;
	w = make_profile(&no_calib);
	expect_refused_w(&w);
	w = make_profile(&no_run);
	expect_refused_w(&w);
	w = make_profile(&two_runs);
	expect_refused_w(&w);
	w = make_profile(&dup);
	expect_refused_w(&w);
	w = make_profile(&phase);
	expect_refused_w(&w);
	w = make_profile(&module);
	expect_refused_w(&w);
}

static void test_bad_values(void **state)
{
	struct variant v = { 0 }, empty = { .empty_thread = 1 };
	struct builder w;
	size_t at;
	uint32_t u;
	double d;

	(void)state;
	/* a module id out of sequence */
	w = make_profile(&v);
	u = 1;
	memcpy(w.b.p + find_record(&w, SPROF_REC_MODULE, 0) + 8, &u, 4);
	expect_refused_w(&w);
	/* a build id longer than 32 bytes */
	w = make_profile(&v);
	u = 33;
	memcpy(w.b.p + find_record(&w, SPROF_REC_MODULE, 0) + 12, &u, 4);
	expect_refused_w(&w);
	/* an unknown function kind */
	w = make_profile(&v);
	u = 7;
	memcpy(w.b.p + find_record(&w, SPROF_REC_FUNC, 0) + 12, &u, 4);
	expect_refused_w(&w);
	/* a huge function id */
	w = make_profile(&v);
	u = 0x7fffffffu;
	memcpy(w.b.p + find_record(&w, SPROF_REC_FUNC, 0) + 8, &u, 4);
	expect_refused_w(&w);
	/* calibration: ticks_per_ns 0, then NaN probe cost */
	w = make_profile(&v);
	at = find_record(&w, SPROF_REC_CALIB, 0) + 8 + 8;
	d = 0;
	memcpy(w.b.p + at, &d, 8);
	expect_refused_w(&w);
	w = make_profile(&v);
	at = find_record(&w, SPROF_REC_CALIB, 0) + 8 + 56; /* o_full */
	d = __builtin_nan("");
	memcpy(w.b.p + at, &d, 8);
	expect_refused_w(&w);
	/* a thread whose node count does not match its size */
	w = make_profile(&v);
	u = 4;
	memcpy(w.b.p + find_record(&w, SPROF_REC_THREAD, 0) + 8 + 36, &u, 4);
	expect_refused_w(&w);
	/* a thread record without nodes (not even its root) */
	w = make_profile(&empty);
	expect_refused_w(&w);
	/* CPU feature bit set but nodes without CPU fields */
	w = make_profile(&v);
	u = SPROF_F_CPU;
	memcpy(w.b.p + 12, &u, 4);
	expect_refused_w(&w);
}

/* Nothing after END is read: END ends the file. */
static void test_end_record(void **state)
{
	struct variant v = { 0 };
	struct builder w = make_profile(&v);
	struct sprof_file *f;
	char err[256];

	(void)state;
	sprof_put_u32(&w.b, 0xabcdef);
	sprof_put_u32(&w.b, 0xffffffffu); /* garbage after END */
	assert_int_equal(parse(&w, &f, err, sizeof(err)), 0);
	sprof_free(f);
	free(w.b.p);
}

static void test_read_file(void **state)
{
	struct variant v = { 0 };
	struct builder w = make_profile(&v);
	char path[] = "/tmp/sonde-test-format-XXXXXX";
	struct sprof_file *f = NULL;
	char err[256] = "";
	int fd = mkstemp(path);
	FILE *fp;

	(void)state;
	assert_true(fd >= 0);
	fp = fdopen(fd, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(w.b.p, 1, w.b.len, fp), w.b.len);
	fclose(fp);
	assert_int_equal(sprof_read_file(path, &f, err, sizeof(err)), 0);
	assert_int_equal(f->run.pid, 4242);
	sprof_free(f);
	unlink(path);
	assert_int_equal(sprof_read_file(path, &f, err, sizeof(err)), -1);
	assert_null(f);
	assert_true(err[0] != 0);
	sprof_free(NULL);
	free(w.b.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_round_trip_cpu),
		cmocka_unit_test(test_header_layout),
		cmocka_unit_test(test_primitives),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_bad_magic),
		cmocka_unit_test(test_newer_min_version),
		cmocka_unit_test(test_truncated_everywhere),
		cmocka_unit_test(test_record_size_lies),
		cmocka_unit_test(test_bad_parent),
		cmocka_unit_test(test_unknown_func),
		cmocka_unit_test(test_excl_above_incl),
		cmocka_unit_test(test_unknown_record_skipped),
		cmocka_unit_test(test_missing_or_repeated_records),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_end_record),
		cmocka_unit_test(test_read_file),
	};

	return cmocka_run_group_tests_name("format", tests, NULL, NULL);
}
