/* SPDX-License-Identifier: MIT */
/*
 * The control server with a client, in one process: the server thread is started as
 * sonde__attach starts it, the test connects to CTL_DIR/ctl.PID and speaks the protocol
 * (format/protocol.h) — HELLO, LIST, POINT_SET, METRIC_ENABLE, SAMPLING, PAUSE/RESUME,
 * POINT_CLEAR, METRIC_DISABLE, DETACH, BUCKET, BATCH — while calling instrumented functions (dyn_tramp.S), and
 * reads SAMPLE messages with the expected values. Also: requests before HELLO, invalid
 * requests, a broken frame, a second client, the control directory's checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "dyn_test.h"

static char dir[256], sock[320];
static uint8_t msg[SPROTO_MAX_MESSAGE];

struct client {
	int fd;
	uint8_t buf[SPROTO_MAX_MESSAGE + 4096];
	size_t len;
	int short_in; /* the HELLO_REPLY came: the server's frames are short (version 9) */
	struct sproto_sctx sctx; /* what its SAMPLEs refer to (version 9) */
	uint64_t asked[64];      /* version 10: the BUCKETs sent, not answered yet */
	uint32_t nasked;
};

static struct client cl;

/* The BUCKETs among the requests sent, noted as the tool notes them (version 10: each
 * BUCKET_REPLY's width is written from its BUCKET's). */
static void note_buckets(const uint8_t *p, size_t n)
{
	struct sproto_header h;
	char err[200];
	long k;

	while (n && (k = sproto_frame(p, n, &h, err, sizeof(err))) > 0) {
		uint64_t w = 0;
		int i;

		if (h.type == SPROTO_BUCKET && h.length == 8) {
			for (i = 7; i >= 0; i--)
				w = w << 8 | p[SPROTO_HEADER_SIZE + i];
			assert_true(cl.nasked < 64);
			cl.asked[cl.nasked++] = w;
		}
		p += k;
		n -= (size_t)k;
	}
}

