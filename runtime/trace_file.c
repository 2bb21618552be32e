/* SPDX-License-Identifier: MIT */
/*
 * Getting trace chunks to disk without the program paying for the disk.
 *
 * Each thread owns two buffers of `trace_chunk` bytes (anonymous memory, faulted in once and
 * then reused). When the current one is full the thread hands it off — it becomes READY — and
 * goes on in the other. A writer thread of the runtime, created at start with every signal
 * blocked, writes READY buffers at the end of the file (an atomic add gives each its offset) and
 * frees them. Writing 1 MiB to the page cache costs ~0.5 ms here, 4 ns per event: done by the
 * program's thread it would double the price of an event; done by the writer it costs the
 * program a buffer swap, unless the writer falls behind (then the thread waits, and that wait is
 * the FLUSH event's duration that the analysis removes).
 *
 * At the end (exit, a terminating signal, exec) the ending thread writes whatever is READY
 * itself and waits for the writer to finish what it holds: pwrite is async-signal-safe. A
 * forked child gets a file of its own and writes synchronously (no writer thread there).
 * After SIGKILL the file holds every chunk handed off and written before the kill.
 */
#include "rt.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { BUF_FREE = 0, BUF_FILLING = 1, BUF_READY = 2, BUF_WRITING = 3 };

static int trace_fd = -1;
static _Atomic uint64_t file_end;
static _Atomic uint32_t job_seq; /* bumped on every hand-off: the writer's futex word */
static _Atomic int writer_running;
static _Atomic int lost_logged;
static _Atomic uint64_t lost_bytes;

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (void *)(uintptr_t)addr, op, val, ts, NULL, 0);
}

static void put_header(int fd)
{
	struct strc_header h = { .version = STRC_VERSION, .min_version = STRC_MIN_VERSION };

	__builtin_memcpy(h.magic, STRC_MAGIC, 8);
	h.features = (rt_cfg.trace_drop ? STRC_F_DROP : 0) | (rt_cfg.trace_rate ? STRC_F_RATE : 0);
	h.header_size = STRC_HEADER_SIZE;
	h.pid = (uint32_t)rt_pid;
	h.start_unix_ns = rt_start_unix_ns;
	h.start_ticks = rt_start_ticks;
	h.ticks_per_ns = rt_ticks_per_ns();
	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		rt_log("cannot write the trace file's header");
}

