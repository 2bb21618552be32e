/* SPDX-License-Identifier: MIT */
/*
 * Start-up and shut-down of the runtime inside the measured program: options from the
 * environment (set by `sonde run`, docs/runtime.md), calibration, and the hooks that get the
 * profile written however the process ends — exit, _exit, a terminating signal, exec, fork.
 */
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h> /* sscanf only, at start-up */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct rt_config rt_cfg;
int rt_mode;
struct sprof_calib rt_calib;
_Atomic int rt_ready;
_Atomic int rt_used;
pid_t rt_pid;
uint64_t rt_start_ticks;
uint64_t rt_start_unix_ns;
char rt_cmdline[SPROF_MAX_STR];
size_t rt_cmdline_len;

static const int term_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT };
static const int fault_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL };

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long x;

	if (!v || !*v)
		return def;
	errno = 0;
	x = strtoull(v, &end, 10);
	return errno || *end ? def : x;
}

/* SONDE_THROTTLE: "off", or "CALLS:USEC" (default 100000:10, TAU's rule). */
static void parse_throttle(void)
{
	const char *v = getenv("SONDE_THROTTLE");
	unsigned long long calls = 100000;
	double usec = 10;

	if (v && strcmp(v, "off") == 0) {
		rt_cfg.throttle_calls = 0;
		return;
	}
	if (v && sscanf(v, "%llu:%lf", &calls, &usec) != 2) {
		calls = 100000;
		usec = 10;
	}
	rt_cfg.throttle_calls = calls;
	rt_cfg.throttle_ticks = (uint64_t)(usec * 1000.0 * rt_ticks_per_ns());
}

/* Periodic work every 2^k calls of a node (k <= 12), often enough for small throttle limits. */
static void set_throttle_mask(void)
{
	/* --insitu: windows of 1024 calls, so that runs of a few 10^5 calls give enough pairs */
	uint64_t mask = env_u64("SONDE_INSITU", 0) ? 1023 : 4095;

	while (rt_cfg.throttle_calls && mask > 15 && mask + 1 > rt_cfg.throttle_calls / 4)
		mask >>= 1;
	rt_probe_set_throttle_mask(mask);
	rt_sample_every = (uint32_t)(65536 / (mask + 1)); /* a calibration batch per 2^16 calls */
}

static void read_options(void)
{
	const char *dir = getenv("SONDE_DIR");

	rt_stpcpy(rt_cfg.dir, dir && *dir ? dir : "sonde-out", rt_cfg.dir + sizeof(rt_cfg.dir));
	rt_cfg.depth = (uint32_t)env_u64("SONDE_DEPTH", 0);
	if (!rt_cfg.depth || rt_cfg.depth > 65536)
		rt_cfg.depth = 65536;
	rt_cfg.cpu = env_u64("SONDE_CPU", 0) != 0;
	rt_cfg.follow_exec = env_u64("SONDE_FOLLOW_EXEC", 0) != 0;
	rt_cfg.precise = env_u64("SONDE_PRECISE", 0) != 0 && rt_clock_tsc;
	rt_precise = rt_cfg.precise;
	rt_cfg.trace = env_u64("SONDE_TRACE", 0) != 0;
	rt_cfg.trace_drop = env_u64("SONDE_TRACE_DROP", 0) != 0;
	rt_cfg.trace_rate = env_u64("SONDE_TRACE_RATE", 0);
	rt_cfg.trace_chunk = env_u64("SONDE_TRACE_BUFFER", 1u << 20) & ~(uint64_t)4095;
	if (rt_cfg.trace_chunk < 65536)
		rt_cfg.trace_chunk = 65536;
	parse_throttle();
	set_throttle_mask();
}

