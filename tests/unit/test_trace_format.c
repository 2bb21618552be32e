/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the trace format (format/trace.h, format/trace_read.h): a trace with several
 * threads and every record type written by strc_write_mem/strc_write_file must read back with
 * every field intact (big and negative time steps go through TIME records); hostile inputs must
 * be refused with a one-line reason or, when only cut short, read with a warning; never a crash.
 *
 * With SONDE_TRACE_CORPUS=DIR set, the small valid traces are also written to DIR (the seed
 * corpus of fuzz/fuzz_trace.c).
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

#include "trace_read.h"

#define START 1000000ull
#define BIG_STEP (1ull << 40) /* beyond a 36-bit delta */

/* ---- building traces ---- */

struct variant {
	int cut_thread;   /* thread 2 has no END */
	int unmatched;    /* 1: an EXIT that matches no call; 2: a REGION_END */
	int kind_mixup;   /* an ENTER naming a region */
	int drop_mode;    /* the drop feature bit */
	int dup_func;     /* a function defined twice: 1 the same, 2 differently */
	int module_gap;   /* modules 0 and 2 */
	int dup_module;   /* module 1 defined twice: 1 the same, 2 differently */
	int bad_module;   /* a function of a module that is not in the file */
	int extra_module; /* a module 3 (after 0, 1) */
	int small;        /* one thread, few events (the bit-flip test) */
};

static const struct sprof_calib calib0 = {
	.clock_kind = SPROF_CLOCK_TSC, .samples = 200, .ticks_per_ns = 2.5, .clock_ns = 7.25,
	.clock_sd = 0.5, .dt_ns = 0.4, .o_in = 11.5, .o_in_sd = 1.25, .o_full = 23.75,
	.o_full_sd = 2.5, .o_skip = 4.125, .o_skip_sd = 0.75,
};
static const struct sprof_calib calib1 = {
	.clock_kind = SPROF_CLOCK_TSC, .samples = 300, .ticks_per_ns = 2.0, .clock_ns = 7.5,
	.clock_sd = 0.25, .dt_ns = 0.5, .o_in = 12.5, .o_in_sd = 1.5, .o_full = 24.5,
	.o_full_sd = 2.25, .o_skip = 4.5, .o_skip_sd = 0.5,
};

static char *xdup(const char *s)
{
	char *d = strdup(s);

	assert_non_null(d);
	return d;
}

static void add_module(struct strc_file *f, uint32_t index, const char *path, uint64_t bias)
{
	struct strc_module *m;
	int i;

	f->modules = realloc(f->modules, (f->nmodules + 1) * sizeof(*m));
	assert_non_null(f->modules);
	m = &f->modules[f->nmodules++];
	memset(m, 0, sizeof(*m));
	m->index = index;
	m->build_id_len = 20;
	m->bias = bias;
	m->lo = bias + 0x1000;
	m->hi = bias + 0x9000;
	for (i = 0; i < 20; i++)
		m->build_id[i] = (uint8_t)(0x10 + i);
	m->path = xdup(path);
}

static void add_func(struct strc_file *f, uint32_t id, uint32_t kind, int32_t module,
		     uint64_t addr, uint64_t vaddr, const char *name)
{
	struct strc_func *fn;

	f->funcs = realloc(f->funcs, (f->nfuncs + 1) * sizeof(*fn));
	assert_non_null(f->funcs);
	fn = &f->funcs[f->nfuncs++];
	*fn = (struct strc_func){ id, kind, id == 9 ? SPROF_FN_EXCLUDED : 0, module, addr, vaddr,
				  xdup(name) };
}

struct tb {
	struct strc_thread *t;
	uint64_t now;
};

static void ev(struct tb *b, unsigned type, uint32_t id, int64_t dt, uint64_t arg)
{
	struct strc_thread *t = b->t;
	struct strc_event *e;

	t->ev = realloc(t->ev, (t->nev + 1) * sizeof(*e));
	assert_non_null(t->ev);
	e = &t->ev[t->nev++];
	b->now += (uint64_t)dt;
	*e = (struct strc_event){ .t = b->now, .arg = arg, .id = id, .type = (uint16_t)type };
	if (type == STRC_USER) {
		e->value = (double)arg / 4;
		memcpy(&e->arg, &e->value, 8);
	}
	if (type == STRC_FLUSH)
		b->now += arg;
	if (type == STRC_THREAD_BEGIN)
		t->edge = arg;
	if (type == STRC_THREAD_END)
		t->self = arg;
	if (type == STRC_DROPPED)
		t->dropped += arg;
	if (type == STRC_FLUSH)
		t->flushes++, t->flush_ticks += arg;
}

static struct tb thread(struct strc_file *f, uint32_t index, uint32_t tid, uint64_t at)
{
	struct strc_thread *t;

	f->threads = realloc(f->threads, (f->nthreads + 1) * sizeof(*t));
	assert_non_null(f->threads);
	t = &f->threads[f->nthreads++];
	memset(t, 0, sizeof(*t));
	t->index = index;
	t->tid = tid;
	t->chunks = 1;
	t->complete = 1;
	return (struct tb){ t, at };
}

