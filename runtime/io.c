/* SPDX-License-Identifier: MIT */
/*
 * I/O statistics (`sonde run --io`, SONDE_IO=1): which file each descriptor names, and per
 * thread the calls, time, bytes and errors per (file, phase). Writes the FILE records.
 *
 * Everything is in fixed tables mapped at start (no malloc, no lock):
 *   - fd -> file id, for descriptors below IO_FDS; filled at open, cleared at close, and
 *     otherwise filled on first use from /proc/self/fd (descriptors opened before the runtime,
 *     or by calls it does not wrap: pipe, socket, accept, fcntl(F_DUPFD)...);
 *   - files: IO_FILES paths in an open-addressed table, inserted with compare-and-swap;
 *   - per thread, IO_SLOTS (file, phase) statistics, claimed with compare-and-swap so that a
 *     signal handler's I/O in the middle of a call is never lost.
 * What does not fit is counted, never dropped: descriptors beyond IO_FDS, paths beyond the
 * file table, and (file, phase) pairs beyond a thread's table go to the file "(untracked)".
 */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define IO_FDS 65536
#define IO_FILES 4096 /* a power of two */
#define IO_UNTRACKED IO_FILES
#define IO_PATH_BYTES (1u << 20)
#define IO_SLOTS 1024 /* a power of two */
#define IO_NO_PHASE 0xffffu
#define IO_PATH_MAX 4096

enum io_kind { IOK_UNKNOWN, IOK_FILE, IOK_PIPE, IOK_SOCKET, IOK_TERMINAL, IOK_DEVICE, IOK_OTHER,
	       IOK_UNTRACKED };

struct io_file {
	_Atomic uint32_t state; /* 0 free, 1 being filled, 2 ready */
	uint32_t kind, len;
	uint64_t hash;
	const char *path;
};

struct io_slot {
	_Atomic uint32_t key; /* (file id + 1) << 16 | phase; 0: free */
	uint64_t calls[IO_OPS], ticks[IO_OPS];
	uint64_t bytes_read, bytes_written, errors;
};

struct io_thread {
	struct io_slot slots[IO_SLOTS];
	struct io_slot lost; /* what did not fit: counted under (untracked) */
	_Atomic uint32_t used;
	uint16_t order[IO_SLOTS]; /* slots in the order they were claimed */
	pid_t tid;
	struct rt_thread *owner; /* the profile's thread, once it has one */
	struct io_thread *next;
};

int rt_io_on;
RT_TLS int rt_io_depth;
static RT_TLS struct io_thread *io_self;
static _Atomic(struct io_thread *) io_threads;
static _Atomic uint32_t *fd_file; /* file id + 1; 0: not known */
static struct io_file *files;     /* IO_FILES + 1: the last is (untracked) */
static char *path_text;
static _Atomic size_t path_used;

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h;
}

static int starts(const char *s, const char *prefix)
{
	while (*prefix && *s == *prefix)
		s++, prefix++;
	return !*prefix;
}

/* What kind of file a name is: /proc/self/fd says "pipe:[...]" and "socket:[...]". */
static uint32_t kind_of(const char *p)
{
	if (starts(p, "pipe:"))
		return IOK_PIPE;
	if (starts(p, "socket:"))
		return IOK_SOCKET;
	if (starts(p, "/dev/pts/") || starts(p, "/dev/tty") || starts(p, "/dev/console"))
		return IOK_TERMINAL;
	if (starts(p, "/dev/"))
		return IOK_DEVICE;
	return p[0] == '/' ? IOK_FILE : IOK_OTHER;
}

static const char *keep_path(const char *p, size_t n)
{
	size_t at = atomic_fetch_add(&path_used, n + 1);
	char *d;

	if (at + n + 1 > IO_PATH_BYTES)
		return "(file names table full)";
	d = path_text + at;
	__builtin_memcpy(d, p, n);
	d[n] = 0;
	return d;
}

static int same_file(struct io_file *f, uint64_t h, const char *p, size_t n)
{
	return f->hash == h && f->len == n && __builtin_memcmp(f->path, p, n) == 0;
}

