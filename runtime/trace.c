/* SPDX-License-Identifier: MIT */
/*
 * Event traces (docs/format-trace.md): each thread appends 8-byte event words to a chunk of its
 * own; a full chunk goes to the file (trace_file.c) and the thread goes on in the next. The time
 * a thread spends getting a new chunk is itself recorded (FLUSH), so the analysis removes it. In
 * drop mode a thread keeps one chunk and counts what does not fit.
 *
 * The probes' fast path lives in probe.c; this file holds everything slower: first sight of a
 * function, full chunks, big time gaps, rate throttling, and the records that are not calls.
 */
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int rt_trace_on;
static _Atomic int proc_records_done; /* RUN, CALIB and modules are in some stream */
static _Atomic uint32_t modules_defined;
static _Atomic int trace_done;
static uint64_t rate_window_shift = 23; /* ~4 ms at 2 GHz */
static uint64_t rate_limit;             /* calls per window above which calls are counted */

#define SCRATCH_WORDS 8192

struct rt_rate {
	uint64_t window;  /* window number of `n` */
	uint64_t pending; /* calls counted, not yet written in a COUNT record */
	uint32_t n;       /* calls in that window, detailed or not */
	uint32_t open;    /* counted calls still open: their exits are counted too */
	uint32_t counting;
	uint32_t listed;
};

/* ---- appending records ---- */

static void put_time(struct rt_trace *tr, uint64_t now)
{
	tr->pos[0] = strc_word(STRC_TIME, 2, STRC_ID_NONE, 0);
	tr->pos[1] = now;
	tr->pos += 2;
	tr->last = now;
}

/*
 * Room for `words` more words at time `now`: a new chunk when this one is full (the flush is
 * recorded after the event that needed it: `*flush` gets its duration), a TIME record when the
 * delta would not fit. 0, or -1 when the event is dropped.
 */
static int room(struct rt_thread *t, unsigned words, uint64_t now, uint64_t *flush)
{
	struct rt_trace *tr = &t->tr;

	*flush = 0;
	if (tr->ended)
		return -1;
	if (!tr->pos || tr->pos + words + 2 > tr->end) {
		if (tr->scratch) {
			tr->pos = tr->scratch_buf;
		} else {
			if (tr->failed || (tr->chunk && rt_cfg.trace_drop) || atomic_load(&trace_done))
				goto drop;
			if (rt_tchunk_next(t) != 0) {
				tr->failed = 1;
				goto drop;
			}
			*flush = rt_now() - now;
		}
		put_time(tr, now);
	} else if (now - tr->last > STRC_DELTA_MAX) {
		put_time(tr, now);
	}
	return 0;
drop:
	tr->dropped++;
	return -1;
}

static void put_flush(struct rt_trace *tr, uint64_t ticks)
{
	tr->pos[0] = strc_word(STRC_FLUSH, 2, STRC_ID_NONE, 0);
	tr->pos[1] = ticks;
	tr->pos += 2;
	tr->last += ticks;
}

/* Append a record of 1 + nwords words stamped now. */
static void emit(struct rt_thread *t, unsigned type, uint32_t id, const uint64_t *payload,
		 unsigned nwords, uint64_t now)
{
	struct rt_trace *tr = &t->tr;
	uint64_t flush;
	unsigned i;

	if (now < tr->last) /* stamped before records that moved the clock (end of the process) */
		now = tr->last;
	if (room(t, nwords + 1, now, &flush) != 0)
		return;
	tr->pos[0] = strc_word(type, nwords + 1, id, now - tr->last);
	for (i = 0; i < nwords; i++)
		tr->pos[1 + i] = payload[i];
	tr->pos += nwords + 1;
	tr->last = now;
	if (flush)
		put_flush(tr, flush);
}

void rt_trace_record(struct rt_thread *t, unsigned type, uint32_t id, const uint64_t *payload,
		     unsigned nwords)
{
	emit(t, type, id, payload, nwords, rt_now());
}

/* The same stamped `now`, a clock reading the caller already made (mpi_trace.c). */
void rt_trace_record_at(struct rt_thread *t, unsigned type, uint32_t id, const uint64_t *payload,
			unsigned nwords, uint64_t now)
{
	emit(t, type, id, payload, nwords, now);
}