/* main(1) -> region solve(4) -> leaf(2)...; ids: 3 worker, 5 phase, 6 counter, 9 excluded */
static void thread0(struct strc_file *f, const struct variant *v)
{
	struct tb b = thread(f, 0, 4242, START);

	ev(&b, STRC_THREAD_BEGIN, STRC_ID_NONE, 10, 0);
	ev(&b, STRC_ENTER, 1, 5, 0);
	if (v->small) {
		ev(&b, STRC_USER, 6, 3, 170);
		ev(&b, STRC_EXIT, 1, 7, 0);
		ev(&b, STRC_THREAD_END, STRC_ID_NONE, 2, 0x7f0011);
		return;
	}
	ev(&b, STRC_PHASE, 5, 1, 0);
	ev(&b, STRC_REGION_BEGIN, 4, 2, 0);
	ev(&b, STRC_USER, 6, 3, 170);
	ev(&b, STRC_ENTER, v->kind_mixup ? 4 : 2, (int64_t)BIG_STEP, 0);
	ev(&b, STRC_EXIT, v->kind_mixup ? 4 : 2, 100, 0);
	ev(&b, STRC_COUNT, 2, 1, 17);
	ev(&b, STRC_FLUSH, STRC_ID_NONE, 0, 5000);
	ev(&b, STRC_CREATE, STRC_ID_NONE, 40, 0x1234);
	ev(&b, STRC_JOIN, STRC_ID_NONE, (int64_t)STRC_DELTA_MAX, 0xabc0);
	ev(&b, STRC_ENTER, 2, 1, 0);
	ev(&b, STRC_ENTER, 2, 1, 0);
	ev(&b, STRC_UNWIND, STRC_ID_NONE, 1, 2);
	ev(&b, STRC_REGION_END, 4, 1, 0);
	if (v->unmatched == 2)
		ev(&b, STRC_REGION_END, 4, 1, 0);
	ev(&b, STRC_PHASE, STRC_ID_NONE, 1, 0);
	ev(&b, STRC_EXIT, 1, (int64_t)STRC_DELTA_MAX + 1, 0);
	ev(&b, STRC_THREAD_END, STRC_ID_NONE, 2, 0x7f0011);
	ev(&b, STRC_PROC_END, STRC_ID_NONE, 0, SPROF_END_SIGNAL | (uint64_t)15 << 32);
}

static void thread1(struct strc_file *f, const struct variant *v, uint32_t index)
{
	struct tb b = thread(f, index, 4250 + index, START + 50);

	ev(&b, STRC_THREAD_BEGIN, STRC_ID_NONE, 0, 0x1234);
	ev(&b, STRC_ENTER, 3, 1, 0);
	ev(&b, STRC_ENTER, 2, -10, 0); /* back in time: approximated traces do that */
	ev(&b, STRC_EXIT, 2, 3, 0);
	if (v->unmatched == 1)
		ev(&b, STRC_EXIT, 2, 3, 0);
	ev(&b, STRC_DROPPED, STRC_ID_NONE, 0, 3);
	ev(&b, STRC_EXIT, 3, 9, 0);
	ev(&b, STRC_THREAD_END, STRC_ID_NONE, 1, 0xabc0);
}

static struct strc_file *make_trace(const struct variant *v)
{
	struct strc_file *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->version = STRC_VERSION;
	f->features = STRC_F_RATE | (v->drop_mode ? STRC_F_DROP : 0);
	f->pid = 4242;
	f->ppid = 4241;
	f->run_flags = 3;
	f->start_unix_ns = 1700000000000000000ull;
	f->start_ticks = START;
	f->ticks_per_ns = 2.4;
	f->rate_limit = 100000;
	f->chunk_bytes = 1 << 20;
	f->exe = xdup("/usr/bin/prog");
	f->cmdline = xdup("./prog --flag value");
	f->calib_start = calib0;
	f->calib = calib1;
	f->has_calib = 3;
	f->ended = 1;
	f->end_reason = SPROF_END_SIGNAL;
	f->end_signal = 15;
	add_module(f, 0, "/usr/bin/prog", 0x555500000000ull);
	add_module(f, v->module_gap ? 2 : 1, "/lib/libm.so.6", 0x7f0000000000ull);
	add_func(f, 1, SPROF_FUNC, 0, 0x555500001100ull, 0x1100, "");
	add_func(f, 2, SPROF_FUNC, 1, 0x7f0000001200ull, 0x1200, "");
	add_func(f, 3, SPROF_FUNC, -1, 0x7f0000002340ull, 0, ""); /* located by address */
	add_func(f, 4, SPROF_REGION, -1, 0x5555000a0000ull, 0, "solve");
	add_func(f, 5, SPROF_REGION, -1, 0x5555000a0010ull, 0, "setup");
	add_func(f, 6, SPROF_REGION, -1, 0x5555000a0020ull, 0, "bytes");
	if (v->dup_module)
		add_module(f, 1, v->dup_module == 1 ? "/lib/libm.so.6" : "/lib/other.so",
			   0x7f0000000000ull);
	if (v->extra_module)
		add_module(f, 3, "/lib/libc.so.6", 0x7f1000000000ull);
	add_func(f, 9, SPROF_FUNC, v->bad_module ? 5 : 0, 0x555500001900ull, 0x1900, "");
	if (v->dup_func)
		add_func(f, 2, SPROF_FUNC, 1, 0x7f0000001200ull, v->dup_func == 1 ? 0x1200 : 0x1208,
			 "");
	thread0(f, v);
	if (v->small)
		return f;
	thread1(f, v, 1);
	thread1(f, v, 2);
	f->threads[2].complete = !v->cut_thread;
	return f;
}

