/* SPDX-License-Identifier: MIT */
/*
 * Statistical sampling (sonde run --sample[=HZ], SONDE_SAMPLE=HZ): every thread gets its own
 * timer on its CPU-time clock (timer_create, CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID), made by
 * the thread itself — the main thread at start, the others as they start (the pthread_create
 * trampoline, pthread_wrap.c) — and deleted when it exits. Each expiry sends the sampling
 * signal to that thread (sample_signal.c). Needs no compiler instrumentation; with it, the
 * measured profile and the samples come from the same run.
 */
#include "sample.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int rt_sample_on;
uint32_t smp_hz;
int smp_signo;
struct smp_thread *smp_threads;
_Atomic uint32_t smp_nthreads;
_Atomic int smp_sampling;
RT_TLS struct smp_thread *smp_self;

static pthread_key_t exit_key;
static int exit_key_ok;

static uint32_t hz_from_env(void)
{
	const char *v = getenv("SONDE_SAMPLE");
	char *end;
	unsigned long x;

	if (!v || !*v)
		return 0;
	x = strtoul(v, &end, 10);
	return *end || x > 100000 ? 0 : (uint32_t)x;
}

/*
 * Set by sonde run for a program built without instrumentation: there are no probes to
 * calibrate, and calibrating them (tens of ms at start and at exit) would cost more than
 * sampling does.
 */
int rt_sample_only(void)
{
	static int v = -1;
	const char *e;

	if (v < 0) {
		e = getenv("SONDE_SAMPLE_ONLY");
		v = e && *e == '1' && hz_from_env() != 0;
	}
	return v;
}

/* Where this thread's stack lies (pthread_getattr_np: the main thread's too). */
static void stack_bounds(struct smp_thread *t)
{
	pthread_attr_t a;
	void *addr;
	size_t size;

	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return;
	if (pthread_attr_getstack(&a, &addr, &size) == 0) {
		t->stack_lo = (uintptr_t)addr;
		t->stack_hi = (uintptr_t)addr + size;
	}
	pthread_attr_destroy(&a);
}

/* The calling thread's CPU-time timer, sending the sampling signal to it alone. */
static int arm_timer(struct smp_thread *t)
{
	struct sigevent sev;
	struct itimerspec its;
	uint64_t period = 1000000000ull / smp_hz;
	int id = -1;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = smp_signo;
	sev.sigev_value.sival_ptr = t;
	sev._sigev_un._tid = t->tid;
	if (syscall(SYS_timer_create, CLOCK_THREAD_CPUTIME_ID, &sev, &id) != 0)
		return -1;
	t->timer = id;
	its.it_interval.tv_sec = (time_t)(period / 1000000000ull);
	its.it_interval.tv_nsec = (long)(period % 1000000000ull);
	its.it_value = its.it_interval;
	return (int)syscall(SYS_timer_settime, id, 0, &its, NULL);
}

/* Sampling of the calling thread begins (once per thread; the main thread at start). */
void rt_sample_thread_start(void)
{
	struct smp_thread *t;
	uint32_t i;
	int saved = errno;

	if (!rt_sample_on || smp_self)
		return;
	i = atomic_fetch_add(&smp_nthreads, 1);
	if (i >= SMP_MAX_THREADS) {
		atomic_fetch_sub(&smp_nthreads, 1);
		return;
	}
	t = &smp_threads[i];
	memset(t, 0, sizeof(*t));
	t->index = i;
	t->timer = -1;
	t->tid = (pid_t)syscall(SYS_gettid);
	stack_bounds(t);
	t->cpu_start = rt_thread_cpu_ns();
	smp_self = t;
	if (exit_key_ok)
		pthread_setspecific(exit_key, t);
	if (arm_timer(t) != 0)
		rt_log("sampling: a thread's CPU-time timer could not be made: it is not sampled");
	errno = saved;
}

/* pthread key destructor: the thread is exiting; its timer goes with it. */
static void on_thread_exit(void *arg)
{
	struct smp_thread *t = arg;

	atomic_store(&t->ended, 1);
	t->cpu_end = rt_thread_cpu_ns();
	if (t->timer >= 0)
		syscall(SYS_timer_delete, t->timer);
	t->timer = -1;
	smp_self = NULL;
}

uint64_t smp_thread_cpu(const struct smp_thread *t)
{
	struct timespec ts;
	uint64_t now;
	/* the CPU clock of another thread of this process (the kernel's MAKE_THREAD_CPUCLOCK) */
	clockid_t clk = (clockid_t)((~(unsigned)t->tid << 3) | 6);

	if (atomic_load(&t->ended))
		now = t->cpu_end;
	else if (t->cpu_stop)
		now = t->cpu_stop;
	else if (clock_gettime(clk, &ts) == 0)
		now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	else
		return 0;
	return now > t->cpu_start ? now - t->cpu_start : 0;
}

/* From the runtime's start-up, after calibration: sampling starts with the main thread. */
void rt_sample_init(void)
{
	smp_hz = hz_from_env();
	if (!smp_hz || rt_cfg.trace) /* the tool refuses --sample with --trace */
		return;
	smp_signo = SIGRTMAX - 2;
	smp_threads = mmap(NULL, SMP_MAX_THREADS * sizeof(*smp_threads), PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (smp_threads == MAP_FAILED || smp_table_init() != 0 || smp_signal_init() != 0) {
		smp_threads = NULL;
		rt_log("sampling: out of memory or no signal handler: not sampling");
		return;
	}
	exit_key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0;
	rt_sample_on = 1;
	atomic_store(&smp_sampling, 1);
	atomic_store(&rt_used, 1); /* a program without probes still gets its profile written */
	rt_sample_thread_start();
}

/* Before the profile is written: later signals are ignored (the timers run on). */
void rt_sample_stop(void)
{
	struct smp_thread *t = smp_self;

	atomic_store(&smp_sampling, 0);
	if (t) /* its CPU time from here on is the writer's (recalibration, writing) */
		t->cpu_stop = rt_thread_cpu_ns();
}

/* An exec failed after the profile was written: sampling goes on. */
void rt_sample_resume(void)
{
	if (rt_sample_on && smp_self)
		smp_self->cpu_stop = 0;
	if (rt_sample_on)
		atomic_store(&smp_sampling, 1);
}

/* A forked child has no timer (timers are not inherited) and starts with no samples. */
void rt_sample_after_fork(void)
{
	if (!rt_sample_on)
		return;
	smp_table_reset();
	madvise(smp_threads, SMP_MAX_THREADS * sizeof(*smp_threads), MADV_DONTNEED);
	atomic_store(&smp_nthreads, 0);
	smp_self = NULL;
	rt_sample_thread_start();
}
