/* SPDX-License-Identifier: MIT */
/*
 * Traces replayed: each thread's calls rebuilt on a stack from its events (shared by the
 * exporters), and the profile that profile mode would have written built from a trace, so that
 * `sonde report` reads a run recorded with `--trace` like any other (docs/export.md).
 */
#ifndef SONDE_TRACE_PROFILE_H
#define SONDE_TRACE_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "profile_read.h"
#include "trace_read.h"

/* A call open on a thread's stack while its events are replayed. */
struct replay_frame {
	uint32_t id;    /* function or region */
	uint32_t data;  /* the consumer's own (a node index, a region reference) */
	uint64_t start; /* ticks */
};

/*
 * The call stack of one thread's events: ENTER and REGION_BEGIN open a call; EXIT and
 * REGION_END close the innermost open call of their id and every call above it (an exit that
 * matches no open call is ignored, as the runtime ignores one); UNWIND closes the calls above
 * its depth; calls still open at the end of the stream close at its last event.
 */
struct replay {
	struct replay_frame *stack;
	uint32_t depth, cap;
	void *arg;
	/* a call opened: its frame is stack[depth - 1] */
	void (*open)(struct replay *r, const struct strc_event *e);
	/* a call closed at time t; f is no longer on the stack */
	void (*close)(struct replay *r, const struct replay_frame *f, uint64_t t);
	/* every other event (not ENTER, EXIT, REGION_BEGIN, REGION_END, UNWIND); may be NULL */
	void (*other)(struct replay *r, const struct strc_event *e);
};

/* Replay one thread's events through r's callbacks. r keeps its stack for the next thread. */
void replay_thread(struct replay *r, const struct strc_thread *t);
void replay_free(struct replay *r);

/*
 * The profile of a trace: per thread a call-path tree with a node per distinct call path
 * (times in ns, FLUSH time kept out of every interval, COUNT calls as unmeasured `skipped`),
 * counters from USER events, phases from PHASE events. Free with sprof_free.
 */
struct sprof_file *trace_profile(const struct strc_file *f);

/* The executable of a trace: RUN's, else the path of module 0 (as a profile's RUN has it). */
const char *trace_exe(const struct strc_file *f);

/* Read a trace file and build its profile: 0, or -1 with a one-line reason in err. */
int trace_profile_read(const char *path, struct sprof_file **out, char *err, size_t errlen);

#endif
