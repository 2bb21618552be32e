/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the control protocol's codec (format/protocol.h): every message written by
 * the writer reads back with every field intact; hostile input (cut short, wrong magic,
 * version or type, lengths and counts that lie, out-of-range enumerations, reserved fields
 * set, multi-line text, bytes left over, random bit flips) is refused with a one-line reason,
 * never a crash or a read out of bounds (run under valgrind by make check).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "protocol.h"

static uint8_t buf[SPROTO_MAX_MESSAGE];

/* Frame and decode a whole message; the decoder must say why when it refuses. */
static int read_msg(const uint8_t *p, size_t n, struct sproto_msg *m)
{
	struct sproto_header h;
	char err[256] = "";
	long len = sproto_frame(p, n, &h, err, sizeof(err));

	if (len <= 0) {
		if (len < 0)
			assert_true(err[0] && !strchr(err, '\n'));
		return len < 0 ? -1 : 0;
	}
	assert_int_equal((size_t)len, n);
	if (sproto_decode(&h, p + SPROTO_HEADER_SIZE, m, err, sizeof(err)) != 0) {
		assert_true(err[0] && !strchr(err, '\n'));
		return -1;
	}
	return 1;
}

/* Anything goes: a frame that is not whole, a refusal, or a message whose parts all read. */
static void read_any(const uint8_t *p, size_t n)
{
	struct sproto_module mod;
	struct sproto_sample_entry e;
	struct sproto_header h;
	struct sproto_msg m;
	char err[256];
	/* a short frame (version 9) when it does not begin with the magic's first byte */
	long len = p[0] == 'S' ? sproto_frame(p, n, &h, err, sizeof(err))
			       : sproto_frame_short(p, n, &h, err, sizeof(err));
	size_t off = 0;
	uint32_t i;

	if (len <= 0 || sproto_decode(&h, p + h.size, &m, err, sizeof(err)) != 0)
		return;
	assert_true((size_t)len <= n && h.size + h.length == (size_t)len);
	if (h.type == SPROTO_LIST_REPLY) {
		while (sproto_list_module(&m.u.list, &off, &mod) == 0)
			assert_true(mod.path[0] != 0);
		for (i = 0; i < m.u.list.nthreads; i++)
			assert_true(sproto_list_tid(&m.u.list, i) != 0);
	}
	if (sproto_is_sample(h.type)) {
		static struct sproto_sctx c; /* whatever came before: still within bounds */

		for (i = 0; i < m.u.sample.n; i++)
			sproto_sample_entry(&m.u.sample, i, &e);
		if (sproto_sample_resolve(&m.u.sample, &c, err, sizeof(err)) == 0)
			for (i = 0; i < m.u.sample.n; i++) {
				sproto_sample_entry(&m.u.sample, i, &e);
				assert_true(e.metric < SPROTO_MAX_METRICS);
			}
	}
	if (h.type == SPROTO_RESOURCES_REPLY)
		for (i = 0; i < m.u.objects.n; i++) {
			struct sproto_object o;

			sproto_object(&m.u.objects, i, &o);
			assert_true(o.addr && o.kind < SPROTO_OBJ_KINDS && (o.uses || o.inits));
		}
}

static void check_truncations(size_t n);

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* ---- round trips ---- */

static struct sproto_costs sample_costs(void)
{
	struct sproto_costs c = { .flags = SPROTO_COSTS_MEASURED | SPROTO_COSTS_PROFILE, .n = 3,
				  .when_ns = 123456789012345ull, .elapsed_ns = 1500000 };

	c.c[0] = (struct sproto_cost){ SPROTO_COST_ENTRY, 4800, 300 };
	c.c[1] = (struct sproto_cost){ SPROTO_COST_EXIT, 49000, 2100 };
	c.c[2] = (struct sproto_cost){ 999, 0xffffffffu, 0 }; /* unknown to this reader: kept */
	return c;
}

static void test_costs(void **state)
{
	struct sproto_costs c = sample_costs();
	struct sproto_msg m;
	size_t n;

	(void)state;
	n = sproto_put_empty(buf, sizeof(buf), SPROTO_COSTS);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.h.type, SPROTO_COSTS);
	assert_true(sproto_is_request(SPROTO_COSTS));
	n = sproto_put_costs_reply(buf, sizeof(buf), &c);
	/* version 10: varints: flags 1, n 1, when 7, elapsed 3; the figures 5, 6 and 8 bytes (24
	 * and 12 each before) */
	assert_int_equal(n, SPROTO_HEADER_SIZE + 12 + 5 + 6 + 8);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.h.type, SPROTO_COSTS_REPLY);
	assert_false(sproto_is_request(SPROTO_COSTS_REPLY));
	assert_int_equal(m.u.costs.flags, c.flags);
	assert_int_equal(m.u.costs.n, 3);
	assert_int_equal(m.u.costs.when_ns, c.when_ns);
	assert_int_equal(m.u.costs.elapsed_ns, c.elapsed_ns);
	for (n = 0; n < 3; n++) {
		assert_int_equal(m.u.costs.c[n].item, c.c[n].item);
		assert_int_equal(m.u.costs.c[n].mean_ps, c.c[n].mean_ps);
		assert_int_equal(m.u.costs.c[n].sd_ps, c.c[n].sd_ps);
	}
	n = sproto_put_costs_reply(buf, sizeof(buf), &c);
	check_truncations(n);
	c.flags = 0; /* not measured: no figures */
	c.n = 0;
	n = sproto_put_costs_reply(buf, sizeof(buf), &c);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.costs.n, 0);
}

/* Figures without the measured flag, unknown flags, too many, twice, reserved bits. */
static void test_bad_costs(void **state)
{
	struct sproto_costs c = sample_costs();
	struct sproto_msg m;
	size_t n;

	(void)state;
	c.flags = SPROTO_COSTS_PROFILE;
	assert_int_equal(read_msg(buf, sproto_put_costs_reply(buf, sizeof(buf), &c), &m), -1);
	c.flags = 0x80 | SPROTO_COSTS_MEASURED;
	assert_int_equal(read_msg(buf, sproto_put_costs_reply(buf, sizeof(buf), &c), &m), -1);
	c = sample_costs();
	c.c[2].item = c.c[0].item;
	assert_int_equal(read_msg(buf, sproto_put_costs_reply(buf, sizeof(buf), &c), &m), -1);
	c = sample_costs();
	c.n = SPROTO_MAX_COSTS + 1;
	assert_int_equal(sproto_put_costs_reply(buf, sizeof(buf), &c), 0);
	c.n = 3;
	n = sproto_put_costs_reply(buf, sizeof(buf), &c);
	put_le32(buf + SPROTO_HEADER_SIZE + 4, SPROTO_MAX_COSTS + 1); /* a count that lies */
	assert_int_equal(read_msg(buf, n, &m), -1);
	n = sproto_put_costs_reply(buf, sizeof(buf), &c);
	buf[SPROTO_HEADER_SIZE + 24 + 2] = 1; /* a figure's reserved field */
	assert_int_equal(read_msg(buf, n, &m), -1);
}

static void test_hello(void **state)
{
	struct sproto_hello h = { 1, 3, "sonde attach" };
	struct sproto_msg m;
	size_t n = sproto_put_hello(buf, sizeof(buf), &h);

	(void)state;
	assert_true(n > SPROTO_HEADER_SIZE);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.h.type, SPROTO_HELLO);
	assert_int_equal(m.u.hello.min_version, 1);
	assert_int_equal(m.u.hello.max_version, 3);
	assert_string_equal(m.u.hello.client, "sonde attach");
}

static void test_hello_reply(void **state)
{
	struct sproto_hello_reply r = {
		.version = 1, .pid = 4242, .flags = SPROTO_F_AT_START | SPROTO_F_TSC,
		.max_points = SPROTO_MAX_POINTS, .max_actions = 16, .max_counters = 65536,
		.max_timers = 4096, .max_metrics = 1024, .max_terms = 64, .shadow_depth = 4096,
		.max_tcounters = 1024,
		.bucket_ns = 100000000, .entry_addr = 0x7f0000001000, .exit_addr = 0x7f0000002000,
		.ret_tramp_addr = 0x7f0000003000, .build = "sonde 0.1.0",
	};
	struct sproto_msg m;
	size_t n = sproto_put_hello_reply(buf, sizeof(buf), &r);

	(void)state;
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_memory_equal(&m.u.hello_reply.max_points, &r.max_points, 8 * sizeof(uint32_t));
	assert_int_equal(m.u.hello_reply.pid, 4242);
	assert_int_equal(m.u.hello_reply.flags, r.flags);
	assert_int_equal(m.u.hello_reply.bucket_ns, r.bucket_ns);
	assert_int_equal(m.u.hello_reply.entry_addr, r.entry_addr);
	assert_int_equal(m.u.hello_reply.exit_addr, r.exit_addr);
	assert_int_equal(m.u.hello_reply.ret_tramp_addr, r.ret_tramp_addr);
	assert_string_equal(m.u.hello_reply.build, "sonde 0.1.0");
}

/* Version 10: the reply in varints, no limits (the reader fills in the version's own), the
 * exit handler's and the return trampoline's addresses from the entry's (below it too): its
 * exact size, every field read back, every cut refused and a byte more, bit flips survived. */
static void test_hello_reply10(void **state)
{
	struct sproto_hello_reply r = {
		.version = 10, .pid = 4242, .flags = SPROTO_F_AT_START | SPROTO_F_TSC,
		.bucket_ns = 100000000, .entry_addr = 0x7f0000001000, .exit_addr = 0x7f0000002000,
		.ret_tramp_addr = 0x7f0000000000, .build = "sonde 0.1.0",
	};
	uint8_t orig[256], *copy;
	unsigned seed = 10, round, k;
	struct sproto_msg m;
	size_t n = sproto_put_hello_reply(buf, sizeof(buf), &r);

	(void)state;
	/* version 2, pid 2, flags 1, entry 7 (47 bits), exit +0x1000 2, return trampoline
	 * -0x1000 2, the build 1 + 11: 28 bytes (92 before); no bucket width: a new client's is
	 * the default */
	assert_int_equal(n, SPROTO_HEADER_SIZE + 2 + 2 + 1 + 7 + 2 + 2 + 12);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.hello_reply.version, 10);
	assert_int_equal(m.u.hello_reply.pid, 4242);
	assert_int_equal(m.u.hello_reply.flags, r.flags);
	assert_int_equal(m.u.hello_reply.bucket_ns, SPROTO_DEFAULT_BUCKET_NS);
	assert_int_equal(m.u.hello_reply.entry_addr, r.entry_addr);
	assert_int_equal(m.u.hello_reply.exit_addr, r.exit_addr);
	assert_int_equal(m.u.hello_reply.ret_tramp_addr, r.ret_tramp_addr);
	assert_string_equal(m.u.hello_reply.build, "sonde 0.1.0");
	assert_true(m.u.hello_reply.max_points == SPROTO_MAX_POINTS &&
		    m.u.hello_reply.max_actions == SPROTO_MAX_ACTIONS &&
		    m.u.hello_reply.max_counters == SPROTO_MAX_COUNTERS &&
		    m.u.hello_reply.max_timers == SPROTO_MAX_TIMERS &&
		    m.u.hello_reply.max_metrics == SPROTO_MAX_METRICS &&
		    m.u.hello_reply.max_terms == SPROTO_MAX_TERMS &&
		    m.u.hello_reply.shadow_depth == SPROTO_SHADOW_DEPTH &&
		    m.u.hello_reply.max_tcounters == SPROTO_MAX_TCOUNTERS);
	check_truncations(n);
	r.build[0] = 0; /* the build left out (the HELLO's client's): read empty */
	n = sproto_put_hello_reply(buf, sizeof(buf), &r);
	assert_int_equal(n, SPROTO_HEADER_SIZE + 2 + 2 + 1 + 7 + 2 + 2 + 1);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_string_equal(m.u.hello_reply.build, "");
	check_truncations(n);
	strcpy(r.build, "sonde 0.1.0");
	r.pid = 0; /* no pid: refused */
	assert_int_equal(read_msg(buf, sproto_put_hello_reply(buf, sizeof(buf), &r), &m), -1);
	r.pid = 4242;
	n = sproto_put_hello_reply(orig, sizeof(orig), &r);
	for (round = 0; round < 20000; round++) {
		int flips = 1 + (int)(rand_r(&seed) % 3);

		copy = malloc(n); /* exact size: valgrind sees any read past the end */
		assert_non_null(copy);
		memcpy(copy, orig, n);
		for (k = 0; k < (unsigned)flips; k++)
			copy[SPROTO_HEADER_SIZE + rand_r(&seed) % (n - SPROTO_HEADER_SIZE)] ^=
				(uint8_t)(1u << (rand_r(&seed) % 8));
		read_any(copy, n);
		free(copy);
	}
}

static struct sproto_point_set sample_point(void)
{
	struct sproto_point_set p = { .point = SPROTO_MAX_POINTS - 1, .n = 5 };

	p.act[0] = (struct sproto_action){ SPROTO_AT_ENTRY, SPROTO_ADD, SPROTO_PRED_ARG, SPROTO_GE,
					   65535, 5, -7, INT64_MIN };
	p.act[1] = (struct sproto_action){ SPROTO_AT_EXIT, SPROTO_STOP_CPU, SPROTO_PRED_RETVAL,
					   SPROTO_NE, 4095, 0, 0, INT64_MAX };
	p.act[2] = (struct sproto_action){ SPROTO_AT_ENTRY, SPROTO_START_WALL,
					   SPROTO_PRED_COUNTER, SPROTO_LT, 1, 65535, 0, -1 };
	p.act[3] = (struct sproto_action){ SPROTO_AT_EXIT, SPROTO_SET, SPROTO_PRED_NONE, 0, 0, 0,
					   1, 0 };
	p.act[4] = (struct sproto_action){ SPROTO_AT_EXIT, SPROTO_TSUB, SPROTO_PRED_TCOUNTER,
					   SPROTO_EQ, 1023, 1023, 3, 4 };
	return p;
}

static void test_point_set(void **state)
{
	struct sproto_point_set p = sample_point();
	struct sproto_msg m;
	size_t n = sproto_put_point_set(buf, sizeof(buf), &p);
	int i;

	(void)state;
	assert_int_equal(n, SPROTO_HEADER_SIZE + 8 + 5 * 32);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.point_set.point, p.point);
	assert_int_equal(m.u.point_set.n, 5);
	for (i = 0; i < 5; i++) {
		const struct sproto_action *a = &p.act[i], *b = &m.u.point_set.act[i];

		assert_int_equal(a->when, b->when);
		assert_int_equal(a->prim, b->prim);
		assert_int_equal(a->pred, b->pred);
		assert_int_equal(a->op, b->op);
		assert_int_equal(a->target, b->target);
		assert_int_equal(a->pred_index, b->pred_index);
		assert_true(a->value == b->value && a->pred_value == b->pred_value);
	}
}

static void test_small_requests(void **state)
{
	struct sproto_msg m;
	size_t n;

	(void)state;
	n = sproto_put_point_clear(buf, sizeof(buf), 10, 20);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.clear.first, 10);
	assert_int_equal(m.u.clear.count, 20);
	n = sproto_put_metric_disable(buf, sizeof(buf), 1023);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.metric.id, 1023);
	n = sproto_put_sampling(buf, sizeof(buf), 250000000);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.bucket_ns, 250000000);
	n = sproto_put_empty(buf, sizeof(buf), SPROTO_DETACH);
	assert_int_equal(n, SPROTO_HEADER_SIZE);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.h.type, SPROTO_DETACH);
	n = sproto_put_ok(buf, sizeof(buf), SPROTO_PAUSE);
	assert_int_equal(n, SPROTO_HEADER_SIZE); /* version 10: empty */
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.h.type, SPROTO_OK);
}

/* BUCKET (version 7): a width of 1 ms to 1 hour, refused outside by the writer and the reader;
 * BUCKET_REPLY: a SAMPLE's payload under its own type. */
