/* SPDX-License-Identifier: MIT */
/* The tool's end of the control protocol (client.h). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

int ctl_default_dir(char *out, size_t cap)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	int n = x && x[0] == '/' ? snprintf(out, cap, "%s/sonde", x)
				 : snprintf(out, cap, "/tmp/sonde-%u", (unsigned)getuid());

	return n > 0 && (size_t)n < cap ? 0 : -1;
}

static void nap_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int try_connect(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path))
		return -1;
	memcpy(a.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
		return fd;
	close(fd);
	return -1;
}

static int say_hello(struct ctl_client *c, char *err, size_t n)
{
	struct sproto_hello h = { .min_version = SPROTO_VERSION, .max_version = SPROTO_VERSION };
	uint8_t msg[128];
	struct sproto_msg m;
	size_t len;

	snprintf(h.client, sizeof(h.client), "sonde %s", SONDE_VERSION);
	len = sproto_put_hello(msg, sizeof(msg), &h);
	c->short_in = 2; /* the answer: a short HELLO_REPLY (version 10), or a 12-byte ERROR */
	if (ctl_send(c, msg, len, err, n) != 0 || ctl_recv(c, &m, 5000, err, n) != 0)
		return -1;
	if (m.h.type == SPROTO_ERROR) {
		snprintf(err, n, "the runtime refused: %s", m.u.status.text);
		return -1;
	}
	if (m.h.type != SPROTO_HELLO_REPLY) {
		snprintf(err, n, "unexpected %s instead of HELLO_REPLY", sproto_type_name(m.h.type));
		return -1;
	}
	if (m.u.hello_reply.version != SPROTO_VERSION) {
		snprintf(err, n, "the runtime chose protocol version %u (this tool speaks "
			 SPROTO_VERSION_TEXT ")", m.u.hello_reply.version);
		return -1;
	}
	c->hello = m.u.hello_reply;
	if (!c->hello.build[0]) /* version 10: the runtime's build is this tool's */
		snprintf(c->hello.build, sizeof(c->hello.build), "%s", h.client);
	c->short_in = 1;
	return 0;
}

int ctl_connect(struct ctl_client *c, const char *dir, pid_t pid, unsigned wait_ms, char *err,
		size_t n)
{
	char path[4200];
	unsigned waited = 0;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->in = malloc(SPROTO_MAX_MESSAGE);
	if (!c->in) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/ctl.%d", dir, (int)pid);
	while ((c->fd = try_connect(path)) < 0) {
		if (waited >= wait_ms || (kill(pid, 0) != 0 && errno == ESRCH)) {
			snprintf(err, n, "no control socket %s (is the runtime loaded?)", path);
			ctl_close(c);
			return -1;
		}
		nap_ms(5);
		waited += 5;
	}
	if (say_hello(c, err, n) != 0) {
		ctl_close(c);
		return -1;
	}
	return 0;
}

static void count(struct ctl_traffic *t, uint16_t type, size_t bytes)
{
	t->msgs[type % CTL_SLOTS]++;
	t->bytes[type % CTL_SLOTS] += bytes;
}