/* The id of a path: found, or inserted (lock-free; a slot being filled is waited for briefly). */
static uint32_t intern(const char *p, size_t n)
{
	uint64_t h = hash_bytes(p, n);
	uint32_t i = (uint32_t)h & (IO_FILES - 1), k, spin;

	for (k = 0; k < IO_FILES; k++, i = (i + 1) & (IO_FILES - 1)) {
		struct io_file *f = &files[i];
		uint32_t st = atomic_load_explicit(&f->state, memory_order_acquire);

		if (st == 0 && atomic_compare_exchange_strong(&f->state, &st, 1)) {
			f->path = keep_path(p, n);
			f->len = (uint32_t)n;
			f->hash = h;
			f->kind = kind_of(p);
			atomic_store_explicit(&f->state, 2, memory_order_release);
			return i;
		}
		/* another thread (or an interrupted one) is filling it: a bounded wait, then on */
		for (spin = 0; st == 1 && spin < 10000; spin++)
			st = atomic_load_explicit(&f->state, memory_order_acquire);
		if (st == 2 && same_file(f, h, p, n))
			return i;
	}
	return IO_UNTRACKED;
}

/* /proc/self/fd/N names what a descriptor refers to. */
static uint32_t discover(int fd)
{
	char link[40] = "/proc/self/fd/", target[IO_PATH_MAX];
	ssize_t n;

	rt_utoa(link + 14, (uint64_t)fd, link + sizeof(link));
	n = readlink(link, target, sizeof(target));
	if (n <= 0 || n >= (ssize_t)sizeof(target))
		return IO_UNTRACKED;
	return intern(target, (size_t)n);
}

uint32_t rt_io_fd_name(int fd)
{
	return (unsigned)fd < IO_FDS ? discover(fd) : IO_UNTRACKED;
}

uint32_t rt_io_fd_file(int fd)
{
	uint32_t v, fid;

	if ((unsigned)fd >= IO_FDS)
		return IO_UNTRACKED;
	v = atomic_load_explicit(&fd_file[fd], memory_order_relaxed);
	if (likely(v))
		return v - 1;
	fid = discover(fd);
	if (fid != IO_UNTRACKED)
		atomic_store_explicit(&fd_file[fd], fid + 1, memory_order_relaxed);
	return fid;
}

void rt_io_set_fd(int fd, uint32_t fid)
{
	if (fd_file && (unsigned)fd < IO_FDS)
		atomic_store_explicit(&fd_file[fd], fid == IO_UNTRACKED ? 0 : fid + 1,
				      memory_order_relaxed);
}

void rt_io_forget_fd(int fd)
{
	rt_io_set_fd(fd, IO_UNTRACKED);
}

void rt_io_dup_fd(int oldfd, int newfd)
{
	uint32_t v = 0;

	if (!fd_file || (unsigned)newfd >= IO_FDS)
		return;
	if ((unsigned)oldfd < IO_FDS)
		v = atomic_load_explicit(&fd_file[oldfd], memory_order_relaxed);
	atomic_store_explicit(&fd_file[newfd], v, memory_order_relaxed);
}

/* An absolute name for a path as given: the cwd (or dirfd's directory) joined to it. */
uint32_t rt_io_path_file(int dirfd, const char *path)
{
	char buf[IO_PATH_MAX];
	size_t n = 0, len = rt_strlen(path);
	ssize_t r;

	if (path[0] != '/') {
		if (dirfd == AT_FDCWD) {
			r = syscall(SYS_getcwd, buf, sizeof(buf));
			n = r > 0 ? rt_strlen(buf) : 0;
		} else {
			char link[40] = "/proc/self/fd/";

			rt_utoa(link + 14, (uint64_t)dirfd, link + sizeof(link));
			r = readlink(link, buf, sizeof(buf) - 1);
			n = r > 0 ? (size_t)r : 0;
		}
		if (!n || n + 1 + len >= sizeof(buf))
			return intern(path, len);
		if (buf[n - 1] != '/')
			buf[n++] = '/';
		if (path[0] == '.' && path[1] == '/')
			path += 2, len -= 2;
		__builtin_memcpy(buf + n, path, len);
		return intern(buf, n + len);
	}
	return intern(path, len < IO_PATH_MAX ? len : IO_PATH_MAX - 1);
}

