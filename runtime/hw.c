/* SPDX-License-Identifier: MIT */
/*
 * Hardware (and software) counters through perf_event_open (`sonde run --hw EVENTS`,
 * SONDE_HW=name,name...). Each event is opened at start on the main thread with `inherit`, so it
 * counts that thread and the threads created after it; the kernel adds a thread's count when the
 * thread ends, so threads still running when the profile is written are not in it. An event the
 * machine cannot count is recorded with the reason (the tool has said it once on the terminal),
 * and the run goes on. One HW record per event, docs/format-profile.md.
 */
#include "rt.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>

#include "../format/perf_events.h"

#define HIGH_FD 700 /* counters' descriptors are moved up, out of the program's way */

enum hw_status { HW_COUNTED = 0, HW_UNAVAILABLE = 1, HW_FORKED = 2 };

struct hw_event {
	const char *name;
	size_t len;
	int fd, err;
};

static struct hw_event events[PERF_MAX_EVENTS];
static int nevents, forked;

static int move_up(int fd)
{
	int high = fcntl(fd, F_DUPFD_CLOEXEC, HIGH_FD);

	if (high < 0)
		return fd;
	close(fd);
	return high;
}

static void open_event(const char *name, size_t len)
{
	const struct perf_event_name *e = perf_event_find(name, len);
	struct hw_event *h;

	if (!e || nevents == PERF_MAX_EVENTS)
		return; /* the tool checked the names */
	h = &events[nevents++];
	h->name = e->name;
	h->len = rt_strlen(e->name);
	h->fd = perf_event_counter(e);
	h->err = h->fd < 0 ? errno : 0;
	if (h->fd >= 0)
		h->fd = move_up(h->fd);
}

static void hw_after_fork(void)
{
	forked = 1; /* the descriptors count the parent's threads, not this process */
}

void rt_hw_init(void)
{
	const char *v = getenv("SONDE_HW"), *p;

	if (!v || !*v)
		return;
	for (p = v; *p;) {
		size_t n = 0;

		while (p[n] && p[n] != ',')
			n++;
		if (n)
			open_event(p, n);
		p += n;
		if (*p == ',')
			p++;
	}
	if (nevents)
		pthread_atfork(NULL, NULL, hw_after_fork);
}

static void write_event(struct writer *w, const struct hw_event *h)
{
	uint64_t vals[3] = { 0, 0, 0 };
	uint32_t status = HW_COUNTED;
	const char *why = "";
	uint32_t why_len;
	struct sprof_buf *b;

	if (h->fd < 0) {
		status = HW_UNAVAILABLE;
		why = perf_event_why(h->err);
	} else if (forked) {
		status = HW_FORKED;
		why = "not counted in a forked child";
	} else if (read(h->fd, vals, sizeof(vals)) != (ssize_t)sizeof(vals)) {
		status = HW_UNAVAILABLE;
		why = "the counter could not be read";
		vals[0] = vals[1] = vals[2] = 0;
	}
	why_len = (uint32_t)rt_strlen(why);
	b = rt_writer_record(w, SPROF_REC_HW, 32 + 4 + (uint32_t)h->len + 4 + why_len);
	sprof_put_u32(b, status);
	sprof_put_u32(b, (uint32_t)(h->fd < 0 ? h->err : 0));
	sprof_put_u64(b, vals[0]);
	sprof_put_u64(b, vals[1]);
	sprof_put_u64(b, vals[2]);
	sprof_put_str(b, h->name, h->len);
	sprof_put_str(b, why, why_len);
}

void rt_hw_write(struct writer *w)
{
	int i;

	for (i = 0; i < nevents; i++)
		write_event(w, &events[i]);
}