/* A long record (no time): `bytes` of payload, zero-padded to whole words. */
static void emit_long(struct rt_thread *t, unsigned type, const void *payload, uint32_t bytes)
{
	struct rt_trace *tr = &t->tr;
	uint32_t words = (bytes + 7) / 8;
	uint64_t flush;

	if (room(t, words + 1, rt_now(), &flush) != 0)
		return;
	tr->pos[0] = strc_long_word(type, (words + 1) * 8);
	tr->pos[words] = 0;
	__builtin_memcpy(tr->pos + 1, payload, bytes);
	tr->pos += words + 1;
	if (flush)
		put_flush(tr, flush);
}

/* A long record of another part of the runtime (sync_trace.c: DEF_SYNC). */
void rt_trace_long(struct rt_thread *t, unsigned type, const void *payload, uint32_t bytes)
{
	emit_long(t, type, payload, bytes);
}

/*
 * The runtime's own work on this thread since `began` (first sight of a function, definitions):
 * recorded as a FLUSH event, whose duration the analysis removes like a buffer swap's.
 */
static void runtime_cost(struct rt_thread *t, uint64_t began)
{
	struct rt_trace *tr = &t->tr;
	uint64_t now = rt_now(), flush;

	if (began < tr->last || room(t, 2, began, &flush) != 0)
		return;
	if (began + flush > now) /* a buffer swap in room() came after `now`: it ends the cost */
		now = began + flush;
	tr->pos[0] = strc_word(STRC_FLUSH, 2, STRC_ID_NONE, began - tr->last);
	tr->pos[1] = now - began;
	tr->pos += 2;
	tr->last = now;
}

/* ---- definitions ---- */

#define LONG_BUF (SPROF_MAX_STR + 128)

static void define_func(struct rt_thread *t, const struct rt_func *f)
{
	char long_buf[LONG_BUF];
	uint32_t len = f->kind == SPROF_REGION ? (uint32_t)rt_strlen(f->name) : 0;
	uint32_t fields[8];
	uint64_t wide[2] = { f->addr, f->vaddr };

	if (len > SPROF_MAX_STR)
		len = SPROF_MAX_STR;
	fields[0] = f->id;
	fields[1] = f->kind;
	fields[2] = f->flags & SPROF_FN_EXCLUDED;
	fields[3] = (uint32_t)f->module;
	__builtin_memcpy(long_buf, fields, 16);
	__builtin_memcpy(long_buf + 16, wide, 16);
	fields[0] = len;
	fields[1] = 0;
	__builtin_memcpy(long_buf + 32, fields, 8);
	__builtin_memcpy(long_buf + 40, len ? f->name : "", len);
	emit_long(t, STRC_DEF_FUNC, long_buf, 40 + len);
}

static void define_module(struct rt_thread *t, const struct rt_module *m, uint32_t index,
			  char *b)
{
	uint32_t len = (uint32_t)rt_strlen(m->path), f[2] = { index, m->build_id_len };
	uint64_t span[3] = { m->bias, m->lo, m->hi };

	__builtin_memcpy(b, f, 8);
	__builtin_memcpy(b + 8, span, 24);
	__builtin_memset(b + 32, 0, 32);
	__builtin_memcpy(b + 32, m->build_id, m->build_id_len);
	f[0] = len;
	f[1] = 0;
	__builtin_memcpy(b + 64, f, 8);
	__builtin_memcpy(b + 72, m->path, len);
	emit_long(t, STRC_DEF_MODULE, b, 72 + len);
}

/* Every loaded image not yet defined in this file (by whichever thread claims it first). */
static void define_modules(struct rt_thread *t)
{
	char b[LONG_BUF];
	uint32_t i, n = rt_module_count();

	for (;;) {
		i = atomic_load(&modules_defined);
		if (i >= n)
			return;
		if (atomic_compare_exchange_strong(&modules_defined, &i, i + 1))
			define_module(t, rt_module_at(i), i, b);
	}
}

static void define_calib(struct rt_thread *t, uint32_t when)
{
	uint8_t b[96];
	struct sprof_buf sb = { .p = b + 8, .cap = 88 };
	uint32_t f[2] = { when, 0 };

	__builtin_memcpy(b, f, 8);
	sprof_put_calib(&sb, &rt_calib);
	emit_long(t, STRC_CALIB, b, 96);
}