static struct io_thread *thread_state(void)
{
	struct io_thread *t = rt_map(sizeof(*t));

	if (!t)
		return NULL;
	t->tid = (pid_t)syscall(SYS_gettid);
	atomic_store(&t->lost.key, (uint32_t)(IO_UNTRACKED + 1) << 16 | IO_NO_PHASE);
	t->next = atomic_load(&io_threads);
	while (!atomic_compare_exchange_weak(&io_threads, &t->next, t))
		;
	io_self = t;
	return t;
}

/* The thread's current phase (sonde.h markers), by its index among the thread's phases. */
static uint32_t current_phase(const struct rt_thread *t)
{
	uint32_t n;

	if (!t)
		return IO_NO_PHASE;
	n = t->nphases;
	return n && !t->phases[n - 1].end ? n - 1 : IO_NO_PHASE;
}

static struct io_slot *slot_of(struct io_thread *t, uint32_t key)
{
	uint32_t i = (key * 2654435761u) >> 22, k; /* 10 bits: IO_SLOTS */

	for (k = 0; k < IO_SLOTS; k++, i = (i + 1) & (IO_SLOTS - 1)) {
		struct io_slot *s = &t->slots[i];
		uint32_t cur = atomic_load_explicit(&s->key, memory_order_relaxed);

		if (cur == key)
			return s;
		if (cur == 0 && atomic_compare_exchange_strong(&s->key, &cur, key)) {
			t->order[atomic_fetch_add(&t->used, 1)] = (uint16_t)i;
			return s;
		}
		if (cur == key) /* a signal handler claimed it for the same key meanwhile */
			return s;
	}
	return &t->lost;
}

void rt_io_count_file(uint32_t fid, enum io_op op, int64_t ret, uint64_t ticks)
{
	struct io_thread *t = io_self;
	struct rt_thread *owner = rt_self;
	struct io_slot *s;

	if (unlikely(!t) && !(t = thread_state()))
		return;
	if (unlikely(!t->owner) && owner)
		t->owner = owner;
	s = slot_of(t, (fid + 1) << 16 | current_phase(owner));
	s->calls[op]++;
	s->ticks[op] += ticks;
	if (ret < 0)
		s->errors++;
	else if (op == IO_READ)
		s->bytes_read += (uint64_t)ret;
	else if (op == IO_WRITE)
		s->bytes_written += (uint64_t)ret;
}

void rt_io_count(int fd, enum io_op op, int64_t ret, uint64_t ticks)
{
	int saved = errno;

	rt_io_depth++;
	rt_io_count_file(rt_io_fd_file(fd), op, ret, ticks);
	rt_io_depth--;
	errno = saved;
}

/* A forked child starts its statistics afresh (its descriptors, and the tables, stay). */
static void io_after_fork(void)
{
	io_self = NULL;
	atomic_store(&io_threads, NULL);
}

void rt_io_init(void)
{
	const char *v = getenv("SONDE_IO");

	if (!v || !*v || *v == '0')
		return;
	fd_file = rt_map(IO_FDS * sizeof(*fd_file));
	files = rt_map((IO_FILES + 1) * sizeof(*files));
	path_text = rt_map(IO_PATH_BYTES);
	if (!fd_file || !files || !path_text) {
		rt_log("--io: out of memory for the tables: I/O is not measured");
		return;
	}
	files[IO_UNTRACKED] = (struct io_file){ 2, IOK_UNTRACKED, 11, 0, "(untracked)" };
	pthread_atfork(NULL, NULL, io_after_fork);
	rt_io_on = 1;
}

/* ---- writing the FILE records ---- */

#define ROW_BYTES 112
#define NO_INDEX 0xffffffffu

struct row_ref {
	const struct io_thread *t;
	const struct io_slot *s;
};

static uint32_t row_count[IO_FILES + 1], row_start[IO_FILES + 1], row_next[IO_FILES + 1];

