/* SPDX-License-Identifier: MIT */
/*
 * An attached runtime (loaded by dlopen into a running process: sonde attach, sonde watch)
 * while a tool is connected:
 * - the profile the tool asks for, from PROFILE_BEGIN to PROFILE_END (`sonde attach PID
 *   --for T`): the tool's PROFILE points feed the profile runtime as compiler hooks would;
 *   every thread's tree starts empty at the beginning; at the end PROFILE actions stop, the
 *   runtime waits until no thread is inside one, and writes the profile, calls still open
 *   counted up to that moment;
 * - the process's end meanwhile: at exit, and on a terminating signal whose disposition was
 *   the default, the watching tool gets a last sample and a profile being made is written,
 *   then the process ends as it would have. Those signals are caught only while a tool is
 *   connected; when it goes, each disposition that is still ours is set back to the default.
 *
 * The control thread calls the PROFILE_* handlers; the exit paths run on the ending thread.
 */
#include "rt.h"
#include "dyn/dyn.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { PROF_OFF, PROF_ON, PROF_WRITING };

static _Atomic int prof_state;
static int prepared; /* control thread */
static const int term_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT };
#define NTERM (sizeof(term_signals) / sizeof(term_signals[0]))

static uint64_t unix_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* What start_attached left out and a profile needs; once. */
static void prepare(void)
{
	if (prepared)
		return;
	rt_thread_init_keys();
	/* The stand-ins' PROFILE points reach the probes only while PROFILE actions are live; no
	 * program point has a PROFILE action yet (the tool patches after PROFILE_BEGIN). */
	atomic_store(&dyn_profile_live, 1);
	rt_calibrate(&rt_calib, 0);
	atomic_store(&dyn_profile_live, 0);
	prepared = 1;
}

int rt_attached_profile_begin(const char *dir, const char **why)
{
	if (atomic_load(&prof_state) != PROF_OFF)
		return *why = "a profile is being made already", -1;
	if (!atomic_load(&rt_ready))
		return *why = "the runtime did not start (out of memory?)", -1;
	if (rt_strlen(dir) + 40 > sizeof(rt_cfg.dir))
		return *why = "the profile directory's name is too long", -1;
	prepare();
	rt_stpcpy(rt_cfg.dir, dir, rt_cfg.dir + sizeof(rt_cfg.dir));
	rt_cfg.cpu = 0; /* what an inherited SONDE_CPU asked of another run */
	rt_pid = getpid();
	rt_read_cmdline();
	rt_modules_refresh();
	rt_threads_restart();
	rt_writer_after_fork(); /* the writer writes once per profile */
	atomic_store(&rt_used, 1); /* a profile even when nothing was called */
	rt_start_unix_ns = unix_ns();
	rt_start_ticks = rt_now();
	atomic_store(&prof_state, PROF_ON);
	atomic_store(&dyn_profile_live, 1);
	return 0;
}

/* Another thread writes the profile: an ending process waits for it (5 s at most). */
static void wait_written(void)
{
	struct timespec ms1 = { 0, 1000000 };
	int i;

	for (i = 0; i < 5000 && atomic_load(&prof_state) == PROF_WRITING; i++)
		nanosleep(&ms1, NULL);
}

int rt_attached_profile_end(int reason, int signo, const char **why)
{
	int expect = PROF_ON, r;

	if (!atomic_compare_exchange_strong(&prof_state, &expect, PROF_WRITING)) {
		if (expect == PROF_WRITING && reason != SPROF_END_DETACH)
			wait_written();
		return 0;
	}
	if (dyn_profile_quiesce(1000) != 0)
		rt_log("attached profile: a thread stayed inside a probe for 1 s: written anyway");
	r = rt_write_profile(reason, signo);
	atomic_store(&prof_state, PROF_OFF);
	if (r != 0)
		return *why = "cannot write the profile into its directory (runtime.log there "
			      "may say why)", -1;
	return 0;
}

static void on_signal(int signo)
{
	const char *why;
	int saved = errno;

	dyn_server_final();
	rt_attached_profile_end(SPROF_END_SIGNAL, signo, &why);
	signal(signo, SIG_DFL);
	raise(signo); /* delivered when the handler returns: the end it would have had */
	errno = saved;
}

void rt_attached_client(int connected)
{
	struct sigaction old, sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < NTERM; i++) {
		if (sigaction(term_signals[i], NULL, &old) != 0)
			continue;
		if (connected && old.sa_handler == SIG_DFL) {
			sa.sa_handler = on_signal;
			sa.sa_flags = SA_RESTART | SA_NODEFER;
		} else if (!connected && old.sa_handler == on_signal) {
			sa.sa_handler = SIG_DFL;
			sa.sa_flags = 0;
		} else {
			continue;
		}
		sigaction(term_signals[i], &sa, NULL);
	}
}

/* A forked child makes no profile and has no tool: the parent's part of this is not its own. */
void rt_attached_after_fork(void)
{
	atomic_store(&prof_state, PROF_OFF);
	atomic_store(&dyn_profile_live, 0);
	rt_attached_client(0);
}

void rt_attached_exit(void)
{
	const char *why;

	if (getpid() == rt_pid)
		rt_attached_profile_end(SPROF_END_EXIT, 0, &why);
}