static void test_bucket(void **state)
{
	static struct sproto_sctx rctx;
	struct sproto_sample_entry e = { 5, SPROTO_S_FIRST, 0, 7 }, got;
	char err[200];
	struct sproto_buf b;
	struct sproto_msg m;
	size_t n;

	(void)state;
	n = sproto_put_bucket(buf, sizeof(buf), 250000000);
	assert_int_equal(n, SPROTO_HEADER_SIZE + 8);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.h.type, SPROTO_BUCKET);
	assert_int_equal(m.u.bucket_ns, 250000000);
	assert_true(sproto_is_request(SPROTO_BUCKET));
	assert_false(sproto_is_sample(SPROTO_BUCKET));
	assert_string_equal(sproto_type_name(SPROTO_BUCKET), "BUCKET");
	assert_int_equal(sproto_put_bucket(buf, sizeof(buf), SPROTO_MIN_BUCKET_NS - 1), 0);
	assert_int_equal(sproto_put_bucket(buf, sizeof(buf), SPROTO_MAX_BUCKET_NS + 1), 0);
	put_le32(buf + SPROTO_HEADER_SIZE, SPROTO_MIN_BUCKET_NS - 1); /* under 1 ms */
	assert_int_equal(read_msg(buf, n, &m), -1);
	put_le32(buf + SPROTO_HEADER_SIZE, 0);
	assert_int_equal(read_msg(buf, n, &m), -1);
	put_le32(buf + SPROTO_HEADER_SIZE + 4, 0x400); /* past an hour */
	assert_int_equal(read_msg(buf, n, &m), -1);
	n = sproto_put_bucket(buf, sizeof(buf), SPROTO_MAX_BUCKET_NS);
	assert_int_equal(read_msg(buf, n - 1, &m), 0); /* cut short: not all there */
	assert_int_equal(read_msg(buf, n, &m), 1);
	put_le32(buf + 8, 7); /* a payload of 7 bytes */
	assert_int_equal(read_msg(buf, n - 1, &m), -1);
	/* the answer; version 10: its width from the BUCKET's (245 units, asked 250000 ns: 245
	 * units too, ceil(250000 / 1024)): 0, one byte */
	sproto_bucket_reply_begin(&b, buf, sizeof(buf), 250000, 1000, 1000, 251000, 0);
	sproto_sample_add(&b, &e);
	n = sproto_end(&b);
	assert_int_equal(n, SPROTO_HEADER_SIZE + 1 + 1 + 2); /* head, width, an entry */
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.h.type, SPROTO_BUCKET_REPLY);
	assert_true(sproto_is_sample(m.h.type) && !sproto_is_request(m.h.type));
	assert_true(m.u.sample.follows && m.u.sample.start_ns == 0 && m.u.sample.n == 1);
	assert_true(m.u.sample.rel && m.u.sample.wdiff == 0);
	assert_int_equal(sproto_sample_asked(&m.u.sample, 250000), 0);
	assert_int_equal(m.u.sample.units, 245);
	assert_int_equal(sproto_sample_asked(&m.u.sample, 1), 0); /* made whole: unchanged */
	assert_int_equal(m.u.sample.units, 245);
	assert_int_equal(sproto_sample_follow(&m.u.sample, 5000), 0);
	assert_true(m.u.sample.start_ns == 5000 && m.u.sample.end_ns == 5000 + 245 * 1024);
	sproto_sample_entry(&m.u.sample, 0, &got);
	assert_true(got.metric == 5 && got.flags == SPROTO_S_FIRST && got.delta == 7);
	/* one with no entry: what a bucket with nothing to send answers; asked 3 ms (2930 units),
	 * ended at 1 unit (a phase marker): -2929 units, not a whole number of quanta (64 units,
	 * version 10): refused by the writer; its end as the runtime says it (sproto_bucket_end),
	 * 50 units: -45 quanta, 1 byte */
	sproto_bucket_reply_begin(&b, buf, sizeof(buf), 3000000, 0, 1000, 2000, 0);
	assert_int_equal(sproto_end(&b), 0);
	assert_int_equal(sproto_bucket_end(1000, 2000, 3000000), 1000 + 50 * 1024);
	assert_int_equal(sproto_bucket_end(1000, 1000 + 2930 * 1024, 3000000), 1000 + 2930 * 1024);
	assert_int_equal(sproto_bucket_end(1000, 1000 + 2930 * 1024 + 1, 3000000),
			 1000 + 2994 * 1024); /* a ns past the ask: a quantum more */
	sproto_bucket_reply_begin(&b, buf, sizeof(buf), 3000000, 0, 1000,
				  sproto_bucket_end(1000, 2000, 3000000), 0);
	n = sproto_end(&b);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.sample.n, 0);
	assert_int_equal(n, SPROTO_HEADER_SIZE + 1 + 2 + 1); /* head, start whole 2, width 1 */
	assert_int_equal(sproto_sample_asked(&m.u.sample, 3000000), 0);
	assert_true(m.u.sample.units == 50 && m.u.sample.end_ns == 1000 + 50 * 1024);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(sproto_sample_asked(&m.u.sample, 1024 * 2879), -1); /* below 0 */
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(sproto_sample_asked(&m.u.sample, 1024 * 2880), 0); /* 0 units */
	assert_true(m.u.sample.units == 0);
	assert_int_equal(read_msg(buf, n, &m), 1); /* not made whole: its values not read */
	assert_int_equal(sproto_sample_resolve(&m.u.sample, &rctx, err, sizeof(err)), -1);
	buf[n - 1] = 0x80; /* the width cut short */
	assert_int_equal(read_msg(buf, n, &m), -1);
}

/* PROFILE_BEGIN carries an absolute one-line directory; PROFILE_END nothing. */
static void test_profile(void **state)
{
	static const uint8_t rel[] = { 'S', 'N', 'D', 'C', SPROTO_VERSION, 0,
				       SPROTO_PROFILE_BEGIN, 0, 5, 0, 0, 0, 3, 0, 'o', 'u', 't' };
	static const uint8_t nl[] = { 'S', 'N', 'D', 'C', SPROTO_VERSION, 0,
				      SPROTO_PROFILE_BEGIN, 0, 5, 0, 0, 0, 3, 0, '/', '\n', 't' };
	struct sproto_msg m;
	char long_dir[SPROTO_MAX_PATH + 2];
	size_t n;

	(void)state;
	n = sproto_put_profile_begin(buf, sizeof(buf), "/tmp/prof dir");
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.h.type, SPROTO_PROFILE_BEGIN);
	assert_string_equal(m.u.dir, "/tmp/prof dir");
	assert_int_equal(sproto_put_profile_begin(buf, sizeof(buf), "relative"), 0);
	assert_int_equal(sproto_put_profile_begin(buf, sizeof(buf), "/a\nb"), 0);
	assert_int_equal(sproto_put_profile_begin(buf, sizeof(buf), ""), 0);
	memset(long_dir, 'a', sizeof(long_dir) - 1);
	long_dir[0] = '/';
	long_dir[sizeof(long_dir) - 1] = 0;
	assert_int_equal(sproto_put_profile_begin(buf, sizeof(buf), long_dir), 0);
	long_dir[SPROTO_MAX_PATH] = 0;
	n = sproto_put_profile_begin(buf, sizeof(buf), long_dir);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(strlen(m.u.dir), SPROTO_MAX_PATH);
	assert_int_equal(read_msg(rel, sizeof(rel), &m), -1);
	assert_int_equal(read_msg(nl, sizeof(nl), &m), -1);
	n = sproto_put_empty(buf, sizeof(buf), SPROTO_PROFILE_END);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.h.type, SPROTO_PROFILE_END);
	assert_true(sproto_is_request(SPROTO_PROFILE_END));
	assert_true(sproto_is_request(SPROTO_PROFILE_END + 1)); /* RESOURCES (version 5) */
	assert_true(sproto_is_request(SPROTO_RESOURCES + 1)); /* BUCKET (version 7) */
	assert_true(sproto_is_request(SPROTO_BUCKET + 1));    /* BATCH (version 8) */
	assert_true(sproto_is_request(SPROTO_BATCH + 1));     /* POINT_ACTIONS (version 8) */
	assert_false(sproto_is_request(SPROTO_POINT_ACTIONS + 1));
}

static void test_metric(void **state)
{
	struct sproto_metric mt = { .id = 7, .n = 4 };
	struct sproto_msg m;
	size_t n;

	(void)state;
	mt.term[0] = (struct sproto_term){ SPROTO_TERM_COUNTER, 65535, 0 };
	mt.term[1] = (struct sproto_term){ SPROTO_TERM_WALL, 4095, 1234 };
	mt.term[2] = (struct sproto_term){ SPROTO_TERM_PROC_CPU, 0, 0 };
	mt.term[3] = (struct sproto_term){ SPROTO_TERM_TCOUNTER, 1023, 77 };
	n = sproto_put_metric_enable(buf, sizeof(buf), &mt);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.metric.id, 7);
	assert_int_equal(m.u.metric.n, 4);
	assert_int_equal(m.u.metric.term[3].kind, SPROTO_TERM_TCOUNTER);
	assert_int_equal(m.u.metric.term[3].tid, 77);
	assert_int_equal(m.u.metric.term[1].kind, SPROTO_TERM_WALL);
	assert_int_equal(m.u.metric.term[1].index, 4095);
	assert_int_equal(m.u.metric.term[1].tid, 1234);
	assert_int_equal(m.u.metric.term[2].kind, SPROTO_TERM_PROC_CPU);
	assert_int_equal(m.u.metric.flags, 0);
	/* version 4: the flags and the pace travel; an unknown flag is refused */
	mt.flags = SPROTO_M_CHANGES;
	mt.every = 10;
	n = sproto_put_metric_enable(buf, sizeof(buf), &mt);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.metric.flags, SPROTO_M_CHANGES);
	assert_int_equal(m.u.metric.every, 10);
	/* version 6: units of 1024 travel too */
	mt.flags = SPROTO_M_CHANGES | SPROTO_M_KILO;
	n = sproto_put_metric_enable(buf, sizeof(buf), &mt);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.metric.flags, SPROTO_M_CHANGES | SPROTO_M_KILO);
	/* version 7: units of 65536, deltas only; not both units; no unknown flag */
	mt.flags = SPROTO_M_CHANGES | SPROTO_M_K64 | SPROTO_M_DELTAS;
	n = sproto_put_metric_enable(buf, sizeof(buf), &mt);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.metric.flags, SPROTO_M_CHANGES | SPROTO_M_K64 | SPROTO_M_DELTAS);
	buf[SPROTO_HEADER_SIZE + 6] = SPROTO_M_KILO | SPROTO_M_K64; /* the flags' byte */
	assert_int_equal(read_msg(buf, n, &m), -1);
	buf[SPROTO_HEADER_SIZE + 6] = 0x10; /* an unknown one */
	assert_int_equal(read_msg(buf, n, &m), -1);
	buf[SPROTO_HEADER_SIZE + 6] = 0x80;
	assert_int_equal(read_msg(buf, n, &m), -1);
	mt.flags = SPROTO_M_KILO | SPROTO_M_K64; /* the writer refuses what the reader would */
	assert_int_equal(sproto_put_metric_enable(buf, sizeof(buf), &mt), 0);
	mt.flags = 0x10;
	assert_int_equal(sproto_put_metric_enable(buf, sizeof(buf), &mt), 0);
}

static void test_error_text(void **state)
{
	struct sproto_msg m;
	char long_text[2000];
	size_t n;

	(void)state;
	n = sproto_put_error(buf, sizeof(buf), SPROTO_POINT_SET, "bad point\nsecond line");
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.status.type, SPROTO_POINT_SET);
	assert_string_equal(m.u.status.text, "bad point");
	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = 0;
	n = sproto_put_error(buf, sizeof(buf), SPROTO_LIST, long_text);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(strlen(m.u.status.text), SPROTO_MAX_TEXT);
	n = sproto_put_error(buf, sizeof(buf), SPROTO_LIST, "");
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_string_equal(m.u.status.text, "error");
}

static void test_list(void **state)
{
	struct sproto_module mod, got;
	struct sproto_buf b;
	struct sproto_msg m;
	size_t n, off = 0;
	uint32_t i;

	(void)state;
	memset(&mod, 0, sizeof(mod));
	sproto_list_begin(&b, buf, sizeof(buf));
	for (i = 0; i < 3; i++) {
		mod.bias = 0x1000 * i;
		mod.lo = mod.bias + 0x100;
		mod.hi = mod.lo + 0x5000;
		mod.build_id_len = (uint8_t)(i == 1 ? 0 : 20);
		memset(mod.build_id, (int)(0xa0 + i), mod.build_id_len);
		snprintf(mod.path, sizeof(mod.path), "/usr/lib/lib%u.so", i);
		sproto_list_add_module(&b, &mod);
	}
	for (i = 0; i < 5; i++)
		sproto_list_add_tid(&b, 100 + i);
	n = sproto_end(&b);
	assert_true(n > 0);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.list.nmodules, 3);
	assert_int_equal(m.u.list.nthreads, 5);
	for (i = 0; i < 3; i++) {
		char want[64];

		assert_int_equal(sproto_list_module(&m.u.list, &off, &got), 0);
		snprintf(want, sizeof(want), "/usr/lib/lib%u.so", i);
		assert_string_equal(got.path, want);
		assert_int_equal(got.bias, 0x1000 * i);
		assert_int_equal(got.hi - got.lo, 0x5000);
		assert_int_equal(got.build_id_len, i == 1 ? 0 : 20);
		if (i != 1)
			assert_int_equal(got.build_id[19], 0xa0 + i);
	}
	assert_int_equal(sproto_list_module(&m.u.list, &off, &got), -1);
	for (i = 0; i < 5; i++)
		assert_int_equal(sproto_list_tid(&m.u.list, i), 100 + i);
	assert_int_equal(sproto_list_tid(&m.u.list, 5), 0);
}

static void test_sample(void **state)
{
	struct sproto_sample_entry e = { 3, SPROTO_S_FIRST | SPROTO_S_VALUE, -5, INT64_MIN }, got;
	struct sproto_buf b;
	struct sproto_msg m;
	size_t n;

	(void)state;
	sproto_sample_begin(&b, buf, sizeof(buf), 0, 1024, 2048, 9);
	sproto_sample_add(&b, &e);
	e = (struct sproto_sample_entry){ 4, SPROTO_S_LAST, 77, -1 }; /* no value: not written */
	sproto_sample_add(&b, &e);
	e = (struct sproto_sample_entry){ 1023, SPROTO_S_VALUE, INT64_MAX, 12 };
	sproto_sample_add(&b, &e);
	n = sproto_end(&b);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.sample.start_ns, 1024);
	assert_int_equal(m.u.sample.end_ns, 2048);
	assert_false(m.u.sample.follows);
	assert_int_equal(m.u.sample.lost, 9);
	assert_int_equal(m.u.sample.n, 3);
	assert_int_equal(m.u.sample.size, n - SPROTO_HEADER_SIZE);
	sproto_sample_entry(&m.u.sample, 0, &got);
	assert_true(got.metric == 3 && got.flags == (SPROTO_S_FIRST | SPROTO_S_VALUE) &&
		    got.value == -5 && got.delta == INT64_MIN);
	sproto_sample_entry(&m.u.sample, 1, &got);
	assert_true(got.metric == 4 && got.flags == SPROTO_S_LAST && got.value == 0 &&
		    got.delta == -1);
	sproto_sample_entry(&m.u.sample, 2, &got);
	assert_true(got.metric == 1023 && got.value == INT64_MAX && got.delta == 12);
	sproto_sample_entry(&m.u.sample, 3, &got); /* past the end: zeros */
	assert_true(got.metric == 0 && got.flags == 0 && got.delta == 0);
	/* version 9: the width in units of 1024 ns, rounded up; the end is what the reader reads */
	assert_int_equal(sproto_sample_end(1000, 2000), 2024);
	assert_int_equal(sproto_sample_end(1000, 2024), 2024);
	assert_int_equal(sproto_sample_end(1000, 1000), 1000);
	assert_int_equal(sproto_sample_end(1000, 999), 1000); /* never before the start */
	sproto_sample_begin(&b, buf, sizeof(buf), 0, 1000, 2000, 0);
	n = sproto_end(&b);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_true(m.u.sample.start_ns == 1000 && m.u.sample.end_ns == 2024 && !m.u.sample.n);
}

