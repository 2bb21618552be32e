/* SPDX-License-Identifier: MIT */
/*
 * The tool's side of the control connection (tool/dyn/client.c) reading SAMPLE messages of
 * protocol version 6: several messages that arrive in one read are each decoded from their own
 * bytes (a decoded SAMPLE's entries point into the input buffer, which must not move before
 * the next read: it did, and a SAMPLE followed by another message was read from the second's
 * bytes), and a SAMPLE whose start follows the previous one's end gets its whole times.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "dyn/client.h"

static uint8_t wire[4096];

static void client_on(struct ctl_client *c, int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	memset(c, 0, sizeof(*c));
	c->fd = sv[0];
	c->in = malloc(SPROTO_MAX_MESSAGE);
	assert_non_null(c->in);
}

static size_t put_sample(uint8_t *p, uint64_t after, uint64_t start, uint64_t end,
			 const struct sproto_sample_entry *e, uint32_t n)
{
	struct sproto_buf b;
	uint32_t i;

	sproto_sample_begin(&b, p, 1024, after, start, end, 0);
	for (i = 0; i < n; i++)
		sproto_sample_add(&b, &e[i]);
	return sproto_end(&b);
}

static void test_messages_in_one_read(void **state)
{
	static const struct sproto_sample_entry a[] = {
		{ 3, SPROTO_S_FIRST | SPROTO_S_VALUE, 42, 42 }, { 9, 0, 0, 7 } };
	static const struct sproto_sample_entry b[] = { { 4, 0, 0, -2 } };
	struct sproto_sample_entry e;
	struct ctl_client c;
	struct sproto_msg m;
	char err[256];
	size_t n = 0;
	int sv[2];

	(void)state;
	client_on(&c, sv);
	n += put_sample(wire + n, 0, 1024, 2048, a, 2); /* widths in units of 1024 ns (version 9) */
	n += put_sample(wire + n, 2048, 2048, 3072, b, 1);
	n += sproto_put_ok(wire + n, sizeof(wire) - n, SPROTO_SAMPLING);
	assert_int_equal(write(sv[1], wire, n), (ssize_t)n); /* all three in one read */
	assert_int_equal(ctl_recv(&c, &m, 1000, err, sizeof(err)), 0);
	assert_int_equal(m.h.type, SPROTO_SAMPLE);
	assert_true(m.u.sample.start_ns == 1024 && m.u.sample.end_ns == 2048);
	assert_int_equal(m.u.sample.n, 2);
	sproto_sample_entry(&m.u.sample, 0, &e);
	assert_true(e.metric == 3 && e.value == 42 && e.delta == 42);
	sproto_sample_entry(&m.u.sample, 1, &e);
	assert_true(e.metric == 9 && e.delta == 7 && !e.flags);
	assert_int_equal(ctl_recv(&c, &m, 1000, err, sizeof(err)), 0);
	assert_int_equal(m.h.type, SPROTO_SAMPLE);
	assert_true(m.u.sample.start_ns == 2048 && m.u.sample.end_ns == 3072 &&
		    !m.u.sample.follows); /* from the previous end */
	sproto_sample_entry(&m.u.sample, 0, &e);
	assert_true(e.metric == 4 && e.delta == -2);
	assert_int_equal(ctl_recv(&c, &m, 1000, err, sizeof(err)), 0);
	assert_int_equal(m.h.type, SPROTO_OK);
	assert_int_equal(ctl_recv(&c, &m, 10, err, sizeof(err)), 1); /* nothing more */
	close(sv[1]);
	ctl_close(&c);
}

/* A first SAMPLE whose start follows one never received is refused. */
static void test_follows_nothing(void **state)
{
	static const struct sproto_sample_entry a[] = { { 1, 0, 0, 1 } };
	struct ctl_client c;
	struct sproto_msg m;
	char err[256] = "";
	size_t n;
	int sv[2];

	(void)state;
	client_on(&c, sv);
	n = put_sample(wire, 500, 1000, 2000, a, 1);
	assert_int_equal(write(sv[1], wire, n), (ssize_t)n);
	assert_int_equal(ctl_recv(&c, &m, 1000, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "SAMPLE"));
	close(sv[1]);
	ctl_close(&c);
}

