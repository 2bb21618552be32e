/* SPDX-License-Identifier: MIT */
/*
 * The validating reader of trace files and the tool's writer; see trace_read.h and
 * docs/format-trace.md. Reading walks the chunks by their capacities, sorts them into per-thread
 * streams, decodes each stream into one event array in a tight loop, then checks what needs the
 * whole file: that every id is defined, of the right kind, and that exits match open calls.
 */
#include "trace_read.h"
#include "trace_read_mpi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(sizeof(struct strc_header) == STRC_HEADER_SIZE, "trace header layout");
_Static_assert(sizeof(struct strc_chunk) == STRC_CHUNK_HEADER, "chunk header layout");

#define MAX_STR SPROF_MAX_STR
#define NO_INDEX UINT32_MAX

/* Words of each short record type; 0: a long record or no type at all. */
static const uint8_t rec_words[32] = {
	[STRC_ENTER] = 1, [STRC_EXIT] = 1, [STRC_REGION_BEGIN] = 1, [STRC_REGION_END] = 1,
	[STRC_PHASE] = 1, [STRC_TIME] = 2, [STRC_USER] = 2, [STRC_THREAD_BEGIN] = 3,
	[STRC_THREAD_END] = 2, [STRC_CREATE] = 2, [STRC_JOIN] = 2, [STRC_FLUSH] = 2,
	[STRC_COUNT] = 2, [STRC_UNWIND] = 2, [STRC_DROPPED] = 2, [STRC_END] = 1,
	[STRC_PROC_END] = 2, [STRC_SYNC_WAIT] = 1, [STRC_SYNC_DONE] = 2, [STRC_SYNC_RELEASE] = 2,
	[STRC_MPI_SEND] = 3, [STRC_MPI_RECV] = 4, [STRC_MPI_COLL] = 5,
};

#define BIT(t) (1u << (t))
/* types whose id names a function table entry */
#define ID_TYPES (BIT(STRC_ENTER) | BIT(STRC_EXIT) | BIT(STRC_REGION_BEGIN) | \
		  BIT(STRC_REGION_END) | BIT(STRC_PHASE) | BIT(STRC_USER) | BIT(STRC_COUNT))
/* of those, the ones naming functions (the others name regions or names) */
#define FUNC_TYPES (BIT(STRC_ENTER) | BIT(STRC_EXIT) | BIT(STRC_COUNT))
/* synchronization events: their id names a DEF_SYNC object */
#define SYNC_TYPES (BIT(STRC_SYNC_WAIT) | BIT(STRC_SYNC_DONE) | BIT(STRC_SYNC_RELEASE))
/* MPI events: their id names a DEF_COMM communicator, their payload goes to f->mpi */
#define MPI_TYPES STRC_MPI_TYPES
/* types that set something besides the event */
#define SPECIAL_TYPES (BIT(STRC_USER) | BIT(STRC_THREAD_BEGIN) | BIT(STRC_THREAD_END) | \
		       BIT(STRC_FLUSH) | BIT(STRC_DROPPED) | BIT(STRC_PROC_END))

const char *strc_type_name(unsigned type)
{
	static const char *names[] = {
		"?", "ENTER", "EXIT", "REGION_BEGIN", "REGION_END", "PHASE", "TIME", "USER",
		"THREAD_BEGIN", "THREAD_END", "CREATE", "JOIN", "FLUSH", "COUNT", "UNWIND",
		"DROPPED", "END", "SYNC_WAIT", "SYNC_DONE", "SYNC_RELEASE", "DEF_FUNC",
		"DEF_MODULE", "CALIB", "RUN", "PROC_END", "DEF_SYNC", "IO", "DEF_FILE",
		"MPI_SEND", "MPI_RECV", "MPI_COLL", "DEF_COMM",
	};

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}

/* A chunk found by the walk. */
struct chunk {
	uint64_t off;   /* of its header */
	uint64_t lim;   /* bytes of records it declares: `used` if closed, else capacity - 32 */
	uint64_t avail; /* of those, the bytes present in the file */
	uint32_t thread, seq, flags;
};

struct reader {
	struct strc_file *f;
	const uint8_t *data;
	size_t len;
	char *err;
	size_t errlen;
	struct chunk *chunks;
	size_t nchunks, cap_chunks;
	size_t *lenient_from;   /* per thread: first event after a gap or a broken chunk */
	uint64_t first_chunk;   /* offset where the walk begins */
	uint32_t cap_funcs, cap_modules;
	int seen_run;
	unsigned nwarn;
	uint8_t *sync_defined;  /* by id: a DEF_SYNC defines it (check_threads) */
};