/* Version 6's sizes: a bucket that follows the previous one, and a 50 ms timer's entry. */
static void test_sample_compact(void **state)
{
	struct sproto_sample_entry e = { 20, 0, 0, 50000000 }, got;
	const uint64_t t0 = 1000000000000000ull; /* 11.6 days of CLOCK_MONOTONIC */
	struct sproto_buf b;
	struct sproto_msg m;
	size_t n;

	(void)state;
	sproto_sample_begin(&b, buf, sizeof(buf), t0, t0, t0 + 50000000, 0);
	sproto_sample_add(&b, &e);
	e = (struct sproto_sample_entry){ 21, 0, 0, 3 };
	sproto_sample_add(&b, &e);
	n = sproto_end(&b);
	/* the head 1 byte (version 10: lost 0, keyed, the start not given: a gap of 0), width 3
	 * (48829 units of 1024 ns: version 9), no count (version 9); the entries: an id 20 2
	 * bytes (the first id whole), 50 ms 4 bytes; id 21 (the next) 1 byte, 3 calls 1 byte */
	assert_int_equal(n, SPROTO_HEADER_SIZE + 1 + 3 + (2 + 4) + (1 + 1));
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_true(m.u.sample.follows);
	assert_int_equal(m.u.sample.entries_size, 8);
	assert_int_equal(sproto_sample_follow(&m.u.sample, 0), -1); /* no previous one */
	assert_int_equal(sproto_sample_follow(&m.u.sample, UINT64_MAX - 10), -1);
	assert_int_equal(sproto_sample_follow(&m.u.sample, t0), 0);
	assert_true(m.u.sample.start_ns == t0 && m.u.sample.end_ns == t0 + 48829 * 1024 &&
		    !m.u.sample.follows);
	assert_int_equal(sproto_sample_follow(&m.u.sample, 5), 0); /* made whole: unchanged */
	assert_true(m.u.sample.start_ns == t0);
	sproto_sample_entry(&m.u.sample, 1, &got);
	assert_true(got.metric == 21 && got.delta == 3 && !got.flags);
	/* a gap after the previous end; an "after" later than the start: given whole */
	sproto_sample_begin(&b, buf, sizeof(buf), t0, t0 + 7, t0 + 9, 0);
	n = sproto_end(&b);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_true(m.u.sample.follows && m.u.sample.start_ns == 7 && m.u.sample.end_ns == 7 + 1024);
	sproto_sample_begin(&b, buf, sizeof(buf), t0 + 1, t0, t0 + 9, 0);
	n = sproto_end(&b);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_true(!m.u.sample.follows && m.u.sample.start_ns == t0);
}

/* The writer refuses what the reader would: ids out of order or range, unknown flags, a
 * bucket that ends before it starts. */
static void test_sample_writer(void **state)
{
	struct sproto_sample_entry e = { 5, 0, 0, 1 };
	struct sproto_buf b;

	(void)state;
	sproto_sample_begin(&b, buf, sizeof(buf), 0, 1, 2, 0);
	sproto_sample_add(&b, &e);
	sproto_sample_add(&b, &e); /* the same id twice */
	assert_int_equal(sproto_end(&b), 0);
	sproto_sample_begin(&b, buf, sizeof(buf), 0, 1, 2, 0);
	e.metric = SPROTO_MAX_METRICS;
	sproto_sample_add(&b, &e);
	assert_int_equal(sproto_end(&b), 0);
	sproto_sample_begin(&b, buf, sizeof(buf), 0, 1, 2, 0);
	e = (struct sproto_sample_entry){ 1, 8, 0, 0 };
	sproto_sample_add(&b, &e);
	assert_int_equal(sproto_end(&b), 0);
	sproto_sample_begin(&b, buf, sizeof(buf), 0, 10, 5, 0);
	assert_int_equal(sproto_end(&b), 0);
}

/* A SAMPLE payload of hand-made bytes after a frame header. */
static size_t raw_sample(const uint8_t *payload, size_t n)
{
	memcpy(buf, "SNDC", 4);
	buf[4] = SPROTO_VERSION;
	buf[5] = 0;
	buf[6] = (uint8_t)SPROTO_SAMPLE;
	buf[7] = 0;
	put_le32(buf + 8, (uint32_t)n);
	memcpy(buf + SPROTO_HEADER_SIZE, payload, n);
	return SPROTO_HEADER_SIZE + n;
}

/* Variable-length integers: one encoding for each number, at most 64 bits; ids in range. */
static void test_sample_varints(void **state)
{
	/* version 10: the head (lost 0, mode 0: keyed, the start given), start 1 whole, width 2
	 * units (2048 ns), then entries to the end (version 9: no count): id 3, delta -1 */
	static const uint8_t ok[] = { 1, 3, 2, 3 << 3, 1 };
	static const uint8_t overlong[] = { 1, 3, 0x82, 0x00, 3 << 3, 1 };
	static const uint8_t wide[] = { 1, 3, 2, 3 << 3, 0xff, 0xff, 0xff, 0xff, 0xff,
					0xff, 0xff, 0xff, 0xff, 0x02 };
	static const uint8_t eleven[] = { 1, 3, 2, 3 << 3, 0x80, 0x80, 0x80, 0x80, 0x80,
					  0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
	static const uint8_t max[] = { 1, 3, 2, 3 << 3, 0xfe, 0xff, 0xff, 0xff, 0xff,
				       0xff, 0xff, 0xff, 0xff, 0x01 };
	/* ids: 1023 then the next one would be 1024 */
	static const uint8_t range[] = { 1, 3, 2, 0xf8, 0x3f, 0, 0, 0 };
	static const uint8_t last_id[] = { 1, 3, 2, 0xf8, 0x3f, 0 };
	/* an entry cut short: a key without its delta, a value flag without its value */
	static const uint8_t more[] = { 1, 3, 2, 3 << 3, 1, 1 << 3 };
	static const uint8_t fewer[] = { 1, 3, 2, 3 << 3 | SPROTO_S_VALUE, 1 };
	/* an end past 2^64; a width whose units pass 2^64 ns */
	static const uint8_t wraps[] = { 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					 0x01, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f };
	static const uint8_t units[] = { 1, 3, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40 };
	/* version 10: a head's mode 3 (none such); a start not given: follows the previous end */
	static const uint8_t mode3[] = { 1 | 3 << 1, 3, 2, 3 << 3, 1 };
	static const uint8_t follows[] = { 0, 2, 3 << 3, 1 };
	struct sproto_sample_entry got;
	struct sproto_msg m;

	(void)state;
	assert_int_equal(read_msg(buf, raw_sample(ok, sizeof(ok)), &m), 1);
	sproto_sample_entry(&m.u.sample, 0, &got);
	assert_true(m.u.sample.start_ns == 1 && m.u.sample.end_ns == 2049 && got.metric == 3 &&
		    got.delta == -1 && m.u.sample.n == 1);
	assert_int_equal(read_msg(buf, raw_sample(overlong, sizeof(overlong)), &m), -1);
	assert_int_equal(read_msg(buf, raw_sample(wide, sizeof(wide)), &m), -1);
	assert_int_equal(read_msg(buf, raw_sample(eleven, sizeof(eleven)), &m), -1);
	assert_int_equal(read_msg(buf, raw_sample(max, sizeof(max)), &m), 1);
	sproto_sample_entry(&m.u.sample, 0, &got);
	assert_true(got.delta == INT64_MAX);
	assert_int_equal(read_msg(buf, raw_sample(range, sizeof(range)), &m), -1);
	assert_int_equal(read_msg(buf, raw_sample(last_id, sizeof(last_id)), &m), 1);
	sproto_sample_entry(&m.u.sample, 0, &got);
	assert_int_equal(got.metric, 1023);
	assert_int_equal(read_msg(buf, raw_sample(more, sizeof(more)), &m), -1);
	assert_int_equal(read_msg(buf, raw_sample(fewer, sizeof(fewer)), &m), -1);
	assert_int_equal(read_msg(buf, raw_sample(wraps, sizeof(wraps)), &m), -1);
	assert_int_equal(read_msg(buf, raw_sample(units, sizeof(units)), &m), -1);
	assert_int_equal(read_msg(buf, raw_sample(units, 4), &m), -1); /* cut in the width */
	assert_int_equal(read_msg(buf, raw_sample(mode3, sizeof(mode3)), &m), -1);
	assert_int_equal(read_msg(buf, raw_sample(follows, sizeof(follows)), &m), 1);
	assert_true(m.u.sample.follows && m.u.sample.start_ns == 0 && m.u.sample.units == 2 &&
		    m.u.sample.n == 1);
}

/* A stream of several messages is framed one at a time; a partial one waits for more. */
static void test_stream(void **state)
{
	struct sproto_header h;
	size_t a = sproto_put_empty(buf, sizeof(buf), SPROTO_LIST), b;
	char err[100];
	size_t i;

	(void)state;
	b = sproto_put_sampling(buf + a, sizeof(buf) - a, 5000000);
	assert_int_equal(sproto_frame(buf, a + b, &h, err, sizeof(err)), (long)a);
	assert_int_equal(h.type, SPROTO_LIST);
	assert_int_equal(sproto_frame(buf + a, b, &h, err, sizeof(err)), (long)b);
	for (i = 0; i < b; i++)
		assert_int_equal(sproto_frame(buf + a, i, &h, err, sizeof(err)), 0);
}

/* The writer refuses what does not fit, rather than writing a broken message. */
static void test_writer_limits(void **state)
{
	struct sproto_point_set p = sample_point();
	struct sproto_hello h = { 1, 1, "" };
	uint8_t small[20];

	(void)state;
	assert_int_equal(sproto_put_point_set(small, sizeof(small), &p), 0);
	p.n = SPROTO_MAX_ACTIONS + 1;
	assert_int_equal(sproto_put_point_set(buf, sizeof(buf), &p), 0);
	memset(h.client, 'a', sizeof(h.client) - 1);
	h.client[sizeof(h.client) - 1] = 0;
	assert_true(sproto_put_hello(buf, sizeof(buf), &h) > 0);
	strcpy(h.client, "two\nlines");
	assert_int_equal(sproto_put_hello(buf, sizeof(buf), &h), 0);
}

/* ---- hostile input ---- */

static void test_bad_headers(void **state)
{
	struct sproto_msg m;
	size_t n = sproto_put_empty(buf, sizeof(buf), SPROTO_PAUSE);
	uint8_t save[SPROTO_HEADER_SIZE];

	(void)state;
	memcpy(save, buf, sizeof(save));
	buf[0] ^= 1; /* magic */
	assert_int_equal(read_msg(buf, n, &m), -1);
	memcpy(buf, save, sizeof(save));
	buf[4] = 10; /* version 10 of a versioned message: this codec speaks 11 only */
	assert_int_equal(read_msg(buf, n, &m), -1);
	buf[4] = 12;
	assert_int_equal(read_msg(buf, n, &m), -1);
	buf[4] = 0;
	assert_int_equal(read_msg(buf, n, &m), -1);
	memcpy(buf, save, sizeof(save));
	buf[6] = 0x7f; /* type */
	assert_int_equal(read_msg(buf, n, &m), -1);
	buf[6] = 0;
	assert_int_equal(read_msg(buf, n, &m), -1);
	memcpy(buf, save, sizeof(save));
	put_le32(buf + 8, SPROTO_MAX_PAYLOAD + 1); /* length */
	assert_int_equal(read_msg(buf, n, &m), -1);
	put_le32(buf + 8, 0xffffffffu);
	assert_int_equal(read_msg(buf, n, &m), -1);
}

/* HELLO of a newer tool still reads (its payload never changes); a bad range does not. */
static void test_hello_versions(void **state)
{
	struct sproto_hello h = { 2, 5, "future" };
	struct sproto_msg m;
	size_t n = sproto_put_hello(buf, sizeof(buf), &h);

	(void)state;
	buf[4] = 5;
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.hello.min_version, 2);
	h.min_version = 3;
	h.max_version = 2;
	n = sproto_put_hello(buf, sizeof(buf), &h);
	assert_int_equal(read_msg(buf, n, &m), -1);
	h.min_version = 0;
	n = sproto_put_hello(buf, sizeof(buf), &h);
	assert_int_equal(read_msg(buf, n, &m), -1);
}

/* Every length shorter than the message is refused, longer leaves bytes over. */
static void check_truncations(size_t n)
{
	struct sproto_msg m;
	uint8_t copy[4096];
	size_t cut;

	assert_true(n <= sizeof(copy) - 8);
	for (cut = SPROTO_HEADER_SIZE; cut < n; cut++) {
		memcpy(copy, buf, cut);
		put_le32(copy + 8, (uint32_t)(cut - SPROTO_HEADER_SIZE));
		assert_int_equal(read_msg(copy, cut, &m), -1);
	}
	memcpy(copy, buf, n);
	copy[n] = 0;
	put_le32(copy + 8, (uint32_t)(n + 1 - SPROTO_HEADER_SIZE));
	assert_int_equal(read_msg(copy, n + 1, &m), -1);
}

static void test_truncated(void **state)
{
	struct sproto_point_set p = sample_point();
	struct sproto_metric mt = { .id = 1, .n = 1, .term = { { SPROTO_TERM_CPU, 3, 0 } } };
	struct sproto_hello h = { 1, 1, "x" };
	struct sproto_sample_entry e = { 1, 0, 2, 3 };
	struct sproto_buf b;
	struct sproto_msg m;
	uint8_t copy[256];
	size_t n, cut, ends[2];

	(void)state;
	check_truncations(sproto_put_point_set(buf, sizeof(buf), &p));
	check_truncations(sproto_put_metric_enable(buf, sizeof(buf), &mt));
	check_truncations(sproto_put_hello(buf, sizeof(buf), &h));
	check_truncations(sproto_put_point_clear(buf, sizeof(buf), 1, 1));
	check_truncations(sproto_put_error(buf, sizeof(buf), SPROTO_LIST, "no"));
	/* version 9: a SAMPLE has no count (its frame's length says where its entries end): cut
	 * at an entry's end it reads with the entries before the cut, anywhere else it does not */
	sproto_sample_begin(&b, buf, sizeof(buf), 0, 1, 2, 0);
	ends[0] = sproto_end(&b);
	sproto_sample_add(&b, &e);
	ends[1] = sproto_end(&b);
	e = (struct sproto_sample_entry){ 700, SPROTO_S_VALUE, 1000000, 300 };
	sproto_sample_add(&b, &e);
	n = sproto_end(&b);
	for (cut = SPROTO_HEADER_SIZE; cut < n; cut++) {
		memcpy(copy, buf, cut);
		put_le32(copy + 8, (uint32_t)(cut - SPROTO_HEADER_SIZE));
		assert_int_equal(read_msg(copy, cut, &m), cut == ends[0] || cut == ends[1] ? 1 : -1);
		if (cut == ends[1])
			assert_int_equal(m.u.sample.n, 1);
	}
}

/* Change one byte of a valid POINT_SET's first action and expect a refusal. */
static void expect_bad_action(size_t off, uint8_t v)
{
	struct sproto_point_set p = sample_point();
	struct sproto_msg m;
	size_t n;

	p.n = 1;
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), 1);
	buf[SPROTO_HEADER_SIZE + 8 + off] = v;
	assert_int_equal(read_msg(buf, n, &m), -1);
}

static void test_bad_actions(void **state)
{
	(void)state;
	expect_bad_action(0, 2);    /* when */
	expect_bad_action(0, 1);    /* an argument predicate at exit */
	expect_bad_action(1, SPROTO_PRIM_COUNT); /* primitive */
	expect_bad_action(1, SPROTO_TADD); /* thread counter index 65535 */
	expect_bad_action(2, SPROTO_PRED_COUNT); /* predicate kind */
	expect_bad_action(2, SPROTO_PRED_RETVAL); /* retval at entry */
	expect_bad_action(3, 6);    /* comparison */
	expect_bad_action(4 + 2, 1); /* counter index 65536 + 65535 */
	expect_bad_action(8, 6);    /* argument number 6 */
	expect_bad_action(12, 1);   /* reserved */
	expect_bad_action(1, SPROTO_ADD_RET); /* the return value at entry */
}