/* The trace of a variant, encoded. */
static uint8_t *encode(const struct variant *v, size_t *len)
{
	struct strc_file *f = make_trace(v);
	uint8_t *data = NULL;
	char err[256] = "";

	assert_int_equal(strc_write_mem(f, &data, len, err, sizeof(err)), 0);
	strc_free(f);
	return data;
}

/* Reading must fail with a one-line reason and no file. */
static void expect_refused(const uint8_t *data, size_t len)
{
	struct strc_file *f = (struct strc_file *)1;
	char err[256] = "";

	assert_int_equal(strc_read_mem(data, len, &f, err, sizeof(err)), -1);
	assert_null(f);
	assert_true(err[0] != 0);
	assert_null(strchr(err, '\n'));
}

static void expect_refused_free(uint8_t *data, size_t len)
{
	expect_refused(data, len);
	free(data);
}

/* Reading must succeed; with `cut`, with a one-line warning. */
static struct strc_file *expect_read(const uint8_t *data, size_t len, int cut)
{
	struct strc_file *f = NULL;
	char err[256] = "";

	if (strc_read_mem(data, len, &f, err, sizeof(err)) != 0)
		fail_msg("refused: %s", err);
	assert_non_null(f);
	assert_int_equal(f->truncated, cut);
	assert_int_equal(f->warning[0] != 0, cut);
	assert_null(strchr(f->warning, '\n'));
	return f;
}

/* ---- finding things in an encoded trace ---- */

static uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void st64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* Offset of the chunk of thread `index` (the writer writes one per thread). */
static size_t chunk_of(const uint8_t *d, size_t len, uint32_t index)
{
	size_t at = STRC_HEADER_SIZE;

	while (at + STRC_CHUNK_HEADER <= len) {
		struct strc_chunk h;

		memcpy(&h, d + at, sizeof(h));
		if (h.thread == index)
			return at;
		at += h.capacity;
	}
	fail_msg("no chunk of thread %u", index);
	return 0;
}

/* Offset of the n-th record of a type in a thread's chunk. */
static size_t record_at(const uint8_t *d, size_t len, uint32_t index, unsigned type, int nth)
{
	size_t at = chunk_of(d, len, index), end;
	struct strc_chunk h;

	memcpy(&h, d + at, sizeof(h));
	end = at + STRC_CHUNK_HEADER + h.used;
	for (at += STRC_CHUNK_HEADER; at < end; at += strc_size_of(ld64(d + at)))
		if (strc_type_of(ld64(d + at)) == type && nth-- == 0)
			return at;
	fail_msg("no record of type %u", type);
	return 0;
}

static int count_records(const uint8_t *d, size_t len, unsigned type)
{
	size_t at = STRC_HEADER_SIZE;
	int n = 0;

	while (at + STRC_CHUNK_HEADER <= len) {
		struct strc_chunk h;
		size_t r, end;

		memcpy(&h, d + at, sizeof(h));
		end = at + STRC_CHUNK_HEADER + h.used;
		for (r = at + STRC_CHUNK_HEADER; r < end; r += strc_size_of(ld64(d + r)))
			n += strc_type_of(ld64(d + r)) == type;
		at += h.capacity;
	}
	return n;
}

/* Insert n bytes at `at` inside the chunk of thread `index` (its header follows). */
static uint8_t *insert(uint8_t *d, size_t *len, uint32_t index, size_t at, const void *src,
		       size_t n)
{
	size_t c = chunk_of(d, *len, index);
	struct strc_chunk h;

	d = realloc(d, *len + n);
	assert_non_null(d);
	memmove(d + at + n, d + at, *len - at);
	memcpy(d + at, src, n);
	*len += n;
	memcpy(&h, d + c, sizeof(h));
	h.used += n;
	h.capacity += n;
	memcpy(d + c, &h, sizeof(h));
	return d;
}

static void patch_chunk(uint8_t *d, size_t len, uint32_t index, size_t field, uint64_t v,
			size_t width)
{
	memcpy(d + chunk_of(d, len, index) + field, &v, width);
}

/* ---- round trip ---- */

static void check_event(const struct strc_event *a, const struct strc_event *b, size_t i)
{
	if (a->t != b->t || a->arg != b->arg || a->id != b->id || a->type != b->type ||
	    memcmp(&a->value, &b->value, 8) != 0)
		fail_msg("event %zu: type %u/%u t %llu/%llu arg %llu/%llu id %u/%u", i, a->type,
			 b->type, (unsigned long long)a->t, (unsigned long long)b->t,
			 (unsigned long long)a->arg, (unsigned long long)b->arg, a->id, b->id);
}

static void check_thread(const struct strc_thread *a, const struct strc_thread *b)
{
	size_t i;

	assert_int_equal(a->index, b->index);
	assert_int_equal(a->tid, b->tid);
	assert_int_equal(a->self, b->self);
	assert_int_equal(a->edge, b->edge);
	assert_int_equal(a->dropped, b->dropped);
	assert_int_equal(a->flushes, b->flushes);
	assert_int_equal(a->flush_ticks, b->flush_ticks);
	assert_int_equal(a->chunks, 1);
	assert_int_equal(a->complete, b->complete);
	assert_int_equal(a->final, 0);
	assert_int_equal(a->nev, b->nev);
	for (i = 0; i < a->nev; i++)
		check_event(&a->ev[i], &b->ev[i], i);
}

