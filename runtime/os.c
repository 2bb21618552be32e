/* SPDX-License-Identifier: MIT */
/*
 * Operating-system counters (`sonde run --os`, SONDE_OS=1): page faults (minor, major),
 * context switches (voluntary, involuntary), user and system CPU time.
 *
 *   - per thread: getrusage(RUSAGE_THREAD) by the thread itself as it exits (the pthread key
 *     destructor of thread.c) or, for the thread writing the profile, then; threads still
 *     running then are read from /proc/self/task/TID (CPU time in 10 ms ticks there);
 *   - per thread and phase: the same at each sonde.h phase marker, so a phase's counts are the
 *     thread's own between its two ends;
 *   - per process: getrusage(RUSAGE_SELF) when the profile is written;
 *   - per interval: a sampler thread (every signal blocked, never measured) takes
 *     getrusage(RUSAGE_SELF) every SONDE_OS_INTERVAL ms (default 100), less its own usage, into
 *     a fixed table of cumulative snapshots; when the table is full every other snapshot is
 *     dropped and the period doubles, so a long run keeps its whole span at a coarser grain.
 * The records are OS (11) and OS_INTERVAL (12), docs/format-profile.md.
 */
#include "rt.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define OS_THREADS 4096
#define OS_SNAPS 8192
#define NO_INDEX 0xffffffffu
#define USER_HZ 100 /* the unit of /proc's CPU times on Linux */

struct os_vals {
	uint64_t user_ns, sys_ns, minflt, majflt, nvcsw, nivcsw;
};

struct os_snap {
	uint64_t ticks; /* rt_now() when taken */
	struct os_vals v;
};

int rt_os_on;
static uint64_t period_ns = 100000000;
static struct os_vals *thread_vals; /* by thread index, set as the thread exits */
static _Atomic uint8_t *thread_done;
static struct os_snap *snaps;
static _Atomic uint32_t nsnaps, snap_seq; /* seq is odd while the sampler changes the table */
static struct os_vals sampler_own;       /* the sampler's own usage at its last snapshot */
static struct os_vals base_self, base_main; /* the runtime's start-up, not the program's */

/* Per thread and phase (sonde.h markers): the thread's counters at the phase's two ends. */
struct os_phase {
	struct os_vals start, end;
	uint8_t started, ended;
};
static struct os_phase *phase_tab[OS_THREADS]; /* mapped at the thread's first phase */
static uint16_t *open_phase;                    /* by thread: index + 1 of its open phase */

static uint64_t tv_ns(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000000ull + (uint64_t)tv->tv_usec * 1000ull;
}

static int usage(int who, struct os_vals *v)
{
	struct rusage ru;

	if (getrusage(who, &ru) != 0)
		return -1;
	*v = (struct os_vals){ tv_ns(&ru.ru_utime), tv_ns(&ru.ru_stime), (uint64_t)ru.ru_minflt,
			       (uint64_t)ru.ru_majflt, (uint64_t)ru.ru_nvcsw, (uint64_t)ru.ru_nivcsw };
	return 0;
}

static uint64_t sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static void minus(struct os_vals *a, const struct os_vals *b)
{
	a->user_ns = sub(a->user_ns, b->user_ns);
	a->sys_ns = sub(a->sys_ns, b->sys_ns);
	a->minflt = sub(a->minflt, b->minflt);
	a->majflt = sub(a->majflt, b->majflt);
	a->nvcsw = sub(a->nvcsw, b->nvcsw);
	a->nivcsw = sub(a->nivcsw, b->nivcsw);
}

/* ---- /proc/self/task/TID, for threads still running when the profile is written ---- */

static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n >= 0)
		buf[n] = 0;
	return n;
}

static uint64_t parse_u64(const char **p)
{
	uint64_t v = 0;

	while (**p == ' ' || **p == '\t')
		(*p)++;
	while (**p >= '0' && **p <= '9')
		v = v * 10 + (uint64_t)(*(*p)++ - '0');
	return v;
}