static uint32_t key_file(uint32_t key)
{
	return (key >> 16) - 1;
}

static void put_row(struct sprof_buf *b, const struct row_ref *r)
{
	uint32_t phase = atomic_load(&r->s->key) & 0xffff;
	int i;

	sprof_put_u32(b, r->t->owner ? r->t->owner->index : NO_INDEX);
	sprof_put_u32(b, phase == IO_NO_PHASE ? NO_INDEX : phase);
	for (i = 0; i < IO_OPS; i++)
		sprof_put_u64(b, r->s->calls[i]);
	for (i = 0; i < IO_OPS; i++)
		sprof_put_u64(b, rt_ticks_to_ns(r->s->ticks[i]));
	sprof_put_u64(b, r->s->bytes_read);
	sprof_put_u64(b, r->s->bytes_written);
	sprof_put_u64(b, r->s->errors);
}

static void write_file(struct writer *w, uint32_t fid, const struct row_ref *rows, uint32_t n)
{
	const struct io_file *f = &files[fid];
	uint32_t len = f->len > SPROF_MAX_STR ? SPROF_MAX_STR : f->len, i;
	struct sprof_buf *b;

	rt_writer_header(w, SPROF_REC_FILE, 20 + len + n * ROW_BYTES);
	b = rt_writer_room(w, 20 + len);
	sprof_put_u32(b, fid);
	sprof_put_u32(b, f->kind);
	sprof_put_u32(b, n);
	sprof_put_u32(b, 0);
	sprof_put_str(b, f->path, len);
	for (i = 0; i < n; i++)
		put_row(rt_writer_room(w, ROW_BYTES), &rows[i]);
}

static int slot_used(const struct io_slot *s)
{
	int i;

	for (i = 0; i < IO_OPS; i++)
		if (s->calls[i])
			return 1;
	return 0;
}

/* Threads still running may claim slots while the rows are gathered: those wait for no one. */
static void place(struct row_ref *rows, uint32_t key, const struct io_thread *t,
		  const struct io_slot *s)
{
	uint32_t fid = key ? key_file(key) : IO_UNTRACKED;

	if (key && fid <= IO_UNTRACKED && row_next[fid] < row_start[fid] + row_count[fid])
		rows[row_next[fid]++] = (struct row_ref){ t, s };
}

/* Every row of every thread, grouped by file (two passes: count, then place). */
void rt_io_write(struct writer *w)
{
	const struct io_thread *t;
	struct row_ref *rows;
	uint32_t total = 0, fid, i, at = 0;
	size_t bytes;

	if (!rt_io_on)
		return;
	__builtin_memset(row_count, 0, sizeof(row_count));
	for (t = atomic_load(&io_threads); t; t = t->next) {
		for (i = 0; i < atomic_load(&t->used) && i < IO_SLOTS; i++) {
			uint32_t key = atomic_load(&t->slots[t->order[i]].key);

			row_count[key ? key_file(key) : IO_UNTRACKED] += key != 0;
		}
		row_count[IO_UNTRACKED] += slot_used(&t->lost);
	}
	for (fid = 0; fid <= IO_UNTRACKED; fid++) {
		row_start[fid] = row_next[fid] = at;
		at += row_count[fid];
	}
	total = at;
	bytes = (total ? total : 1) * sizeof(*rows);
	rows = rt_map(bytes);
	if (!rows)
		return;
	for (t = atomic_load(&io_threads); t; t = t->next) {
		for (i = 0; i < atomic_load(&t->used) && i < IO_SLOTS; i++) {
			const struct io_slot *s = &t->slots[t->order[i]];

			place(rows, atomic_load(&s->key), t, s);
		}
		if (slot_used(&t->lost))
			place(rows, atomic_load(&t->lost.key), t, &t->lost);
	}
	for (fid = 0; fid <= IO_UNTRACKED; fid++)
		if (row_next[fid] > row_start[fid])
			write_file(w, fid, rows + row_start[fid], row_next[fid] - row_start[fid]);
	rt_unmap(rows, bytes);
}