/* TSET_ARG: an entry action on a thread counter whose value is an argument's index (0-5). */
static void test_tset_arg_action(void **state)
{
	struct sproto_point_set p = { .point = 3, .n = 1 };
	struct sproto_msg m;
	size_t n;

	(void)state;
	p.act[0] = (struct sproto_action){ SPROTO_AT_ENTRY, SPROTO_TSET_ARG, SPROTO_PRED_ARG,
					   SPROTO_EQ, 1023, 5, 5, 42 };
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.point_set.act[0].prim, SPROTO_TSET_ARG);
	assert_int_equal(m.u.point_set.act[0].value, 5);
	p.act[0].value = 6; /* no such argument */
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
	p.act[0].value = -1;
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
	p.act[0].value = 0;
	p.act[0].pred = SPROTO_PRED_NONE, p.act[0].op = 0, p.act[0].pred_index = 0;
	p.act[0].pred_value = 0;
	p.act[0].when = SPROTO_AT_EXIT; /* arguments are read at entry */
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
	p.act[0].when = SPROTO_AT_ENTRY;
	p.act[0].target = 1024; /* a thread counter out of range */
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
}

/* START_WALL_IF: a timer in range, its guard's thread counter in range. */
static void test_start_wall_if_action(void **state)
{
	struct sproto_point_set p = { .point = 3, .n = 1 };
	struct sproto_msg m;
	size_t n;

	(void)state;
	p.act[0] = (struct sproto_action){ SPROTO_AT_ENTRY, SPROTO_START_WALL_IF, SPROTO_PRED_ARG,
					   SPROTO_EQ, 4095, 4,
					   SPROTO_GUARD(1023, SPROTO_GE, -(1ll << 38)), 42 };
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.point_set.act[0].value, SPROTO_GUARD(1023, SPROTO_GE, -(1ll << 38)));
	assert_int_equal(m.u.point_set.act[0].value >> 24, -(1ll << 38));
	p.act[0].value = SPROTO_GUARD(3, 6, 0); /* no such comparison */
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
	p.act[0].value = SPROTO_GUARD(1024, SPROTO_EQ, 0); /* no such thread counter */
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
	p.act[0].value = 0;
	p.act[0].target = 4096; /* no such timer */
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
}

/* ADD_RET and TADD_RET (version 3): exit actions, without a value, in range. */
static void test_retval_actions(void **state)
{
	struct sproto_point_set p = { .point = 7, .n = 2 };
	struct sproto_msg m;
	size_t n;

	(void)state;
	p.act[0] = (struct sproto_action){ SPROTO_AT_EXIT, SPROTO_ADD_RET, SPROTO_PRED_TCOUNTER,
					   SPROTO_GT, 65535, 3, 0, 0 };
	p.act[1] = (struct sproto_action){ SPROTO_AT_EXIT, SPROTO_TADD_RET, SPROTO_PRED_NONE, 0,
					   1023, 0, 0, 0 };
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.point_set.act[0].prim, SPROTO_ADD_RET);
	assert_int_equal(m.u.point_set.act[1].prim, SPROTO_TADD_RET);
	p.act[1].target = 1024; /* a thread counter out of range */
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
	p.act[1].target = 0;
	p.act[1].value = 1; /* the return value is the value */
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
	p.act[1].value = 0;
	p.act[0].target = 65536; /* a counter out of range */
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
}

static void test_bad_requests(void **state)
{
	struct sproto_point_set p = sample_point();
	struct sproto_metric mt = { .id = 1, .n = 1, .term = { { SPROTO_TERM_WALL, 1, 0 } } };
	struct sproto_msg m;
	size_t n;

	(void)state;
	p.point = SPROTO_MAX_POINTS; /* out of range */
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
	p = sample_point();
	p.n = 0;
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
	p = sample_point();
	p.act[0].prim = SPROTO_START_WALL; /* a timer with a value, index 65535 */
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
	p = sample_point();
	p.act[3] = (struct sproto_action){ SPROTO_AT_EXIT, SPROTO_PROFILE, 0, 0, 0, 0, 0x401000, 0 };
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), 1);
	p.act[3].value = 0; /* PROFILE of no function */
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
	p.act[3].value = 0x401000;
	p.act[3].target = 1; /* PROFILE has no target */
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
	p = sample_point();
	p.act[3].pred_value = 1; /* predicate fields without a predicate */
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
	n = sproto_put_point_clear(buf, sizeof(buf), SPROTO_MAX_POINTS - 1, 2);
	assert_int_equal(read_msg(buf, n, &m), -1);
	n = sproto_put_point_clear(buf, sizeof(buf), 0, 0);
	assert_int_equal(read_msg(buf, n, &m), -1);
	n = sproto_put_sampling(buf, sizeof(buf), 999999);
	assert_int_equal(read_msg(buf, n, &m), -1);
	n = sproto_put_sampling(buf, sizeof(buf), SPROTO_MAX_BUCKET_NS + 1);
	assert_int_equal(read_msg(buf, n, &m), -1);
	mt.term[0].index = SPROTO_MAX_TIMERS;
	n = sproto_put_metric_enable(buf, sizeof(buf), &mt);
	assert_int_equal(read_msg(buf, n, &m), -1);
	mt.term[0] = (struct sproto_term){ SPROTO_TERM_COUNTER, 1, 5 }; /* per-thread counter */
	n = sproto_put_metric_enable(buf, sizeof(buf), &mt);
	assert_int_equal(read_msg(buf, n, &m), -1);
	mt.term[0] = (struct sproto_term){ SPROTO_TERM_TCOUNTER, SPROTO_MAX_TCOUNTERS, 0 };
	n = sproto_put_metric_enable(buf, sizeof(buf), &mt);
	assert_int_equal(read_msg(buf, n, &m), -1);
	mt.term[0] = (struct sproto_term){ SPROTO_TERM_KIND_COUNT, 1, 0 };
	n = sproto_put_metric_enable(buf, sizeof(buf), &mt);
	assert_int_equal(read_msg(buf, n, &m), -1);
	mt.term[0] = (struct sproto_term){ SPROTO_TERM_COUNTER, 1, 0 };
	mt.id = SPROTO_MAX_METRICS;
	n = sproto_put_metric_enable(buf, sizeof(buf), &mt);
	assert_int_equal(read_msg(buf, n, &m), -1);
	mt.id = 0;
	mt.n = 0;
	n = sproto_put_metric_enable(buf, sizeof(buf), &mt);
	assert_int_equal(read_msg(buf, n, &m), -1);
	n = sproto_put_metric_disable(buf, sizeof(buf), SPROTO_MAX_METRICS);
	assert_int_equal(read_msg(buf, n, &m), -1);
}

static void test_bad_replies(void **state)
{
	struct sproto_msg m;
	struct sproto_buf b;
	struct sproto_sample_entry e = { 1, 0, 0, 0 };
	size_t n;

	(void)state;
	n = sproto_put_error(buf, sizeof(buf), SPROTO_LIST, "abc");
	buf[SPROTO_HEADER_SIZE + 5] = '\n'; /* text with a line break */
	assert_int_equal(read_msg(buf, n, &m), -1);
	buf[SPROTO_HEADER_SIZE + 5] = 0; /* with a NUL */
	assert_int_equal(read_msg(buf, n, &m), -1);
	assert_int_equal(sproto_put_ok(buf, sizeof(buf), SPROTO_HELLO_REPLY), 0); /* no request */
	n = sproto_put_ok(buf, sizeof(buf), SPROTO_LIST);
	assert_int_equal(n, SPROTO_HEADER_SIZE); /* version 10: no payload (9: its request's type) */
	assert_int_equal(read_msg(buf, n, &m), 1);
	check_truncations(sproto_put_ok(buf, sizeof(buf), SPROTO_LIST)); /* a byte more refused */
	sproto_list_begin(&b, buf, sizeof(buf));
	sproto_list_add_tid(&b, 7);
	n = sproto_end(&b);
	put_le32(buf + SPROTO_HEADER_SIZE + 4, 1000000); /* more threads than bytes */
	assert_int_equal(read_msg(buf, n, &m), -1);
	put_le32(buf + SPROTO_HEADER_SIZE + 4, 1);
	put_le32(buf + SPROTO_HEADER_SIZE + 8, 0); /* thread id 0 */
	assert_int_equal(read_msg(buf, n, &m), -1);
	sproto_sample_begin(&b, buf, sizeof(buf), 0, 1, 5, 0);
	e.flags = SPROTO_S_FIRST | SPROTO_S_LAST | SPROTO_S_VALUE; /* every flag is known */
	sproto_sample_add(&b, &e);
	n = sproto_end(&b);
	assert_int_equal(read_msg(buf, n, &m), 1);
	buf[SPROTO_HEADER_SIZE + 3] = 0xff; /* a count above 1024 */
	buf[SPROTO_HEADER_SIZE + 4] = 0x0f;
	assert_int_equal(read_msg(buf, n, &m), -1);
}

/* A module that lies about its path length, or has an empty path, is refused. */
static void test_bad_modules(void **state)
{
	struct sproto_module mod;
	struct sproto_buf b;
	struct sproto_msg m;
	size_t n, path_len_at;

	(void)state;
	memset(&mod, 0, sizeof(mod));
	strcpy(mod.path, "/bin/x");
	sproto_list_begin(&b, buf, sizeof(buf));
	sproto_list_add_module(&b, &mod);
	n = sproto_end(&b);
	assert_int_equal(read_msg(buf, n, &m), 1);
	path_len_at = SPROTO_HEADER_SIZE + 8 + 24 + 1;
	buf[path_len_at] = 200;
	assert_int_equal(read_msg(buf, n, &m), -1);
	buf[path_len_at] = 0;
	assert_int_equal(read_msg(buf, n, &m), -1);
	buf[path_len_at] = 6;
	buf[SPROTO_HEADER_SIZE + 8 + 24] = 33; /* build id longer than 32 */
	assert_int_equal(read_msg(buf, n, &m), -1);
	buf[SPROTO_HEADER_SIZE + 8 + 24] = 0;
	buf[SPROTO_HEADER_SIZE + 8 + 15] = 0xff; /* lo above hi */
	assert_int_equal(read_msg(buf, n, &m), -1);
	mod.lo = 2;
	mod.hi = 1;
	sproto_list_begin(&b, buf, sizeof(buf));
	sproto_list_add_module(&b, &mod);
	assert_int_equal(sproto_end(&b), 0); /* the writer will not write it either */
}

/* Random corruption of valid messages: any outcome but a crash or an out-of-bounds read. */
static void test_bit_flips(void **state)
{
	struct sproto_point_set p = sample_point();
	struct sproto_metric mt = { .id = 1, .n = 2, .term = { { SPROTO_TERM_WALL, 1, 0 },
							       { SPROTO_TERM_COUNTER, 2, 0 } } };
	uint8_t orig[4096], *copy;
	size_t lens[4];
	unsigned seed = 12345, round, k;
	struct sproto_module mod;
	struct sproto_buf b;

	(void)state;
	memset(&mod, 0, sizeof(mod));
	strcpy(mod.path, "/lib/libc.so.6");
	lens[0] = sproto_put_point_set(orig, sizeof(orig), &p);
	lens[1] = sproto_put_metric_enable(orig + 1024, 1024, &mt);
	sproto_list_begin(&b, orig + 2048, 1024);
	sproto_list_add_module(&b, &mod);
	sproto_list_add_tid(&b, 99);
	lens[2] = sproto_end(&b);
	lens[3] = sproto_put_error(orig + 3072, 1024, SPROTO_LIST, "refused");
	for (round = 0; round < 40000; round++) {
		size_t which = round % 4, n = lens[which];
		int flips = 1 + (int)(rand_r(&seed) % 3);

		copy = malloc(n); /* exact size: valgrind sees any read past the end */
		assert_non_null(copy);
		memcpy(copy, orig + 1024 * which, n);
		for (k = 0; k < (unsigned)flips; k++)
			copy[rand_r(&seed) % n] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
		read_any(copy, n);
		free(copy);
	}
}

/* ---- a connection's SAMPLEs in context (version 9) ---- */

/* A SAMPLE of n entries written in the writer's context w; its size. */
static size_t ctx_sample(struct sproto_sctx *w, uint64_t start, uint64_t end,
			 const struct sproto_sample_entry *e, uint32_t n)
{
	struct sproto_buf b;
	uint32_t i;

	sproto_sample_begin(&b, buf, sizeof(buf), start ? start : 1, start, end, 0);
	sproto_sample_context(&b, w);
	for (i = 0; i < n; i++)
		sproto_sample_add(&b, &e[i]);
	return sproto_end(&b);
}

/* Read back in the reader's context r: every entry as written; whether it had no keys (same:
 * what it must be, -1 either). */
static int ctx_read(struct sproto_sctx *r, size_t n, const struct sproto_sample_entry *e,
		    uint32_t ne, int same)
{
	struct sproto_sample_entry got;
	struct sproto_msg m;
	char err[200];
	uint32_t i;

	assert_int_equal(read_msg(buf, n, &m), 1);
	if (same >= 0)
		assert_int_equal(m.u.sample.same, same);
	assert_int_equal(sproto_sample_resolve(&m.u.sample, r, err, sizeof(err)), 0);
	assert_int_equal(m.u.sample.n, ne);
	for (i = 0; i < ne; i++) { /* version 10: the keyed ones first, then the kept ones */
		uint32_t j;

		sproto_sample_entry(&m.u.sample, i, &got);
		for (j = 0; j < ne && e[j].metric != got.metric; j++)
			;
		assert_true(j < ne);
		assert_int_equal(got.flags, e[j].flags);
		assert_int_equal(got.delta, e[j].delta);
		assert_int_equal(got.value, e[j].flags & SPROTO_S_VALUE ? e[j].value : 0);
	}
	return m.u.sample.same;
}

/* A timer's entries bucket after bucket: the first whole, the next of the same metrics with no
 * key and their deltas less the predicted ones (the last delta scaled by the widths): 1 byte
 * where 4 were; a reader without the context reads no metric there; a SAMPLE of the previous
 * metrics whose count is not theirs, or with none, is refused. */
static void test_sample_context(void **state)
{
	static struct sproto_sctx w, r;
	struct sproto_sample_entry e[2] = { { 20, SPROTO_S_FIRST, 0, 50000000 }, { 21, 0, 0, 3 } };
	const uint64_t t = 1024 * 1000;
	struct sproto_sample_entry got;
	struct sproto_msg m;
	uint8_t raw[8];
	char err[200];
	size_t n;

	(void)state;
	memset(&w, 0, sizeof(w));
	memset(&r, 0, sizeof(r));
	n = ctx_sample(&w, t, t + 50000 * 1024, e, 2);
	assert_int_equal(n, SPROTO_HEADER_SIZE + 1 + 3 + (2 + 4) + (1 + 1)); /* as without */
	ctx_read(&r, n, e, 2, 0);
	e[0].flags = 0;
	e[0].delta = 100000003; /* twice as long a bucket: predicted 100000000 */
	e[1].delta = 6;
	n = ctx_sample(&w, t + 50000 * 1024, t + 150000 * 1024, e, 2);
	assert_int_equal(n, SPROTO_HEADER_SIZE + 1 + 3 + 1 + 1); /* +3 and 0: no keys */
	ctx_read(&r, n, e, 2, 1);
	assert_int_equal(read_msg(buf, n, &m), 1); /* without the context: the raw bytes */
	sproto_sample_entry(&m.u.sample, 0, &got);
	assert_true(got.metric == SPROTO_MAX_METRICS && got.delta == 3);
	e[1].delta = -7; /* one metric only: keys again */
	n = ctx_sample(&w, t + 150000 * 1024, t + 250000 * 1024, e + 1, 1);
	ctx_read(&r, n, e + 1, 1, 0);
	e[1].delta = 40;
	n = ctx_sample(&w, t + 250000 * 1024, t + 350000 * 1024, e + 1, 1);
	ctx_read(&r, n, e + 1, 1, 1);
	/* the same bytes read where the previous SAMPLE had two metrics: refused */
	r.nprev = 2;
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(sproto_sample_resolve(&m.u.sample, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "SAMPLE"));
	/* "same" with no entry */
	raw[0] = 1 | 1 << 1; /* version 10: the head's mode 1 */
	raw[1] = 3;
	raw[2] = 2;
	assert_int_equal(read_msg(buf, raw_sample(raw, 3), &m), -1);
}