static void check_funcs(const struct strc_file *g, const struct strc_file *f)
{
	uint32_t i;

	assert_int_equal(g->nfuncs, f->nfuncs);
	for (i = 0; i < f->nfuncs; i++) {
		const struct strc_func *a = strc_func_of(g, f->funcs[i].id), *b = &f->funcs[i];

		assert_non_null(a);
		assert_int_equal(a->kind, b->kind);
		assert_int_equal(a->flags, b->flags);
		assert_int_equal(a->addr, b->addr);
		assert_string_equal(a->name, b->name);
		if (b->id == 3) { /* written without a module: found by its address */
			assert_int_equal(a->module, 1);
			assert_int_equal(a->vaddr, 0x2340);
		} else {
			assert_int_equal(a->module, b->module);
			assert_int_equal(a->vaddr, b->vaddr);
		}
	}
	assert_null(strc_func_of(g, 0));
	assert_null(strc_func_of(g, 7));
	assert_null(strc_func_of(g, 10));
	assert_null(strc_func_of(g, STRC_ID_NONE));
}

static void check_file(const struct strc_file *g, const struct strc_file *f)
{
	uint32_t i;

	assert_int_equal(g->version, STRC_VERSION);
	assert_int_equal(g->features, f->features);
	assert_int_equal(g->pid, f->pid);
	assert_int_equal(g->ppid, f->ppid);
	assert_int_equal(g->run_flags, f->run_flags);
	assert_int_equal(g->end_reason, f->end_reason);
	assert_int_equal(g->end_signal, f->end_signal);
	assert_int_equal(g->ended, 1);
	assert_int_equal(g->start_unix_ns, f->start_unix_ns);
	assert_int_equal(g->start_ticks, f->start_ticks);
	assert_int_equal(g->rate_limit, f->rate_limit);
	assert_int_equal(g->chunk_bytes, f->chunk_bytes);
	assert_true(g->ticks_per_ns == f->ticks_per_ns);
	assert_string_equal(g->exe, f->exe);
	assert_string_equal(g->cmdline, f->cmdline);
	assert_int_equal(g->has_calib, 3);
	assert_memory_equal(&g->calib, &f->calib, sizeof(g->calib));
	assert_memory_equal(&g->calib_start, &f->calib_start, sizeof(g->calib));
	assert_int_equal(g->nmodules, f->nmodules);
	for (i = 0; i < f->nmodules; i++) {
		assert_int_equal(g->modules[i].index, i);
		assert_int_equal(g->modules[i].build_id_len, 20);
		assert_int_equal(g->modules[i].bias, f->modules[i].bias);
		assert_int_equal(g->modules[i].lo, f->modules[i].lo);
		assert_int_equal(g->modules[i].hi, f->modules[i].hi);
		assert_memory_equal(g->modules[i].build_id, f->modules[i].build_id, 32);
		assert_string_equal(g->modules[i].path, f->modules[i].path);
	}
	check_funcs(g, f);
	assert_int_equal(g->nthreads, f->nthreads);
	for (i = 0; i < f->nthreads; i++)
		check_thread(&g->threads[i], &f->threads[i]);
}

static void test_round_trip(void **state)
{
	struct variant v = { 0 };
	struct strc_file *f = make_trace(&v), *g;
	uint8_t *data;
	size_t len;
	char err[256] = "";

	(void)state;
	assert_int_equal(strc_write_mem(f, &data, &len, err, sizeof(err)), 0);
	g = expect_read(data, len, 0);
	check_file(g, f);
	/* TIME records: one to begin each chunk, and for the big, negative and 2^36 steps */
	assert_int_equal(count_records(data, len, STRC_TIME), 3 + 2 + 2);
	assert_int_equal(count_records(data, len, STRC_END), 3);
	assert_int_equal(count_records(data, len, STRC_PROC_END), 1);
	assert_int_equal(count_records(data, len, STRC_CALIB), 2);
	/* what reads back writes the same bytes each time */
	{
		uint8_t *d2, *d3;
		size_t len2, len3;
		struct strc_file *g2;

		assert_int_equal(strc_write_mem(g, &d2, &len2, err, sizeof(err)), 0);
		g2 = expect_read(d2, len2, 0);
		check_file(g2, g);
		assert_int_equal(strc_write_mem(g2, &d3, &len3, err, sizeof(err)), 0);
		assert_int_equal(len3, len2);
		assert_memory_equal(d3, d2, len2);
		strc_free(g2);
		free(d2);
		free(d3);
	}
	strc_free(g);
	strc_free(f);
	free(data);
}

/* Depths: an ENTER and its EXIT at the same depth; UNWIND closes the calls above it. */
static void test_depths(void **state)
{
	static const uint16_t want[] = { 0, 0, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 4, 1, 1, 0, 0, 0 };
	struct variant v = { 0 };
	size_t len, i;
	uint8_t *data = encode(&v, &len);
	struct strc_file *g = expect_read(data, len, 0);

	(void)state;
	assert_int_equal(g->threads[0].nev, sizeof(want) / sizeof(want[0]));
	for (i = 0; i < g->threads[0].nev; i++)
		if (g->threads[0].ev[i].depth != want[i])
			fail_msg("event %zu (type %u): depth %u, expected %u", i,
				 g->threads[0].ev[i].type, g->threads[0].ev[i].depth, want[i]);
	assert_int_equal(g->threads[1].ev[2].depth, 1);
	assert_int_equal(g->threads[1].ev[3].depth, 1);
	assert_int_equal(g->threads[1].ev[5].depth, 0);
	strc_free(g);
	free(data);
}

