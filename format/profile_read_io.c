/* SPDX-License-Identifier: MIT */
/*
 * The validating reader's part for the I/O, operating-system and hardware-counter records
 * (FILE 10, OS 11, OS_INTERVAL 12, HW 13; docs/format-profile.md). Sizes are checked before
 * anything is allocated; the threads and phases the rows name are checked once the whole file
 * is read (they are written before these records, but a reader must not rely on it).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_read.h"

#define ROW_BYTES 112
#define OS_BYTES 72
#define INTERVAL_BYTES 64
#define HW_MIN_BYTES 40

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* A string as it is (file names keep every byte but NUL, which the format cannot hold). */
static char *get_str(struct sprof_buf *b)
{
	uint32_t n;
	const char *s = sprof_get_str(b, &n);
	char *d = malloc(n + 1);

	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

static void get_vals(struct sprof_buf *b, struct sprof_os_vals *v)
{
	v->user_ns = sprof_get_u64(b);
	v->sys_ns = sprof_get_u64(b);
	v->minflt = sprof_get_u64(b);
	v->majflt = sprof_get_u64(b);
	v->nvcsw = sprof_get_u64(b);
	v->nivcsw = sprof_get_u64(b);
}

static int read_row(struct sprof_buf *b, struct sprof_io_row *r)
{
	uint64_t calls = 0;
	int i;

	r->thread = sprof_get_u32(b);
	r->phase = sprof_get_u32(b);
	for (i = 0; i < SPROF_IO_OPS; i++)
		calls += r->calls[i] = sprof_get_u64(b);
	for (i = 0; i < SPROF_IO_OPS; i++)
		r->ns[i] = sprof_get_u64(b);
	r->bytes_read = sprof_get_u64(b);
	r->bytes_written = sprof_get_u64(b);
	r->errors = sprof_get_u64(b);
	return r->errors <= calls && (r->phase == SPROF_NO_INDEX || r->thread != SPROF_NO_INDEX);
}

static int read_file(struct sprof_file *f, struct sprof_buf *b, uint32_t size, char *err,
		     size_t errlen)
{
	struct sprof_iofile *x;
	uint32_t i, len;

	f->iofiles = sprof_grow(f->iofiles, &f->niofiles, sizeof(*x));
	if (!f->iofiles)
		return fail(err, errlen, "too many FILE records");
	x = &f->iofiles[f->niofiles - 1];
	x->id = sprof_get_u32(b);
	x->kind = sprof_get_u32(b);
	x->nrows = sprof_get_u32(b);
	sprof_get_u32(b);
	len = b->len + 4 <= b->cap ? sprof_get_u32(&(struct sprof_buf){ b->p + b->len, 0, 4, 0 })
				   : 0;
	if (b->error || len > SPROF_MAX_STR || 20 + (uint64_t)len + (uint64_t)x->nrows * ROW_BYTES != size)
		return fail(err, errlen, "FILE record %u: row count does not match its size", x->id);
	x->path = get_str(b);
	x->rows = calloc(x->nrows ? x->nrows : 1, sizeof(*x->rows));
	if (!x->path || !x->rows)
		return fail(err, errlen, "out of memory");
	if (x->kind > SPROF_IOK_UNTRACKED)
		return fail(err, errlen, "FILE record %u: unknown kind %u", x->id, x->kind);
	for (i = 0; i < x->nrows; i++)
		if (!read_row(b, &x->rows[i]))
			return fail(err, errlen, "FILE record %u: row %u is inconsistent", x->id, i);
	return 0;
}

static int read_os(struct sprof_file *f, struct sprof_buf *b, uint32_t size, char *err,
		   size_t errlen)
{
	struct sprof_os *o;

	if (size != OS_BYTES)
		return fail(err, errlen, "OS record of %u bytes (it has %u)", size, OS_BYTES);
	f->os = sprof_grow(f->os, &f->nos, sizeof(*o));
	if (!f->os)
		return fail(err, errlen, "too many OS records");
	o = &f->os[f->nos - 1];
	o->thread = sprof_get_u32(b);
	o->tid = sprof_get_u32(b);
	o->phase = sprof_get_u32(b);
	sprof_get_u32(b);
	o->wall_ns = sprof_get_u64(b);
	get_vals(b, &o->v);
	return 0;
}

static int read_interval(struct sprof_file *f, struct sprof_buf *b, uint32_t size, char *err,
			 size_t errlen)
{
	struct sprof_os_interval *v;

	if (size != INTERVAL_BYTES)
		return fail(err, errlen, "OS_INTERVAL record of %u bytes (it has %u)", size,
			    INTERVAL_BYTES);
	f->intervals = sprof_grow(f->intervals, &f->nintervals, sizeof(*v));
	if (!f->intervals)
		return fail(err, errlen, "too many OS_INTERVAL records");
	v = &f->intervals[f->nintervals - 1];
	v->start = sprof_get_u64(b);
	v->end = sprof_get_u64(b);
	get_vals(b, &v->v);
	if (v->end < v->start || (f->nintervals > 1 && v->start < v[-1].end))
		return fail(err, errlen, "OS_INTERVAL %u is out of order", f->nintervals - 1);
	return 0;
}

static int read_hw(struct sprof_file *f, struct sprof_buf *b, uint32_t size, char *err,
		   size_t errlen)
{
	struct sprof_hw *h;

	if (size < HW_MIN_BYTES)
		return fail(err, errlen, "HW record of %u bytes is too short", size);
	f->hw = sprof_grow(f->hw, &f->nhw, sizeof(*h));
	if (!f->hw)
		return fail(err, errlen, "too many HW records");
	h = &f->hw[f->nhw - 1];
	h->status = sprof_get_u32(b);
	h->err = sprof_get_u32(b);
	h->value = sprof_get_u64(b);
	h->enabled_ns = sprof_get_u64(b);
	h->running_ns = sprof_get_u64(b);
	h->event = get_str(b);
	h->reason = get_str(b);
	if (!h->event || !h->reason)
		return fail(err, errlen, "out of memory");
	if (h->status > SPROF_HW_FORKED || h->running_ns > h->enabled_ns)
		return fail(err, errlen, "HW record '%s' is inconsistent", h->event);
	return 0;
}

static const char *name_of(uint32_t type)
{
	return type == SPROF_REC_FILE ? "FILE" : type == SPROF_REC_OS ? "OS"
	       : type == SPROF_REC_OS_INTERVAL ? "OS_INTERVAL" : "HW";
}

int sprof_read_io(struct sprof_file *f, uint32_t type, struct sprof_buf *b, uint32_t size,
		  char *err, size_t errlen)
{
	int ret;

	switch (type) {
	case SPROF_REC_FILE: ret = read_file(f, b, size, err, errlen); break;
	case SPROF_REC_OS: ret = read_os(f, b, size, err, errlen); break;
	case SPROF_REC_OS_INTERVAL: ret = read_interval(f, b, size, err, errlen); break;
	default: ret = read_hw(f, b, size, err, errlen); break;
	}
	if (ret)
		return ret;
	if (b->error || b->len != b->cap)
		return fail(err, errlen, "%s record of %u bytes is malformed", name_of(type), size);
	return 0;
}

static int has_thread(const struct sprof_file *f, uint32_t index)
{
	uint32_t i;

	for (i = 0; i < f->nthreads; i++)
		if (f->threads[i].index == index)
			return 1;
	return 0;
}

static uint32_t phases_of(const struct sprof_file *f, uint32_t thread)
{
	uint32_t i, n = 0;

	for (i = 0; i < f->nphases; i++)
		n += f->phases[i].thread == thread;
	return n;
}

int sprof_check_io(const struct sprof_file *f, char *err, size_t errlen)
{
	uint32_t i, j;

	for (i = 0; i < f->niofiles; i++)
		for (j = 0; j < f->iofiles[i].nrows; j++) {
			const struct sprof_io_row *r = &f->iofiles[i].rows[j];

			if (r->thread != SPROF_NO_INDEX && !has_thread(f, r->thread))
				return fail(err, errlen, "FILE record %u names thread %u, which is "
					    "not in the file", f->iofiles[i].id, r->thread);
			if (r->phase != SPROF_NO_INDEX && r->phase >= phases_of(f, r->thread))
				return fail(err, errlen, "FILE record %u names phase %u of thread "
					    "%u, which it does not have", f->iofiles[i].id, r->phase,
					    r->thread);
		}
	for (i = 0; i < f->nos; i++) {
		const struct sprof_os *o = &f->os[i];

		if (o->thread != SPROF_NO_INDEX && !has_thread(f, o->thread))
			return fail(err, errlen, "OS record names thread %u, which is not in the "
				    "file", o->thread);
		if (o->phase != SPROF_NO_INDEX &&
		    (o->thread == SPROF_NO_INDEX || o->phase >= phases_of(f, o->thread)))
			return fail(err, errlen, "OS record names phase %u of thread %u, which it "
				    "does not have", o->phase, o->thread);
	}
	return 0;
}

void sprof_free_io(struct sprof_file *f)
{
	uint32_t i;

	for (i = 0; i < f->niofiles; i++) {
		free(f->iofiles[i].path);
		free(f->iofiles[i].rows);
	}
	for (i = 0; i < f->nhw; i++) {
		free(f->hw[i].event);
		free(f->hw[i].reason);
	}
	free(f->iofiles);
	free(f->os);
	free(f->intervals);
	free(f->hw);
}