/* Version 10, the mode `kept`: a SAMPLE whose metrics are the previous one's but one, and a new
 * one, names the one dropped in a mask and gives the new one's key alone: its exact bytes, read
 * back in context; without the context the keyed entry reads and the kept ones have no
 * metric; a mask naming an entry the previous SAMPLE had not, a keyed metric also kept, fewer
 * or more deltas than kept metrics refused; every cut refused (by the reader or in context). */
static void test_sample_kept(void **state)
{
	static struct sproto_sctx w, r, r2;
	struct sproto_sample_entry e[5], f[5];
	const uint64_t t = 1024 * 1000, u = 100000 * 1024;
	struct sproto_sample_entry got;
	struct sproto_msg m;
	uint8_t raw[32], whole[64];
	char err[200];
	size_t n, cut;
	uint32_t i;

	(void)state;
	memset(&w, 0, sizeof(w));
	memset(&r, 0, sizeof(r));
	for (i = 0; i < 5; i++)
		e[i] = (struct sproto_sample_entry){ 10 + i, SPROTO_S_FIRST, 0, 1000 + i };
	ctx_read(&r, ctx_sample(&w, t, t + u, e, 5), e, 5, 0); /* mode 0: keys */
	for (i = 0; i < 5; i++)
		e[i].flags = 0;
	ctx_read(&r, ctx_sample(&w, t + u, t + 2 * u, e, 5), e, 5, 1); /* mode 1: none */
	/* 11 not changed (not sent); 20 new */
	f[0] = e[0];
	f[1] = e[2];
	f[2] = e[3];
	f[3] = e[4];
	f[4] = (struct sproto_sample_entry){ 20, SPROTO_S_FIRST, 0, 7 };
	f[3].delta = 1004 + 5; /* 5 more than predicted */
	n = ctx_sample(&w, t + 2 * u, t + 3 * u, f, 5);
	/* head 1 (mode 2), width 3, dropped 1 (bit 1: the second entry), keyed 1, the new entry
	 * 3 (id 20 whole: 161 in 2 bytes; 7 in 1), the four kept deltas (each predicted from the
	 * one before it, near: 10 1000, 12 1002 - 1000, 13 1003 - 1002, 14 1009 - 1003): version
	 * 11, their codes in 1 byte (10's 0 code 1, 13's +1 code 2, 12 and 14 code 0), then 12's 2
	 * and 14's 6 in 1 each: 3 bytes (4 in version 10: 1 each) */
	assert_int_equal(n, SPROTO_HEADER_SIZE + 1 + 3 + 1 + 1 + 3 + 1 + 2);
	assert_int_equal(buf[SPROTO_HEADER_SIZE + 9], 1 | 2 << 4);
	assert_true(buf[SPROTO_HEADER_SIZE + 10] == 2 * 2 && buf[SPROTO_HEADER_SIZE + 11] == 2 * 6);
	assert_int_equal(buf[SPROTO_HEADER_SIZE], 2 << 1);
	assert_true(buf[SPROTO_HEADER_SIZE + 4] == 2 && buf[SPROTO_HEADER_SIZE + 5] == 1);
	memcpy(whole, buf, n);
	r2 = r;
	ctx_read(&r, n, f, 5, 0);
	assert_int_equal(read_msg(whole, n, &m), 1);
	assert_true(m.u.sample.kept && m.u.sample.keyed == 1 && m.u.sample.dropped == 2 &&
		    m.u.sample.n == 5);
	sproto_sample_entry(&m.u.sample, 0, &got); /* without the context */
	assert_true(got.metric == 20 && got.delta == 7 && got.flags == SPROTO_S_FIRST);
	sproto_sample_entry(&m.u.sample, 4, &got);
	/* 14, the last kept: predicted from 13's entry before it (their last deltas, 1003 and
	 * 1004, near): 1009 - 1003 */
	assert_true(got.metric == SPROTO_MAX_METRICS && got.delta == 6);
	/* the order read: the keyed one, then the kept ones in the previous order */
	assert_int_equal(sproto_sample_resolve(&m.u.sample, &r2, err, sizeof(err)), 0);
	sproto_sample_entry(&m.u.sample, 0, &got);
	assert_int_equal(got.metric, 20);
	sproto_sample_entry(&m.u.sample, 2, &got);
	assert_int_equal(got.metric, 12);
	/* every cut: refused by the reader, or by the context (fewer deltas than kept) */
	for (cut = SPROTO_HEADER_SIZE; cut < n; cut++) {
		memcpy(buf, whole, cut);
		put_le32(buf + 8, (uint32_t)(cut - SPROTO_HEADER_SIZE));
		if (read_msg(buf, cut, &m) == 1) {
			static struct sproto_sctx before;

			memset(&before, 0, sizeof(before));
			for (i = 0; i < 5; i++)
				before.prev[i] = (uint16_t)e[i].metric;
			before.nprev = 5;
			assert_int_equal(sproto_sample_resolve(&m.u.sample, &before, err,
							       sizeof(err)), -1);
		}
	}
	/* by hand, after a SAMPLE of 10 and 11 (r2): mode 2, the start given */
	memset(&r2, 0, sizeof(r2));
	r2.nprev = 2;
	r2.prev[0] = 10;
	r2.prev[1] = 11;
	raw[0] = 1 | 2 << 1;
	raw[1] = 3; /* start 1 */
	raw[2] = 2; /* width */
	raw[3] = 4; /* dropped: bit 2, an entry the previous SAMPLE had not */
	raw[4] = 0; /* keyed 0 */
	raw[5] = 1 | 1 << 2; /* version 11: two deltas of 0, said by their codes */
	assert_int_equal(read_msg(buf, raw_sample(raw, 6), &m), 1);
	assert_int_equal(m.u.sample.n, 2);
	assert_int_equal(sproto_sample_resolve(&m.u.sample, &r2, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "previous one's metrics"));
	raw[3] = 0; /* none dropped, but a keyed entry of 10: also kept */
	raw[4] = 1;
	raw[5] = 10 << 3;
	raw[6] = 0;
	raw[7] = 1 | 1 << 2; /* two kept deltas of 0 */
	assert_int_equal(read_msg(buf, raw_sample(raw, 8), &m), 1);
	assert_int_equal(sproto_sample_resolve(&m.u.sample, &r2, err, sizeof(err)), -1);
	raw[5] = 12 << 3; /* 12: new; then two kept deltas, then a third: more than kept */
	assert_int_equal(read_msg(buf, raw_sample(raw, 8), &m), 1);
	assert_int_equal(sproto_sample_resolve(&m.u.sample, &r2, err, sizeof(err)), 0);
	r2.nprev = 2;
	r2.prev[0] = 10;
	r2.prev[1] = 11;
	raw[7] = 1 | 1 << 2 | 1 << 4;
	assert_int_equal(read_msg(buf, raw_sample(raw, 8), &m), 1);
	assert_int_equal(sproto_sample_resolve(&m.u.sample, &r2, err, sizeof(err)), -1);
	raw[7] = 1 | 1 << 2; /* two by codes and a third written whole (0: refused below) */
	raw[8] = 2 * 5;
	assert_int_equal(read_msg(buf, raw_sample(raw, 9), &m), 1);
	assert_int_equal(sproto_sample_resolve(&m.u.sample, &r2, err, sizeof(err)), -1);
	raw[4] = 3; /* three keyed, one there: cut short */
	assert_int_equal(read_msg(buf, raw_sample(raw, 8), &m), -1);
}

/* The uvarint at p: its value, its length in *len. */
static uint64_t get_uvar(const uint8_t *p, size_t *len)
{
	uint64_t v = 0;
	size_t i = 0;

	do
		v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
	while (p[i++] & 0x80);
	*len = i;
	return v;
}

static size_t svar_len(int64_t d)
{
	uint64_t z = ((uint64_t)d << 1) ^ (uint64_t)-(int64_t)((uint64_t)d >> 63);
	size_t k = 1;

	while (z >>= 7)
		k++;
	return k;
}

/* Version 11: the kept deltas' 2-bit codes. 40 metrics, then the same 40 each off its
 * prediction by one of 0, +1, -1, 2, -2, 64, -100000 in turn: the codes say the first 32's
 * 0 and +-1 (no byte), an svarint each for the others and for every one past the 32nd; the
 * exact bytes, every delta read back in context; every cut refused (by the reader or in
 * context); 3000 random bit flips read or refused, never past the message; by hand: codes
 * alone (three 0s, no byte), an svarint of 0, 1 or -1 where a code could say it refused
 * (accepted past the 32nd), a code 0 before the last code not 0 without its svarint cut short,
 * a `same` of no delta (codes 0, nothing after) refused. */
static void test_sample_codes(void **state)
{
	static const int64_t off[7] = { 0, 1, -1, 2, -2, 64, -100000 };
	static struct sproto_sctx w, r, before, c;
	struct sproto_sample_entry e[40], got;
	const uint64_t t = 1024 * 1000, u = 100000 * 1024;
	uint64_t codes = 0;
	struct sproto_msg m;
	uint8_t whole[256], copy[256], raw[16];
	size_t n, want = SPROTO_HEADER_SIZE + 1 + 3, len, cut;
	unsigned seed = 11, round;
	char err[200];
	uint32_t i;

	(void)state;
	memset(&w, 0, sizeof(w));
	memset(&r, 0, sizeof(r));
	/* signs alternate: no two entries within SPROTO_LOOK_BACK moved together */
	for (i = 0; i < 40; i++)
		e[i] = (struct sproto_sample_entry){ 100 + i, SPROTO_S_FIRST, 0,
						     (i % 2 ? -1 : 1) * 1000 * (int64_t)(i + 1) };
	ctx_read(&r, ctx_sample(&w, t, t + u, e, 40), e, 40, 0);
	for (i = 0; i < 40; i++) {
		int64_t d = off[i % 7];
		unsigned code = d == 0 ? 1 : d == 1 ? 2 : d == -1 ? 3 : 0;

		e[i].flags = 0;
		e[i].delta += d;
		if (i < SPROTO_CODED)
			codes |= (uint64_t)code << 2 * i;
		if (i >= SPROTO_CODED || !code)
			want += svar_len(d);
	}
	before = r;
	n = ctx_sample(&w, t + u, t + 2 * u, e, 40);
	assert_int_equal(get_uvar(buf + SPROTO_HEADER_SIZE + 1 + 3, &len), codes);
	assert_int_equal(n, want + len);
	memcpy(whole, buf, n);
	assert_int_equal(ctx_read(&r, n, e, 40, 1), 1);
	for (cut = SPROTO_HEADER_SIZE; cut < n; cut++) {
		memcpy(buf, whole, cut);
		put_le32(buf + 8, (uint32_t)(cut - SPROTO_HEADER_SIZE));
		c = before;
		if (read_msg(buf, cut, &m) == 1)
			assert_int_equal(sproto_sample_resolve(&m.u.sample, &c, err, sizeof(err)), -1);
	}
	for (round = 0; round < 3000; round++) {
		unsigned k, flips = 1 + rand_r(&seed) % 3;

		memcpy(copy, whole, n);
		for (k = 0; k < flips; k++)
			copy[SPROTO_HEADER_SIZE + rand_r(&seed) % (n - SPROTO_HEADER_SIZE)] ^=
				(uint8_t)(1u << (rand_r(&seed) % 8));
		if (read_msg(copy, n, &m) != 1)
			continue;
		for (i = 0; i < m.u.sample.n; i++) /* without the context: as written */
			sproto_sample_entry(&m.u.sample, i, &got);
		memcpy(&c, &before, sizeof(c));
		if (sproto_sample_resolve(&m.u.sample, &c, err, sizeof(err)) == 0)
			assert_true(m.u.sample.n == 40);
	}
	/* by hand, after a SAMPLE of three metrics: head `same` (the start given), start 1,
	 * width 2, codes */
	memset(&c, 0, sizeof(c));
	c.nprev = 3;
	raw[0] = 1 | 1 << 1;
	raw[1] = 3;
	raw[2] = 2;
	raw[3] = 1 | 1 << 2 | 1 << 4; /* three 0s, no byte */
	assert_int_equal(read_msg(buf, raw_sample(raw, 4), &m), 1);
	assert_int_equal(m.u.sample.n, 3);
	sproto_sample_entry(&m.u.sample, 2, &got);
	assert_true(got.metric == SPROTO_MAX_METRICS && got.delta == 0);
	raw[3] = 1 | 3 << 2 | 2 << 4; /* 0, -1, +1 */
	assert_int_equal(read_msg(buf, raw_sample(raw, 4), &m), 1);
	assert_int_equal(sproto_sample_resolve(&m.u.sample, &c, err, sizeof(err)), 0);
	sproto_sample_entry(&m.u.sample, 1, &got);
	assert_int_equal(got.delta, -1);
	sproto_sample_entry(&m.u.sample, 2, &got);
	assert_int_equal(got.delta, 1);
	for (i = 0; i < 3; i++) { /* code 0 then an svarint of 0, -1, 1: one delta, one way */
		raw[3] = 1 | 1 << 2;
		raw[4] = (uint8_t)i;
		assert_int_equal(read_msg(buf, raw_sample(raw, 5), &m), -1);
	}
	raw[4] = 2 * 2; /* 2: accepted */
	assert_int_equal(read_msg(buf, raw_sample(raw, 5), &m), 1);
	assert_int_equal(m.u.sample.n, 3);
	raw[3] = 1 << 4; /* the third's code 1, the first two's 0: their svarints missing */
	assert_int_equal(read_msg(buf, raw_sample(raw, 4), &m), -1);
	raw[4] = 2 * 5;
	assert_int_equal(read_msg(buf, raw_sample(raw, 5), &m), -1); /* one of the two */
	raw[5] = 2 * 9;
	assert_int_equal(read_msg(buf, raw_sample(raw, 6), &m), 1);
	assert_int_equal(m.u.sample.n, 3);
	raw[3] = 0; /* `same` with no delta */
	assert_int_equal(read_msg(buf, raw_sample(raw, 4), &m), -1);
	assert_int_equal(read_msg(buf, raw_sample(raw, 3), &m), -1); /* no codes */
	/* past the 32nd, 0 is an svarint: 32 codes of 0 (ten bytes of 0x55 ... 0x01 ... ), then
	 * the 33rd's 0 */
	{
		uint8_t big[32];
		size_t k = 3, l;
		uint64_t all = 0;

		memcpy(big, raw, 3);
		for (i = 0; i < SPROTO_CODED; i++)
			all |= 1ull << 2 * i;
		do {
			big[k++] = (uint8_t)((all & 0x7f) | (all > 0x7f ? 0x80 : 0));
			all >>= 7;
		} while (all);
		l = k;
		big[k++] = 0;
		assert_int_equal(read_msg(buf, raw_sample(big, k), &m), 1);
		assert_int_equal(m.u.sample.n, SPROTO_CODED + 1);
		assert_int_equal(read_msg(buf, raw_sample(big, l), &m), 1);
		assert_int_equal(m.u.sample.n, SPROTO_CODED);
	}
}

/* Version 10: BUCKET_REPLYs in context: the first keyed (BUCKET_REPLY, its head), then one of
 * the same metrics but one (BUCKET_KEPT: the head `kept` left out), then the same (BUCKET_SAME:
 * `same` left out); each read back exactly with its width from its ask; a BUCKET_KEPT's and a
 * BUCKET_SAME's every cut refused, by the reader or in context. */