static void send_raw(int fd, const void *p, size_t n)
{
	if (fd == cl.fd)
		note_buckets(p, n);
	assert_int_equal(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

static int connect_to(const char *path)
{
	struct sockaddr_un a;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	assert_true(strlen(path) < sizeof(a.sun_path));
	memcpy(a.sun_path, path, strlen(path));
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}


/* The next message on the connection (within 5 s), decoded; -1 on EOF or timeout. */
static int next_msg(struct client *c, struct sproto_msg *m)
{
	for (;;) {
		struct sproto_header h;
		struct pollfd p = { c->fd, POLLIN, 0 };
		char err[200];
		/* version 10: the HELLO_REPLY is short too; an ERROR refusing a HELLO is not (a
		 * 12-byte frame begins with the magic's 'S', no reply's type) */
		int is_short = c->short_in || (c->len && c->buf[0] != (SPROTO_MAGIC & 0xff));
		long n = is_short ? sproto_frame_short(c->buf, c->len, &h, err, sizeof(err))
				  : sproto_frame(c->buf, c->len, &h, err, sizeof(err));
		ssize_t r;

		if (n > 0) { /* decoded from a copy: LIST_REPLY and SAMPLE point into it */
			memcpy(msg, c->buf, (size_t)n);
			memmove(c->buf, c->buf + n, c->len - (size_t)n);
			c->len -= (size_t)n;
			assert_int_equal(sproto_decode(&h, msg + h.size, m, err, sizeof(err)), 0);
			if (m->h.type == SPROTO_HELLO_REPLY)
				c->short_in = 1;
			if (sproto_is_sample(m->h.type) && m->h.type != SPROTO_SAMPLE) {
				assert_true(c->nasked > 0); /* its width from its BUCKET's */
				assert_int_equal(sproto_sample_asked(&m->u.sample, c->asked[0]), 0);
				memmove(c->asked, c->asked + 1, --c->nasked * sizeof(c->asked[0]));
			}
			if (sproto_is_sample(m->h.type)) /* its metrics and deltas, as the tool */
				assert_int_equal(sproto_sample_resolve(&m->u.sample, &c->sctx, err,
								       sizeof(err)), 0);
			return 0;
		}
		assert_true(n == 0);
		if (poll(&p, 1, 5000) != 1)
			return -1;
		r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
		if (r <= 0)
			return -1;
		c->len += (size_t)r;
	}
}

/* The reply to a request: SAMPLE messages in between are skipped. */
static void reply(struct sproto_msg *m)
{
	do
		assert_int_equal(next_msg(&cl, m), 0);
	while (m->h.type == SPROTO_SAMPLE);
}

static void expect_ok(size_t n, uint16_t type)
{
	struct sproto_msg m;

	send_raw(cl.fd, msg, n);
	reply(&m);
	if (m.h.type == SPROTO_ERROR)
		fail_msg("%s refused: %s", sproto_type_name(type), m.u.status.text);
	assert_int_equal(m.h.type, SPROTO_OK); /* version 10: an OK names no request */
}

static void expect_error(size_t n, uint16_t type, const char *text)
{
	struct sproto_msg m;

	send_raw(cl.fd, msg, n);
	reply(&m);
	assert_int_equal(m.h.type, SPROTO_ERROR);
	assert_int_equal(m.u.status.type, type);
	assert_non_null(strstr(m.u.status.text, text));
}

static void hello(void)
{
	struct sproto_hello h = { SPROTO_VERSION, SPROTO_VERSION, "test" };
	struct sproto_msg m;

	send_raw(cl.fd, msg, sproto_put_hello(msg, sizeof(msg), &h));
	reply(&m);
	assert_int_equal(m.h.type, SPROTO_HELLO_REPLY);
	assert_int_equal(m.h.size, 2); /* version 10: a short frame, its length in one byte */
	assert_int_equal(m.u.hello_reply.version, SPROTO_VERSION);
	assert_int_equal(m.u.hello_reply.pid, getpid());
	assert_int_equal(m.u.hello_reply.max_points, SPROTO_MAX_POINTS);
	assert_int_equal(m.u.hello_reply.max_actions, SPROTO_MAX_ACTIONS);
	assert_int_equal(m.u.hello_reply.shadow_depth, DYN_SHADOW);
	assert_int_equal(m.u.hello_reply.bucket_ns, SPROTO_DEFAULT_BUCKET_NS);
	assert_int_equal(m.u.hello_reply.entry_addr, (uint64_t)(uintptr_t)&sonde__dyn_entry);
	assert_int_equal(m.u.hello_reply.ret_tramp_addr, (uint64_t)(uintptr_t)dyn_ret_tramp_local);
	assert_int_equal(m.u.hello_reply.flags & SPROTO_F_AT_START, 0);
	assert_non_null(strstr(m.u.hello_reply.build, "sonde"));
}

static int setup(void **state)
{
	(void)state;
	dyn_test_reset();
	if (!dyn_server_running())
		assert_int_equal(sonde__attach(dir), 0);
	cl.fd = connect_to(sock);
	cl.len = 0;
	cl.short_in = 0;
	memset(&cl.sctx, 0, sizeof(cl.sctx));
	cl.nasked = 0;
	assert_true(cl.fd >= 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (cl.fd >= 0)
		close(cl.fd);
	cl.fd = -1;
	return 0;
}

/* ---- the session ---- */

static void test_hello_list(void **state)
{
	struct sproto_module mod;
	struct sproto_msg m;
	size_t off = 0;
	uint32_t i;
	int found_tid = 0, found_exe = 0;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	(void)state;
	exe[n > 0 ? n : 0] = 0;
	hello();
	send_raw(cl.fd, msg, sproto_put_empty(msg, sizeof(msg), SPROTO_LIST));
	reply(&m);
	assert_int_equal(m.h.type, SPROTO_LIST_REPLY);
	assert_true(m.u.list.nmodules >= 3); /* the test, libc, the loader... */
	while (sproto_list_module(&m.u.list, &off, &mod) == 0) {
		if (strcmp(mod.path, exe) == 0 && (uintptr_t)&tr_add >= mod.lo &&
		    (uintptr_t)&tr_add < mod.hi && mod.build_id_len == 20)
			found_exe = 1;
	}
	for (i = 0; i < m.u.list.nthreads; i++)
		found_tid |= sproto_list_tid(&m.u.list, i) == (uint32_t)dyn_sys_gettid();
	assert_true(found_exe);
	assert_true(found_tid);
	assert_true(m.u.list.nthreads >= 2); /* this thread and the control thread */
}

/* Points, a metric of a counter and a timer, samples every 10 ms with the values expected. */
static void test_points_and_samples(void **state)
{
	struct sproto_point_set ps = { .point = P_ADD, .n = 3 };
	struct sproto_metric mc = { .id = 3, .n = 1, .term = { { SPROTO_TERM_COUNTER, 40, 0 } } };
	struct sproto_metric mt = { .id = 4, .n = 2, .term = { { SPROTO_TERM_WALL, 2, 0 },
							       { SPROTO_TERM_COUNTER, 41, 0 } } };
	struct sproto_msg m;
	int64_t last3 = -1, last4 = -1, sum_delta3 = 0;
	int i, samples = 0, first3 = 0;

	(void)state;
	hello();
	ps.act[0] = act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 40, 1);
	ps.act[1] = act_timer(SPROTO_AT_ENTRY, SPROTO_START_WALL, 2);
	ps.act[2] = act_timer(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 2);
	expect_ok(sproto_put_point_set(msg, sizeof(msg), &ps), SPROTO_POINT_SET);
	ps = (struct sproto_point_set){ .point = P_SPIN, .n = 2 };
	ps.act[0] = act_timer(SPROTO_AT_ENTRY, SPROTO_START_WALL, 2);
	ps.act[1] = act_timer(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 2);
	expect_ok(sproto_put_point_set(msg, sizeof(msg), &ps), SPROTO_POINT_SET);
	expect_ok(sproto_put_sampling(msg, sizeof(msg), 10000000), SPROTO_SAMPLING);
	expect_ok(sproto_put_metric_enable(msg, sizeof(msg), &mc), SPROTO_METRIC_ENABLE);
	expect_ok(sproto_put_metric_enable(msg, sizeof(msg), &mt), SPROTO_METRIC_ENABLE);
	for (i = 0; i < 1000; i++)
		assert_int_equal(tr_add(i, 2), i + 2);
	tr_spin(30000000, 0); /* 30 ms of the wall timer */
	/* samples until the counter shows 1000 and the timer 30 ms */
	while (samples < 200 && (last3 < 1000 || last4 < 30000000)) {
		uint32_t k;

		assert_int_equal(next_msg(&cl, &m), 0);
		assert_int_equal(m.h.type, SPROTO_SAMPLE);
		assert_true(m.u.sample.end_ns >= m.u.sample.start_ns);
		assert_int_equal(m.u.sample.lost, 0);
		samples++;
		for (k = 0; k < m.u.sample.n; k++) {
			struct sproto_sample_entry e;

			sproto_sample_entry(&m.u.sample, k, &e);
			/* the value in the first entry only (version 6), then the deltas */
			assert_int_equal(!!(e.flags & SPROTO_S_VALUE), !!(e.flags & SPROTO_S_FIRST));
			if (e.metric == 3) {
				first3 += (e.flags & SPROTO_S_FIRST) != 0;
				sum_delta3 += e.delta;
				e.value = e.flags & SPROTO_S_VALUE ? e.value : last3 + e.delta;
				assert_true(e.value >= last3);
				last3 = e.value;
			} else {
				assert_int_equal(e.metric, 4);
				e.value = e.flags & SPROTO_S_VALUE ? e.value : last4 + e.delta;
				assert_true(e.value >= last4 && e.delta >= 0);
				last4 = e.value;
			}
		}
	}
	assert_int_equal(last3, 1000);
	assert_int_equal(sum_delta3, 1000); /* the deltas add up from the enable */
	assert_int_equal(first3, 1);
	assert_true(last4 >= 30000000 && last4 < 30000000 + 500000000); /* preempted at worst */
	/* counters and timers add up in one metric: 5 more calls count in metric 4 too */
	ps = (struct sproto_point_set){ .point = P_ADD, .n = 1 };
	ps.act[0] = act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 41, 1000000000);
	expect_ok(sproto_put_point_set(msg, sizeof(msg), &ps), SPROTO_POINT_SET);
	tr_add(1, 1);
	do {
		struct sproto_sample_entry e;

		assert_int_equal(next_msg(&cl, &m), 0);
		assert_int_equal(m.h.type, SPROTO_SAMPLE);
		sproto_sample_entry(&m.u.sample, 1, &e);
		last4 += e.delta;
	} while (last4 < 1000000000);
	assert_true(last4 >= 1000000000 + 30000000);
	expect_ok(sproto_put_metric_disable(msg, sizeof(msg), 4), SPROTO_METRIC_DISABLE);
	expect_ok(sproto_put_point_clear(msg, sizeof(msg), 0, SPROTO_MAX_POINTS),
		  SPROTO_POINT_CLEAR);
	assert_null(atomic_load(&dyn_points[P_ADD]));
	do
		assert_int_equal(next_msg(&cl, &m), 0);
	while (m.h.type != SPROTO_SAMPLE);
	assert_int_equal(m.u.sample.n, 1); /* metric 3 only */
}

static void test_pause_resume(void **state)
{
	struct sproto_point_set ps = { .point = P_ADD, .n = 1 };

	(void)state;
	hello();
	ps.act[0] = act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 50, 1);
	expect_ok(sproto_put_point_set(msg, sizeof(msg), &ps), SPROTO_POINT_SET);
	tr_add(1, 1);
	expect_ok(sproto_put_empty(msg, sizeof(msg), SPROTO_PAUSE), SPROTO_PAUSE);
	tr_add(1, 1);
	assert_int_equal(counter(50), 1);
	expect_ok(sproto_put_empty(msg, sizeof(msg), SPROTO_RESUME), SPROTO_RESUME);
	tr_add(1, 1);
	assert_int_equal(counter(50), 2);
}