static int fail(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct reader *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* The file is incomplete: the first reason is kept, the others counted. */
static void warn(struct reader *r, const char *fmt, ...)
{
	va_list ap;

	r->f->truncated = 1;
	if (r->nwarn++)
		return;
	va_start(ap, fmt);
	vsnprintf(r->f->warning, sizeof(r->f->warning), fmt, ap);
	va_end(ap);
}

static void finish_warning(struct reader *r)
{
	size_t n = strlen(r->f->warning);

	if (r->nwarn > 1)
		snprintf(r->f->warning + n, sizeof(r->f->warning) - n, " (and %u more)",
			 r->nwarn - 1);
}

static inline uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* n bytes as a C string: NUL bytes become spaces (command lines come NUL-separated). */
static char *dup_str(const uint8_t *s, uint32_t n, int trim)
{
	char *d = malloc((size_t)n + 1);
	uint32_t i;

	if (!d)
		return NULL;
	for (i = 0; i < n; i++)
		d[i] = s[i] ? (char)s[i] : ' ';
	while (trim && n && d[n - 1] == ' ')
		n--;
	d[n] = 0;
	return d;
}

/* Room for one more element in *arr (of *cap), doubling; -1 when out of memory. */
static int grow(void **arr, uint32_t n, uint32_t *cap, size_t elem)
{
	uint32_t c;
	void *p;

	if (n < *cap)
		return 0;
	if (*cap >= UINT32_MAX / 4)
		return -1;
	c = *cap ? *cap * 2 : 16;
	p = realloc(*arr, (size_t)c * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = c;
	return 0;
}

/* ---- the payload of long records: a bounded cursor ---- */

struct cur {
	const uint8_t *p;
	size_t len, pos;
	int bad;
};

static const uint8_t *take(struct cur *c, size_t n)
{
	const uint8_t *at;

	if (c->bad || n > c->len - c->pos) {
		c->bad = 1;
		return NULL;
	}
	at = c->p + c->pos;
	c->pos += n;
	return at;
}

static uint32_t get32(struct cur *c)
{
	const uint8_t *at = take(c, 4);

	return at ? ld32(at) : 0;
}

static uint64_t get64(struct cur *c)
{
	const uint8_t *at = take(c, 8);

	return at ? ld64(at) : 0;
}

/* A string of n bytes (n checked against the limit), or NULL. */
static const uint8_t *get_str(struct cur *c, uint32_t n)
{
	if (n > MAX_STR)
		c->bad = 1;
	return take(c, n);
}

/* The payload was used exactly: what is left is the padding to a whole word. */
static int exact(const struct cur *c)
{
	return !c->bad && c->len - c->pos < 8;
}

/* ---- long records ---- */

static int read_def_func(struct reader *r, struct cur *c, uint64_t at)
{
	struct strc_file *f = r->f;
	struct strc_func fn;
	const uint8_t *name;
	uint32_t len;

	fn.id = get32(c);
	fn.kind = get32(c);
	fn.flags = get32(c);
	fn.module = (int32_t)get32(c);
	fn.addr = get64(c);
	fn.vaddr = get64(c);
	len = get32(c);
	get32(c);
	name = get_str(c, len);
	if (!exact(c))
		return fail(r, "DEF_FUNC record at byte %llu is malformed", (unsigned long long)at);
	if (fn.id >= STRC_ID_NONE || fn.kind > SPROF_REGION || fn.module < -1)
		return fail(r, "DEF_FUNC record at byte %llu: bad id, kind or module",
			    (unsigned long long)at);
	if (grow((void **)&f->funcs, f->nfuncs, &r->cap_funcs, sizeof(fn)))
		return fail(r, "out of memory");
	fn.name = dup_str(name, len, 0);
	if (!fn.name)
		return fail(r, "out of memory");
	f->funcs[f->nfuncs++] = fn;
	return 0;
}

static int read_def_module(struct reader *r, struct cur *c, uint64_t at)
{
	struct strc_file *f = r->f;
	struct strc_module m;
	const uint8_t *id, *path;
	uint32_t len;

	m.index = get32(c);
	m.build_id_len = get32(c);
	m.bias = get64(c);
	m.lo = get64(c);
	m.hi = get64(c);
	id = take(c, 32);
	len = get32(c);
	get32(c);
	path = get_str(c, len);
	if (!exact(c) || m.build_id_len > 32)
		return fail(r, "DEF_MODULE record at byte %llu is malformed",
			    (unsigned long long)at);
	if (grow((void **)&f->modules, f->nmodules, &r->cap_modules, sizeof(m)))
		return fail(r, "out of memory");
	memcpy(m.build_id, id, 32);
	m.path = dup_str(path, len, 0);
	if (!m.path)
		return fail(r, "out of memory");
	f->modules[f->nmodules++] = m;
	return 0;
}

static int read_calib(struct reader *r, struct cur *c, uint64_t at)
{
	struct strc_file *f = r->f;
	struct sprof_buf b = { 0 };
	struct sprof_calib k;
	uint32_t when = get32(c);
	const uint8_t *p;

	get32(c);
	p = take(c, 88);
	if (!exact(c) || when > 1)
		return fail(r, "CALIB record at byte %llu is malformed", (unsigned long long)at);
	b.p = (uint8_t *)(uintptr_t)p;
	b.cap = 88;
	sprof_get_calib(&b, &k);
	if (!(k.ticks_per_ns > 0 && k.ticks_per_ns < 1e9) || !(k.o_full >= -1e6 && k.o_full < 1e9)
	    || !(k.o_in >= -1e6 && k.o_in < 1e9) || !(k.o_skip >= -1e6 && k.o_skip < 1e9) ||
	    !(k.dt_ns >= 0 && k.dt_ns < 1e12))
		return fail(r, "CALIB record at byte %llu: values out of range",
			    (unsigned long long)at);
	if (when == 0) {
		f->calib_start = k;
		if (!(f->has_calib & 2))
			f->calib = k;
	} else {
		f->calib = k;
	}
	f->has_calib |= when ? 2 : 1;
	return 0;
}

static int read_run(struct reader *r, struct cur *c, uint64_t at)
{
	struct strc_file *f = r->f;
	uint32_t pid, exe_len, cmd_len;
	const uint8_t *exe, *cmd;

	pid = get32(c);
	f->ppid = get32(c);
	f->run_flags = get32(c);
	get32(c);
	f->rate_limit = get64(c);
	f->chunk_bytes = get64(c);
	exe_len = get32(c);
	cmd_len = get32(c);
	exe = get_str(c, exe_len);
	cmd = get_str(c, cmd_len);
	if (!exact(c))
		return fail(r, "RUN record at byte %llu is malformed", (unsigned long long)at);
	if (r->seen_run++)
		return fail(r, "two RUN records");
	if (pid != f->pid)
		return fail(r, "the RUN record's pid %u is not the header's %u", pid, f->pid);
	free(f->exe);
	free(f->cmdline);
	f->exe = dup_str(exe, exe_len, 0);
	f->cmdline = dup_str(cmd, cmd_len, 1);
	return f->exe && f->cmdline ? 0 : fail(r, "out of memory");
}

/* DEF_SYNC: u32 id, u32 kind, u64 addr, u64 site, i32 site_module, u32 flags, u64 site_vaddr. */
static int read_def_sync(struct reader *r, struct cur *c, uint64_t at)
{
	struct strc_file *f = r->f;
	struct strc_sync s;
	uint32_t i;

	s.id = get32(c);
	s.kind = get32(c);
	s.addr = get64(c);
	s.site = get64(c);
	s.site_module = (int32_t)get32(c);
	s.flags = get32(c);
	s.site_vaddr = get64(c);
	if (!exact(c) || s.id >= STRC_ID_NONE || s.kind == 0 || s.kind >= SPROF_SYNC_KINDS ||
	    s.site_module < -1 || (s.flags & ~(SPROF_SYNC_F_INIT | SPROF_SYNC_F_OVERFLOW)))
		return fail(r, "DEF_SYNC record at byte %llu is malformed", (unsigned long long)at);
	for (i = 0; i < f->nsyncs; i++)
		if (f->syncs[i].id == s.id)
			return fail(r, "synchronization object %u is defined twice", s.id);
	if (f->nsyncs >= (1u << 20))
		return fail(r, "too many synchronization objects");
	f->syncs = realloc(f->syncs, (f->nsyncs + 1) * sizeof(s));
	if (!f->syncs)
		return fail(r, "out of memory");
	f->syncs[f->nsyncs++] = s;
	return 0;
}

/* A long record of `size` bytes at q (file offset at); unknown types are skipped. */
static int read_long(struct reader *r, unsigned type, const uint8_t *q, uint64_t size,
		     uint64_t at)
{
	struct cur c = { .p = q + 8, .len = (size_t)size - 8 };

	switch (type) {
	case STRC_DEF_FUNC: return read_def_func(r, &c, at);
	case STRC_DEF_MODULE: return read_def_module(r, &c, at);
	case STRC_CALIB: return read_calib(r, &c, at);
	case STRC_RUN: return read_run(r, &c, at);
	case STRC_DEF_SYNC: return read_def_sync(r, &c, at);
	case STRC_DEF_COMM: {
		char why[96];

		if (strc_def_comm(r->f, c.p, c.len, why, sizeof(why)) == 0)
			return 0;
		return fail(r, "%s (at byte %llu)", why, (unsigned long long)at);
	}
	default: return 0;
	}
}

/* ---- events ---- */

/* What an event record sets besides the event itself. */
static void special(struct reader *r, struct strc_thread *t, struct strc_event *e,
		   const uint8_t *q, uint64_t *now)
{
	switch (e->type) {
	case STRC_USER:
		memcpy(&e->value, &e->arg, 8);
		break;
	case STRC_THREAD_BEGIN:
		t->tid = ld32(q + 8);
		t->edge = e->arg;
		break;
	case STRC_THREAD_END:
		t->self = e->arg;
		break;
	case STRC_FLUSH:
		t->flushes++;
		t->flush_ticks += e->arg;
		*now += e->arg; /* the clock moves by the flush after it */
		break;
	case STRC_DROPPED:
		t->dropped += e->arg;
		break;
	case STRC_PROC_END:
		r->f->ended = 1;
		r->f->end_reason = (uint32_t)e->arg;
		r->f->end_signal = (uint32_t)(e->arg >> 32);
		break;
	}
}

static int bad_record(struct reader *r, uint64_t at, uint64_t w)
{
	unsigned type = strc_type_of(w), words = (unsigned)(w >> 5) & 7;

	if (!type || (words && !rec_words[type]))
		return fail(r, "record of unknown type %u at byte %llu", type,
			    (unsigned long long)at);
	return fail(r, "record of type %u (%s) at byte %llu has a bad length", type,
		    strc_type_name(type), (unsigned long long)at);
}

/* Size in bytes of the record starting with w, or 0 when its type or length is wrong. */
static inline uint64_t record_size(uint64_t w)
{
	unsigned type = strc_type_of(w), words = (unsigned)(w >> 5) & 7;
	uint64_t size = w >> 32;

	if (words)
		return words == rec_words[type] ? words * 8 : 0;
	if (!type || rec_words[type] || size < 8 || size % 8)
		return 0;
	return size;
}

static int is_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return 0;
	return 1;
}

enum { CHUNK_DONE = 0, CHUNK_CUT = 1 };

/*
 * Decode the records of one chunk into t's events (the array has room: every event takes at
 * least one word of the chunk). CHUNK_DONE, CHUNK_CUT when the file ends inside it, -1 refused.
 */
static int decode_chunk(struct reader *r, struct strc_thread *t, const struct chunk *c)
{
	const uint8_t *p = r->data + c->off + STRC_CHUNK_HEADER;
	struct strc_event *ev = t->ev;
	uint64_t pos = 0, now = 0, avail = c->avail;
	size_t n = t->nev;
	int timed = 0;

	while (avail - pos >= 8) {
		const uint8_t *q = p + pos;
		uint64_t w = ld64(q), size = record_size(w);
		unsigned type = strc_type_of(w);
		struct strc_event *e;

		if (!size) {
			t->nev = n;
			if (!w && !(c->flags & STRC_CHUNK_CLOSED))
				return CHUNK_DONE; /* the end of a chunk that was never closed */
			if (!w && is_zero(q, avail - pos))
				return CHUNK_CUT; /* a chunk whose writing was cut short */
			return bad_record(r, c->off + STRC_CHUNK_HEADER + pos, w);
		}
		if (size > avail - pos) {
			t->nev = n;
			if (size > c->lim - pos)
				return fail(r, "record of type %u at byte %llu runs past its chunk",
					    type,
					    (unsigned long long)(c->off + STRC_CHUNK_HEADER + pos));
			return CHUNK_CUT;
		}
		pos += size;
		if (!(w & 0xe0)) {
			if (read_long(r, type, q, size, c->off + STRC_CHUNK_HEADER + pos - size)) {
				t->nev = n;
				return -1;
			}
			continue;
		}
		if (type == STRC_TIME) {
			now = ld64(q + 8);
			timed = 1;
			continue;
		}
		if (__builtin_expect(!timed, 0)) {
			t->nev = n;
			return fail(r, "chunk at byte %llu does not begin with a TIME record",
				    (unsigned long long)c->off);
		}
		now += strc_delta_of(w);
		if (type == STRC_END) {
			t->complete = 1;
			continue;
		}
		e = &ev[n++];
		e->t = now;
		e->arg = size > 8 ? ld64(q + size - 8) : 0;
		e->value = 0;
		e->id = ((ID_TYPES | SYNC_TYPES | MPI_TYPES) >> type) & 1 ? strc_id_of(w)
									  : STRC_ID_NONE;
		e->type = (uint16_t)type;
		e->depth = 0;
		if ((SPECIAL_TYPES >> type) & 1)
			special(r, t, e, q, &now);
		if (((MPI_TYPES >> type) & 1) && strc_mpi_event(r->f, e, q)) {
			t->nev = n;
			return fail(r, "out of memory");
		}
	}
	t->nev = n;
	/* pos and lim are whole words: short of lim, the file ended inside the chunk's records */
	return pos < c->lim ? CHUNK_CUT : CHUNK_DONE;
}

/* ---- the walk over the chunks ---- */

/* Record the chunk whose header is h at off. 1: go on after it, 0: the walk ends here. */
static int add_chunk(struct reader *r, const struct strc_chunk *h, uint64_t off)
{
	uint64_t room = r->len - off - STRC_CHUNK_HEADER, lim;
	struct chunk *c;

	if (h->magic != STRC_CHUNK_MAGIC)
		return fail(r, "bad chunk magic at byte %llu", (unsigned long long)off);
	if (h->capacity < STRC_CHUNK_HEADER || h->capacity % 8)
		return fail(r, "chunk at byte %llu has a bad capacity", (unsigned long long)off);
	lim = h->capacity - STRC_CHUNK_HEADER;
	if (h->flags & STRC_CHUNK_CLOSED) {
		if (h->used > lim || h->used % 8)
			return fail(r, "chunk at byte %llu: used bytes beyond its capacity",
				    (unsigned long long)off);
		lim = h->used;
	}
	if (r->nchunks == r->cap_chunks) {
		size_t cap = r->cap_chunks ? r->cap_chunks * 2 : 16;

		c = realloc(r->chunks, cap * sizeof(*c));
		if (!c)
			return fail(r, "out of memory");
		r->chunks = c;
		r->cap_chunks = cap;
	}
	c = &r->chunks[r->nchunks++];
	*c = (struct chunk){ off, lim, lim < room ? lim : room, h->thread, h->seq, h->flags };
	if (h->capacity - STRC_CHUNK_HEADER <= room)
		return 1;
	warn(r, "the chunk at byte %llu runs past the end of the file (cut short)",
	     (unsigned long long)off);
	return 0;
}

/*
 * An all-zero chunk header: space taken for a chunk that was never written (the process was
 * killed while another chunk was written after it), or zeros ending the file. The walk goes on
 * at the chunk after the zeros, if one follows them; else it ends. The next offset, or 0.
 */
static uint64_t skip_hole(struct reader *r, uint64_t off)
{
	uint64_t next = off;

	while (r->len - next >= 8 && !ld64(r->data + next))
		next += 8;
	if (r->len - next < 8 && is_zero(r->data + next, r->len - next))
		return 0;
	if (r->len - next >= STRC_CHUNK_HEADER && ld32(r->data + next) == STRC_CHUNK_MAGIC) {
		warn(r, "no chunk was written at bytes %llu to %llu (process killed?)",
		     (unsigned long long)off, (unsigned long long)next);
		return next;
	}
	warn(r, "the chunk at byte %llu has no header: the rest of the file is not read",
	     (unsigned long long)off);
	return 0;
}

static int walk(struct reader *r)
{
	uint64_t off = r->first_chunk;

	if (off > r->len)
		warn(r, "the file ends before its first chunk (at byte %llu)",
		     (unsigned long long)off);
	while (off < r->len) {
		struct strc_chunk h;
		int ret;

		if (r->len - off < STRC_CHUNK_HEADER) {
			if (!is_zero(r->data + off, r->len - off))
				warn(r, "the chunk header at byte %llu is cut short",
				     (unsigned long long)off);
			return 0;
		}
		if (is_zero(r->data + off, STRC_CHUNK_HEADER)) {
			off = skip_hole(r, off);
			if (!off)
				return 0;
			continue;
		}
		memcpy(&h, r->data + off, sizeof(h));
		ret = add_chunk(r, &h, off);
		if (ret <= 0)
			return ret;
		off += h.capacity;
	}
	return 0;
}

static int cmp_chunk(const void *a, const void *b)
{
	const struct chunk *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- streams ---- */

#define HUGE_PAGE ((size_t)2 << 20)

/*
 * An event array (malloc'd: strc_free frees it). Big ones ask for huge pages: the page faults
 * of first touch otherwise cost as much as decoding.
 */
static struct strc_event *alloc_events(size_t n)
{
	size_t bytes = n * sizeof(struct strc_event);
	void *p;

	if (bytes < 4 * HUGE_PAGE)
		return malloc(bytes ? bytes : 1);
	if (posix_memalign(&p, HUGE_PAGE, bytes))
		return NULL;
	madvise(p, bytes & ~(HUGE_PAGE - 1), MADV_HUGEPAGE);
	return p;
}

/* One thread's stream: chunks [first, end) of the sorted list. */
static int read_stream(struct reader *r, struct strc_thread *t, size_t first, size_t end,
		       size_t *lenient_from)
{
	uint64_t words = 0;
	uint32_t expect = 0;
	int broken = 0, unclosed = 0, ret = 0;
	size_t i;

	for (i = first; i < end; i++)
		words += r->chunks[i].avail / 8;
	t->ev = alloc_events((size_t)words);
	if (!t->ev)
		return fail(r, "out of memory");
	t->index = r->chunks[first].thread;
	for (i = first; i < end; i++) {
		const struct chunk *c = &r->chunks[i];

		if (c->seq != expect)
			warn(r, "thread %u: chunk %u of its stream is missing", t->index, expect);
		if (c->seq != expect || broken)
			*lenient_from = *lenient_from < t->nev ? *lenient_from : t->nev;
		expect = c->seq + 1;
		t->chunks++;
		ret = decode_chunk(r, t, c);
		if (ret < 0)
			return -1;
		broken = ret == CHUNK_CUT || !(c->flags & STRC_CHUNK_CLOSED);
		unclosed |= !(c->flags & STRC_CHUNK_CLOSED);
		if (ret == CHUNK_CUT)
			warn(r, "thread %u: its stream is cut short in chunk %u", t->index, c->seq);
	}
	t->final = !t->complete && (r->chunks[end - 1].flags & STRC_CHUNK_FINAL) != 0;
	if (ret == CHUNK_CUT)
		return 0;
	if (!t->complete && !t->final)
		warn(r, "thread %u: its stream is cut short (no END record)", t->index);
	else if (unclosed)
		warn(r, "thread %u: a chunk of its stream was never closed", t->index);
	return 0;
}

/* Sort the chunks into streams and decode each. */
static int read_streams(struct reader *r)
{
	struct strc_file *f = r->f;
	size_t i, first, n = 0;

	if (!r->nchunks)
		return 0;
	qsort(r->chunks, r->nchunks, sizeof(*r->chunks), cmp_chunk);
	for (i = 0; i < r->nchunks; i++) {
		if (i && r->chunks[i].thread == r->chunks[i - 1].thread &&
		    r->chunks[i].seq == r->chunks[i - 1].seq)
			return fail(r, "thread %u has two chunks numbered %u", r->chunks[i].thread,
				    r->chunks[i].seq);
		n += !i || r->chunks[i].thread != r->chunks[i - 1].thread;
	}
	f->threads = calloc(n, sizeof(*f->threads));
	r->lenient_from = malloc(n * sizeof(*r->lenient_from));
	if (!f->threads || !r->lenient_from)
		return fail(r, "out of memory");
	for (first = 0; first < r->nchunks; first = i) {
		i = first + 1;
		while (i < r->nchunks && r->chunks[i].thread == r->chunks[first].thread)
			i++;
		r->lenient_from[f->nthreads] = SIZE_MAX;
		f->nthreads++; /* first, so that strc_free frees what it holds */
		if (read_stream(r, &f->threads[f->nthreads - 1], first, i,
				&r->lenient_from[f->nthreads - 1]))
			return -1;
	}
	return 0;
}

/* ---- what needs the whole file ---- */

static int cmp_module(const void *a, const void *b)
{
	const struct strc_module *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

static int cmp_func(const void *a, const void *b)
{
	const struct strc_func *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int same_func(const struct strc_func *a, const struct strc_func *b)
{
	return a->kind == b->kind && a->flags == b->flags && a->module == b->module &&
	       a->addr == b->addr && a->vaddr == b->vaddr && !strcmp(a->name, b->name);
}

/* Modules by index, 0, 1, 2...; the same definition twice counts once. */
static int finish_modules(struct reader *r)
{
	struct strc_file *f = r->f;
	uint32_t i, n = 0;

	if (f->nmodules)
		qsort(f->modules, f->nmodules, sizeof(*f->modules), cmp_module);
	for (i = 0; i < f->nmodules; i++) { /* checked first: strc_free frees them all */
		const struct strc_module *m = &f->modules[i], *prev = m - 1;

		if (i && m->index == prev->index) {
			if (strcmp(m->path, prev->path) || m->lo != prev->lo || m->hi != prev->hi ||
			    m->bias != prev->bias)
				return fail(r, "module %u is defined twice, differently", m->index);
		} else if (m->index != n++) {
			return fail(r, "module %u is missing (modules are numbered 0, 1, 2...)",
				    n - 1);
		}
	}
	for (i = n = 0; i < f->nmodules; i++) {
		if (n && f->modules[i].index == f->modules[n - 1].index)
			free(f->modules[i].path);
		else
			f->modules[n++] = f->modules[i];
	}
	f->nmodules = n;
	return 0;
}

static int cmp_lo(const void *a, const void *b, void *arg)
{
	const struct strc_module *m = arg;
	uint64_t x = m[*(const uint32_t *)a].lo, y = m[*(const uint32_t *)b].lo;

	return x < y ? -1 : x > y;
}

/* The module whose span holds addr (by[] lists the modules by their lo), or -1. */
static int32_t module_at(const struct strc_file *f, const uint32_t *by, uint64_t addr)
{
	uint32_t lo = 0, hi = f->nmodules;

	while (lo < hi) { /* the first module starting above addr */
		uint32_t mid = lo + (hi - lo) / 2;

		if (f->modules[by[mid]].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < f->modules[by[lo - 1]].hi)
		return (int32_t)by[lo - 1];
	return -1;
}

/* Functions whose module was not known when written: found by their address. */
static int locate_funcs(struct reader *r)
{
	struct strc_file *f = r->f;
	uint32_t i, *by;

	if (!f->nmodules)
		return 0;
	by = malloc(f->nmodules * sizeof(*by));
	if (!by)
		return fail(r, "out of memory");
	for (i = 0; i < f->nmodules; i++)
		by[i] = i;
	qsort_r(by, f->nmodules, sizeof(*by), cmp_lo, f->modules);
	for (i = 0; i < f->nfuncs; i++) {
		struct strc_func *fn = &f->funcs[i];
		int32_t m;

		if (fn->kind != SPROF_FUNC || fn->module != -1)
			continue;
		m = module_at(f, by, fn->addr);
		if (m >= 0) {
			fn->module = m;
			fn->vaddr = fn->addr - f->modules[m].bias;
		}
	}
	free(by);
	return 0;
}

/* Functions sorted by id and indexed; checked against the modules. */
static int finish_funcs(struct reader *r)
{
	struct strc_file *f = r->f;
	uint32_t i, n = 0;

	if (f->nfuncs)
		qsort(f->funcs, f->nfuncs, sizeof(*f->funcs), cmp_func);
	for (i = 0; i < f->nfuncs; i++) { /* checked first: strc_free frees them all */
		const struct strc_func *fn = &f->funcs[i];

		if (i && fn->id == fn[-1].id && !same_func(fn, fn - 1))
			return fail(r, "id %u is defined twice, differently", fn->id);
		if (fn->module >= 0 && (uint32_t)fn->module >= f->nmodules)
			return fail(r, "function %u names module %d, which is not in the file",
				    fn->id, fn->module);
	}
	for (i = 0; i < f->nfuncs; i++) {
		if (n && f->funcs[i].id == f->funcs[n - 1].id)
			free(f->funcs[i].name);
		else
			f->funcs[n++] = f->funcs[i];
	}
	f->nfuncs = n;
	f->func_id_cap = n ? f->funcs[n - 1].id + 1 : 0;
	f->func_by_id = malloc((f->func_id_cap ? f->func_id_cap : 1) * sizeof(*f->func_by_id));
	if (!f->func_by_id)
		return fail(r, "out of memory");
	memset(f->func_by_id, 0xff, f->func_id_cap * sizeof(*f->func_by_id));
	for (i = 0; i < n; i++)
		f->func_by_id[f->funcs[i].id] = i;
	return locate_funcs(r);
}

/* The open calls of the thread being checked. */
struct nest {
	uint32_t *stack;
	uint64_t *open; /* by id: how many times it is on the stack */
	size_t n, cap;
};

static int push(struct nest *ns, uint32_t id)
{
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 256;
		uint32_t *p = realloc(ns->stack, cap * sizeof(*p));

		if (!p)
			return -1;
		ns->stack = p;
		ns->cap = cap;
	}
	ns->stack[ns->n++] = id;
	ns->open[id]++;
	return 0;
}

static void pop_to(struct nest *ns, size_t depth)
{
	while (ns->n > depth)
		ns->open[ns->stack[--ns->n]]--;
}

/* Close the innermost open call of id and every call above it (id is open). */
static void close_id(struct nest *ns, uint32_t id)
{
	size_t i = ns->n;

	while (ns->stack[i - 1] != id)
		i--;
	pop_to(ns, i - 1);
}

static inline uint16_t depth16(size_t n)
{
	return n < UINT16_MAX ? (uint16_t)n : UINT16_MAX;
}

/* The event's id is defined, and names a function or a name as its type wants. */
static int check_id(struct reader *r, const struct strc_thread *t, size_t i,
		    const struct strc_event *e)
{
	const struct strc_file *f = r->f;
	uint32_t want = (FUNC_TYPES >> e->type) & 1 ? SPROF_FUNC : SPROF_REGION;
	const struct strc_func *fn;

	if ((e->type == STRC_PHASE || e->type == STRC_USER) && e->id == STRC_ID_NONE)
		return 0; /* the end of a phase; a counter without a name (the table was full) */
	fn = strc_func_of(f, e->id);
	if (!fn)
		return fail(r, "thread %u: %s event %zu names id %u, defined nowhere", t->index,
			    strc_type_name(e->type), i, e->id);
	if (fn->kind != want)
		return fail(r, "thread %u: %s event %zu names id %u, which is a %s", t->index,
			    strc_type_name(e->type), i, e->id, fn->kind ? "region or name" : "function");
	return 0;
}

/* A synchronization event names an object of a DEF_SYNC record. */
static int check_sync_id(struct reader *r, const struct strc_thread *t, size_t i,
			 const struct strc_event *e)
{
	if (r->sync_defined && e->id < STRC_ID_NONE && r->sync_defined[e->id])
		return 0;
	return fail(r, "thread %u: %s event %zu names synchronization object %u, defined nowhere",
		    t->index, strc_type_name(e->type), i, e->id);
}

/* An MPI event names a defined communicator, a rank in it, a known operation. */
static int check_mpi(struct reader *r, const struct strc_thread *t, size_t i,
		     const struct strc_event *e)
{
	char why[128];

	if (strc_mpi_check(r->f, e, why, sizeof(why)) == 0)
		return 0;
	return fail(r, "thread %u: %s event %zu %s", t->index, strc_type_name(e->type), i, why);
}

/* Ids and nesting of one thread's events; sets their depths. */
static int check_thread(struct reader *r, struct strc_thread *t, size_t lenient_from,
			struct nest *ns)
{
	int lenient = (r->f->features & STRC_F_DROP) != 0;
	size_t i;

	for (i = 0; i < t->nev; i++) {
		struct strc_event *e = &t->ev[i];

		lenient |= i >= lenient_from;
		if (((ID_TYPES >> e->type) & 1) && check_id(r, t, i, e))
			return -1;
		if (((SYNC_TYPES >> e->type) & 1) && check_sync_id(r, t, i, e))
			return -1;
		if (((MPI_TYPES >> e->type) & 1) && check_mpi(r, t, i, e))
			return -1;
		e->depth = depth16(ns->n);
		switch (e->type) {
		case STRC_ENTER:
		case STRC_REGION_BEGIN:
			if (push(ns, e->id))
				return fail(r, "out of memory");
			break;
		case STRC_EXIT:
		case STRC_REGION_END:
			if (ns->open[e->id])
				close_id(ns, e->id);
			else if (!lenient)
				return fail(r, "thread %u: %s event %zu (id %u) matches no call",
					    t->index, strc_type_name(e->type), i, e->id);
			e->depth = depth16(ns->n);
			break;
		case STRC_UNWIND:
			pop_to(ns, e->arg < ns->n ? (size_t)e->arg : ns->n);
			break;
		case STRC_DROPPED:
			lenient = 1;
			break;
		}
	}
	pop_to(ns, 0);
	return 0;
}

static int check_threads(struct reader *r)
{
	struct strc_file *f = r->f;
	struct nest ns = { 0 };
	uint32_t i;
	int ret = 0;

	ns.open = calloc(f->func_id_cap ? f->func_id_cap : 1, sizeof(*ns.open));
	if (!ns.open)
		return fail(r, "out of memory");
	if (f->nsyncs && !(r->sync_defined = calloc(STRC_ID_NONE, 1))) {
		free(ns.open);
		return fail(r, "out of memory");
	}
	for (i = 0; i < f->nsyncs; i++)
		r->sync_defined[f->syncs[i].id] = 1;
	strc_mpi_finish(f);
	for (i = 0; i < f->nthreads && !ret; i++)
		ret = check_thread(r, &f->threads[i], r->lenient_from[i], &ns);
	free(r->sync_defined);
	r->sync_defined = NULL;
	free(ns.stack);
	free(ns.open);
	return ret;
}

/* Give back what the event arrays did not use (they were sized by the chunks' bytes). */
static void trim_events(struct strc_file *f)
{
	uint32_t i;

	for (i = 0; i < f->nthreads; i++) {
		struct strc_thread *t = &f->threads[i];
		struct strc_event *p = realloc(t->ev, (t->nev ? t->nev : 1) * sizeof(*t->ev));

		if (p)
			t->ev = p;
	}
}

/* ---- the header, and all together ---- */

static int read_header(struct reader *r)
{
	struct strc_file *f = r->f;
	struct strc_header h;

	if (r->len < 8 || memcmp(r->data, STRC_MAGIC, 8) != 0)
		return fail(r, "not a sonde trace (bad magic)");
	if (r->len < STRC_HEADER_SIZE)
		return fail(r, "truncated: the header is cut at byte %zu", r->len);
	memcpy(&h, r->data, sizeof(h));
	if (h.min_version > STRC_VERSION)
		return fail(r, "trace version %u needs a newer sonde (this one reads %u)",
			    h.version, STRC_VERSION);
	if (!h.version || h.min_version > h.version)
		return fail(r, "bad version fields in the header (%u, %u)", h.version,
			    h.min_version);
	if (h.header_size != STRC_HEADER_SIZE)
		return fail(r, "bad header size %u", h.header_size);
	if (!(h.ticks_per_ns >= 0 && h.ticks_per_ns < 1e9))
		return fail(r, "the header's clock rate is out of range");
	if (h.first_chunk && (h.first_chunk < STRC_HEADER_SIZE || h.first_chunk % 8))
		return fail(r, "bad offset of the first chunk (%llu)",
			    (unsigned long long)h.first_chunk);
	r->first_chunk = h.first_chunk ? h.first_chunk : STRC_HEADER_SIZE;
	f->version = h.version;
	f->features = h.features;
	f->pid = h.pid;
	f->start_unix_ns = h.start_unix_ns;
	f->start_ticks = h.start_ticks;
	f->ticks_per_ns = h.ticks_per_ns;
	return 0;
}

static int read_all(struct reader *r)
{
	struct strc_file *f = r->f;

	if (read_header(r) || walk(r) || read_streams(r) || finish_modules(r) ||
	    finish_funcs(r) || check_threads(r))
		return -1;
	if (!f->nthreads)
		warn(r, "the trace holds no events (the process ended before its first)");
	if (!r->seen_run && !f->truncated)
		return fail(r, "incomplete: no RUN record");
	if ((!f->exe && !(f->exe = dup_str(NULL, 0, 0))) ||
	    (!f->cmdline && !(f->cmdline = dup_str(NULL, 0, 0))))
		return fail(r, "out of memory");
	trim_events(f);
	finish_warning(r);
	return 0;
}

int strc_read_mem(const uint8_t *data, size_t len, struct strc_file **out, char *err,
		  size_t errlen)
{
	struct reader r = { .data = data, .len = len, .err = err, .errlen = errlen };

	*out = NULL;
	if (errlen)
		err[0] = 0;
	r.f = calloc(1, sizeof(*r.f));
	if (!r.f)
		return fail(&r, "out of memory");
	if (!data)
		r.len = 0, r.data = (const uint8_t *)"";
	if (read_all(&r)) {
		strc_free(r.f);
		r.f = NULL;
	}
	free(r.chunks);
	free(r.lenient_from);
	*out = r.f;
	return r.f ? 0 : -1;
}

int strc_read_file(const char *path, struct strc_file **out, char *err, size_t errlen)
{
	struct stat st;
	void *map = NULL;
	int fd, ret;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(err, errlen, "cannot open: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "not a regular file");
		close(fd);
		return -1;
	}
	if (st.st_size > 0)
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		snprintf(err, errlen, "cannot read: %s", strerror(errno));
		return -1;
	}
	ret = strc_read_mem(map, map ? (size_t)st.st_size : 0, out, err, errlen);
	if (map)
		munmap(map, (size_t)st.st_size);
	return ret;
}

void strc_free(struct strc_file *f)
{
	uint32_t i;

	if (!f)
		return;
	free(f->exe);
	free(f->cmdline);
	for (i = 0; i < f->nmodules; i++)
		free(f->modules[i].path);
	for (i = 0; i < f->nfuncs; i++)
		free(f->funcs[i].name);
	for (i = 0; i < f->nthreads; i++)
		free(f->threads[i].ev);
	free(f->modules);
	free(f->funcs);
	free(f->syncs);
	strc_mpi_free(f);
	free(f->threads);
	free(f->func_by_id);
	free(f);
}

const struct strc_func *strc_func_of(const struct strc_file *f, uint32_t id)
{
	if (id >= f->func_id_cap || f->func_by_id[id] == NO_INDEX)
		return NULL;
	return &f->funcs[f->func_by_id[id]];
}

double strc_ticks_to_ns(const struct strc_file *f, uint64_t ticks)
{
	double tpn = f->has_calib && f->calib.ticks_per_ns > 0 ? f->calib.ticks_per_ns
		     : f->ticks_per_ns > 0 ? f->ticks_per_ns : 1.0;

	return (double)ticks / tpn;
}

/* ---- the writer ---- */

struct wbuf {
	uint8_t *p;
	size_t len, cap;
	int oom;
	uint64_t now; /* the clock of the stream being written */
};

/* n more bytes at the end of the buffer (zeroed), or NULL when out of memory. */
static uint8_t *wroom(struct wbuf *b, size_t n)
{
	uint8_t *at;

	if (b->oom)
		return NULL;
	if (n > b->cap - b->len) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *p;

		while (cap - b->len < n) {
			if (cap > SIZE_MAX / 2) {
				b->oom = 1;
				return NULL;
			}
			cap *= 2;
		}
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return NULL;
		}
		b->p = p;
		b->cap = cap;
	}
	at = b->p + b->len;
	memset(at, 0, n);
	b->len += n;
	return at;
}

static void w64(struct wbuf *b, uint64_t v)
{
	uint8_t *at = wroom(b, 8);

	if (at)
		memcpy(at, &v, 8);
}

static void w32x2(struct wbuf *b, uint32_t lo, uint32_t hi)
{
	w64(b, (uint64_t)lo | (uint64_t)hi << 32);
}

/* Bytes, zero-padded to a whole word. */
static void wbytes(struct wbuf *b, const void *s, size_t n)
{
	uint8_t *at = wroom(b, (n + 7) & ~(size_t)7);

	if (at && n)
		memcpy(at, s, n);
}

static size_t str_len(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return n > MAX_STR ? MAX_STR : n;
}

/* A long record's header word, patched by long_end once its length is known. */
static size_t long_begin(struct wbuf *b)
{
	size_t at = b->len;

	w64(b, 0);
	return at;
}

static void long_end(struct wbuf *b, size_t at, unsigned type)
{
	uint64_t w = strc_long_word(type, (uint32_t)(b->len - at));

	if (!b->oom)
		memcpy(b->p + at, &w, 8);
}

static void put_run(struct wbuf *b, const struct strc_file *f)
{
	size_t at = long_begin(b), ne = str_len(f->exe), nc = str_len(f->cmdline);
	uint8_t *s;

	w32x2(b, f->pid, f->ppid);
	w32x2(b, f->run_flags, 0);
	w64(b, f->rate_limit);
	w64(b, f->chunk_bytes);
	w32x2(b, (uint32_t)ne, (uint32_t)nc);
	s = wroom(b, (ne + nc + 7) & ~(size_t)7);
	if (s) {
		memcpy(s, f->exe ? f->exe : "", ne);
		memcpy(s + ne, f->cmdline ? f->cmdline : "", nc);
	}
	long_end(b, at, STRC_RUN);
}

static void put_calib(struct wbuf *b, const struct sprof_calib *c, uint32_t when)
{
	size_t at = long_begin(b);
	struct sprof_buf sb = { 0 };

	w32x2(b, when, 0);
	sb.p = wroom(b, 88);
	sb.cap = 88;
	if (sb.p)
		sprof_put_calib(&sb, c);
	long_end(b, at, STRC_CALIB);
}

static void put_module(struct wbuf *b, const struct strc_module *m)
{
	size_t at = long_begin(b), n = str_len(m->path);

	w32x2(b, m->index, m->build_id_len);
	w64(b, m->bias);
	w64(b, m->lo);
	w64(b, m->hi);
	wbytes(b, m->build_id, 32);
	w32x2(b, (uint32_t)n, 0);
	wbytes(b, m->path, n);
	long_end(b, at, STRC_DEF_MODULE);
}

static void put_func(struct wbuf *b, const struct strc_func *fn)
{
	size_t at = long_begin(b), n = str_len(fn->name);

	w32x2(b, fn->id, fn->kind);
	w32x2(b, fn->flags, (uint32_t)fn->module);
	w64(b, fn->addr);
	w64(b, fn->vaddr);
	w32x2(b, (uint32_t)n, 0);
	wbytes(b, fn->name, n);
	long_end(b, at, STRC_DEF_FUNC);
}

static void put_sync(struct wbuf *b, const struct strc_sync *s)
{
	size_t at = long_begin(b);

	w32x2(b, s->id, s->kind);
	w64(b, s->addr);
	w64(b, s->site);
	w32x2(b, (uint32_t)s->site_module, s->flags);
	w64(b, s->site_vaddr);
	long_end(b, at, STRC_DEF_SYNC);
}

static void put_comm(struct wbuf *b, const struct strc_comm *c)
{
	size_t at = long_begin(b);
	uint32_t listed = c->flags & STRC_COMM_LISTED ? c->size : 0;

	w32x2(b, c->id, c->size);
	w32x2(b, (uint32_t)c->rank, c->flags);
	w32x2(b, listed, 0);
	wbytes(b, c->world, (size_t)listed * 4);
	long_end(b, at, STRC_DEF_COMM);
}

static void put_defs(struct wbuf *b, const struct strc_file *f)
{
	uint32_t i;

	put_run(b, f);
	if (f->has_calib & 1 || (f->has_calib && !(f->has_calib & 2)))
		put_calib(b, f->has_calib & 1 ? &f->calib_start : &f->calib, 0);
	for (i = 0; i < f->nmodules; i++)
		put_module(b, &f->modules[i]);
	for (i = 0; i < f->nfuncs; i++)
		put_func(b, &f->funcs[i]);
	for (i = 0; i < f->nsyncs; i++)
		put_sync(b, &f->syncs[i]);
	for (i = 0; i < f->ncomms; i++)
		put_comm(b, &f->comms[i]);
}

/* The header word of an event at time t, after a TIME record if the delta does not fit. */
static void put_word(struct wbuf *b, unsigned type, uint32_t id, uint64_t t)
{
	uint64_t d = t - b->now;

	if (t < b->now || d > STRC_DELTA_MAX) {
		w64(b, strc_word(STRC_TIME, 2, STRC_ID_NONE, 0));
		w64(b, t);
		d = 0;
	}
	b->now = t;
	w64(b, strc_word(type, rec_words[type], id, d));
}

static int put_event(struct wbuf *b, const struct strc_file *f, const struct strc_thread *t,
		     const struct strc_event *e)
{
	unsigned type = e->type;
	uint32_t id;
	uint64_t arg = e->arg;

	if (type >= 32 || !rec_words[type])
		return -1;
	id = ((ID_TYPES | SYNC_TYPES | MPI_TYPES) >> type) & 1 ? e->id : STRC_ID_NONE;
	if (id > STRC_ID_NONE)
		return -1;
	if (type == STRC_TIME || type == STRC_END) /* the writer makes its own */
		return 0;
	put_word(b, type, id, e->t);
	if ((MPI_TYPES >> type) & 1) {
		uint64_t w[4];
		unsigned i, n;

		if (e->arg >= f->nmpi)
			return -1;
		n = strc_mpi_words(f, e, w);
		for (i = 0; i < n; i++)
			w64(b, w[i]);
		return 0;
	}
	if (type == STRC_USER)
		memcpy(&arg, &e->value, 8);
	if (type == STRC_THREAD_BEGIN)
		w32x2(b, t->tid, 0);
	if (rec_words[type] > 1)
		w64(b, arg);
	if (type == STRC_FLUSH)
		b->now += arg;
	return 0;
}

/* The records only the first stream has at its end: the end CALIB, PROC_END if no event is. */
static void put_proc_end(struct wbuf *b, const struct strc_file *f, int proc_end)
{
	if (f->has_calib & 2)
		put_calib(b, &f->calib, 1);
	if (proc_end) {
		put_word(b, STRC_PROC_END, STRC_ID_NONE, b->now);
		w32x2(b, f->end_reason, f->end_signal);
	}
}

/* One closed chunk holding thread t's stream; the first also holds the process's records. */
static int put_stream(struct wbuf *b, const struct strc_file *f, const struct strc_thread *t,
		      int first, int proc_end, char *err, size_t errlen)
{
	size_t at = b->len, i = 0;
	struct strc_chunk h = { STRC_CHUNK_MAGIC, t->index, 0, STRC_CHUNK_CLOSED, 0, 0 };

	wroom(b, STRC_CHUNK_HEADER);
	b->now = t->nev ? t->ev[0].t : f->start_ticks;
	w64(b, strc_word(STRC_TIME, 2, STRC_ID_NONE, 0));
	w64(b, b->now);
	if (first && t->nev && t->ev[0].type == STRC_THREAD_BEGIN) { /* the stream begins so */
		if (put_event(b, f, t, &t->ev[0]))
			goto bad;
		i = 1;
	}
	if (first)
		put_defs(b, f);
	for (; i < t->nev; i++)
		if (put_event(b, f, t, &t->ev[i]))
			goto bad;
	if (first)
		put_proc_end(b, f, proc_end);
	if (t->complete)
		put_word(b, STRC_END, STRC_ID_NONE, b->now);
	h.used = b->len - at - STRC_CHUNK_HEADER;
	h.capacity = h.used + STRC_CHUNK_HEADER;
	if (!b->oom)
		memcpy(b->p + at, &h, sizeof(h));
	return 0;
bad:
	snprintf(err, errlen, "thread %u: event %zu (type %u, id %u) cannot be written", t->index,
		 i, t->ev[i].type, t->ev[i].id);
	return -1;
}

/* Whether some thread has a PROC_END event. */
static int has_proc_end(const struct strc_file *f)
{
	uint32_t i;
	size_t j;

	for (i = 0; i < f->nthreads; i++)
		for (j = 0; j < f->threads[i].nev; j++)
			if (f->threads[i].ev[j].type == STRC_PROC_END)
				return 1;
	return 0;
}

static void put_header(struct wbuf *b, const struct strc_file *f)
{
	struct strc_header h = { .version = STRC_VERSION, .min_version = STRC_MIN_VERSION };
	uint8_t *at = wroom(b, sizeof(h));

	memcpy(h.magic, STRC_MAGIC, 8);
	h.features = f->features;
	h.header_size = STRC_HEADER_SIZE;
	h.pid = f->pid;
	h.start_unix_ns = f->start_unix_ns;
	h.start_ticks = f->start_ticks;
	h.ticks_per_ns = f->ticks_per_ns;
	if (at)
		memcpy(at, &h, sizeof(h));
}

int strc_write_mem(const struct strc_file *f, uint8_t **out, size_t *len, char *err,
		   size_t errlen)
{
	struct wbuf b = { 0 };
	uint32_t i;

	*out = NULL;
	*len = 0;
	if (!f->nthreads) {
		snprintf(err, errlen, "nothing to write: the trace has no threads");
		return -1;
	}
	put_header(&b, f);
	for (i = 0; i < f->nthreads; i++)
		if (put_stream(&b, f, &f->threads[i], i == 0, f->ended && !has_proc_end(f), err,
			       errlen)) {
			free(b.p);
			return -1;
		}
	if (b.oom) {
		free(b.p);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}

int strc_write_file(const char *path, const struct strc_file *f, char *err, size_t errlen)
{
	uint8_t *data;
	size_t len;
	FILE *fp;
	int ok;

	if (strc_write_mem(f, &data, &len, err, errlen))
		return -1;
	fp = fopen(path, "wb");
	if (!fp) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		free(data);
		return -1;
	}
	ok = fwrite(data, 1, len, fp) == len;
	ok &= fclose(fp) == 0;
	free(data);
	if (!ok) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}