static void test_bucket_types(void **state)
{
	static struct sproto_sctx w, r, before;
	struct sproto_sample_entry e[4], got;
	const uint64_t asked = 50000000, t = 1024 * 1000;
	uint64_t start = t, end;
	struct sproto_buf b;
	struct sproto_msg m;
	uint8_t whole[64];
	char err[200];
	size_t n, cut;
	uint32_t i, round;

	(void)state;
	memset(&w, 0, sizeof(w));
	memset(&r, 0, sizeof(r));
	for (i = 0; i < 4; i++)
		e[i] = (struct sproto_sample_entry){ 3 + i, SPROTO_S_FIRST, 0, 700 + 100 * i };
	for (round = 0; round < 3; round++) {
		uint32_t ne = round ? 3 : 4; /* then without metric 3 */
		const struct sproto_sample_entry *in = round ? e + 1 : e;

		end = sproto_bucket_end(start, start + asked + 3000000, asked); /* 3 ms late */
		sproto_bucket_reply_begin(&b, buf, sizeof(buf), asked, start, start, end, 0);
		sproto_sample_context(&b, &w);
		for (i = 0; i < ne; i++)
			sproto_sample_add(&b, &in[i]);
		n = sproto_end(&b);
		assert_int_equal(read_msg(buf, n, &m), 1);
		assert_int_equal(m.h.type, round == 0 ? SPROTO_BUCKET_REPLY
					 : round == 1 ? SPROTO_BUCKET_KEPT : SPROTO_BUCKET_SAME);
		/* version 11: the codes 1 byte (none applies: each d is 10, an svarint) */
		if (round == 1) /* no head; width 1 (47 quanta past the ask), dropped, keyed 0, 3 d */
			assert_int_equal(n, SPROTO_HEADER_SIZE + 1 + 1 + 1 + 1 + 3);
		if (round == 2) /* width, 3 d */
			assert_int_equal(n, SPROTO_HEADER_SIZE + 1 + 1 + 3);
		memcpy(whole, buf, n);
		before = r;
		assert_int_equal(sproto_sample_asked(&m.u.sample, asked), 0);
		assert_int_equal(m.u.sample.end_ns - m.u.sample.start_ns, end - start);
		assert_int_equal(sproto_sample_resolve(&m.u.sample, &r, err, sizeof(err)), 0);
		assert_int_equal(m.u.sample.n, ne);
		for (i = 0; i < ne; i++) {
			sproto_sample_entry(&m.u.sample, i, &got);
			assert_true(got.metric == in[i].metric && got.delta == in[i].delta &&
				    got.flags == in[i].flags);
		}
		for (cut = SPROTO_HEADER_SIZE; round && cut < n; cut++) {
			static struct sproto_sctx c;

			memcpy(buf, whole, cut);
			put_le32(buf + 8, (uint32_t)(cut - SPROTO_HEADER_SIZE));
			c = before;
			if (read_msg(buf, cut, &m) == 1 &&
			    sproto_sample_asked(&m.u.sample, asked) == 0)
				assert_int_equal(sproto_sample_resolve(&m.u.sample, &c, err,
								       sizeof(err)), -1);
		}
		for (i = 0; i < 4; i++) {
			e[i].flags = 0;
			e[i].delta += 10;
		}
		start = end;
	}
}

/* Version 10: metrics whose last deltas were near (within 1/32, the same width) are predicted
 * from the one before in the SAMPLE: two timers of one procedure both 500 units longer cost 2
 * bytes and then 1 (d 0), not 2 and 2; the rule's edges: 1/32 apart is near, more is not; a
 * delta of 0, other widths and opposite signs are never near; only SPROTO_LOOK_BACK entries
 * back. Read back exactly in context each time. */
static void test_sample_moved_with(void **state)
{
	static struct sproto_sctx w, r;
	struct sproto_sample_entry e[10];
	const uint64_t t = 1024 * 1000, u = 100000 * 1024;
	struct sproto_msg m;
	struct sproto_sample_entry got;
	size_t n;
	uint32_t i;

	(void)state;
	memset(&w, 0, sizeof(w));
	memset(&r, 0, sizeof(r));
	e[0] = (struct sproto_sample_entry){ 1, SPROTO_S_FIRST, 0, 3200 };
	e[1] = (struct sproto_sample_entry){ 2, SPROTO_S_FIRST, 0, 3200 };
	ctx_read(&r, ctx_sample(&w, t, t + u, e, 2), e, 2, 0);
	e[0].flags = e[1].flags = 0;
	e[0].delta = e[1].delta = 3700;
	n = ctx_sample(&w, t + u, t + 2 * u, e, 2);
	assert_int_equal(n, SPROTO_HEADER_SIZE + 1 + 3 + 2 + 1); /* d 500, then 0 */
	ctx_read(&r, n, e, 2, 1);
	assert_int_equal(read_msg(buf, n, &m), 1);
	sproto_sample_entry(&m.u.sample, 1, &got);
	assert_int_equal(got.delta, 0);
	/* 3700 and 3700 + 115 (1/32 of 3700 is 115): near; + 116 the third time: not */
	e[0].delta = 3700;
	e[1].delta = 3815;
	ctx_read(&r, ctx_sample(&w, t + 2 * u, t + 3 * u, e, 2), e, 2, 1);
	e[0].delta = 4000;
	e[1].delta = 4115; /* near 3700? 3815 - 3700 = 115 <= 3815 / 32 = 119: predicted 4000 */
	n = ctx_sample(&w, t + 3 * u, t + 4 * u, e, 2);
	ctx_read(&r, n, e, 2, 1);
	assert_int_equal(read_msg(buf, n, &m), 1);
	sproto_sample_entry(&m.u.sample, 1, &got);
	assert_int_equal(got.delta, 115);
	e[1].delta = 4000 + 4000 / 32 + 1; /* 4126, 126 from 4000 */
	ctx_read(&r, ctx_sample(&w, t + 4 * u, t + 5 * u, e, 2), e, 2, 1);
	n = ctx_sample(&w, t + 5 * u, t + 6 * u, e, 2); /* 126 > 4126 / 32 = 128? no: near */
	ctx_read(&r, n, e, 2, 1);
	assert_int_equal(read_msg(buf, n, &m), 1);
	sproto_sample_entry(&m.u.sample, 1, &got);
	assert_int_equal(got.delta, 126); /* predicted 4000: e[0]'s this time */
	e[1].delta = 4200; /* then 4000 and 4200: 200 > 4200 / 32 = 131, not near: its own */
	ctx_read(&r, ctx_sample(&w, t + 6 * u, t + 7 * u, e, 2), e, 2, 1);
	n = ctx_sample(&w, t + 7 * u, t + 8 * u, e, 2);
	ctx_read(&r, n, e, 2, 1);
	assert_int_equal(read_msg(buf, n, &m), 1);
	sproto_sample_entry(&m.u.sample, 1, &got);
	assert_int_equal(got.delta, 0); /* 4200 - 4200 */
	/* opposite signs and 0 never near; ten metrics all alike: the last looks 8 back only */
	e[0].delta = -4000;
	e[1].delta = 4000;
	ctx_read(&r, ctx_sample(&w, t + 8 * u, t + 9 * u, e, 2), e, 2, 1);
	n = ctx_sample(&w, t + 9 * u, t + 10 * u, e, 2);
	ctx_read(&r, n, e, 2, 1);
	assert_int_equal(read_msg(buf, n, &m), 1);
	sproto_sample_entry(&m.u.sample, 1, &got);
	assert_int_equal(got.delta, 0);
	for (i = 0; i < 10; i++)
		e[i] = (struct sproto_sample_entry){ 10 + i, SPROTO_S_FIRST, 0, i == 0 ? 0 : 50 };
	ctx_read(&r, ctx_sample(&w, t + 10 * u, t + 11 * u, e, 10), e, 10, 0);
	for (i = 0; i < 10; i++) {
		e[i].flags = 0;
		e[i].delta = i == 0 ? 7 : 60;
	}
	n = ctx_sample(&w, t + 11 * u, t + 12 * u, e, 10);
	ctx_read(&r, n, e, 10, 1);
	assert_int_equal(read_msg(buf, n, &m), 1);
	sproto_sample_entry(&m.u.sample, 0, &got);
	assert_int_equal(got.delta, 7); /* 0 before: its own 0 predicted, never near */
	sproto_sample_entry(&m.u.sample, 1, &got);
	assert_int_equal(got.delta, 10); /* its own 50 */
	for (i = 2; i < 10; i++) {
		sproto_sample_entry(&m.u.sample, i, &got);
		assert_int_equal(got.delta, 0); /* the one before's 60 */
	}
}

/* Random SAMPLEs through a writer's and a reader's context: metrics, flags, deltas (extremes
 * too) and widths (0, huge) read back exactly, SAMPLE after SAMPLE. */
static void test_sample_context_random(void **state)
{
	static struct sproto_sctx w, r;
	static const int64_t odd[] = { INT64_MIN, INT64_MAX, -1, 0, 1, 1ll << 31, -(1ll << 31),
				       (1ll << 31) - 1 };
	struct sproto_sample_entry e[64];
	unsigned seed = 99, round;
	uint64_t t = 4096, ids = 0;
	int sames = 0;

	(void)state;
	memset(&w, 0, sizeof(w));
	memset(&r, 0, sizeof(r));
	for (round = 0; round < 3000; round++) {
		uint64_t width = rand_r(&seed) % 4 == 0 ? 0 : (uint64_t)(rand_r(&seed) % 5000000);
		uint32_t n = 0, id;
		size_t len;

		if (rand_r(&seed) % 3) /* often the same metrics as before */
			ids = rand_r(&seed) % 5 == 0 ? (uint64_t)rand_r(&seed) << 32 | rand_r(&seed)
						     : ids;
		if (round % 500 == 7)
			width = (1ull << 40) + 5; /* past what scales in 64 bits */
		for (id = 0; id < 64; id++) {
			struct sproto_sample_entry *x = &e[n];

			if (!(ids >> id & 1))
				continue;
			x->metric = id * 16 + 3;
			x->flags = rand_r(&seed) % 20 == 0 ? SPROTO_S_FIRST | SPROTO_S_VALUE : 0;
			if (rand_r(&seed) % 50 == 0)
				x->flags |= SPROTO_S_LAST;
			x->value = x->flags & SPROTO_S_VALUE ? (int64_t)rand_r(&seed) - 99 : 0;
			x->delta = rand_r(&seed) % 10 == 0 ? odd[rand_r(&seed) % 8]
				 : (int64_t)(rand_r(&seed) % 100000) - 5000;
			n++;
		}
		len = ctx_sample(&w, t, t + width, e, n);
		assert_true(len > 0);
		sames += ctx_read(&r, len, e, n, -1);
		t = sproto_sample_end(t, t + width);
	}
	assert_true(sames > 300); /* the metrics of the SAMPLE before, without their keys */
}

/* ---- short frames (version 9) ---- */

/* A whole message made short in place: its short frame's bytes at the front of out. */
static size_t shorten_into(uint8_t *out, size_t n)
{
	size_t off, k = sproto_shorten(buf, n, &off);

	if (k)
		memmove(out, buf + off, k);
	return k;
}

/* A short frame read and decoded: 1, 0 (not whole), -1 (refused). */
static int read_short(const uint8_t *p, size_t n, struct sproto_msg *m)
{
	struct sproto_header h;
	char err[256] = "";
	long len = sproto_frame_short(p, n, &h, err, sizeof(err));

	if (len <= 0) {
		if (len < 0)
			assert_true(err[0] && !strchr(err, '\n'));
		return len < 0 ? -1 : 0;
	}
	assert_int_equal((size_t)len, n);
	assert_true(h.magic == SPROTO_MAGIC && h.version == SPROTO_VERSION);
	if (sproto_decode(&h, p + h.size, m, err, sizeof(err)) != 0)
		return -1;
	return 1;
}

/* What the runtime sends after its HELLO_REPLY: {u8 type, uvarint length}, the payload as in
 * the whole frame; exact sizes, every prefix waits for more, the writer refuses a request or
 * something that is not a whole message, the reader a request's type, an unknown one, a
 * length in more bytes than it takes or above 1 MiB. */
static void test_short_frames(void **state)
{
	struct sproto_sample_entry e = { 3, 0, 0, 5 };
	struct sproto_costs c = sample_costs();
	uint8_t sh[2048], big[8];
	struct sproto_buf b;
	struct sproto_msg m;
	size_t n, k, off, i;

	(void)state;
	n = sproto_put_ok(buf, sizeof(buf), SPROTO_BATCH);
	k = shorten_into(sh, n);
	assert_int_equal(k, 2); /* OK: 16 bytes in version 8, 3 in 9 */
	assert_true(sh[0] == SPROTO_OK && sh[1] == 0);
	assert_int_equal(read_short(sh, k, &m), 1);
	assert_true(m.h.type == SPROTO_OK);
	for (i = 0; i < k; i++)
		assert_int_equal(read_short(sh, i, &m), 0);
	sproto_bucket_reply_begin(&b, buf, sizeof(buf), 50 * 1024, 1024, 1024, 1024 + 50 * 1024, 0);
	sproto_sample_add(&b, &e);
	n = sproto_end(&b);
	k = shorten_into(sh, n);
	assert_int_equal(k, n - SPROTO_HEADER_SIZE + 2);
	assert_int_equal(read_short(sh, k, &m), 1);
	assert_true(m.h.type == SPROTO_BUCKET_REPLY && m.u.sample.n == 1 && m.u.sample.follows);
	n = sproto_put_costs_reply(buf, sizeof(buf), &c);
	k = shorten_into(sh, n);
	assert_int_equal(read_short(sh, k, &m), 1);
	assert_int_equal(m.u.costs.n, 3);
	/* a payload of 200 bytes: a length of 2 bytes */
	n = sproto_put_error(buf, sizeof(buf), SPROTO_LIST, "0123456789012345678901234567890123456789"
			     "0123456789012345678901234567890123456789012345678901234567890123456789"
			     "0123456789012345678901234567890123456789012345678901234567890123456789"
			     "0123456789012345");
	assert_int_equal(n, SPROTO_HEADER_SIZE + 200);
	k = shorten_into(sh, n);
	assert_int_equal(k, 3 + 200);
	assert_true(sh[1] == (0x80 | (200 & 0x7f)) && sh[2] == 1);
	assert_int_equal(read_short(sh, k, &m), 1);
	assert_int_equal(m.h.type, SPROTO_ERROR);
	for (i = 0; i < k; i++)
		assert_int_equal(read_short(sh, i, &m), 0);
	/* the writer: requests stay whole frames; only whole messages */
	n = sproto_put_empty(buf, sizeof(buf), SPROTO_PAUSE);
	assert_int_equal(sproto_shorten(buf, n, &off), 0);
	n = sproto_put_ok(buf, sizeof(buf), SPROTO_BATCH);
	assert_int_equal(sproto_shorten(buf, n - 1, &off), 0);
	assert_int_equal(sproto_shorten(buf, SPROTO_HEADER_SIZE - 1, &off), 0);
	buf[0] ^= 1;
	assert_int_equal(sproto_shorten(buf, n, &off), 0);
	/* the reader */
	big[0] = SPROTO_BUCKET; /* a request's type */
	big[1] = 0;
	assert_int_equal(read_short(big, 2, &m), -1);
	big[0] = 0x8f; /* no such reply */
	assert_int_equal(read_short(big, 2, &m), -1);
	big[0] = 0;
	assert_int_equal(read_short(big, 2, &m), -1);
	big[0] = SPROTO_OK;
	big[1] = 0x81; /* 1 in two bytes */
	big[2] = 0;
	assert_int_equal(read_short(big, 3, &m), -1);
	big[1] = 0x80; /* 2^20 + 1: too long */
	big[2] = 0x80;
	big[3] = 0x40 | 1;
	assert_int_equal(read_short(big, 4, &m), -1);
	big[3] = 0x40; /* 2^20: the most a payload may be; not all there */
	assert_int_equal(read_short(big, 4, &m), 0);
	big[3] = 0x80; /* a fourth length byte */
	big[4] = 1;
	assert_int_equal(read_short(big, 5, &m), -1);
	big[1] = 2; /* an OK of 2 bytes, one of them there */
	big[2] = SPROTO_LIST;
	assert_int_equal(read_short(big, 3, &m), 0);
	big[1] = 1; /* an OK of 1 byte (version 9's): refused by its decoder (version 10: empty) */
	assert_int_equal(read_short(big, 3, &m), -1);
	big[1] = 0;
	assert_int_equal(read_short(big, 2, &m), 1);
}