int ctl_send(struct ctl_client *c, const void *msg, size_t len, char *err, size_t n)
{
	const uint8_t *p = msg;
	ssize_t k;

	if (!len) {
		snprintf(err, n, "a request did not fit in a message");
		return -1;
	}
	if (len >= SPROTO_HEADER_SIZE) /* the type: u16 at offset 6, little-endian */
		count(&c->sent, (uint16_t)(p[6] | p[7] << 8), len);
	if (len == SPROTO_HEADER_SIZE + 8 && (p[6] | p[7] << 8) == SPROTO_BUCKET) {
		uint64_t w = 0; /* its width, u64 little-endian: its answer's width is from it */
		int i;

		if (c->asked_n == CTL_ASKED) {
			snprintf(err, n, "too many BUCKETs not answered");
			return -1;
		}
		for (i = 7; i >= 0; i--)
			w = w << 8 | p[SPROTO_HEADER_SIZE + i];
		c->asked[(c->asked_first + c->asked_n++) % CTL_ASKED] = w;
	}
	while (len) {
		k = send(c->fd, p, len, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			snprintf(err, n, "the control connection broke: %s", strerror(errno));
			return -1;
		}
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

/* A whole message at the front of the input: decode it and drop its bytes. 0, 1 more, -1. */
static int take(struct ctl_client *c, struct sproto_msg *m, char *err, size_t n)
{
	struct sproto_header h;
	long size;

	/* decoded views (LIST, SAMPLE) point into the buffer: the message returned last is kept
	 * until now (dropped at once, a SAMPLE's entries would be read from the next message) */
	memmove(c->in, c->in + c->used, c->inlen - c->used);
	c->inlen -= c->used;
	c->used = 0;
	/* version 9: what follows the HELLO_REPLY comes in short frames; version 10: the
	 * HELLO_REPLY too, while an ERROR refusing the HELLO keeps its 12 bytes (any version's:
	 * a short frame's first byte is a reply's type, never the magic's first, 'S') */
	if (c->short_in == 2 && c->inlen && c->in[0] == (SPROTO_MAGIC & 0xff))
		size = sproto_frame(c->in, c->inlen, &h, err, n);
	else
		size = c->short_in ? sproto_frame_short(c->in, c->inlen, &h, err, n)
				   : sproto_frame(c->in, c->inlen, &h, err, n);
	if (size <= 0)
		return size == 0 ? 1 : -1;
	if (sproto_decode(&h, c->in + h.size, m, err, n) != 0)
		return -1;
	c->used = (size_t)size;
	c->frame = h.size;
	count(&c->got, h.type, (size_t)size);
	if (sproto_is_sample(h.type)) { /* its start from the previous one's end */
		if (h.type != SPROTO_SAMPLE && !c->asked_n) {
			snprintf(err, n, "%s: no BUCKET asked for it", sproto_type_name(h.type));
			return -1;
		}
		if (h.type != SPROTO_SAMPLE) { /* version 10: its width from its BUCKET's */
			uint64_t w = c->asked[c->asked_first];

			c->asked_first = (c->asked_first + 1) % CTL_ASKED;
			c->asked_n--;
			if (sproto_sample_asked(&m->u.sample, w) != 0) {
				snprintf(err, n, "%s: a width out of range", sproto_type_name(h.type));
				return -1;
			}
		}
		if (sproto_sample_follow(&m->u.sample, c->sample_end) != 0) {
			snprintf(err, n, "SAMPLE: its start follows a sample never received");
			return -1;
		}
		c->sample_end = m->u.sample.end_ns;
		/* version 9: its metrics and deltas from those of the SAMPLEs before */
		if (!c->sctx && !(c->sctx = calloc(1, sizeof(*c->sctx)))) {
			snprintf(err, n, "out of memory");
			return -1;
		}
		if (sproto_sample_resolve(&m->u.sample, c->sctx, err, n) != 0)
			return -1;
	}
	return 0;
}

int ctl_recv(struct ctl_client *c, struct sproto_msg *m, int timeout_ms, char *err, size_t n)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	ssize_t k;
	int r;

	for (;;) {
		r = take(c, m, err, n);
		if (r <= 0)
			return r;
		r = poll(&p, 1, timeout_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return 1;
		k = recv(c->fd, c->in + c->inlen, SPROTO_MAX_MESSAGE - c->inlen, 0);
		if (k <= 0) {
			snprintf(err, n, "the process closed the control connection");
			return -1;
		}
		c->inlen += (size_t)k;
		c->received += (uint64_t)k;
	}
}

int ctl_request(struct ctl_client *c, const void *msg, size_t len, char *err, size_t n)
{
	struct sproto_msg m;

	if (ctl_send(c, msg, len, err, n) != 0)
		return -1;
	for (;;) {
		if (ctl_recv(c, &m, 10000, err, n) != 0) {
			if (!err[0])
				snprintf(err, n, "no reply from the runtime");
			return -1;
		}
		if (m.h.type == SPROTO_OK)
			return 0;
		if (m.h.type == SPROTO_ERROR) {
			snprintf(err, n, "%s", m.u.status.text);
			return -1;
		}
	}
}

int ctl_costs(struct ctl_client *c, struct sproto_costs *out, char *err, size_t n)
{
	uint8_t msg[SPROTO_HEADER_SIZE];
	struct sproto_msg m;

	if (ctl_send(c, msg, sproto_put_empty(msg, sizeof(msg), SPROTO_COSTS), err, n) != 0)
		return -1;
	for (;;) {
		if (ctl_recv(c, &m, 10000, err, n) != 0) {
			if (!err[0])
				snprintf(err, n, "no reply from the runtime");
			return -1;
		}
		if (m.h.type == SPROTO_COSTS_REPLY) {
			*out = m.u.costs;
			return 0;
		}
		if (m.h.type == SPROTO_ERROR) {
			snprintf(err, n, "%s", m.u.status.text);
			return -1;
		}
	}
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void ctl_wait_end(struct ctl_client *c, unsigned wait_ms)
{
	uint64_t end = mono_ms() + wait_ms, now;
	char b[4096];

	while (c->fd >= 0 && (now = mono_ms()) < end) {
		struct pollfd p = { c->fd, POLLIN, 0 };
		int k = poll(&p, 1, (int)(end - now));
		ssize_t got;

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		got = recv(c->fd, b, sizeof(b), 0);
		if (got == 0 || (got < 0 && errno != EINTR))
			return; /* the end of the stream: the control thread has stopped */
	}
}

void ctl_close(struct ctl_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->in);
	c->in = NULL;
	free(c->sctx);
	c->sctx = NULL;
	c->fd = -1;
}
