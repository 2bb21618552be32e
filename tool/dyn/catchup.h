/* SPDX-License-Identifier: MIT */
/*
 * Paradyn's catch-up (docs/dynamic.md, "Calls already running"): when a point gets timer
 * actions, the calls of its procedure that are running already — a thread blocked in
 * pthread_mutex_lock, a worker inside its loop — would add nothing until they end and begin
 * again. So the world is stopped, every thread's stack is unwound (libdw), and each such call
 * gets the point's new entry actions now and its return hooked, through a remote call of the
 * runtime's sonde__dyn_catch_up on the thread itself; a thread's calls outermost first, so that
 * PROFILE actions enter them in the order they nest.
 */
#ifndef SONDE_DYN_CATCHUP_H
#define SONDE_DYN_CATCHUP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../format/protocol.h"

/* A procedure whose running calls are to be caught up. */
struct dyn_catchup_proc {
	uint64_t lo, hi; /* its code in the target */
	/*
	 * A call that waits on a futex inside an object of this size (a mutex, a condition...):
	 * the object holding the futex word the thread sleeps on stands for its first argument.
	 * 0: the arguments are known only when the procedure itself made the system call the
	 * thread is in (read, write...); otherwise actions with argument predicates are not run.
	 */
	uint32_t obj_size;
	const struct sproto_point_set *ps; /* its point, and the actions whose entry part runs */
};

struct dyn_catchup_stats {
	uint32_t stops;    /* times the world was stopped for it */
	uint32_t threads;  /* threads looked at */
	uint32_t calls;    /* calls caught up */
	uint32_t refused;  /* found but not caught up (the runtime could not hook the return) */
	double pause_ms;   /* the world stopped */
	uint32_t failed;   /* catch-ups that could not be made (the process ending, ptrace...): */
	char why[160];     /* the first one's reason; the calls then run uncaught, as before */
};

/*
 * Catch up the running calls of procs in process pid; runtime_addr: any address in the
 * runtime's code there (HELLO's entry). Adds to *st. Best effort: a catch-up that cannot be
 * made is counted in st->failed (its reason in st->why) and changes nothing else.
 */
void dyn_catch_up(pid_t pid, uint64_t runtime_addr, const struct dyn_catchup_proc *procs,
		  size_t n, struct dyn_catchup_stats *st);

/* Whether the entry actions start a timer or a profiled call, or raise a flag that the exit
 * lowers: only then is a running call worth catching up (a mere count of entries is not). */
int dyn_catchup_wanted(const struct sproto_point_set *ps);

/* The object size of a sync call by its name (pthread_mutex_lock: a mutex's), 0 for others. */
uint32_t dyn_catchup_obj_size(const char *proc);

#endif