static void test_write_file(void **state)
{
	struct variant v = { 0 };
	struct strc_file *f = make_trace(&v), *g = NULL;
	char path[] = "/tmp/sonde-test-trace-XXXXXX";
	char err[256] = "";
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(strc_write_file(path, f, err, sizeof(err)), 0);
	assert_int_equal(strc_read_file(path, &g, err, sizeof(err)), 0);
	check_file(g, f);
	strc_free(g);
	unlink(path);
	assert_int_equal(strc_read_file(path, &g, err, sizeof(err)), -1);
	assert_null(g);
	assert_true(err[0] != 0);
	assert_int_equal(strc_read_file("/", &g, err, sizeof(err)), -1);
	assert_int_equal(strc_write_file("/nonexistent/dir/x.strc", f, err, sizeof(err)), -1);
	strc_free(f);
	strc_free(NULL);
}

static void test_ticks_to_ns(void **state)
{
	struct strc_file f = { .ticks_per_ns = 2.5 };

	(void)state;
	assert_true(strc_ticks_to_ns(&f, 250) == 100.0);
	f.has_calib = 1;
	f.calib.ticks_per_ns = 2.0;
	assert_true(strc_ticks_to_ns(&f, 250) == 125.0);
	f.has_calib = 0;
	f.ticks_per_ns = 0;
	assert_true(strc_ticks_to_ns(&f, 250) == 250.0);
}

/* Streams without END or a closed chunk: read with a warning; final ones without. */
static void test_cut_streams(void **state)
{
	struct variant cut = { .cut_thread = 1 }, v = { 0 };
	struct strc_file *g;
	size_t len;
	uint8_t *data = encode(&cut, &len);

	(void)state;
	g = expect_read(data, len, 1);
	assert_int_equal(g->threads[2].complete, 0);
	assert_int_equal(g->threads[2].final, 0);
	assert_non_null(strstr(g->warning, "thread 2"));
	strc_free(g);
	/* marked final by the process's end: complete as it stands */
	patch_chunk(data, len, 2, 12, STRC_CHUNK_CLOSED | STRC_CHUNK_FINAL, 4);
	g = expect_read(data, len, 0);
	assert_int_equal(g->threads[2].final, 1);
	strc_free(g);
	free(data);
	/* an open chunk is read to its end or its first zero word */
	data = encode(&v, &len);
	patch_chunk(data, len, 1, 12, 0, 4);
	g = expect_read(data, len, 1);
	assert_int_equal(g->threads[1].nev, 7);
	assert_int_equal(g->threads[1].complete, 1);
	strc_free(g);
	free(data);
}

/* The chunk of a killed process: open, zeros after its last record, no `used`. */
static void test_open_chunk_zero_tail(void **state)
{
	struct variant v = { .cut_thread = 1 };
	static const uint8_t zeros[4096];
	struct strc_file *g;
	size_t len;
	uint8_t *data = encode(&v, &len);

	(void)state;
	data = insert(data, &len, 2, len, zeros, sizeof(zeros));
	patch_chunk(data, len, 2, 12, 0, 4);
	patch_chunk(data, len, 2, 24, 0, 8);
	g = expect_read(data, len, 1);
	assert_int_equal(g->threads[2].nev, 7);
	assert_int_equal(g->threads[2].complete, 0);
	strc_free(g);
	/* the same with the zeros cut off by the end of the file */
	len -= 1000;
	g = expect_read(data, len, 1);
	assert_int_equal(g->threads[2].nev, 7);
	strc_free(g);
	free(data);
}

/* Chunks found by the walk: missing, repeated, unwritten. */
static void test_chunk_order(void **state)
{
	struct variant v = { 0 };
	struct strc_file *g;
	size_t len;
	uint8_t *data;

	(void)state;
	/* a gap in a thread's chunks */
	data = encode(&v, &len);
	patch_chunk(data, len, 1, 8, 1, 4);
	g = expect_read(data, len, 1);
	assert_non_null(strstr(g->warning, "missing"));
	strc_free(g);
	free(data);
	/* two chunks with the same number */
	data = encode(&v, &len);
	patch_chunk(data, len, 2, 4, 1, 4);
	expect_refused_free(data, len);
	/* threads 1 and 2 as one stream, in seq order whatever the file order */
	data = encode(&v, &len);
	patch_chunk(data, len, 1, 8, 1, 4); /* thread 2's chunk 1 comes first in the file */
	patch_chunk(data, len, 1, 4, 2, 4);
	g = expect_read(data, len, 0);
	assert_int_equal(g->nthreads, 2);
	assert_int_equal(g->threads[1].chunks, 2);
	assert_int_equal(g->threads[1].nev, 14);
	strc_free(g);
	free(data);
	/* an all-zero chunk header with records after it: the walk ends there */
	data = encode(&v, &len);
	memset(data + chunk_of(data, len, 2), 0, STRC_CHUNK_HEADER);
	g = expect_read(data, len, 1);
	assert_int_equal(g->nthreads, 2);
	strc_free(g);
	free(data);
}

/* Space taken for chunks never written (zeros): skipped up to the next chunk, or the end. */
static void test_chunk_hole(void **state)
{
	struct variant v = { 0 };
	static const uint8_t zeros[4000];
	struct strc_file *g;
	size_t len, at, n;
	uint8_t *data = encode(&v, &len);

	(void)state;
	data = realloc(data, len + sizeof(zeros));
	assert_non_null(data);
	memcpy(data + len, zeros, sizeof(zeros)); /* zeros at the end: nothing missing */
	g = expect_read(data, len + sizeof(zeros), 0);
	assert_int_equal(g->nthreads, 3);
	strc_free(g);
	at = chunk_of(data, len, 1);
	n = chunk_of(data, len, 2) - at;
	memset(data + at, 0, n);
	g = expect_read(data, len + sizeof(zeros), 1);
	assert_int_equal(g->nthreads, 2);
	assert_int_equal(g->threads[1].index, 2);
	assert_int_equal(g->threads[1].nev, 7);
	assert_non_null(strstr(g->warning, "no chunk was written"));
	strc_free(g);
	free(data);
}