static int prefix(const char *s, const char *p)
{
	while (*p && *s == *p)
		s++, p++;
	return !*p;
}

/* The value after "key:" in a status file, 0 when absent. */
static uint64_t status_value(const char *s, const char *key)
{
	size_t n = rt_strlen(key);
	const char *start = s;

	for (; *s; s++)
		if ((s == start || s[-1] == '\n') && prefix(s, key) && s[n] == ':') {
			s += n + 1;
			return parse_u64(&s);
		}
	return 0;
}

static int task_usage(pid_t tid, struct os_vals *v)
{
	char path[64], buf[2048], *e;
	const char *p;
	int field;

	e = rt_stpcpy(path, "/proc/self/task/", path + sizeof(path));
	e = rt_utoa(e, (uint64_t)tid, path + sizeof(path));
	rt_stpcpy(e, "/stat", path + sizeof(path));
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return -1;
	for (p = buf + rt_strlen(buf); p > buf && *p != ')'; p--)
		;
	p++; /* fields after the name: state is field 3 */
	*v = (struct os_vals){ 0 };
	for (field = 3; field <= 15 && *p; field++) {
		uint64_t x;

		while (*p == ' ')
			p++;
		x = parse_u64(&p);
		while (*p && *p != ' ')
			p++;
		if (field == 10)
			v->minflt = x;
		else if (field == 12)
			v->majflt = x;
		else if (field == 14)
			v->user_ns = x * (1000000000ull / USER_HZ);
		else if (field == 15)
			v->sys_ns = x * (1000000000ull / USER_HZ);
	}
	rt_stpcpy(e, "/status", path + sizeof(path));
	if (read_small(path, buf, sizeof(buf)) > 0) {
		v->nvcsw = status_value(buf, "voluntary_ctxt_switches");
		v->nivcsw = status_value(buf, "nonvoluntary_ctxt_switches");
	}
	return 0;
}

/* ---- per thread ---- */

static void close_phase(uint32_t index, const struct os_vals *v)
{
	uint16_t p = open_phase[index];

	if (p && phase_tab[index]) {
		phase_tab[index][p - 1].end = *v;
		phase_tab[index][p - 1].ended = 1;
	}
	open_phase[index] = 0;
}

/* A phase marker on thread t (probe.c): the phase that ended ends here, the new one starts. */
void rt_os_phase(struct rt_thread *t)
{
	uint32_t n = t->nphases;
	struct os_phase *ps;
	struct os_vals v;

	if (!rt_os_on || t->index >= OS_THREADS || usage(RUSAGE_THREAD, &v) != 0)
		return;
	if (!phase_tab[t->index])
		phase_tab[t->index] = rt_map(RT_MAX_PHASES * sizeof(struct os_phase));
	if (!(ps = phase_tab[t->index]))
		return;
	close_phase(t->index, &v);
	if (n && !t->phases[n - 1].end) {
		ps[n - 1] = (struct os_phase){ .start = v, .started = 1 };
		open_phase[t->index] = (uint16_t)n;
	}
}

void rt_os_thread_end(struct rt_thread *t)
{
	struct os_vals *v;

	if (!rt_os_on || t->index >= OS_THREADS)
		return;
	v = &thread_vals[t->index];
	if (usage(RUSAGE_THREAD, v) != 0)
		return;
	close_phase(t->index, v);
	if (t->tid == rt_pid)
		minus(v, &base_main);
	atomic_store(&thread_done[t->index], 1);
}

/* ---- the interval sampler ---- */