/* Without --follow-exec, programs this one execs see the environment it was given. */
static void unpreload_self(void)
{
	const char *v = getenv("LD_PRELOAD"), *p;
	char keep[4096], *e = keep;

	if (!v || rt_cfg.follow_exec)
		return;
	keep[0] = 0;
	for (p = v; *p;) {
		size_t n = strcspn(p, ": ");

		if (!(n >= 11 && memcmp(p + n - 11, "libsonde.so", 11) == 0) &&
		    !(n >= 15 && memcmp(p + n - 15, "libsonde-mpi.so", 15) == 0) && n &&
		    (size_t)(e - keep) + n + 2 < sizeof(keep)) {
			if (e != keep)
				*e++ = ':';
			memcpy(e, p, n);
			e += n;
			*e = 0;
		}
		p += n;
		p += strspn(p, ": ");
	}
	if (keep[0])
		setenv("LD_PRELOAD", keep, 1);
	else
		unsetenv("LD_PRELOAD");
}

void rt_read_cmdline(void)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return;
	n = read(fd, rt_cmdline, sizeof(rt_cmdline));
	close(fd);
	rt_cmdline_len = n > 0 ? (size_t)n : 0;
}

/* Write the profile, then let the signal do what it would have done without us. */
static void on_signal(int signo)
{
	size_t i;
	int fault = 0;

	for (i = 0; i < sizeof(fault_signals) / sizeof(fault_signals[0]); i++)
		fault |= fault_signals[i] == signo;
	if (!fault) /* a fault may have hit the runtime itself: nothing more than the profile */
		dyn_server_final();
	rt_write_profile(SPROF_END_SIGNAL, signo);
	signal(signo, SIG_DFL);
	if (!fault)
		raise(signo); /* delivered when the handler returns; a fault simply recurs */
}

/* Only where the program left the default: an ignored or handled signal stays as it was. */
static void catch_if_default(int signo)
{
	struct sigaction old, sa;

	if (sigaction(signo, NULL, &old) != 0 || old.sa_handler != SIG_DFL)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART | SA_NODEFER;
	sigaction(signo, &sa, NULL);
}

static void install_signals(void)
{
	size_t i;

	for (i = 0; i < sizeof(term_signals) / sizeof(term_signals[0]); i++)
		catch_if_default(term_signals[i]);
	for (i = 0; i < sizeof(fault_signals) / sizeof(fault_signals[0]); i++)
		catch_if_default(fault_signals[i]);
}

static uint64_t unix_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void after_fork_child(void)
{
	rt_busy++; /* the runtime's own work (reading /proc/self/cmdline) is not the program's */
	rt_pid = getpid();
	rt_start_ticks = rt_now();
	rt_start_unix_ns = unix_ns(); /* the same moment: traces of several processes line up */
	rt_writer_after_fork();
	rt_thread_after_fork();
	rt_read_cmdline();
	rt_trace_after_fork();
	rt_sample_after_fork();
	dyn_server_after_fork();
	rt_busy--;
}

/* Whether LD_PRELOAD names the runtime: it was preloaded, not opened by dlopen. */
static int preloaded(void)
{
	const char *p = getenv("LD_PRELOAD");

	while (p && *p) {
		size_t n = strcspn(p, ": ");

		if (n >= 11 && memcmp(p + n - 11, "libsonde.so", 11) == 0)
			return 1;
		p += n;
		p += strspn(p, ": ");
	}
	return 0;
}

/*
 * Loaded by dlopen (sonde attach injects it; sonde calibrate loads it): no signal handler, no
 * change to the environment, no trace, nothing written on exit. The tables are made so that
 * sonde__calibrate can measure; the control server starts when sonde__attach is called.
 */
static void start_attached(void)
{
	read_options(); /* only reads: SONDE_PRECISE for sonde calibrate */
	rt_cfg.trace = 0;
	if (rt_func_table_init() != 0)
		return;
	rt_start_ticks = rt_now();
	atomic_store(&rt_ready, 1);
}