/*
 * COSTS: measured when the server started, through the calibration's trampolines: every
 * figure there once, none absurd; no PROFILE pair when attached (no profile runtime).
 */
static void test_costs(void **state)
{
	static const uint16_t want[] = { SPROTO_COST_CALL, SPROTO_COST_ENTRY, SPROTO_COST_EXIT,
					 SPROTO_COST_PRED };
	struct sproto_msg m;
	uint32_t i, k, found = 0;

	(void)state;
	hello();
	send_raw(cl.fd, msg, sproto_put_empty(msg, sizeof(msg), SPROTO_COSTS));
	reply(&m);
	assert_int_equal(m.h.type, SPROTO_COSTS_REPLY);
	assert_int_equal(m.u.costs.flags, SPROTO_COSTS_MEASURED);
	assert_true(m.u.costs.elapsed_ns > 0 && m.u.costs.elapsed_ns < 10000000000ull);
	assert_int_equal(m.u.costs.n, 4 + SPROTO_PROFILE);
	for (i = 0; i < m.u.costs.n; i++) {
		const struct sproto_cost *c = &m.u.costs.c[i];

		assert_true(c->mean_ps < 100000000u); /* under 100 µs each */
		for (k = 0; k < 4; k++)
			found += c->item == want[k];
		if (c->item >= SPROTO_COST_PRIM)
			found += c->item < SPROTO_COST_PRIM + SPROTO_PROFILE;
		if (c->item == SPROTO_COST_CALL || c->item == SPROTO_COST_EXIT)
			assert_true(c->mean_ps > 0); /* a call, a return trampoline: never free */
	}
	assert_int_equal(found, m.u.costs.n);
	assert_null(atomic_load(&dyn_points[DYN_CALIB_POINT])); /* left inactive */
	assert_int_equal(counter(0), 0); /* the counter it used is as it was */
}