static void take_snapshot(void)
{
	struct os_snap s;
	struct os_vals own;
	uint32_t n = atomic_load(&nsnaps), i;

	if (usage(RUSAGE_SELF, &s.v) != 0 || usage(RUSAGE_THREAD, &own) != 0)
		return;
	minus(&s.v, &own);
	s.ticks = rt_now();
	atomic_fetch_add(&snap_seq, 1);
	if (n == OS_SNAPS) { /* keep every other: intervals twice as long from now on */
		for (i = 0; i < OS_SNAPS / 2; i++)
			snaps[i] = snaps[2 * i];
		n = OS_SNAPS / 2;
		period_ns *= 2;
	}
	snaps[n] = s;
	sampler_own = own;
	atomic_store(&nsnaps, n + 1);
	atomic_fetch_add(&snap_seq, 1);
}

static void *sampler(void *arg)
{
	struct timespec next;

	(void)arg;
	rt_busy = 1; /* the runtime's thread: never measured */
	prctl(PR_SET_NAME, "sonde-os"); /* so top, and bench/io_cost, can tell it */
	clock_gettime(CLOCK_MONOTONIC, &next);
	take_snapshot();
	for (;;) {
		uint64_t ns = (uint64_t)next.tv_nsec + period_ns;

		next.tv_sec += (time_t)(ns / 1000000000ull);
		next.tv_nsec = (long)(ns % 1000000000ull);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) != 0)
			;
		take_snapshot();
	}
	return NULL;
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* After start-up: the sampler thread, made with every signal blocked (it inherits the mask). */
void rt_os_start(void)
{
	create_fn create = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;

	if (!rt_os_on)
		return;
	usage(RUSAGE_SELF, &base_self);
	usage(RUSAGE_THREAD, &base_main);
	if (!period_ns || !create)
		return;
	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (create(&th, &attr, sampler, NULL) != 0)
		rt_log("--os: cannot start the interval sampler: no OS_INTERVAL records");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

/* A forked child has no sampler (threads do not survive fork): per-thread counts only. */
static void os_after_fork(void)
{
	atomic_store(&nsnaps, 0);
	__builtin_memset(thread_done, 0, OS_THREADS);
	__builtin_memset(open_phase, 0, OS_THREADS * sizeof(*open_phase));
	base_self = base_main = (struct os_vals){ 0 }; /* a child's usage starts at the fork */
}

void rt_os_init(void)
{
	const char *v = getenv("SONDE_OS"), *iv = getenv("SONDE_OS_INTERVAL");

	if (!v || !*v || *v == '0')
		return;
	if (iv && *iv) {
		const char *p = iv;
		uint64_t ms = parse_u64(&p);

		period_ns = !*p && ms <= 60000 ? ms * 1000000ull : period_ns; /* 0: no intervals */
	}
	thread_vals = rt_map(OS_THREADS * sizeof(*thread_vals));
	thread_done = rt_map(OS_THREADS);
	open_phase = rt_map(OS_THREADS * sizeof(*open_phase));
	snaps = rt_map(OS_SNAPS * sizeof(*snaps));
	if (!thread_vals || !thread_done || !open_phase || !snaps) {
		rt_log("--os: out of memory for the tables: OS counters are not measured");
		return;
	}
	pthread_atfork(NULL, NULL, os_after_fork);
	rt_os_on = 1;
}

/* ---- writing the OS and OS_INTERVAL records ---- */

static void put_vals(struct sprof_buf *b, const struct os_vals *v)
{
	sprof_put_u64(b, v->user_ns);
	sprof_put_u64(b, v->sys_ns);
	sprof_put_u64(b, v->minflt);
	sprof_put_u64(b, v->majflt);
	sprof_put_u64(b, v->nvcsw);
	sprof_put_u64(b, v->nivcsw);
}

static void write_os(struct writer *w, uint32_t index, uint32_t tid, uint32_t phase, uint64_t wall_ns,
		     const struct os_vals *v)
{
	struct sprof_buf *b;

	b = rt_writer_record(w, SPROF_REC_OS, 72);
	sprof_put_u32(b, index);
	sprof_put_u32(b, tid);
	sprof_put_u32(b, phase);
	sprof_put_u32(b, 0);
	sprof_put_u64(b, wall_ns);
	put_vals(b, v);
}

/* One OS record per phase of the thread whose two ends were seen. */
static void write_phases(struct writer *w, const struct rt_thread *t, uint64_t end)
{
	const struct os_phase *ps = t->index < OS_THREADS ? phase_tab[t->index] : NULL;
	uint32_t p;

	for (p = 0; ps && p < t->nphases && p < RT_MAX_PHASES; p++) {
		const struct rt_phase *ph = &t->phases[p];
		struct os_vals d = ps[p].end;

		if (!ps[p].started || !ps[p].ended)
			continue;
		minus(&d, &ps[p].start);
		write_os(w, t->index, (uint32_t)t->tid, p,
			 rt_ticks_to_ns((ph->end ? ph->end : end) - ph->start), &d);
	}
}

static void write_threads(struct writer *w, uint64_t now)
{
	struct rt_thread *t;

	for (t = atomic_load(&rt_threads); t; t = t->next) {
		struct os_vals v;
		uint64_t end = atomic_load(&t->exited) ? t->end : now;

		if (t->index < OS_THREADS && atomic_load(&thread_done[t->index]))
			v = thread_vals[t->index];
		else if (task_usage(t->tid, &v) != 0)
			continue; /* gone without a word: nothing to say */
		else {
			if (t->index < OS_THREADS)
				close_phase(t->index, &v);
			if (t->tid == rt_pid)
				minus(&v, &base_main);
		}
		write_os(w, t->index, (uint32_t)t->tid, NO_INDEX, rt_ticks_to_ns(end - t->start), &v);
		write_phases(w, t, end);
	}
}

/* Wait (boundedly) for the sampler to finish changing the table; it runs on another thread. */
static uint32_t stable_count(void)
{
	int spin;

	for (spin = 0; spin < 1000000 && (atomic_load(&snap_seq) & 1); spin++)
		__builtin_ia32_pause();
	return atomic_load(&nsnaps);
}

static void write_interval(struct writer *w, const struct os_snap *a, const struct os_snap *b)
{
	struct os_vals d = b->v;
	struct sprof_buf *out;

	minus(&d, &a->v);
	out = rt_writer_record(w, SPROF_REC_OS_INTERVAL, 64);
	sprof_put_u64(out, rt_ticks_to_ns(sub(a->ticks, rt_start_ticks)));
	sprof_put_u64(out, rt_ticks_to_ns(sub(b->ticks, rt_start_ticks)));
	put_vals(out, &d);
}

/*
 * The process is ending (exit, signal, exec): the writing thread's and the process's usage are
 * taken now, before the writer's own work (recalibration) adds to them.
 */
static struct os_snap last;     /* the process at the end, as the sampler counts it */
static struct os_vals process;  /* the same less the runtime's start-up */
static uint64_t end_ticks;
static int have_last;

void rt_os_end(struct rt_thread *self, uint64_t now)
{
	if (!rt_os_on)
		return;
	end_ticks = now;
	if (self)
		rt_os_thread_end(self);
	have_last = usage(RUSAGE_SELF, &last.v) == 0;
	minus(&last.v, &sampler_own);
	last.ticks = now;
	process = last.v;
	minus(&process, &base_self);
}

void rt_os_write(struct writer *w)
{
	uint32_t n, i;

	if (!rt_os_on)
		return;
	write_threads(w, end_ticks);
	if (!have_last)
		return;
	write_os(w, NO_INDEX, (uint32_t)rt_pid, NO_INDEX, rt_ticks_to_ns(end_ticks - rt_start_ticks),
		 &process);
	n = stable_count();
	for (i = 0; i + 1 < n; i++)
		write_interval(w, &snaps[i], &snaps[i + 1]);
	if (n && snaps[n - 1].ticks < end_ticks)
		write_interval(w, &snaps[n - 1], &last);
}
