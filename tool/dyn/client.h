/* SPDX-License-Identifier: MIT */
/*
 * The tool's end of the control protocol (format/protocol.h, docs/protocol.md): connect to a
 * process's control socket, send requests, read replies and samples.
 */
#ifndef SONDE_DYN_CLIENT_H
#define SONDE_DYN_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol.h"

/* Messages and bytes by type, frames included; a type's slot is its low 5 bits (requests
 * 1-17 sent, replies 0x81-0x8a received: docs/protocol.md), so one table serves each way. */
#define CTL_SLOTS 32
struct ctl_traffic {
	uint64_t msgs[CTL_SLOTS], bytes[CTL_SLOTS];
};

#define CTL_ASKED 64

struct ctl_client {
	int fd;
	uint8_t *in; /* bytes received, not yet decoded */
	size_t inlen;
	size_t used; /* the message returned last, at the front of in: dropped at the next call */
	uint64_t sample_end; /* the end of the last SAMPLE received (the next one's start) */
	uint64_t received;   /* every byte read from the connection (replies, samples) */
	struct ctl_traffic sent, got; /* requests sent, messages received (decoded) */
	int short_in;        /* 1: the HELLO_REPLY came, the runtime's frames are short (version 9);
			      * 2: it is awaited (short, version 10, or a 12-byte ERROR) */
	uint32_t frame;      /* the header bytes of the message returned last */
	struct sproto_sctx *sctx; /* what its SAMPLEs refer to (version 9; allocated at the first) */
	struct sproto_hello_reply hello;
	/* version 10: the widths of the BUCKETs sent and not answered yet (a BUCKET_REPLY's
	 * width is written from its BUCKET's), in order */
	uint64_t asked[CTL_ASKED];
	uint32_t asked_first, asked_n;
};

/* The directory the runtime puts its socket in when the tool names none. */
int ctl_default_dir(char *out, size_t cap);
/* Connect to DIR/ctl.PID, waiting up to wait_ms for it to appear (the process starting); the
 * process must stay alive meanwhile. Says HELLO. 0, or -1 with err. */
int ctl_connect(struct ctl_client *c, const char *dir, pid_t pid, unsigned wait_ms, char *err,
		size_t n);
/* Send one encoded message. */
int ctl_send(struct ctl_client *c, const void *msg, size_t len, char *err, size_t n);
/* Next message (blocking up to timeout_ms; -1 forever): 0, 1 on time-out, -1 on error/EOF. */
int ctl_recv(struct ctl_client *c, struct sproto_msg *m, int timeout_ms, char *err, size_t n);
/* Send a request and wait for its OK (samples arriving meanwhile are skipped). */
int ctl_request(struct ctl_client *c, const void *msg, size_t len, char *err, size_t n);
/* COSTS: what the runtime measured its primitives and trampolines to cost (protocol 2). */
int ctl_costs(struct ctl_client *c, struct sproto_costs *out, char *err, size_t n);
/*
 * After DETACH: the runtime closes the connection only once its control thread has stopped
 * (runtime/dyn/server.c). Waiting for that end (at most wait_ms) means that an attach right
 * after this one never finds the old server still stopping, and so never goes unserved.
 */
void ctl_wait_end(struct ctl_client *c, unsigned wait_ms);
void ctl_close(struct ctl_client *c);
/* Add one traffic table to another (the ranks of an MPI search). */
static inline void ctl_traffic_add(struct ctl_traffic *to, const struct ctl_traffic *t)
{
	unsigned i;

	for (i = 0; i < CTL_SLOTS; i++) {
		to->msgs[i] += t->msgs[i];
		to->bytes[i] += t->bytes[i];
	}
}

#endif