/* RESOURCES (version 5): the objects a RECORD point saw, by kind, in order. */
static void test_resources(void **state)
{
	struct sproto_point_set ps = { .point = P_ADD, .n = 1 };
	struct sproto_object o;
	struct sproto_msg m;

	(void)state;
	hello();
	ps.act[0] = (struct sproto_action){ SPROTO_AT_ENTRY, SPROTO_RECORD, SPROTO_PRED_NONE, 0,
					    SPROTO_OBJ_MUTEX, 0, SPROTO_RECORD_USE, 0 };
	expect_ok(sproto_put_point_set(msg, sizeof(msg), &ps), SPROTO_POINT_SET);
	tr_add(0x9000, 1);
	tr_add(0x8000, 1);
	tr_add(0x9000, 1);
	send_raw(cl.fd, msg, sproto_put_resources(msg, sizeof(msg), 1u << SPROTO_OBJ_MUTEX));
	reply(&m);
	assert_int_equal(m.h.type, SPROTO_RESOURCES_REPLY);
	assert_int_equal(m.u.objects.n, 2);
	sproto_object(&m.u.objects, 0, &o);
	assert_int_equal(o.addr, 0x8000);
	assert_int_equal(o.uses, 1);
	sproto_object(&m.u.objects, 1, &o);
	assert_int_equal(o.addr, 0x9000);
	assert_int_equal(o.uses, 2);
	send_raw(cl.fd, msg, sproto_put_resources(msg, sizeof(msg), 1u << SPROTO_OBJ_SEM));
	reply(&m);
	assert_int_equal(m.h.type, SPROTO_RESOURCES_REPLY);
	assert_int_equal(m.u.objects.n, 0);
	/* version 8: the new objects only — none (both sent above, used), then one that is new,
	 * and one first seen unused (initialised), then again once used */
	send_raw(cl.fd, msg, sproto_put_resources(msg, sizeof(msg),
						  1u << SPROTO_OBJ_MUTEX | SPROTO_RES_NEW));
	reply(&m);
	assert_int_equal(m.h.type, SPROTO_RESOURCES_REPLY);
	assert_int_equal(m.u.objects.n, 0);
	assert_int_equal(m.u.objects.slots, SPROTO_MAX_OBJECTS);
	tr_add(0x8000, 1);
	tr_add(0x7000, 1);
	dyn_record(SPROTO_OBJ_MUTEX, 0xa000, 1, 0x1234);
	send_raw(cl.fd, msg, sproto_put_resources(msg, sizeof(msg),
						  1u << SPROTO_OBJ_MUTEX | SPROTO_RES_NEW));
	reply(&m);
	assert_int_equal(m.u.objects.n, 2);
	sproto_object(&m.u.objects, 0, &o);
	assert_int_equal(o.addr, 0x7000);
	assert_int_equal(o.uses, 1);
	sproto_object(&m.u.objects, 1, &o);
	assert_int_equal(o.addr, 0xa000);
	assert_int_equal(o.uses, 0);
	assert_int_equal(o.inits, 1);
	assert_int_equal(o.site, 0x1234);
	dyn_record(SPROTO_OBJ_MUTEX, 0xa000, 0, 0);
	send_raw(cl.fd, msg, sproto_put_resources(msg, sizeof(msg),
						  1u << SPROTO_OBJ_MUTEX | SPROTO_RES_NEW));
	reply(&m);
	assert_int_equal(m.u.objects.n, 1); /* used now */
	sproto_object(&m.u.objects, 0, &o);
	assert_int_equal(o.addr, 0xa000);
	assert_int_equal(o.uses, 1);
	send_raw(cl.fd, msg, sproto_put_resources(msg, sizeof(msg), 1u << SPROTO_OBJ_MUTEX));
	reply(&m);
	assert_int_equal(m.u.objects.n, 4); /* without the flag: every one, the counts now */
	sproto_object(&m.u.objects, 1, &o);
	assert_int_equal(o.addr, 0x8000);
	assert_int_equal(o.uses, 2);
	expect_ok(sproto_put_point_clear(msg, sizeof(msg), P_ADD, 1), SPROTO_POINT_CLEAR);
}