static void define_run(struct rt_thread *t)
{
	char long_buf[LONG_BUF];
	uint32_t f[4] = { (uint32_t)rt_pid, (uint32_t)getppid(), 0, 0 };
	uint64_t w[2] = { rt_cfg.trace_rate, rt_cfg.trace_chunk };
	uint32_t exe = rt_module_count() ? (uint32_t)rt_strlen(rt_module_at(0)->path) : 0;
	uint32_t cmd = (uint32_t)rt_cmdline_len;

	f[2] = (rt_cfg.cpu ? 1u : 0) | (rt_cfg.follow_exec ? 2u : 0) |
	       (rt_calib_dyn ? SPROF_RUN_DYNAMIC : 0); /* set before any stream begins */
	if (cmd > LONG_BUF - 40 - exe) /* the command line is cut, the record stays whole */
		cmd = LONG_BUF - 40 - exe;
	__builtin_memcpy(long_buf, f, 16);
	__builtin_memcpy(long_buf + 16, w, 16);
	f[0] = exe;
	f[1] = cmd;
	__builtin_memcpy(long_buf + 32, f, 8);
	if (exe)
		__builtin_memcpy(long_buf + 40, rt_module_at(0)->path, exe);
	__builtin_memcpy(long_buf + 40 + exe, rt_cmdline, cmd);
	emit_long(t, STRC_RUN, long_buf, 40 + exe + cmd);
}

/* The id of a user string (region, phase or counter name), defined on first sight. */
static uint32_t name_id(struct rt_thread *t, const char *name)
{
	struct rt_func *f = rt_func_get((uintptr_t)name, SPROF_REGION, name);

	if (!f)
		return STRC_ID_NONE;
	if (!atomic_exchange(&f->traced, 1))
		define_func(t, f);
	return f->id;
}

uint32_t rt_trace_name_id(const char *name)
{
	return rt_self ? name_id(rt_self, name) : STRC_ID_NONE;
}

/* ---- rate throttling (Pablo): calls beyond the limit become counts ---- */

static void emit_count(struct rt_thread *t, uint32_t id, struct rt_rate *r, uint64_t now)
{
	uint64_t n = r->pending;

	r->pending = 0;
	emit(t, STRC_COUNT, id, &n, 1, now);
}

/*
 * Whether this event of function `id` is kept as an event (1) or counted (0). A window whose
 * calls exceeded the limit keeps the function counting through the next window; detail comes
 * back after a window under the limit. A counted call's exit is counted too (`open`).
 */
static int rate_keep(struct rt_thread *t, unsigned type, uint32_t id, uint64_t now)
{
	struct rt_rate *r = &t->tr.rate[id];
	uint64_t w = now >> rate_window_shift;

	if (type == STRC_EXIT) {
		if (!r->open)
			return 1;
		r->open--;
		return 0;
	}
	if (r->window != w) {
		r->counting = r->window + 1 == w && r->n > rate_limit;
		r->window = w;
		r->n = 0;
	}
	r->n++;
	if (r->open || r->counting || r->n > rate_limit) {
		if (!r->listed && t->tr.nrated < RT_RATED_MAX) {
			r->listed = 1;
			t->tr.rated[t->tr.nrated++] = id;
		}
		if (!r->listed)
			return 1; /* no room to remember it: keep the detail */
		r->counting = 1;
		r->open++;
		r->pending++;
		return 0;
	}
	if (r->pending)
		emit_count(t, id, r, now);
	return 1;
}

static void flush_counts(struct rt_thread *t, uint64_t now)
{
	uint32_t i;

	for (i = 0; t->tr.rate && i < t->tr.nrated; i++)
		if (t->tr.rate[t->tr.rated[i]].pending)
			emit_count(t, t->tr.rated[i], &t->tr.rate[t->tr.rated[i]], now);
}

/* ---- the slow path of function and region events ---- */

static struct rt_tcache *cache_fill(struct rt_thread *t, uintptr_t fn, int kind,
				    const char *name)
{
	struct rt_tcache *c = &t->tr.cache[RT_TC_SLOT(fn)];
	struct rt_func *f;

	rt_busy++;
	f = rt_func_get(fn, kind, name);
	rt_busy--;
	if (!f)
		return NULL;
	if (!atomic_load(&f->off) && !atomic_exchange(&f->traced, 1))
		define_func(t, f);
	c->addr = fn;
	c->word = strc_word(0, 1, f->id, 0);
	if (atomic_load(&f->off) || t->tr.rate || !rt_clock_tsc)
		c->word |= RT_TC_SLOW;
	return c;
}

/*
 * Everything the fast path leaves out: the first event of a function on this thread, excluded
 * functions, rate throttling, a full chunk, a delta too big for the word, the closed stream.
 */