/* Version 9: what follows the HELLO_REPLY comes in short frames (2-4 bytes of header), in the
 * same read; the header's bytes are those the client says it read; version 10: the
 * HELLO_REPLY too, while a 12-byte ERROR refusing the HELLO is read as such. A short frame of
 * a request's type ends the connection. */
static void test_short_frames(void **state)
{
	static const struct sproto_sample_entry a[] = { { 5, 0, 0, 300 } };
	struct sproto_hello_reply r = { .version = SPROTO_VERSION, .pid = 7 };
	struct ctl_client c;
	struct sproto_msg m;
	uint8_t one[64];
	char err[256] = "";
	size_t n, k, off;
	int sv[2];

	(void)state;
	client_on(&c, sv);
	n = sproto_put_hello_reply(one, sizeof(one), &r);
	n = sproto_shorten(one, n, &off);
	memcpy(wire, one + off, n);
	k = put_sample(one, 0, 4096, 4096 + 50000000, a, 1);
	k = sproto_shorten(one, k, &off);
	assert_int_equal(k, 2 + 9); /* head 1, start 2, width 3 (48829 units), an entry 3 */
	memcpy(wire + n, one + off, k);
	n += k;
	k = sproto_put_ok(one, sizeof(one), SPROTO_BATCH);
	k = sproto_shorten(one, k, &off);
	assert_int_equal(k, 2); /* version 10: an empty OK */
	memcpy(wire + n, one + off, k);
	n += k;
	assert_int_equal(write(sv[1], wire, n), (ssize_t)n);
	c.short_in = 2; /* as say_hello: the HELLO's answer awaited */
	assert_int_equal(ctl_recv(&c, &m, 1000, err, sizeof(err)), 0);
	assert_int_equal(m.h.type, SPROTO_HELLO_REPLY);
	assert_int_equal(m.u.hello_reply.pid, 7);
	assert_int_equal(c.frame, 2);
	c.short_in = 1;
	assert_int_equal(ctl_recv(&c, &m, 1000, err, sizeof(err)), 0);
	assert_int_equal(m.h.type, SPROTO_SAMPLE);
	assert_int_equal(c.frame, 2);
	assert_true(m.u.sample.start_ns == 4096 && m.u.sample.end_ns == 4096 + 50000896);
	assert_int_equal(ctl_recv(&c, &m, 1000, err, sizeof(err)), 0);
	assert_int_equal(m.h.type, SPROTO_OK);
	assert_int_equal(c.received, n);
	one[0] = SPROTO_BUCKET; /* a request's type */
	one[1] = 0;
	assert_int_equal(write(sv[1], one, 2), 2);
	assert_int_equal(ctl_recv(&c, &m, 1000, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "unknown message type"));
	close(sv[1]);
	ctl_close(&c);
	client_on(&c, sv); /* a runtime of another version refuses the HELLO in 12 bytes */
	n = sproto_put_error(wire, sizeof(wire), SPROTO_HELLO, "unsupported protocol version "
			     "(this runtime speaks 9)");
	assert_int_equal(write(sv[1], wire, n), (ssize_t)n);
	c.short_in = 2;
	assert_int_equal(ctl_recv(&c, &m, 1000, err, sizeof(err)), 0);
	assert_int_equal(m.h.type, SPROTO_ERROR);
	assert_int_equal(c.frame, SPROTO_HEADER_SIZE);
	assert_non_null(strstr(m.u.status.text, "speaks 9"));
	close(sv[1]);
	ctl_close(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_messages_in_one_read),
		cmocka_unit_test(test_follows_nothing),
		cmocka_unit_test(test_short_frames),
	};

	return cmocka_run_group_tests_name("client", tests, NULL, NULL);
}