/* Random bit flips in short frames: refused, not whole or read whole, never out of bounds. */
static void test_short_flips(void **state)
{
	struct sproto_sample_entry e[2] = { { 3, SPROTO_S_FIRST | SPROTO_S_VALUE, 9, 9 },
					    { 40, 0, 0, -300000 } };
	struct sproto_costs c = sample_costs();
	static struct sproto_sctx w;
	uint8_t orig[4][512], *copy;
	unsigned seed = 4242, round, k;
	struct sproto_buf b;
	size_t lens[4];

	(void)state;
	sproto_sample_begin(&b, buf, sizeof(buf), 4096, 4096, 90000000, 2);
	sproto_sample_add(&b, &e[0]);
	sproto_sample_add(&b, &e[1]);
	lens[0] = shorten_into(orig[0], sproto_end(&b));
	lens[1] = shorten_into(orig[1], sproto_put_ok(buf, sizeof(buf), SPROTO_BATCH));
	lens[2] = shorten_into(orig[2], sproto_put_costs_reply(buf, sizeof(buf), &c));
	memset(&w, 0, sizeof(w)); /* a SAMPLE of the previous one's metrics: no keys */
	e[0].flags = 0;
	lens[3] = ctx_sample(&w, 4096, 90000000, e, 2);
	lens[3] = ctx_sample(&w, 90000000 + 1024, 190000000, e, 2);
	assert_int_equal(buf[SPROTO_HEADER_SIZE], 1 << 1); /* the head: mode 1, no start */
	lens[3] = shorten_into(orig[3], lens[3]);
	for (round = 0; round < 40000; round++) {
		size_t which = round % 4, n = lens[which];
		int flips = 1 + (int)(rand_r(&seed) % 3);

		assert_true(n > 0);
		copy = malloc(n); /* exact size: valgrind sees any read past the end */
		assert_non_null(copy);
		memcpy(copy, orig[which], n);
		for (k = 0; k < (unsigned)flips; k++)
			copy[rand_r(&seed) % n] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
		if (copy[0] == 'S')
			copy[0] ^= 1; /* read as a short frame (read_any's rule) */
		read_any(copy, n);
		free(copy);
	}
}

/* ---- RESOURCES and RESOURCES_REPLY (version 5), the RECORD primitive ---- */

static const uint64_t no_drops[SPROTO_OBJ_KINDS];

/* A reply of three objects: two mutexes (one seen initialised), a semaphore. */
static size_t sample_objects(uint8_t *mem, size_t cap)
{
	static const uint64_t drops[SPROTO_OBJ_KINDS] = { 5, 0, 0, 0, 1 };
	struct sproto_object o[3] = {
		{ 0x5555000012a0ull, 1000, 1, SPROTO_OBJ_MUTEX, 0x555500001234ull },
		{ 0x5555000012d0ull, 0, 1, SPROTO_OBJ_MUTEX, 0x555500001234ull },
		{ 0x1000, 8, 0, SPROTO_OBJ_SEM, 0 },
	};
	struct sproto_buf b;
	int i;

	sproto_objects_begin(&b, mem, cap, 8192, drops);
	for (i = 0; i < 3; i++)
		sproto_objects_add(&b, &o[i]);
	return sproto_end(&b);
}

static void test_resources(void **state)
{
	struct sproto_object o;
	struct sproto_msg m;
	size_t n;

	(void)state;
	n = sproto_put_resources(buf, sizeof(buf), 0x1f);
	assert_int_equal(n, SPROTO_HEADER_SIZE + 4);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.h.type, SPROTO_RESOURCES);
	assert_true(sproto_is_request(SPROTO_RESOURCES));
	assert_int_equal(m.u.resources.kinds, 0x1f);
	check_truncations(n);
	assert_int_equal(sproto_put_resources(buf, sizeof(buf), 0), 0);    /* no kind */
	assert_int_equal(sproto_put_resources(buf, sizeof(buf), 0x20), 0); /* no such kind */
	assert_int_equal(sproto_put_resources(buf, sizeof(buf), SPROTO_RES_NEW), 0);
	n = sproto_put_resources(buf, sizeof(buf), 0x3 | SPROTO_RES_NEW); /* version 8 */
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.resources.kinds, 0x103);
	n = sample_objects(buf, sizeof(buf));
	/* version 10: n 1 byte, slots 2, the kinds that dropped some 1 (mutex, sem), their counts
	 * 1 each (9 bytes in version 8: u16 n and 5 counts); entries 18 (whole address and site),
	 * 11 (the next address 0x30 up), 6 (another kind: the address whole) — 144 bytes before
	 * version 8 */
	assert_int_equal(n, SPROTO_HEADER_SIZE + 6 + 18 + 11 + 6);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_false(sproto_is_request(SPROTO_RESOURCES_REPLY));
	assert_int_equal(m.u.objects.n, 3);
	assert_int_equal(m.u.objects.slots, 8192);
	assert_int_equal(m.u.objects.dropped[0], 5);
	assert_int_equal(m.u.objects.dropped[4], 1);
	sproto_object(&m.u.objects, 0, &o);
	assert_int_equal(o.addr, 0x5555000012a0ull);
	assert_int_equal(o.uses, 1000);
	assert_int_equal(o.inits, 1);
	assert_int_equal(o.kind, SPROTO_OBJ_MUTEX);
	assert_int_equal(o.site, 0x555500001234ull);
	sproto_object(&m.u.objects, 2, &o);
	assert_int_equal(o.addr, 0x1000);
	assert_int_equal(o.kind, SPROTO_OBJ_SEM);
	assert_int_equal(o.uses, 8);
	assert_int_equal(o.site, 0);
	sproto_object(&m.u.objects, 3, &o); /* past the end: zeroes */
	assert_int_equal(o.addr, 0);
	check_truncations(n);
	/* no table yet: nothing */
	{
		struct sproto_buf b;

		sproto_objects_begin(&b, buf, sizeof(buf), 0, no_drops);
		n = sproto_end(&b);
		assert_int_equal(n, SPROTO_HEADER_SIZE + 3); /* n, slots, no kind dropped */
		assert_int_equal(read_msg(buf, n, &m), 1);
		assert_int_equal(m.u.objects.n, 0);
		assert_int_equal(m.u.objects.slots, 0);
	}
	{ /* version 10: 200 entries, a count of 2 bytes (the entries moved on by one) */
		struct sproto_buf b;
		struct sproto_object e = { 0x1000, 1, 0, SPROTO_OBJ_MUTEX, 0 };
		uint32_t i;

		sproto_objects_begin(&b, buf, sizeof(buf), 8192, no_drops);
		for (i = 0; i < 200; i++, e.addr += 16)
			sproto_objects_add(&b, &e);
		n = sproto_end(&b);
		/* the count 2, slots 2, no drop 1; the first entry 6 (its address 2), the others 5 */
		assert_int_equal(n, SPROTO_HEADER_SIZE + 5 + 6 + 199 * 5);
		assert_int_equal(read_msg(buf, n, &m), 1);
		assert_int_equal(m.u.objects.n, 200);
		sproto_object(&m.u.objects, 199, &o);
		assert_true(o.addr == 0x1000 + 199 * 16 && o.uses == 1);
	}
}

/* The writer refuses what the reader would: entries out of order or twice, address 0 or too
 * high, an unknown kind, nothing seen, more entries than slots. */
static void test_objects_writer(void **state)
{
	struct sproto_object ok = { 0x2000, 1, 0, SPROTO_OBJ_RWLOCK, 0 }, bad;
	struct sproto_buf b;
	int i;

	(void)state;
	for (i = 0; i < 7; i++) {
		bad = ok;
		switch (i) {
		case 0: bad.addr = 0x1000; break;  /* below the last one, same kind */
		case 1: break;                     /* twice */
		case 2: bad.kind = SPROTO_OBJ_MUTEX; bad.addr = 0x3000; break; /* kind goes back */
		case 3: bad.addr = 0; bad.kind = SPROTO_OBJ_SEM; break;
		case 4: bad.addr = SPROTO_OBJ_ADDR_LIMIT; bad.kind = SPROTO_OBJ_SEM; break;
		case 5: bad.kind = SPROTO_OBJ_KINDS; break;
		case 6: bad.uses = 0; bad.addr = 0x3000; break;
		}
		sproto_objects_begin(&b, buf, sizeof(buf), 8, no_drops);
		sproto_objects_add(&b, &ok);
		sproto_objects_add(&b, &bad);
		assert_int_equal(sproto_end(&b), 0);
	}
	sproto_objects_begin(&b, buf, sizeof(buf), 1, no_drops); /* one slot, two entries */
	sproto_objects_add(&b, &ok);
	ok.addr++;
	sproto_objects_add(&b, &ok);
	assert_int_equal(sproto_end(&b), 0);
}

/* A byte of a valid reply changed at off (payload offset): refused. */
static void expect_bad_objects(size_t off, uint8_t v)
{
	struct sproto_msg m;
	size_t n = sample_objects(buf, sizeof(buf));

	assert_int_equal(read_msg(buf, n, &m), 1);
	buf[SPROTO_HEADER_SIZE + off] = v;
	assert_int_equal(read_msg(buf, n, &m), -1);
}

static size_t put_uv(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return n;
}

/* A reply written by hand: n entries of 5 numbers each (kind step, address, uses, inits,
 * site), 8 slots, no drops. 1 read, -1 refused. */
static int hand_objects(uint32_t n, const uint64_t (*e)[5])
{
	struct sproto_msg m;
	size_t len = SPROTO_HEADER_SIZE;
	uint32_t i, k;

	len += put_uv(buf + len, n); /* version 10: n, slots, no kind dropped */
	len += put_uv(buf + len, 8);
	buf[len++] = 0;
	for (i = 0; i < n; i++)
		for (k = 0; k < 5; k++)
			len += put_uv(buf + len, e[i][k]);
	put_le32(buf, SPROTO_MAGIC);
	buf[4] = SPROTO_VERSION;
	buf[5] = 0;
	buf[6] = SPROTO_RESOURCES_REPLY;
	buf[7] = 0;
	put_le32(buf + 8, (uint32_t)(len - SPROTO_HEADER_SIZE));
	return read_msg(buf, len, &m);
}

/* A reply of no entry whose header is the k bytes h (version 10): 1 read, -1 refused. */
static int hand_header(const uint8_t *h, size_t k, struct sproto_msg *m)
{
	put_le32(buf, SPROTO_MAGIC);
	buf[4] = SPROTO_VERSION;
	buf[5] = 0;
	buf[6] = SPROTO_RESOURCES_REPLY;
	buf[7] = 0;
	put_le32(buf + 8, (uint32_t)k);
	memcpy(buf + SPROTO_HEADER_SIZE, h, k);
	return read_msg(buf, SPROTO_HEADER_SIZE + k, m);
}

static void test_bad_objects(void **state)
{
	/* version 10's header: n, slots, the kinds that dropped some, their counts */
	static const uint8_t empty[] = { 0, 8, 0 }, one[] = { 0, 8, 1, 7 };
	static const uint8_t many[] = { 0x81, 0x40, 0xff, 0x7f, 0 }; /* n 8193, slots 16383 */
	static const uint8_t slots[] = { 0, 0x81, 0x40, 0 };          /* slots 8193 */
	static const uint8_t fewer[] = { 2, 1, 0 };                   /* 2 entries, 1 slot */
	static const uint8_t kind5[] = { 0, 8, 0x20, 1 };             /* no kind 5 */
	static const uint8_t zero[] = { 0, 8, 1, 0 };                 /* a count of 0 named */
	static const uint8_t cut[] = { 0, 8, 0x11, 5 };               /* kind 4's count missing */
	const size_t e1 = 24; /* the second entry */
	const uint64_t lim = SPROTO_OBJ_ADDR_LIMIT;
	const uint64_t good[2][5] = { { 1, 0x1000, 1, 0, 0 }, { 0, 0x10, 0, 1, 0x4000 } };
	const uint64_t twice[2][5] = { { 1, 0x1000, 1, 0, 0 }, { 0, 0, 1, 0, 0 } };
	const uint64_t high[1][5] = { { 0, lim, 1, 0, 0 } };
	const uint64_t past[2][5] = { { 0, lim - 1, 1, 0, 0 }, { 0, 1, 1, 0, 0 } };
	const uint64_t kind[2][5] = { { 3, 0x1000, 1, 0, 0 }, { 2, 0x10, 1, 0, 0 } };
	const uint64_t none[1][5] = { { 0, 0x1000, 0, 0, 0 } };
	const uint64_t inits[1][5] = { { 0, 0x1000, 0, 1ull << 32, 0 } };
	struct sproto_msg m;
	size_t n;

	(void)state;
	expect_bad_objects(0, 4);          /* a count that lies: 4 entries, 3 there */
	expect_bad_objects(0, 2);          /* 2: bytes left over */
	expect_bad_objects(6, 5);          /* kind out of range */
	assert_int_equal(hand_header(empty, sizeof(empty), &m), 1);
	assert_int_equal(hand_header(one, sizeof(one), &m), 1);
	assert_true(m.u.objects.dropped[0] == 7 && m.u.objects.dropped[1] == 0);
	assert_int_equal(hand_header(many, sizeof(many), &m), -1);
	assert_int_equal(hand_header(slots, sizeof(slots), &m), -1);
	assert_int_equal(hand_header(fewer, sizeof(fewer), &m), -1);
	assert_int_equal(hand_header(kind5, sizeof(kind5), &m), -1);
	assert_int_equal(hand_header(zero, sizeof(zero), &m), -1);
	assert_int_equal(hand_header(cut, sizeof(cut), &m), -1);
	expect_bad_objects(e1 + 3, 0);     /* seen neither used nor initialised */
	expect_bad_objects(e1 + 1, 0);     /* the same address as the one before: twice */
	expect_bad_objects(e1, 1);         /* kinds 1 then 1 + 4: past the last kind */
	assert_int_equal(hand_objects(2, good), 1);
	assert_int_equal(hand_objects(2, twice), -1); /* a step of 0: twice */
	assert_int_equal(hand_objects(1, high), -1);  /* an address at the limit */
	assert_int_equal(hand_objects(2, past), -1);  /* a step past it */
	assert_int_equal(hand_objects(2, kind), -1);  /* kinds 3 then 5 */
	assert_int_equal(hand_objects(1, none), -1);  /* neither used nor initialised */
	assert_int_equal(hand_objects(1, inits), -1); /* initialisations past 32 bits */
	/* RESOURCES: kinds 0 (with the "changed" bit or not) and unknown bits refused */
	n = sproto_put_resources(buf, sizeof(buf), 1);
	buf[SPROTO_HEADER_SIZE] = 0;
	assert_int_equal(read_msg(buf, n, &m), -1);
	buf[SPROTO_HEADER_SIZE + 1] = 1;
	assert_int_equal(read_msg(buf, n, &m), -1);
	buf[SPROTO_HEADER_SIZE] = 0x21;
	buf[SPROTO_HEADER_SIZE + 1] = 0;
	assert_int_equal(read_msg(buf, n, &m), -1);
	buf[SPROTO_HEADER_SIZE] = 1;
	buf[SPROTO_HEADER_SIZE + 1] = 2; /* 0x200: not a bit of version 8 */
	assert_int_equal(read_msg(buf, n, &m), -1);
	/* a version 7 peer's frame of a version 8 message */
	n = sproto_put_resources(buf, sizeof(buf), 1);
	buf[4] = 7;
	assert_int_equal(read_msg(buf, n, &m), -1);
}

/* ---- BATCH (version 8) ---- */

/* Three requests in one: a point's actions, a metric, a range cleared. */
static size_t sample_batch(uint8_t *mem, size_t cap)
{
	struct sproto_point_set ps = { .point = 9, .n = 1 };
	struct sproto_metric mt = { .id = 5, .n = 1, .flags = SPROTO_M_CHANGES };
	uint8_t one[2048];
	struct sproto_buf b;

	ps.act[0] = (struct sproto_action){ .when = SPROTO_AT_ENTRY, .prim = SPROTO_TADD,
					    .target = 3, .value = 1 };
	mt.term[0] = (struct sproto_term){ SPROTO_TERM_TCOUNTER, 3, 0 };
	sproto_batch_begin(&b, mem, cap);
	sproto_batch_add(&b, one, sproto_put_point_set(one, sizeof(one), &ps));
	sproto_batch_add(&b, one, sproto_put_metric_enable(one, sizeof(one), &mt));
	sproto_batch_add(&b, one, sproto_put_point_clear(one, sizeof(one), 4, 2));
	return sproto_end(&b);
}