void rt_trace_slow(struct rt_thread *t, unsigned type, uintptr_t fn, int kind, const char *name)
{
	struct rt_tcache *c = &t->tr.cache[RT_TC_SLOT(fn)];
	uint64_t now, flush, began;
	uint32_t id;

	if (c->addr != fn) {
		began = rt_now();
		c = cache_fill(t, fn, kind, name);
		if (!c)
			return;
		runtime_cost(t, began); /* the look-up and definition are ours, not the program's */
	}
	id = strc_id_of(c->word);
	if (c->word & RT_TC_SLOW) {
		struct rt_func *f = rt_func_at(id);

		if (f && atomic_load(&f->off))
			return; /* excluded: no event, no depth */
	}
	now = rt_now();
	if (t->tr.rate && !rate_keep(t, type, id, now))
		return;
	if (type == STRC_ENTER || type == STRC_REGION_BEGIN)
		t->tr.open[t->tr.depth++ & (RT_TSTACK - 1)] = (c->word & ~(uint64_t)RT_TC_SLOW) | type;
	else
		t->tr.depth--;
	if (room(t, 1, now, &flush) != 0)
		return;
	t->tr.pos[0] = (c->word & ~(uint64_t)RT_TC_SLOW) | type | (now - t->tr.last) << 28;
	t->tr.pos++;
	t->tr.last = now;
	if (flush)
		put_flush(&t->tr, flush);
}

/* ---- threads ---- */

static RT_TLS uint64_t pending_edge; /* set by the pthread_create trampoline */

void rt_trace_set_edge(uint64_t edge)
{
	pending_edge = edge;
}

/* A new thread's stream: TIME, THREAD_BEGIN; the first one also carries the process records. */
void rt_trace_thread_begin(struct rt_thread *t)
{
	uint64_t w[2] = { (uint64_t)(uint32_t)t->tid, pending_edge };

	t->tr.edge = pending_edge;
	pending_edge = 0;
	if (rt_cfg.trace_rate) {
		t->tr.rate = rt_map((size_t)rt_func_capacity() * sizeof(struct rt_rate));
		if (!t->tr.rate)
			rt_log("no memory for rate throttling on a thread: recording every event");
	}
	emit(t, STRC_THREAD_BEGIN, STRC_ID_NONE, w, 2, rt_now());
	if (!atomic_exchange(&proc_records_done, 1)) {
		uint64_t began = rt_now();

		define_run(t);
		define_calib(t, 0);
		define_modules(t);
		runtime_cost(t, began);
	}
}

/* From now on the room kept at the end of the chunk may be used: the stream is ending. */
static void open_reserve(struct rt_trace *tr)
{
	if (tr->closing)
		return;
	tr->closing = 1;
	if (tr->chunk)
		tr->end = (uint64_t *)((uint8_t *)tr->chunk + tr->cap);
}

static void close_stream(struct rt_thread *t, uint64_t now)
{
	uint64_t self = (uint64_t)pthread_self();

	flush_counts(t, now);
	open_reserve(&t->tr);
	if (t->tr.dropped) {
		uint64_t n = t->tr.dropped;

		t->tr.dropped = 0;
		emit(t, STRC_DROPPED, STRC_ID_NONE, &n, 1, now);
	}
	emit(t, STRC_THREAD_END, STRC_ID_NONE, &self, 1, now);
	emit(t, STRC_END, STRC_ID_NONE, NULL, 0, now);
	t->tr.ended = 1;
	rt_tchunk_last(t, STRC_CHUNK_CLOSED);
}

/* The thread is exiting (pthread key destructor): end its stream. */
void rt_trace_thread_end(struct rt_thread *t)
{
	if (!t->tr.ended && !t->tr.scratch && t->tr.chunk && !atomic_load(&trace_done))
		close_stream(t, rt_now());
}

/* A longjmp closed every call open above `depth`. */
void rt_trace_unwind(struct rt_thread *t, uint32_t depth)
{
	uint64_t d = depth;

	if (depth >= t->tr.depth)
		return;
	t->tr.depth = depth;
	emit(t, STRC_UNWIND, STRC_ID_NONE, &d, 1, rt_now());
}

/*
 * The process ends (exit, a terminating signal, exec): the ending thread writes the end
 * calibration and PROC_END and closes its stream; the streams of threads still running are
 * closed as they stand and marked final (we cannot append to them safely while they run).
 */