/* A closed chunk whose writing stopped part way: zeros to its end. */
static void test_chunk_half_written(void **state)
{
	struct variant v = { 0 };
	struct strc_file *g;
	size_t len, at, end;
	uint8_t *data = encode(&v, &len);

	(void)state;
	at = record_at(data, len, 1, STRC_EXIT, 0);
	end = chunk_of(data, len, 2);
	memset(data + at, 0, end - at);
	g = expect_read(data, len, 1);
	assert_int_equal(g->nthreads, 3);
	assert_int_equal(g->threads[1].nev, 3);
	assert_int_equal(g->threads[1].complete, 0);
	assert_int_equal(g->threads[2].nev, 7);
	strc_free(g);
	/* not zeros to its end: a zero word is no record */
	data[end - 8] = 1;
	expect_refused_free(data, len);
}

/* ---- hostile input ---- */

static void test_bad_header(void **state)
{
	struct variant v = { 0 };
	size_t len;
	uint8_t *data;
	uint16_t u16;
	uint32_t u32;
	double d;
	struct strc_file *g;

	(void)state;
	expect_refused(NULL, 0);
	expect_refused((const uint8_t *)"SONDETR", 7);
	expect_refused((const uint8_t *)"SONDETRC", 8);
	data = encode(&v, &len);
	data[3] = 'X';
	expect_refused_free(data, len);
	/* a newer writer we can read, then one that needs a newer reader */
	data = encode(&v, &len);
	u16 = STRC_VERSION + 1;
	memcpy(data + 8, &u16, 2);
	g = expect_read(data, len, 0);
	assert_int_equal(g->version, STRC_VERSION + 1);
	strc_free(g);
	memcpy(data + 10, &u16, 2);
	expect_refused_free(data, len);
	data = encode(&v, &len);
	u16 = 0;
	memcpy(data + 8, &u16, 2);
	expect_refused_free(data, len);
	data = encode(&v, &len);
	u32 = 72;
	memcpy(data + 16, &u32, 4);
	expect_refused_free(data, len);
	data = encode(&v, &len);
	d = __builtin_nan("");
	memcpy(data + 40, &d, 8);
	expect_refused_free(data, len);
	/* the first chunk elsewhere than right after the header */
	data = encode(&v, &len);
	data = realloc(data, len + 4032);
	assert_non_null(data);
	memmove(data + 4096, data + STRC_HEADER_SIZE, len - STRC_HEADER_SIZE);
	memset(data + STRC_HEADER_SIZE, 0xee, 4032);
	st64(data + 48, 4096);
	g = expect_read(data, len + 4032, 0);
	assert_int_equal(g->nthreads, 3);
	strc_free(g);
	g = expect_read(data, 4000, 1); /* the file ends before it */
	assert_int_equal(g->nthreads, 0);
	strc_free(g);
	st64(data + 48, 60);
	expect_refused(data, len + 4032);
	st64(data + 48, 4100);
	expect_refused_free(data, len + 4032);
	/* the header alone: nothing to read, said so */
	data = encode(&v, &len);
	g = expect_read(data, STRC_HEADER_SIZE, 1);
	assert_int_equal(g->nthreads, 0);
	assert_string_equal(g->exe, "");
	strc_free(g);
	free(data);
}

static void test_bad_chunks(void **state)
{
	struct variant v = { 0 };
	struct strc_file *g;
	size_t len;
	uint8_t *data;

	(void)state;
	data = encode(&v, &len);
	patch_chunk(data, len, 1, 0, 0x4b484354, 4); /* magic */
	expect_refused_free(data, len);
	data = encode(&v, &len);
	patch_chunk(data, len, 1, 16, 12, 8); /* capacity below the header */
	expect_refused_free(data, len);
	data = encode(&v, &len);
	patch_chunk(data, len, 1, 16, 1004, 8); /* not whole words */
	expect_refused_free(data, len);
	data = encode(&v, &len);
	patch_chunk(data, len, 1, 24, 1ull << 40, 8); /* used beyond the capacity */
	expect_refused_free(data, len);
	/* the last chunk's capacity points past the end of the file: cut short, read */
	data = encode(&v, &len);
	patch_chunk(data, len, 2, 16, 1ull << 62, 8);
	g = expect_read(data, len, 1);
	assert_int_equal(g->nthreads, 3);
	assert_int_equal(g->threads[2].nev, 7);
	strc_free(g);
	/* ... and an earlier one's: the walk ends there */
	patch_chunk(data, len, 0, 16, len, 8);
	g = expect_read(data, len, 1);
	assert_int_equal(g->nthreads, 1);
	strc_free(g);
	free(data);
}