/*
 * sonde run --dynamic: measured as by sonde run, through the points the tool sets (SPROTO_PROFILE)
 * instead of compiler hooks. The control server starts now; with SONDE_DYNAMIC_HOLD=1 the program
 * waits here, before main, until the tool has patched it and says RESUME (at most 2 minutes).
 */
static void start_dynamic(void)
{
	if (dyn_server_start(getenv("SONDE_CTL_DIR"), 1) != 0)
		return; /* runtime.log says why */
	if (env_u64("SONDE_DYNAMIC_HOLD", 0))
		dyn_server_hold(120);
}

/*
 * `sonde calibrate` loads the runtime with dlopen only to measure its probes: no control
 * server (which a runtime that is not preloaded would otherwise start, as if injected), no
 * profile at exit; just what the calibration needs.
 */
static int calibrate_only;

static void start_calibrate_only(void)
{
	calibrate_only = 1;
	rt_mode = RT_MODE_PROFILE;
	read_options();
	if (rt_func_table_init() != 0) {
		rt_log("out of memory at start: not calibrating");
		return;
	}
	rt_thread_init_keys();
	rt_start_ticks = rt_now();
	rt_busy = 0;
	atomic_store(&rt_ready, 1);
}

__attribute__((constructor(101))) static void rt_init(void)
{
	rt_busy = 1;
	rt_pid = getpid();
	rt_start_unix_ns = unix_ns();
	rt_clock_init();
	if (env_u64("SONDE_CALIBRATE_ONLY", 0)) {
		start_calibrate_only();
		return;
	}
	rt_mode = !preloaded() ? RT_MODE_ATTACHED
		  : env_u64("SONDE_DYNAMIC", 0) ? RT_MODE_DYNAMIC : RT_MODE_PROFILE;
	/* preloaded, the profile runs from the start; attached, from PROFILE_BEGIN (attached.c) */
	atomic_store(&dyn_profile_live, rt_mode != RT_MODE_ATTACHED);
	if (rt_mode == RT_MODE_ATTACHED) {
		start_attached();
		rt_busy = 0;
		return;
	}
	read_options();
	unpreload_self();
	rt_read_cmdline();
	if (rt_func_table_init() != 0) {
		rt_log("out of memory at start: not measuring");
		return;
	}
	rt_modules_refresh();
	if (getenv("SONDE_SELECT") && rt_select_load(getenv("SONDE_SELECT")) != 0)
		rt_log("unreadable selection file: measuring every function");
	rt_thread_init_keys();
	rt_wrap_init();
	rt_io_init();
	rt_os_init();
	rt_start_ticks = rt_now();
	rt_trace_init(); /* before calibrating: the trace probes are the ones to measure */
	if (rt_sample_only())
		rt_calibrate_clock(&rt_calib);
	else
		rt_calibrate(&rt_calib, rt_cfg.cpu);
	if (!rt_sample_only())
		rt_calibrate_overlap(&rt_overlap);
	rt_sync_init(); /* after the probes' costs: the compensation uses them */
	rt_insitu_init();
	pthread_atfork(NULL, NULL, after_fork_child);
	install_signals();
	rt_os_start();
	rt_hw_init();
	rt_sample_init();
	rt_start_ticks = rt_now();
	rt_start_unix_ns = unix_ns(); /* with the ticks: the pair maps one clock to the other */
	rt_busy = 0;
	atomic_store(&rt_ready, 1);
	if (rt_mode == RT_MODE_DYNAMIC)
		start_dynamic();
}

/* exit or the end of main: a tool watching gets its last sample, then the profile is written. */
__attribute__((destructor)) static void rt_fini(void)
{
	if (calibrate_only)
		return;
	dyn_server_final();
	if (rt_mode == RT_MODE_ATTACHED)
		rt_attached_exit();
	dyn_server_unlink();
	if (rt_mode != RT_MODE_ATTACHED && getpid() == rt_pid)
		rt_write_profile(SPROF_END_EXIT, 0);
}