static void test_batch(void **state)
{
	struct sproto_msg m, one;
	size_t n, off = 0;

	(void)state;
	n = sample_batch(buf, sizeof(buf));
	/* u16 n, then each request's type (u8), length (u16) and payload */
	assert_int_equal(n, SPROTO_HEADER_SIZE + 2 + (3 + 8 + 32) + (3 + 8 + 12) + (3 + 8));
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.h.type, SPROTO_BATCH);
	assert_true(sproto_is_request(SPROTO_BATCH));
	assert_int_equal(m.u.batch.n, 3);
	assert_int_equal(sproto_batch_next(&m.u.batch, &off, &one, NULL, 0), 0);
	assert_int_equal(one.h.type, SPROTO_POINT_SET);
	assert_int_equal(one.u.point_set.point, 9);
	assert_int_equal(one.u.point_set.act[0].prim, SPROTO_TADD);
	assert_int_equal(sproto_batch_next(&m.u.batch, &off, &one, NULL, 0), 0);
	assert_int_equal(one.h.type, SPROTO_METRIC_ENABLE);
	assert_int_equal(one.u.metric.id, 5);
	assert_int_equal(one.u.metric.flags, SPROTO_M_CHANGES);
	assert_int_equal(sproto_batch_next(&m.u.batch, &off, &one, NULL, 0), 0);
	assert_int_equal(one.h.type, SPROTO_POINT_CLEAR);
	assert_int_equal(one.u.clear.first, 4);
	assert_int_equal(one.u.clear.count, 2);
	assert_int_equal(sproto_batch_next(&m.u.batch, &off, &one, NULL, 0), -1); /* the end */
	assert_false(m.u.batch.quiet);
	check_truncations(n);
	/* version 10: quiet (the count's high bit): the same requests, no OK */
	sproto_batch_quiet(buf, n);
	assert_int_equal(buf[SPROTO_HEADER_SIZE + 1], 0x80);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_true(m.u.batch.quiet && m.u.batch.n == 3);
	off = 0;
	assert_int_equal(sproto_batch_next(&m.u.batch, &off, &one, NULL, 0), 0);
	assert_int_equal(one.u.point_set.point, 9);
	check_truncations(n);
	buf[SPROTO_HEADER_SIZE] = 0; /* quiet and no request: refused */
	assert_int_equal(read_msg(buf, n, &m), -1);
	n = sproto_put_empty(buf, sizeof(buf), SPROTO_PAUSE);
	sproto_batch_quiet(buf, n); /* not a BATCH: nothing done */
	assert_int_equal(read_msg(buf, n, &m), 1);
}

/* The writer refuses what the reader would: an empty batch, a request a batch does not hold,
 * not a message, more than SPROTO_MAX_BATCH. */
static void test_batch_writer(void **state)
{
	uint8_t one[64];
	struct sproto_buf b;
	size_t k, i;

	(void)state;
	sproto_batch_begin(&b, buf, sizeof(buf));
	assert_int_equal(sproto_end(&b), 0); /* nothing in it */
	sproto_batch_begin(&b, buf, sizeof(buf));
	sproto_batch_add(&b, one, sproto_put_bucket(one, sizeof(one), SPROTO_MIN_BUCKET_NS));
	assert_int_equal(sproto_end(&b), 0); /* BUCKET: answered by its own reply */
	sproto_batch_begin(&b, buf, sizeof(buf));
	sproto_batch_add(&b, one, sproto_put_empty(one, sizeof(one), SPROTO_DETACH));
	assert_int_equal(sproto_end(&b), 0);
	sproto_batch_begin(&b, buf, sizeof(buf));
	sproto_batch_add(&b, one, 5); /* not a whole message */
	assert_int_equal(sproto_end(&b), 0);
	k = sproto_put_metric_disable(one, sizeof(one), 1);
	assert_true(sproto_batchable(SPROTO_METRIC_DISABLE));
	assert_false(sproto_batchable(SPROTO_BATCH)); /* no batch in a batch */
	sproto_batch_begin(&b, buf, sizeof(buf));
	for (i = 0; i < SPROTO_MAX_BATCH; i++)
		sproto_batch_add(&b, one, k);
	assert_int_equal(sproto_end(&b), SPROTO_HEADER_SIZE + 2 + SPROTO_MAX_BATCH * (3 + 4));
	sproto_batch_begin(&b, buf, sizeof(buf));
	for (i = 0; i <= SPROTO_MAX_BATCH; i++)
		sproto_batch_add(&b, one, k);
	assert_int_equal(sproto_end(&b), 0); /* 4097 */
}

/* A byte of a valid batch changed at off (payload offset): refused whole. */
static void expect_bad_batch(size_t off, uint8_t v)
{
	struct sproto_msg m;
	size_t n = sample_batch(buf, sizeof(buf));

	assert_int_equal(read_msg(buf, n, &m), 1);
	buf[SPROTO_HEADER_SIZE + off] = v;
	assert_int_equal(read_msg(buf, n, &m), -1);
}

static void test_bad_batch(void **state)
{
	const size_t r1 = 2, r2 = 2 + 43, r3 = 2 + 43 + 23; /* the requests */
	struct sproto_msg m;
	size_t n;

	(void)state;
	expect_bad_batch(0, 4);               /* a count that lies: 4, 3 there */
	expect_bad_batch(0, 2);               /* 2: bytes left over */
	expect_bad_batch(0, 0);               /* none */
	expect_bad_batch(1, 0x10);            /* 4099: above the limit */
	expect_bad_batch(r1, SPROTO_HELLO);   /* a request a batch does not hold */
	expect_bad_batch(r2, SPROTO_BUCKET);
	expect_bad_batch(r3, SPROTO_BATCH);   /* a batch in a batch */
	expect_bad_batch(r1, 0x83);           /* a reply (OK) */
	expect_bad_batch(r1 + 1, 39);         /* a length that lies (40 there): the rest misread */
	expect_bad_batch(r3 + 1, 9);          /* the last one's length past the end */
	expect_bad_batch(r1 + 3 + 4, 0);      /* POINT_SET of 0 actions: refused whole */
	expect_bad_batch(r2 + 3 + 6, 0x10);   /* METRIC_ENABLE: an unknown flag */
	expect_bad_batch(r3 + 3 + 4, 0);      /* POINT_CLEAR of no point */
	/* a version 7 peer's frame */
	n = sample_batch(buf, sizeof(buf));
	buf[4] = 7;
	assert_int_equal(read_msg(buf, n, &m), -1);
}

/* POINT_ACTIONS (version 8): a POINT_SET in variable-length integers, read back the same. */
static struct sproto_point_set sample_actions(void)
{
	struct sproto_point_set p = { .point = 200000, .n = 3 };

	p.act[0] = (struct sproto_action){ SPROTO_AT_ENTRY, SPROTO_TADD, SPROTO_PRED_NONE, 0, 3, 0,
					   1, 0 };
	p.act[1] = (struct sproto_action){ SPROTO_AT_EXIT, SPROTO_STOP_WALL, SPROTO_PRED_TCOUNTER,
					   SPROTO_GT, 4095, 1023, 0, -5 };
	p.act[2] = (struct sproto_action){ SPROTO_AT_ENTRY, SPROTO_START_WALL_IF, SPROTO_PRED_ARG,
					   SPROTO_EQ, 7, 2, SPROTO_GUARD(9, SPROTO_NE, -1),
					   INT64_MIN };
	return p;
}

static void test_point_actions(void **state)
{
	struct sproto_point_set p = sample_actions();
	struct sproto_msg m;
	size_t n;
	int i;

	(void)state;
	n = sproto_put_point_actions(buf, sizeof(buf), &p);
	/* point 3 bytes, n 1; actions: 2 + 1 + 1; 2 + 2 + 1 + 2 + 1; 2 + 1 + 4 + 1 + 10 (the
	 * guard, INT64_MIN: the widest constant), where POINT_SET has 8 + 3 × 32 */
	assert_int_equal(n, SPROTO_HEADER_SIZE + 4 + 4 + 8 + 18);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.h.type, SPROTO_POINT_ACTIONS);
	assert_true(sproto_is_request(SPROTO_POINT_ACTIONS));
	assert_true(sproto_batchable(SPROTO_POINT_ACTIONS));
	assert_int_equal(m.u.point_set.point, p.point);
	assert_int_equal(m.u.point_set.n, 3);
	for (i = 0; i < 3; i++) {
		const struct sproto_action *a = &m.u.point_set.act[i], *b = &p.act[i];

		assert_int_equal(a->when, b->when);
		assert_int_equal(a->prim, b->prim);
		assert_int_equal(a->pred, b->pred);
		assert_int_equal(a->op, b->op);
		assert_int_equal(a->target, b->target);
		assert_int_equal(a->pred_index, b->pred_index);
		assert_int_equal(a->value, b->value);
		assert_int_equal(a->pred_value, b->pred_value);
	}
	check_truncations(n);
	/* what the encoding has no room for, and what POINT_SET refuses too */
	p.point = SPROTO_MAX_POINTS;
	assert_int_equal(sproto_put_point_actions(buf, sizeof(buf), &p), 0);
	p = sample_actions();
	p.n = 0;
	assert_int_equal(sproto_put_point_actions(buf, sizeof(buf), &p), 0);
	p = sample_actions();
	p.act[0].prim = 16;
	assert_int_equal(sproto_put_point_actions(buf, sizeof(buf), &p), 0);
	p = sample_actions();
	p.act[0].pred_value = 3; /* a constant without a predicate: not dropped, refused */
	assert_int_equal(sproto_put_point_actions(buf, sizeof(buf), &p), 0);
	p = sample_actions();
	p.act[0].pred_index = 1;
	assert_int_equal(sproto_put_point_actions(buf, sizeof(buf), &p), 0);
	p = sample_actions();
	p.act[0].op = SPROTO_GE; /* a comparison without a predicate: written, refused */
	n = sproto_put_point_actions(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
	p = sample_actions();
	p.act[1].target = SPROTO_MAX_TIMERS;
	n = sproto_put_point_actions(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), -1);
}

/* A byte of valid POINT_ACTIONS changed at off (payload offset): refused. */
static void expect_bad_actions(size_t off, uint8_t v)
{
	struct sproto_point_set p = sample_actions();
	struct sproto_msg m;
	size_t n = sproto_put_point_actions(buf, sizeof(buf), &p);

	assert_int_equal(read_msg(buf, n, &m), 1);
	buf[SPROTO_HEADER_SIZE + off] = v;
	assert_int_equal(read_msg(buf, n, &m), -1);
}

static void test_bad_point_actions(void **state)
{
	(void)state;
	expect_bad_actions(2, 0x10);      /* point 2^18 and more */
	expect_bad_actions(3, 0);         /* no action */
	expect_bad_actions(3, 33);        /* 33 */
	expect_bad_actions(3, 4);         /* a count that lies */
	expect_bad_actions(3, 2);         /* bytes left over */
	expect_bad_actions(4, 0x20);      /* the packed byte's bits 5-7 */
	expect_bad_actions(5, 0x40);      /* the predicate byte's bits 6-7 */
	expect_bad_actions(5, 5);         /* an unknown predicate */
	expect_bad_actions(5, 6 << 3);    /* an unknown comparison */
	expect_bad_actions(8, 0x80);      /* bit 7 of the second action's packed byte */
	expect_bad_actions(4, SPROTO_RECORD << 1 | 1); /* RECORD at exit */
	expect_bad_actions(7, 0x80);      /* a value's varint running into the next action */
}

/* Random bit flips in a batch: refused or read whole, every request readable. */
static void test_batch_flips(void **state)
{
	uint8_t orig[512], copy[512];
	unsigned seed = 4242, round, k;
	size_t n = sample_batch(orig, sizeof(orig));

	(void)state;
	for (round = 0; round < 20000; round++) {
		struct sproto_header h;
		struct sproto_msg m, one;
		char err[256];
		size_t off = 0;
		uint32_t i;

		memcpy(copy, orig, n);
		for (k = 0; k < 1 + round % 3; k++)
			copy[rand_r(&seed) % n] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
		if (sproto_frame(copy, n, &h, err, sizeof(err)) <= 0 ||
		    sproto_decode(&h, copy + SPROTO_HEADER_SIZE, &m, err, sizeof(err)) != 0 ||
		    h.type != SPROTO_BATCH)
			continue;
		for (i = 0; i < m.u.batch.n; i++)
			assert_int_equal(sproto_batch_next(&m.u.batch, &off, &one, err, sizeof(err)),
					 0);
		assert_int_equal(off, m.u.batch.size);
	}
}

/* Random bit flips in a reply: refused or read whole, never out of bounds (valgrind). */
static void test_objects_flips(void **state)
{
	uint8_t orig[512], *copy;
	unsigned seed = 777, round, k;
	size_t n = sample_objects(orig, sizeof(orig));

	(void)state;
	for (round = 0; round < 20000; round++) {
		copy = malloc(n);
		assert_non_null(copy);
		memcpy(copy, orig, n);
		for (k = 0; k < 1 + round % 3; k++)
			copy[rand_r(&seed) % n] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
		read_any(copy, n);
		free(copy);
	}
}

/* RECORD (version 5): an entry action of a known kind, value 0 (use) or 1 (initialisation). */
static void test_record_action(void **state)
{
	struct sproto_point_set p = { .point = 3, .n = 2 };
	struct sproto_msg m;
	size_t n;
	int i;

	(void)state;
	p.act[0] = (struct sproto_action){ SPROTO_AT_ENTRY, SPROTO_RECORD, SPROTO_PRED_NONE, 0,
					   SPROTO_OBJ_SEM, 0, SPROTO_RECORD_USE, 0 };
	p.act[1] = (struct sproto_action){ SPROTO_AT_ENTRY, SPROTO_RECORD, SPROTO_PRED_ARG,
					   SPROTO_NE, SPROTO_OBJ_MUTEX, 0, SPROTO_RECORD_INIT, 0 };
	n = sproto_put_point_set(buf, sizeof(buf), &p);
	assert_int_equal(read_msg(buf, n, &m), 1);
	assert_int_equal(m.u.point_set.act[0].prim, SPROTO_RECORD);
	assert_int_equal(m.u.point_set.act[0].target, SPROTO_OBJ_SEM);
	assert_int_equal(m.u.point_set.act[1].value, SPROTO_RECORD_INIT);
	for (i = 0; i < 3; i++) {
		struct sproto_point_set q = p;

		q.n = 1;
		if (i == 0)
			q.act[0].when = SPROTO_AT_EXIT;     /* no argument at exit */
		else if (i == 1)
			q.act[0].target = SPROTO_OBJ_KINDS; /* no such kind */
		else
			q.act[0].value = 2;                 /* neither use nor initialisation */
		n = sproto_put_point_set(buf, sizeof(buf), &q);
		assert_int_equal(read_msg(buf, n, &m), -1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello),
		cmocka_unit_test(test_hello_reply),
		cmocka_unit_test(test_hello_reply10),
		cmocka_unit_test(test_costs),
		cmocka_unit_test(test_bad_costs),
		cmocka_unit_test(test_point_set),
		cmocka_unit_test(test_small_requests),
		cmocka_unit_test(test_profile),
		cmocka_unit_test(test_metric),
		cmocka_unit_test(test_error_text),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_sample),
		cmocka_unit_test(test_bucket),
		cmocka_unit_test(test_sample_compact),
		cmocka_unit_test(test_sample_writer),
		cmocka_unit_test(test_sample_varints),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_writer_limits),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_hello_versions),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_bad_actions),
		cmocka_unit_test(test_retval_actions),
		cmocka_unit_test(test_tset_arg_action),
		cmocka_unit_test(test_start_wall_if_action),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_bad_replies),
		cmocka_unit_test(test_bad_modules),
		cmocka_unit_test(test_bit_flips),
		cmocka_unit_test(test_short_frames),
		cmocka_unit_test(test_sample_context),
		cmocka_unit_test(test_sample_kept),
		cmocka_unit_test(test_sample_codes),
		cmocka_unit_test(test_sample_moved_with),
		cmocka_unit_test(test_bucket_types),
		cmocka_unit_test(test_sample_context_random),
		cmocka_unit_test(test_short_flips),
		cmocka_unit_test(test_resources),
		cmocka_unit_test(test_objects_writer),
		cmocka_unit_test(test_bad_objects),
		cmocka_unit_test(test_objects_flips),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_batch_writer),
		cmocka_unit_test(test_bad_batch),
		cmocka_unit_test(test_batch_flips),
		cmocka_unit_test(test_point_actions),
		cmocka_unit_test(test_bad_point_actions),
		cmocka_unit_test(test_record_action),
	};

	return cmocka_run_group_tests_name("protocol", tests, NULL, NULL);
}