/* Record headers that lie about their type or length. */
static void test_bad_records(void **state)
{
	struct variant v = { 0 };
	size_t len, at;
	uint8_t *data;
	/* type 27: the last one no record of this reader has (reserved for --io) */
	static const uint64_t unknown_long[3] = { 27 | (uint64_t)24 << 32, 1, 2 };
	struct strc_file *g;

	(void)state;
	/* an ENTER of two words, a TIME of one, an END of three */
	data = encode(&v, &len);
	at = record_at(data, len, 0, STRC_ENTER, 0);
	data[at] = (uint8_t)(data[at] + (1 << 5));
	expect_refused_free(data, len);
	data = encode(&v, &len);
	at = record_at(data, len, 0, STRC_TIME, 1);
	data[at] = (uint8_t)(data[at] - (1 << 5));
	expect_refused_free(data, len);
	/* an unknown short type; type 0 */
	data = encode(&v, &len);
	at = record_at(data, len, 1, STRC_ENTER, 0);
	data[at] = (uint8_t)((data[at] & 0xe0) | 30);
	expect_refused_free(data, len);
	data = encode(&v, &len);
	at = record_at(data, len, 1, STRC_ENTER, 0);
	data[at] = (uint8_t)(data[at] & 0xe0);
	expect_refused_free(data, len);
	/* a known short type written as a long record */
	data = encode(&v, &len);
	at = record_at(data, len, 1, STRC_THREAD_END, 0);
	st64(data + at, STRC_THREAD_END | (uint64_t)16 << 32);
	expect_refused_free(data, len);
	/* long records: shorter or longer than their content, not whole words, huge */
	data = encode(&v, &len);
	at = record_at(data, len, 0, STRC_DEF_FUNC, 3);
	st64(data + at, ld64(data + at) - ((uint64_t)8 << 32));
	expect_refused_free(data, len);
	data = encode(&v, &len);
	at = record_at(data, len, 0, STRC_RUN, 0);
	st64(data + at, ld64(data + at) + ((uint64_t)8 << 32));
	expect_refused_free(data, len);
	data = encode(&v, &len);
	at = record_at(data, len, 0, STRC_CALIB, 0);
	st64(data + at, ld64(data + at) + ((uint64_t)4 << 32));
	expect_refused_free(data, len);
	data = encode(&v, &len);
	at = record_at(data, len, 0, STRC_DEF_MODULE, 1);
	st64(data + at, STRC_DEF_MODULE | (uint64_t)0xfffffff8u << 32);
	expect_refused_free(data, len);
	/* a string longer than its record, a longer build id, a bad kind */
	data = encode(&v, &len);
	at = record_at(data, len, 0, STRC_DEF_FUNC, 3);
	data[at + 8 + 32] = 200;
	expect_refused_free(data, len);
	data = encode(&v, &len);
	at = record_at(data, len, 0, STRC_DEF_MODULE, 0);
	data[at + 8 + 4] = 33;
	expect_refused_free(data, len);
	data = encode(&v, &len);
	at = record_at(data, len, 0, STRC_DEF_FUNC, 0);
	data[at + 8 + 4] = 2;
	expect_refused_free(data, len);
	/* a CALIB of unknown `when`, a NaN probe cost */
	data = encode(&v, &len);
	at = record_at(data, len, 0, STRC_CALIB, 0);
	data[at + 8] = 2;
	expect_refused_free(data, len);
	data = encode(&v, &len);
	at = record_at(data, len, 0, STRC_CALIB, 1);
	st64(data + at + 16 + 56, 0x7ff8000000000000ull);
	expect_refused_free(data, len);
	/* a long record of a type this reader does not know is skipped */
	data = encode(&v, &len);
	at = record_at(data, len, 1, STRC_ENTER, 0);
	data = insert(data, &len, 1, at, unknown_long, sizeof(unknown_long));
	g = expect_read(data, len, 0);
	assert_int_equal(g->threads[1].nev, 7);
	strc_free(g);
	free(data);
}

static void test_bad_streams(void **state)
{
	struct variant v = { 0 };
	size_t len, at;
	uint8_t *data;
	uint64_t w;

	(void)state;
	/* a chunk whose first record is not a TIME */
	data = encode(&v, &len);
	at = chunk_of(data, len, 1) + STRC_CHUNK_HEADER;
	st64(data + at, strc_word(STRC_JOIN, 2, STRC_ID_NONE, 0));
	expect_refused_free(data, len);
	/* an id defined nowhere, and one past every definition */
	data = encode(&v, &len);
	at = record_at(data, len, 1, STRC_ENTER, 0);
	w = ld64(data + at);
	st64(data + at, (w & ~((uint64_t)STRC_ID_NONE << 8)) | (uint64_t)7 << 8);
	expect_refused_free(data, len);
	data = encode(&v, &len);
	at = record_at(data, len, 1, STRC_ENTER, 0);
	w = ld64(data + at);
	st64(data + at, w | (uint64_t)STRC_ID_NONE << 8);
	expect_refused_free(data, len);
	/* a DEF_FUNC of id none */
	data = encode(&v, &len);
	at = record_at(data, len, 0, STRC_DEF_FUNC, 0);
	memcpy(data + at + 8, &(uint32_t){ STRC_ID_NONE }, 4);
	expect_refused_free(data, len);
	/* the RUN's pid is not the header's */
	data = encode(&v, &len);
	memcpy(data + 20, &(uint32_t){ 1 }, 4);
	expect_refused_free(data, len);
	/* no RUN at all: its type changed to one this reader skips */
	data = encode(&v, &len);
	at = record_at(data, len, 0, STRC_RUN, 0);
	data[at] = 26;
	expect_refused_free(data, len);
}