int rt_trace_end(int reason, int signo, uint64_t now)
{
	struct rt_thread *t = rt_self;
	uint64_t w = (uint64_t)(uint32_t)reason | (uint64_t)(uint32_t)signo << 32;

	if (!rt_tfile_ok() || atomic_exchange(&trace_done, 1))
		return 0;
	if (t && !t->tr.ended && t->tr.chunk) {
		open_reserve(&t->tr);
		if (reason != SPROF_END_SIGNAL) /* the loader's lock may be held where a signal hit */
			rt_modules_refresh();
		define_modules(t);
		define_calib(t, 1);
		emit(t, STRC_PROC_END, STRC_ID_NONE, &w, 1, now);
		close_stream(t, now);
	}
	rt_tfile_finish();
	rt_tfile_rewrite_header(); /* its start time is now the end of the runtime's start-up */
	return 0;
}

/* ---- calibration stand-ins: an anonymous buffer that wraps around ---- */

int rt_trace_scratch(struct rt_thread *t)
{
	t->tr.scratch_buf = rt_map(SCRATCH_WORDS * 8);
	if (!t->tr.scratch_buf)
		return -1;
	t->tr.scratch = 1;
	t->tr.pos = t->tr.scratch_buf;
	t->tr.end = t->tr.scratch_buf + SCRATCH_WORDS;
	t->tr.last = rt_now();
	return 0;
}

/* Give back a calibration stand-in's buffer. */
void rt_trace_release(struct rt_thread *t)
{
	if (t->tr.scratch_buf)
		rt_unmap(t->tr.scratch_buf, SCRATCH_WORDS * 8);
	t->tr.scratch_buf = NULL;
}

void rt_trace_scratch_rewind(struct rt_thread *t)
{
	t->tr.pos = t->tr.scratch_buf;
	put_time(&t->tr, rt_now());
}

/* Ticks inside the calls recorded since the last rewind: the sum of the EXIT deltas. */
uint64_t rt_trace_exit_ticks(const struct rt_thread *t)
{
	const uint64_t *p;
	uint64_t sum = 0;

	for (p = t->tr.scratch_buf; p < t->tr.pos; p += strc_size_of(*p) / 8)
		if (strc_type_of(*p) == STRC_EXIT)
			sum += strc_delta_of(*p);
	return sum;
}

/* ---- set-up ---- */

void rt_trace_init(void)
{
	double per_window;

	if (!rt_cfg.trace)
		return;
	if (rt_tfile_open(1) != 0)
		return;
	per_window = (double)rt_cfg.trace_rate * (double)(1ull << rate_window_shift) /
		     (rt_ticks_per_ns() * 1e9);
	rate_limit = per_window < 1 ? 1 : (uint64_t)per_window;
	rt_trace_on = 1;
}

/*
 * A forked child's stream starts with the calls open at the fork, entered now (as profile mode
 * restarts them), so their exits have something to close. Their functions are defined again in
 * this file. Beyond RT_TSTACK open calls the outer ones are not known: their exits stay
 * unmatched, and readers treat the stream's start as cut.
 */
static void reopen_calls(struct rt_thread *t)
{
	uint32_t depth = t->tr.depth, i, from = depth > RT_TSTACK ? depth - RT_TSTACK : 0;
	uint64_t now = rt_now(), flush;

	for (i = from; i < depth; i++) {
		uint64_t w = t->tr.open[i & (RT_TSTACK - 1)];
		struct rt_func *f = rt_func_at(strc_id_of(w));

		if (f && !atomic_exchange(&f->traced, 1))
			define_func(t, f);
		if (room(t, 1, now, &flush) != 0)
			return;
		*t->tr.pos++ = w | (now - t->tr.last) << 28;
		t->tr.last = now;
	}
}

/* A forked child traces into a file of its own; the parent's chunk stays the parent's. */
void rt_trace_after_fork(void)
{
	struct rt_thread *t = rt_self;
	uint32_t i, n = rt_func_count();

	if (!rt_trace_on)
		return;
	atomic_store(&trace_done, 0);
	atomic_store(&proc_records_done, 0);
	atomic_store(&modules_defined, 0);
	for (i = 0; i < n; i++)
		atomic_store(&rt_func_at(i)->traced, 0);
	if (rt_tfile_after_fork() != 0) {
		atomic_store(&trace_done, 1);
		return;
	}
	if (!t)
		return;
	t->tr.chunk = NULL; /* what it held was the parent's: the buffer is reused from the start */
	t->tr.pos = t->tr.end = NULL;
	t->tr.seq = 0;
	t->tr.ended = 0;
	t->tr.failed = 0;
	t->tr.closing = 0;
	t->tr.dropped = 0;
	__builtin_memset(t->tr.cache, 0, sizeof(t->tr.cache));
	rt_trace_thread_begin(t);
	reopen_calls(t);
}