/* BATCH (version 8): its requests done in order, one OK; one refused inside: nothing done. */
static void test_batch(void **state)
{
	struct sproto_point_set ps = { .point = P_ADD, .n = 1 };
	struct sproto_metric mc = { .id = 6, .n = 1, .term = { { SPROTO_TERM_COUNTER, 60, 0 } } };
	static uint8_t one[4096];
	struct sproto_buf b;
	int64_t before;
	size_t n;

	(void)state;
	hello();
	ps.act[0] = act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 60, 1);
	before = counter(60);
	sproto_batch_begin(&b, msg, sizeof(msg)); /* the actions in varints (POINT_ACTIONS) */
	sproto_batch_add(&b, one, sproto_put_point_actions(one, sizeof(one), &ps));
	sproto_batch_add(&b, one, sproto_put_metric_enable(one, sizeof(one), &mc));
	expect_ok(sproto_end(&b), SPROTO_BATCH);
	tr_add(1, 1);
	tr_add(2, 1);
	assert_int_equal(counter(60), before + 2);
	/* the point cleared, then a METRIC_ENABLE with a flag no version has: refused whole */
	sproto_batch_begin(&b, msg, sizeof(msg));
	sproto_batch_add(&b, one, sproto_put_point_clear(one, sizeof(one), P_ADD, 1));
	n = sproto_put_metric_enable(one, sizeof(one), &mc);
	one[SPROTO_HEADER_SIZE + 6] = 0x10;
	sproto_batch_add(&b, one, n);
	expect_error(sproto_end(&b), SPROTO_BATCH, "METRIC_ENABLE");
	tr_add(3, 1);
	assert_int_equal(counter(60), before + 3); /* the point still counts */
	sproto_batch_begin(&b, msg, sizeof(msg));
	sproto_batch_add(&b, one, sproto_put_point_clear(one, sizeof(one), P_ADD, 1));
	sproto_batch_add(&b, one, sproto_put_metric_disable(one, sizeof(one), 6));
	expect_ok(sproto_end(&b), SPROTO_BATCH);
	tr_add(4, 1);
	assert_int_equal(counter(60), before + 3);
	assert_null(atomic_load(&dyn_points[P_ADD]));
	/* version 10: a quiet BATCH, then a PAUSE: the PAUSE's OK is the next answer (none for
	 * the batch), the batch done before it */
	sproto_batch_begin(&b, msg, sizeof(msg));
	sproto_batch_add(&b, one, sproto_put_point_actions(one, sizeof(one), &ps));
	n = sproto_end(&b);
	sproto_batch_quiet(msg, n);
	n += sproto_put_empty(msg + n, sizeof(msg) - n, SPROTO_PAUSE);
	expect_ok(n, SPROTO_PAUSE);
	expect_ok(sproto_put_empty(msg, sizeof(msg), SPROTO_RESUME), SPROTO_RESUME);
	tr_add(5, 1);
	assert_int_equal(counter(60), before + 4);
	/* a quiet BATCH refused: its ERROR, the request after it answered after */
	sproto_batch_begin(&b, msg, sizeof(msg));
	n = sproto_put_metric_enable(one, sizeof(one), &mc);
	one[SPROTO_HEADER_SIZE + 6] = 0x10;
	sproto_batch_add(&b, one, n);
	n = sproto_end(&b);
	sproto_batch_quiet(msg, n);
	expect_error(n, SPROTO_BATCH, "METRIC_ENABLE");
	expect_ok(sproto_put_point_clear(msg, sizeof(msg), P_ADD, 1), SPROTO_POINT_CLEAR);
	assert_null(atomic_load(&dyn_points[P_ADD]));
}