static void test_bad_nesting(void **state)
{
	struct variant exit1 = { .unmatched = 1 }, end = { .unmatched = 2 },
		       mixup = { .kind_mixup = 1 }, drop = { .unmatched = 1, .drop_mode = 1 };
	struct strc_file *g;
	size_t len;
	uint8_t *data;

	(void)state;
	data = encode(&exit1, &len);
	expect_refused_free(data, len);
	data = encode(&end, &len);
	expect_refused_free(data, len);
	data = encode(&mixup, &len);
	expect_refused_free(data, len);
	/* in drop mode, events may be missing: an exit without its call is kept */
	data = encode(&drop, &len);
	g = expect_read(data, len, 0);
	assert_int_equal(g->threads[1].nev, 8);
	strc_free(g);
	free(data);
}

/* Definitions repeated (the same: once; else refused), missing, or naming what is not there. */
static void test_definitions(void **state)
{
	static const struct variant refused[] = {
		{ .dup_func = 2 }, { .module_gap = 1 }, { .dup_module = 2 }, { .bad_module = 1 },
		{ .dup_func = 1, .bad_module = 1 }, { .dup_module = 1, .extra_module = 1 },
	};
	struct variant same = { .dup_func = 1, .dup_module = 1 };
	struct strc_file *g;
	size_t len, i;
	uint8_t *data;

	(void)state;
	data = encode(&same, &len);
	g = expect_read(data, len, 0);
	assert_int_equal(g->nfuncs, 7);
	assert_int_equal(g->nmodules, 2);
	strc_free(g);
	free(data);
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		data = encode(&refused[i], &len);
		expect_refused_free(data, len);
	}
}

/* Whether a file cut at n bytes ends at a chunk's end (a cut nothing inside it can tell). */
static int chunk_boundary(const uint8_t *d, size_t len, size_t n)
{
	size_t at = STRC_HEADER_SIZE;

	while (at < n && at + STRC_CHUNK_HEADER <= len) {
		struct strc_chunk h;

		memcpy(&h, d + at, sizeof(h));
		at += h.capacity;
	}
	return at == n;
}

/* Every prefix of a file: refused or read with a warning, never read out of bounds. */
static void test_truncated_everywhere(void **state)
{
	struct variant v = { 0 };
	size_t len, n;
	uint8_t *data = encode(&v, &len);

	(void)state;
	for (n = 0; n < len; n++) {
		uint8_t *copy = malloc(n ? n : 1);
		struct strc_file *f = NULL;
		char err[256] = "";

		assert_non_null(copy);
		memcpy(copy, data, n);
		if (strc_read_mem(copy, n, &f, err, sizeof(err)) == 0) {
			if ((!f->truncated || !f->warning[0]) && !chunk_boundary(data, len, n))
				fail_msg("a file cut at %zu of %zu bytes read without a warning", n,
					 len);
			strc_free(f);
		} else {
			assert_null(f);
			assert_true(err[0] != 0);
		}
		free(copy);
	}
	free(data);
}

/* Every bit of a small file flipped, one at a time: no crash, no leak. */
static void test_bit_flips(void **state)
{
	struct variant v = { .small = 1 };
	size_t len, i;
	uint8_t *data = encode(&v, &len);
	int bit, ok = 0;

	(void)state;
	for (i = 0; i < len; i++)
		for (bit = 0; bit < 8; bit++) {
			struct strc_file *f = NULL;
			char err[256] = "";

			data[i] ^= (uint8_t)(1 << bit);
			if (strc_read_mem(data, len, &f, err, sizeof(err)) == 0) {
				ok++;
				strc_free(f);
			} else {
				assert_null(f);
				assert_true(err[0] != 0);
				assert_null(strchr(err, '\n'));
			}
			data[i] ^= (uint8_t)(1 << bit);
		}
	assert_true(ok > 0); /* flips of times and payloads still read */
	free(data);
}

/* The seed corpus of fuzz/fuzz_trace.c, when asked for. */
static void write_corpus(void)
{
	static const struct variant vs[] = { { .small = 1 }, { 0 }, { .cut_thread = 1 },
					     { .drop_mode = 1, .unmatched = 1 } };
	const char *dir = getenv("SONDE_TRACE_CORPUS");
	size_t i;

	if (!dir)
		return;
	for (i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
		struct strc_file *f = make_trace(&vs[i]);
		char path[4096], err[256];

		snprintf(path, sizeof(path), "%s/trace-%zu.strc", dir, i);
		if (strc_write_file(path, f, err, sizeof(err)))
			fprintf(stderr, "%s\n", err);
		strc_free(f);
	}
}

static void test_corpus(void **state)
{
	(void)state;
	write_corpus();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_depths),
		cmocka_unit_test(test_write_file),
		cmocka_unit_test(test_ticks_to_ns),
		cmocka_unit_test(test_cut_streams),
		cmocka_unit_test(test_open_chunk_zero_tail),
		cmocka_unit_test(test_chunk_order),
		cmocka_unit_test(test_chunk_hole),
		cmocka_unit_test(test_chunk_half_written),
		cmocka_unit_test(test_bad_header),
		cmocka_unit_test(test_bad_chunks),
		cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_bad_streams),
		cmocka_unit_test(test_bad_nesting),
		cmocka_unit_test(test_definitions),
		cmocka_unit_test(test_truncated_everywhere),
		cmocka_unit_test(test_bit_flips),
		cmocka_unit_test(test_corpus),
	};

	return cmocka_run_group_tests_name("trace_format", tests, NULL, NULL);
}