/* RUNDIR/trace.PID.strc, or trace.PID.N.strc when an exec'd image of this pid made one. */
static int open_trace_file(void)
{
	char path[600], *e;
	int n, fd;

	mkdir(rt_cfg.dir, 0755);
	for (n = 0; n < 100; n++) {
		e = rt_stpcpy(path, rt_cfg.dir, path + sizeof(path));
		e = rt_stpcpy(e, "/trace.", path + sizeof(path));
		e = rt_utoa(e, (uint64_t)rt_pid, path + sizeof(path));
		if (n) {
			e = rt_stpcpy(e, ".", path + sizeof(path));
			e = rt_utoa(e, (uint64_t)n, path + sizeof(path));
		}
		rt_stpcpy(e, ".strc", path + sizeof(path));
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;
}

/* Append one closed chunk: its header says how long it is. */
static void write_chunk(struct strc_chunk *c)
{
	uint64_t len = c->capacity, off = atomic_fetch_add(&file_end, len), done = 0;
	ssize_t n;

	while (done < len) {
		n = pwrite(trace_fd, (uint8_t *)c + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (uint64_t)n;
	}
	if (done < len) {
		atomic_fetch_add(&lost_bytes, len);
		if (!atomic_exchange(&lost_logged, 1))
			rt_log("writing the trace failed (disk full?): chunks of events are lost");
	}
}

/* Write every READY buffer of every thread; 1 if there was any. */
static int write_ready(void)
{
	struct rt_thread *t;
	int k, any = 0;

	for (t = atomic_load(&rt_threads); t; t = t->next)
		for (k = 0; k < 2; k++) {
			int ready = BUF_READY;

			if (!atomic_compare_exchange_strong(&t->tr.state[k], &ready, BUF_WRITING))
				continue;
			write_chunk((struct strc_chunk *)t->tr.bufs[k]);
			atomic_store(&t->tr.state[k], BUF_FREE);
			any = 1;
		}
	return any;
}

static void *writer_main(void *arg)
{
	const struct timespec nap = { 0, 20 * 1000 * 1000 };

	(void)arg;
	rt_busy = 1; /* this thread is the runtime's: never measured */
	for (;;) {
		uint32_t seen = atomic_load(&job_seq);

		if (!write_ready())
			futex(&job_seq, FUTEX_WAIT_PRIVATE, seen, &nap);
	}
	return NULL;
}

/* The writer thread, made with every signal blocked so that signals go to the program. */
static void start_writer(void)
{
	typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	create_fn real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
	sigset_t all, old;
	pthread_t th;

	if (!real)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (real(&th, NULL, writer_main, NULL) == 0) {
		pthread_detach(th);
		atomic_store(&writer_running, 1);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int rt_tfile_open(int with_writer)
{
	trace_fd = open_trace_file();
	if (trace_fd < 0) {
		rt_log("cannot create the trace file in the run directory: not tracing");
		return -1;
	}
	atomic_store(&file_end, STRC_HEADER_SIZE);
	put_header(trace_fd);
	atomic_store(&writer_running, 0);
	if (with_writer)
		start_writer();
	return 0;
}

/* A forked child: the parent's file and buffers are the parent's; start a file of our own. */
int rt_tfile_after_fork(void)
{
	struct rt_thread *t = rt_self;

	if (trace_fd >= 0)
		close(trace_fd);
	if (t) {
		if (t->tr.bufs[0] && atomic_load(&t->tr.state[0]) != BUF_FILLING)
			atomic_store(&t->tr.state[0], BUF_FREE);
		if (t->tr.bufs[1] && atomic_load(&t->tr.state[1]) != BUF_FILLING)
			atomic_store(&t->tr.state[1], BUF_FREE);
	}
	return rt_tfile_open(0);
}

static void init_chunk(struct rt_thread *t)
{
	struct rt_trace *tr = &t->tr;
	struct strc_chunk *c = (struct strc_chunk *)tr->bufs[tr->cur];

	c->magic = STRC_CHUNK_MAGIC;
	c->thread = t->index;
	c->seq = 0;
	c->flags = 0;
	c->capacity = 0;
	c->used = 0;
	tr->chunk = c;
	tr->pos = (uint64_t *)(c + 1);
	tr->end = (uint64_t *)((uint8_t *)c + tr->cap - (tr->closing ? 0 : RT_TRACE_CLOSING));
}

/* The current chunk is complete: seal it and queue it for the writer (or write it now). */
static void hand_off(struct rt_thread *t, uint32_t flags)
{
	struct rt_trace *tr = &t->tr;
	struct strc_chunk *c = tr->chunk;

	c->used = (uint64_t)((uint8_t *)tr->pos - (uint8_t *)(c + 1));
	c->capacity = sizeof(*c) + c->used;
	c->flags = flags;
	c->seq = tr->seq++;
	tr->chunk = NULL;
	tr->pos = tr->end = NULL;
	if (!atomic_load(&writer_running)) {
		write_chunk(c);
		atomic_store(&tr->state[tr->cur], BUF_FREE);
		return;
	}
	atomic_store(&tr->state[tr->cur], BUF_READY);
	atomic_fetch_add(&job_seq, 1);
	futex(&job_seq, FUTEX_WAKE_PRIVATE, 1, NULL);
}

/* Wait until buffer k is free (the writer is behind: rare, and the wait is the flush's time). */
static void wait_free(struct rt_trace *tr, int k)
{
	const struct timespec tick = { 0, 50 * 1000 };

	while (atomic_load(&tr->state[k]) != BUF_FREE) {
		if (!atomic_load(&writer_running) && write_ready() == 0)
			break;
		nanosleep(&tick, NULL);
	}
}

/*
 * Start the next chunk of this thread: hand off the current one (if any) and continue in the
 * other buffer. -1 when there is no memory for buffers or tracing is over.
 */
int rt_tchunk_next(struct rt_thread *t)
{
	struct rt_trace *tr = &t->tr;

	if (trace_fd < 0)
		return -1;
	if (!tr->bufs[0]) {
		tr->cap = rt_cfg.trace_chunk;
		tr->bufs[0] = rt_map(tr->cap);
		tr->bufs[1] = rt_cfg.trace_drop ? NULL : rt_map(tr->cap);
		if (!tr->bufs[0] || (!rt_cfg.trace_drop && !tr->bufs[1]))
			return -1;
		tr->cur = 0;
	} else {
		if (tr->chunk)
			hand_off(t, STRC_CHUNK_CLOSED);
		tr->cur ^= 1;
		wait_free(tr, tr->cur);
	}
	atomic_store(&tr->state[tr->cur], BUF_FILLING);
	init_chunk(t);
	return 0;
}

/* The thread's stream ends here (its own END written, or `flags` says final). */
void rt_tchunk_last(struct rt_thread *t, uint32_t flags)
{
	if (t->tr.chunk)
		hand_off(t, flags);
}

/*
 * At the end of the process: streams of threads still running are sealed as they stand (their
 * later records are not written), everything queued is written by us, and we wait for the
 * writer's last chunk.
 */
void rt_tfile_finish(void)
{
	const struct timespec tick = { 0, 100 * 1000 };
	struct rt_thread *t;
	int k, waited;

	for (t = atomic_load(&rt_threads); t; t = t->next)
		if (t != rt_self && !t->tr.ended && t->tr.chunk) {
			t->tr.ended = 1;
			hand_off(t, STRC_CHUNK_CLOSED | STRC_CHUNK_FINAL);
		}
	write_ready();
	for (waited = 0; waited < 20000; waited++) { /* at most 2 s for the writer's chunk */
		int busy = 0;

		for (t = atomic_load(&rt_threads); t; t = t->next)
			for (k = 0; k < 2; k++)
				busy |= atomic_load(&t->tr.state[k]) == BUF_WRITING;
		if (!busy)
			break;
		nanosleep(&tick, NULL);
	}
}

void rt_tfile_rewrite_header(void)
{
	if (trace_fd >= 0)
		put_header(trace_fd);
}

int rt_tfile_ok(void)
{
	return trace_fd >= 0;
}