/* ---- refusals ---- */

static void test_hello_first(void **state)
{
	struct sproto_hello h = { SPROTO_VERSION + 1, SPROTO_VERSION + 2, "future" };
	struct sproto_point_set ps = { .point = P_ADD, .n = 1 };

	(void)state;
	ps.act[0] = act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 1);
	expect_error(sproto_put_point_set(msg, sizeof(msg), &ps), SPROTO_POINT_SET, "HELLO first");
	assert_null(atomic_load(&dyn_points[P_ADD]));
	expect_error(sproto_put_hello(msg, sizeof(msg), &h), SPROTO_HELLO, "version");
	h = (struct sproto_hello){ 10, 10, "sonde 10" }; /* a version 10 tool: told which one */
	expect_error(sproto_put_hello(msg, sizeof(msg), &h), SPROTO_HELLO,
		     "unsupported protocol version (this runtime speaks 11)");
	hello();
}

/* The next message that is not a SAMPLE (those a bucket of the running pace sent before the
 * server read a BUCKET). */
static void not_sample(struct sproto_msg *m)
{
	do
		assert_int_equal(next_msg(&cl, m), 0);
	while (m->h.type == SPROTO_SAMPLE);
}

/* BUCKET (version 7): the bucket in progress ends the width asked for after its start, answered
 * by its BUCKET_REPLY before the requests sent after it; then nothing until asked again; a
 * phase marker ends one early; SAMPLING brings the pace back; a bad width gets ERROR. */
static void test_buckets_on_request(void **state)
{
	struct sproto_point_set ps = { .point = P_ADD, .n = 1 };
	struct sproto_metric mc = { .id = 5, .n = 1, .flags = SPROTO_M_CHANGES,
				    .term = { { SPROTO_TERM_COUNTER, 60, 0 } } };
	struct pollfd p = { 0, POLLIN, 0 };
	struct sproto_sample_entry e;
	struct sproto_msg m;
	uint64_t end;
	size_t n;

	(void)state;
	hello();
	ps.act[0] = act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 60, 1);
	expect_ok(sproto_put_point_set(msg, sizeof(msg), &ps), SPROTO_POINT_SET);
	expect_ok(sproto_put_metric_enable(msg, sizeof(msg), &mc), SPROTO_METRIC_ENABLE);
	/* a BUCKET and a PAUSE in one write: the PAUSE is answered after the bucket */
	n = sproto_put_bucket(msg, sizeof(msg), 200000000);
	n += sproto_put_empty(msg + n, sizeof(msg) - n, SPROTO_PAUSE);
	send_raw(cl.fd, msg, n);
	not_sample(&m);
	assert_int_equal(m.h.type, SPROTO_BUCKET_REPLY);
	assert_true(m.u.sample.end_ns - m.u.sample.start_ns >= 200000000);
	not_sample(&m);
	assert_true(m.h.type == SPROTO_OK); /* the PAUSE's: answers come in order */
	expect_ok(sproto_put_empty(msg, sizeof(msg), SPROTO_RESUME), SPROTO_RESUME);
	/* on request: nothing comes unasked */
	p.fd = cl.fd;
	assert_int_equal(poll(&p, 1, 300), 0);
	tr_add(1, 1);
	tr_add(1, 1);
	send_raw(cl.fd, msg, sproto_put_bucket(msg, sizeof(msg), SPROTO_MIN_BUCKET_NS));
	assert_int_equal(next_msg(&cl, &m), 0);
	/* version 10: of the previous one's metrics, its head is its type (BUCKET_SAME) */
	assert_int_equal(m.h.type, SPROTO_BUCKET_SAME);
	assert_true(m.u.sample.follows && m.u.sample.start_ns == 0); /* from the last end */
	assert_int_equal(m.u.sample.n, 1);
	sproto_sample_entry(&m.u.sample, 0, &e);
	assert_true(e.metric == 5 && e.delta == 2 && !e.flags);
	end = m.u.sample.end_ns;
	/* nothing changed: an answer all the same, with no entry */
	send_raw(cl.fd, msg, sproto_put_bucket(msg, sizeof(msg), SPROTO_MIN_BUCKET_NS));
	assert_int_equal(next_msg(&cl, &m), 0);
	assert_true(m.h.type == SPROTO_BUCKET_REPLY && m.u.sample.n == 0);
	assert_true(m.u.sample.follows && m.u.sample.start_ns == 0);
	assert_int_equal(sproto_sample_follow(&m.u.sample, end), 0);
	assert_true(m.u.sample.end_ns - end >= SPROTO_MIN_BUCKET_NS);
	/* an hour asked for, a phase marker ends it */
	send_raw(cl.fd, msg, sproto_put_bucket(msg, sizeof(msg), SPROTO_MAX_BUCKET_NS));
	assert_int_equal(poll(&p, 1, 100), 0);
	atomic_fetch_add(&dyn_counters[SPROTO_COUNTER_PHASES].v, 1);
	assert_int_equal(next_msg(&cl, &m), 0);
	assert_int_equal(m.h.type, SPROTO_BUCKET_REPLY);
	/* version 10: its width, read from the hour asked for (less), is what it was */
	assert_true(m.u.sample.end_ns - m.u.sample.start_ns < 60000000000ull);
	/* a width of 0: refused, the connection goes on; SAMPLING: the pace again */
	n = sproto_put_bucket(msg, sizeof(msg), SPROTO_MIN_BUCKET_NS);
	memset(msg + SPROTO_HEADER_SIZE, 0, 8);
	expect_error(n, SPROTO_BUCKET, "bucket width");
	expect_ok(sproto_put_sampling(msg, sizeof(msg), 10000000), SPROTO_SAMPLING);
	assert_int_equal(next_msg(&cl, &m), 0);
	assert_int_equal(m.h.type, SPROTO_SAMPLE);
}

/* A request that decodes badly gets ERROR with the reason; the connection goes on. */
static void test_bad_request(void **state)
{
	struct sproto_point_set ps = { .point = P_ADD, .n = 1 };
	size_t n;

	(void)state;
	hello();
	ps.act[0] = act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 1);
	n = sproto_put_point_set(msg, sizeof(msg), &ps);
	msg[SPROTO_HEADER_SIZE + 8 + 1] = SPROTO_PRIM_COUNT; /* no such primitive */
	expect_error(n, SPROTO_POINT_SET, "unknown primitive");
	n = sproto_put_ok(msg, sizeof(msg), SPROTO_LIST); /* a reply sent as a request */
	expect_error(n, SPROTO_HELLO, "requests only");
	expect_ok(sproto_put_empty(msg, sizeof(msg), SPROTO_RESUME), SPROTO_RESUME);
}

/* A frame that cannot be read ends the connection, after an ERROR. */
static void test_broken_frame(void **state)
{
	struct sproto_msg m;
	size_t n;

	(void)state;
	hello();
	n = sproto_put_empty(msg, sizeof(msg), SPROTO_LIST);
	msg[0] ^= 0xff;
	send_raw(cl.fd, msg, n);
	assert_int_equal(next_msg(&cl, &m), 0);
	assert_int_equal(m.h.type, SPROTO_ERROR);
	assert_int_equal(next_msg(&cl, &m), -1);
}

/* One client at a time: another is told so and closed. */
static void test_second_client(void **state)
{
	struct client other = { .fd = connect_to(sock) };
	struct sproto_msg m;

	(void)state;
	hello();
	assert_true(other.fd >= 0);
	assert_int_equal(next_msg(&other, &m), 0);
	assert_int_equal(m.h.type, SPROTO_ERROR);
	assert_non_null(strstr(m.u.status.text, "another client"));
	assert_int_equal(next_msg(&other, &m), -1);
	close(other.fd);
	expect_ok(sproto_put_empty(msg, sizeof(msg), SPROTO_PAUSE), SPROTO_PAUSE);
	expect_ok(sproto_put_empty(msg, sizeof(msg), SPROTO_RESUME), SPROTO_RESUME);
}

/* A client that goes away without DETACH: its metrics stop, the next client is served. */
static void test_reconnect(void **state)
{
	struct sproto_metric mc = { .id = 9, .n = 1, .term = { { SPROTO_TERM_COUNTER, 1, 0 } } };

	(void)state;
	hello();
	expect_ok(sproto_put_metric_enable(msg, sizeof(msg), &mc), SPROTO_METRIC_ENABLE);
	close(cl.fd);
	cl.fd = -1;
	usleep(20000);
	cl.fd = connect_to(sock);
	cl.len = 0;
	cl.short_in = 0;
	memset(&cl.sctx, 0, sizeof(cl.sctx));
	cl.nasked = 0;
	assert_true(cl.fd >= 0);
	hello();
	assert_int_equal(dyn_metrics_on(), 0);
}

/* DETACH: OK, points cleared, sampling stopped, the socket closed and gone. */
static void test_detach(void **state)
{
	struct sproto_point_set ps = { .point = P_ADD, .n = 1 };
	struct sproto_msg m;
	struct stat st;
	int i;

	(void)state;
	hello();
	ps.act[0] = act_counter(SPROTO_AT_ENTRY, SPROTO_ADD, 1, 1);
	expect_ok(sproto_put_point_set(msg, sizeof(msg), &ps), SPROTO_POINT_SET);
	expect_ok(sproto_put_empty(msg, sizeof(msg), SPROTO_DETACH), SPROTO_DETACH);
	assert_int_equal(next_msg(&cl, &m), -1);
	assert_null(atomic_load(&dyn_points[P_ADD]));
	for (i = 0; i < 100 && dyn_server_running(); i++)
		usleep(10000);
	assert_false(dyn_server_running());
	assert_int_equal(stat(sock, &st), -1);
	/* and it can be attached again */
	assert_int_equal(sonde__attach(dir), 0);
	assert_int_equal(sonde__attach(dir), 0); /* already running: fine */
	close(cl.fd);
	cl.fd = connect_to(sock);
	cl.len = 0;
	cl.short_in = 0;
	memset(&cl.sctx, 0, sizeof(cl.sctx));
	cl.nasked = 0;
	hello();
}

/* The control directory must be ours and 0700. */
static void test_directory_checks(void **state)
{
	char bad[300], link[300];
	const char *why = NULL;
	struct stat st;

	(void)state;
	snprintf(bad, sizeof(bad), "%s/open", dir);
	assert_int_equal(mkdir(bad, 0755), 0);
	assert_int_equal(chmod(bad, 0755), 0);
	assert_int_equal(dyn_private_dir(bad, &why), -1);
	assert_non_null(strstr(why, "another owner or mode"));
	assert_int_equal(chmod(bad, 0700), 0);
	assert_int_equal(dyn_private_dir(bad, &why), 0);
	snprintf(link, sizeof(link), "%s/link", dir);
	assert_int_equal(symlink(bad, link), 0);
	assert_int_equal(dyn_private_dir(link, &why), -1); /* never through a link */
	unlink(link);
	rmdir(bad);
	snprintf(bad, sizeof(bad), "%s/made", dir);
	assert_int_equal(dyn_private_dir(bad, &why), 0); /* made, 0700 whatever the umask */
	assert_int_equal(stat(bad, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	rmdir(bad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hello_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_points_and_samples, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pause_resume, setup, teardown),
		cmocka_unit_test_setup_teardown(test_costs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resources, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hello_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_buckets_on_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_broken_frame, setup, teardown),
		cmocka_unit_test_setup_teardown(test_second_client, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconnect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_detach, setup, teardown),
		cmocka_unit_test_setup_teardown(test_directory_checks, setup, teardown),
	};
	char tmpl[] = "/tmp/sonde-dyn-test-XXXXXX";
	int rc;

	dyn_test_init();
	assert_non_null(mkdtemp(tmpl));
	snprintf(dir, sizeof(dir), "%s/ctl", tmpl);
	snprintf(sock, sizeof(sock), "%s/ctl.%d", dir, (int)getpid());
	rc = cmocka_run_group_tests_name("dyn_server", tests, NULL, NULL);
	dyn_server_unlink(); /* what the runtime's destructor does at exit */
	rmdir(dir);
	rmdir(tmpl);
	return rc;
}
