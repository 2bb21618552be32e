/* SPDX-License-Identifier: MIT */
/* The validating reader of profile files; see profile_read.h and docs/format-profile.md. */
#include "profile_read.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FUNC_ID (1u << 24)
#define MAX_ITEMS (1u << 24)

struct reader {
	struct sprof_file *f;
	char *err;
	size_t errlen;
	int seen_run, seen_calib, seen_end;
};

static int fail(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct reader *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static char *dup_str(struct sprof_buf *b)
{
	uint32_t n;
	const char *s = sprof_get_str(b, &n);
	char *d = malloc(n + 1);
	uint32_t i;

	if (!d)
		return NULL;
	for (i = 0; i < n; i++)
		d[i] = s[i] ? s[i] : ' '; /* command lines come NUL-separated */
	while (n && d[n - 1] == ' ')
		n--;
	d[n] = 0;
	return d;
}

void *sprof_grow(void *arr, uint32_t *count, size_t elem)
{
	char *p;

	if (*count >= MAX_ITEMS)
		return NULL;
	p = realloc(arr, (*count + 1) * elem);
	if (!p)
		return NULL;
	memset(p + *count * elem, 0, elem);
	(*count)++;
	return p;
}

static int read_run(struct reader *r, struct sprof_buf *b)
{
	struct sprof_run *run = &r->f->run;

	if (r->seen_run++)
		return fail(r, "two RUN records");
	run->pid = sprof_get_u32(b);
	run->ppid = sprof_get_u32(b);
	run->start_unix_ns = sprof_get_u64(b);
	run->wall_ns = sprof_get_u64(b);
	run->end_reason = sprof_get_u32(b);
	run->end_signal = sprof_get_u32(b);
	run->depth = sprof_get_u32(b);
	run->flags = sprof_get_u32(b);
	run->throttle_calls = sprof_get_u64(b);
	run->throttle_ns = sprof_get_u64(b);
	run->nthreads = sprof_get_u32(b);
	sprof_get_u32(b);
	run->exe = dup_str(b);
	run->cmdline = dup_str(b);
	if (!run->exe || !run->cmdline)
		return fail(r, "out of memory");
	return 0;
}

static int read_calib(struct reader *r, struct sprof_buf *b)
{
	struct sprof_calib *c = &r->f->calib;

	if (r->seen_calib++)
		return fail(r, "two CALIB records");
	sprof_get_calib(b, c);
	if (!(c->ticks_per_ns > 0) || !(c->o_full >= -1e6 && c->o_full < 1e9) ||
	    !(c->o_in >= -1e6 && c->o_in < 1e9) || !(c->o_skip >= -1e6 && c->o_skip < 1e9) ||
	    !(c->dt_ns >= 0 && c->dt_ns < 1e12))
		return fail(r, "calibration values out of range");
	return 0;
}

static int read_module(struct reader *r, struct sprof_buf *b)
{
	struct sprof_file *f = r->f;
	struct sprof_module *m;
	int i;

	f->modules = sprof_grow(f->modules, &f->nmodules, sizeof(*m));
	if (!f->modules)
		return fail(r, "too many modules");
	m = &f->modules[f->nmodules - 1];
	m->id = sprof_get_u32(b);
	m->build_id_len = sprof_get_u32(b);
	m->bias = sprof_get_u64(b);
	m->lo = sprof_get_u64(b);
	m->hi = sprof_get_u64(b);
	for (i = 0; i < 4; i++) {
		uint64_t v = sprof_get_u64(b);

		memcpy(m->build_id + 8 * i, &v, 8);
	}
	m->path = dup_str(b);
	if (!m->path)
		return fail(r, "out of memory");
	if (m->id != f->nmodules - 1 || m->build_id_len > 32)
		return fail(r, "bad module record %u", m->id);
	return 0;
}

static int index_func(struct reader *r, uint32_t id)
{
	struct sprof_file *f = r->f;

	if (id >= MAX_FUNC_ID)
		return fail(r, "function id %u out of range", id);
	if (id >= f->func_id_cap) {
		uint32_t cap = id * 2 + 16, i;
		uint32_t *p = realloc(f->func_by_id, cap * sizeof(*p));

		if (!p)
			return fail(r, "out of memory");
		for (i = f->func_id_cap; i < cap; i++)
			p[i] = UINT32_MAX;
		f->func_by_id = p;
		f->func_id_cap = cap;
	}
	if (f->func_by_id[id] != UINT32_MAX)
		return fail(r, "function id %u appears twice", id);
	f->func_by_id[id] = f->nfuncs - 1;
	return 0;
}

static int read_func(struct reader *r, struct sprof_buf *b)
{
	struct sprof_file *f = r->f;
	struct sprof_func *fn;

	f->funcs = sprof_grow(f->funcs, &f->nfuncs, sizeof(*fn));
	if (!f->funcs)
		return fail(r, "too many functions");
	fn = &f->funcs[f->nfuncs - 1];
	fn->id = sprof_get_u32(b);
	fn->kind = sprof_get_u32(b);
	fn->module = (int32_t)sprof_get_u32(b);
	fn->flags = sprof_get_u32(b);
	fn->addr = sprof_get_u64(b);
	fn->vaddr = sprof_get_u64(b);
	fn->throttled_at = sprof_get_u64(b);
	fn->throttled_calls = sprof_get_u64(b);
	fn->name = dup_str(b);
	if (!fn->name)
		return fail(r, "out of memory");
	if (fn->kind > SPROF_REGION)
		return fail(r, "function %u has unknown kind %u", fn->id, fn->kind);
	if (fn->module < -1 || (fn->module >= 0 && (uint32_t)fn->module >= f->nmodules))
		return fail(r, "function %u names a module that is not in the file", fn->id);
	return index_func(r, fn->id);
}

static int read_nodes(struct reader *r, struct sprof_buf *b, struct sprof_thread *t)
{
	int cpu = (r->f->features & SPROF_F_CPU) != 0;
	uint32_t i;

	t->nodes = calloc(t->nnodes ? t->nnodes : 1, sizeof(*t->nodes));
	if (!t->nodes)
		return fail(r, "out of memory");
	for (i = 0; i < t->nnodes; i++) {
		struct sprof_node *n = &t->nodes[i];

		n->parent = sprof_get_u32(b);
		n->func = sprof_get_u32(b);
		n->calls = sprof_get_u64(b);
		n->incl = sprof_get_u64(b);
		n->excl = sprof_get_u64(b);
		n->skipped = sprof_get_u64(b);
		if (cpu) {
			n->cpu_incl = sprof_get_u64(b);
			n->cpu_excl = sprof_get_u64(b);
		}
		if (i == 0 && (n->parent != SPROF_NO_PARENT || n->func != SPROF_ROOT_FUNC))
			return fail(r, "thread %u: node 0 is not the root", t->index);
		if (i > 0 && (n->parent >= i || !sprof_func_of(r->f, n->func)))
			return fail(r, "thread %u: node %u has a bad parent or function", t->index, i);
		if (n->excl > n->incl)
			return fail(r, "thread %u: node %u: exclusive time above inclusive", t->index,
				    i);
	}
	return 0;
}

static int read_thread(struct reader *r, struct sprof_buf *b, uint32_t size)
{
	struct sprof_file *f = r->f;
	uint64_t node_bytes = (f->features & SPROF_F_CPU) ? 56 : 40;
	struct sprof_thread *t;

	f->threads = sprof_grow(f->threads, &f->nthreads, sizeof(*t));
	if (!f->threads)
		return fail(r, "too many threads");
	t = &f->threads[f->nthreads - 1];
	t->index = sprof_get_u32(b);
	t->tid = sprof_get_u32(b);
	t->start = sprof_get_u64(b);
	t->end = sprof_get_u64(b);
	t->cpu = sprof_get_u64(b);
	t->flags = sprof_get_u32(b);
	t->nnodes = sprof_get_u32(b);
	t->depth_skips = sprof_get_u64(b);
	t->lost_calls = sprof_get_u64(b);
	if (t->nnodes == 0 || 56 + t->nnodes * node_bytes != size)
		return fail(r, "thread %u: node count does not match the record size", t->index);
	return read_nodes(r, b, t);
}

static int read_counter(struct reader *r, struct sprof_buf *b)
{
	struct sprof_file *f = r->f;
	struct sprof_counter *c;

	f->counters = sprof_grow(f->counters, &f->ncounters, sizeof(*c));
	if (!f->counters)
		return fail(r, "too many counters");
	c = &f->counters[f->ncounters - 1];
	c->thread = sprof_get_u32(b);
	sprof_get_u32(b);
	c->count = sprof_get_u64(b);
	c->sum = sprof_get_f64(b);
	c->min = sprof_get_f64(b);
	c->max = sprof_get_f64(b);
	c->name = dup_str(b);
	return c->name ? 0 : fail(r, "out of memory");
}

static int read_phase(struct reader *r, struct sprof_buf *b)
{
	struct sprof_file *f = r->f;
	struct sprof_phase *p;

	f->phases = sprof_grow(f->phases, &f->nphases, sizeof(*p));
	if (!f->phases)
		return fail(r, "too many phases");
	p = &f->phases[f->nphases - 1];
	p->thread = sprof_get_u32(b);
	sprof_get_u32(b);
	p->start = sprof_get_u64(b);
	p->end = sprof_get_u64(b);
	p->name = dup_str(b);
	if (!p->name)
		return fail(r, "out of memory");
	return p->end < p->start ? fail(r, "phase '%s' ends before it starts", p->name) : 0;
}

#define SAMPLE_HEAD 32
#define SAMPLE_THREAD 56
#define SAMPLE_STACK 24
#define SAMPLE_MAX_DEPTH 4096

static int read_sample_threads(struct reader *r, struct sprof_buf *b, struct sprof_samples *s)
{
	uint32_t i;

	for (i = 0; i < s->nthreads; i++) {
		struct sprof_sample_thread *t = &s->threads[i];

		t->index = sprof_get_u32(b);
		t->tid = sprof_get_u32(b);
		t->flags = sprof_get_u32(b);
		sprof_get_u32(b);
		t->cpu_ns = sprof_get_u64(b);
		t->samples = sprof_get_u64(b);
		t->periods = sprof_get_u64(b);
		t->dropped = sprof_get_u64(b);
		t->truncated = sprof_get_u64(b);
		if (t->index != i || t->periods < t->samples || t->dropped > t->samples)
			return fail(r, "SAMPLES: sampled thread %u is inconsistent", i);
	}
	return 0;
}

/* Every stack's header and addresses; the addresses go to one block sized by the record. */
static int read_stacks(struct reader *r, struct sprof_buf *b, struct sprof_samples *s)
{
	uint64_t used = 0;
	uint32_t i, k;

	for (i = 0; i < s->nstacks; i++) {
		struct sprof_stack *st = &s->stacks[i];

		st->thread = sprof_get_u32(b);
		st->depth = sprof_get_u32(b);
		st->samples = sprof_get_u64(b);
		st->periods = sprof_get_u64(b);
		if (b->error || st->thread >= s->nthreads || !st->depth ||
		    st->depth > s->max_depth || !st->samples || st->periods < st->samples ||
		    (uint64_t)st->depth * 8 > b->cap - b->len)
			return fail(r, "SAMPLES: stack %u is malformed", i);
		st->pcs = s->pcs + used;
		for (k = 0; k < st->depth; k++)
			s->pcs[used++] = sprof_get_u64(b);
	}
	return 0;
}

static int read_samples(struct reader *r, struct sprof_buf *b, uint32_t size)
{
	struct sprof_samples *s;

	if (r->f->samples)
		return fail(r, "two SAMPLES records");
	s = r->f->samples = calloc(1, sizeof(*s));
	if (!s)
		return fail(r, "out of memory");
	s->hz = sprof_get_u32(b);
	s->signo = sprof_get_u32(b);
	s->nthreads = sprof_get_u32(b);
	s->nstacks = sprof_get_u32(b);
	s->max_depth = sprof_get_u32(b);
	sprof_get_u32(b);
	s->period_ns = sprof_get_u64(b);
	if (b->error || !s->hz || s->hz > 100000 || !s->period_ns || !s->max_depth ||
	    s->max_depth > SAMPLE_MAX_DEPTH || s->nthreads > MAX_ITEMS ||
	    (uint64_t)s->nthreads * SAMPLE_THREAD + (uint64_t)s->nstacks * SAMPLE_STACK >
		    size - SAMPLE_HEAD)
		return fail(r, "SAMPLES record header is malformed");
	s->threads = calloc(s->nthreads ? s->nthreads : 1, sizeof(*s->threads));
	s->stacks = calloc(s->nstacks ? s->nstacks : 1, sizeof(*s->stacks));
	s->pcs = malloc(((size_t)(size - SAMPLE_HEAD) / 8 + 1) * sizeof(*s->pcs));
	if (!s->threads || !s->stacks || !s->pcs)
		return fail(r, "out of memory");
	if (read_sample_threads(r, b, s))
		return -1;
	return read_stacks(r, b, s);
}

static void free_samples(struct sprof_samples *s)
{
	if (!s)
		return;
	free(s->threads);
	free(s->stacks);
	free(s->pcs);
	free(s);
}

static int ns_ok(double v)
{
	return v >= 0 && v < 1e9;
}

/* The OVERLAP record (19): at most one, after CALIB. */
static int read_overlap(struct reader *r, struct sprof_buf *b)
{
	struct sprof_overlap *o = &r->f->overlap;

	if (o->batches)
		return fail(r, "two OVERLAP records");
	o->steps = sprof_get_u32(b);
	o->batches = sprof_get_u32(b);
	o->work_ns = sprof_get_f64(b);
	o->o_pair = sprof_get_f64(b);
	o->o_pair_sd = sprof_get_f64(b);
	if (b->error)
		return 0; /* the caller reports the size */
	if (!o->steps || !o->batches || !ns_ok(o->work_ns) || !ns_ok(o->o_pair) ||
	    !ns_ok(o->o_pair_sd))
		return fail(r, "OVERLAP values out of range");
	return 0;
}

static const char *rec_name(uint32_t type)
{
	static const char *names[] = { "?", "RUN", "CALIB", "MODULE", "FUNC", "THREAD", "COUNTER",
				       "PHASE" };

	if (type == SPROF_REC_SYNC || type == SPROF_REC_SYNC_COMP)
		return type == SPROF_REC_SYNC ? "SYNC" : "SYNC_COMP";
	if (type == SPROF_REC_SAMPLES)
		return "SAMPLES";
	if (type == SPROF_REC_INSITU || type == SPROF_REC_OVERLAP)
		return type == SPROF_REC_INSITU ? "INSITU" : "OVERLAP";
	if (type >= SPROF_REC_MPI_CALL && type <= SPROF_REC_MPI_COMP)
		return type == SPROF_REC_MPI_CALL ? "MPI_CALL"
		       : type == SPROF_REC_MPI_PEER ? "MPI_PEER" : "MPI_COMP";
	return type < 8 ? names[type] : type == SPROF_REC_END ? "END" : "unknown";
}

/* One record: dispatch on its type; it must use exactly its declared size. */
static int read_record(struct reader *r, uint32_t type, struct sprof_buf *b, uint32_t size)
{
	int ret = 0;

	switch (type) {
	case SPROF_REC_RUN: ret = read_run(r, b); break;
	case SPROF_REC_CALIB: ret = read_calib(r, b); break;
	case SPROF_REC_MODULE: ret = read_module(r, b); break;
	case SPROF_REC_FUNC: ret = read_func(r, b); break;
	case SPROF_REC_THREAD: ret = read_thread(r, b, size); break;
	case SPROF_REC_COUNTER: ret = read_counter(r, b); break;
	case SPROF_REC_PHASE: ret = read_phase(r, b); break;
	case SPROF_REC_SYNC: ret = sprof_read_sync(r->f, b, r->err, r->errlen); break;
	case SPROF_REC_SYNC_COMP: ret = sprof_read_sync_comp(r->f, b, r->err, r->errlen); break;
	case SPROF_REC_SAMPLES: ret = size < SAMPLE_HEAD ? -2 : read_samples(r, b, size); break;
	case SPROF_REC_INSITU: ret = sprof_read_insitu(r->f, b, size, r->err, r->errlen); break;
	case SPROF_REC_OVERLAP: ret = read_overlap(r, b); break;
	case SPROF_REC_END: r->seen_end = 1; sprof_get_u64(b); break;
	case SPROF_REC_MPI_CALL:
	case SPROF_REC_MPI_PEER:
	case SPROF_REC_MPI_COMP: ret = sprof_read_mpi(r->f, type, b, r->err, r->errlen); break;
	case SPROF_REC_FILE:
	case SPROF_REC_OS:
	case SPROF_REC_OS_INTERVAL:
	case SPROF_REC_HW: ret = sprof_read_io(r->f, type, b, size, r->err, r->errlen); break;
	default: b->len = b->cap; /* a newer record type: skip it */
	}
	if (ret == -1)
		return ret;
	if (ret || b->error || b->len != b->cap)
		return fail(r, "%s record of %u bytes is malformed", rec_name(type), size);
	return 0;
}

static int read_header(struct reader *r, struct sprof_buf *b)
{
	const uint8_t *magic = b->p;
	uint16_t min_version;

	if (b->cap < SPROF_HEADER_SIZE || memcmp(magic, SPROF_MAGIC, 8) != 0)
		return fail(r, "not a sonde profile (bad magic)");
	b->len = 8;
	r->f->version = sprof_get_u16(b);
	min_version = sprof_get_u16(b);
	r->f->features = sprof_get_u32(b);
	b->len = SPROF_HEADER_SIZE;
	if (min_version > SPROF_VERSION)
		return fail(r, "profile version %u needs a newer sonde (this one reads %u)",
			    r->f->version, SPROF_VERSION);
	return 0;
}

static int read_all(struct reader *r, const uint8_t *data, size_t len)
{
	struct sprof_buf b = { .p = (uint8_t *)(uintptr_t)data, .cap = len };

	if (read_header(r, &b))
		return -1;
	while (b.len < b.cap && !r->seen_end) {
		uint32_t type, size;
		struct sprof_buf rec;
		size_t at = b.len;

		if (b.cap - b.len < 8)
			return fail(r, "truncated at byte %zu (record header)", at);
		type = sprof_get_u32(&b);
		size = sprof_get_u32(&b);
		if (size > b.cap - b.len)
			return fail(r, "truncated at byte %zu (%s record of %u bytes)", at,
				    rec_name(type), size);
		rec = (struct sprof_buf){ .p = b.p + b.len, .cap = size };
		b.len += size;
		if (read_record(r, type, &rec, size))
			return -1;
	}
	if (!r->seen_end)
		return fail(r, "truncated: no END record");
	if (!r->seen_run || !r->seen_calib)
		return fail(r, "incomplete: missing RUN or CALIB record");
	return sprof_check_io(r->f, r->err, r->errlen);
}

int sprof_read_mem(const uint8_t *data, size_t len, struct sprof_file **out, char *err,
		   size_t errlen)
{
	struct reader r = { .err = err, .errlen = errlen };

	*out = NULL;
	r.f = calloc(1, sizeof(*r.f));
	if (!r.f)
		return fail(&r, "out of memory");
	if (read_all(&r, data, len)) {
		sprof_free(r.f);
		return -1;
	}
	*out = r.f;
	return 0;
}

int sprof_read_file(const char *path, struct sprof_file **out, char *err, size_t errlen)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *data = NULL;
	long len;
	int ret = -1;

	*out = NULL;
	if (!fp) {
		snprintf(err, errlen, "cannot open: %s", strerror(errno));
		return -1;
	}
	if (fseek(fp, 0, SEEK_END) != 0 || (len = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0) {
		snprintf(err, errlen, "cannot read: %s", strerror(errno));
		goto out_close;
	}
	data = malloc(len ? (size_t)len : 1);
	if (!data || fread(data, 1, (size_t)len, fp) != (size_t)len) {
		snprintf(err, errlen, "cannot read the file");
		goto out_close;
	}
	ret = sprof_read_mem(data, (size_t)len, out, err, errlen);
out_close:
	free(data);
	fclose(fp);
	return ret;
}

const struct sprof_func *sprof_func_of(const struct sprof_file *f, uint32_t func_id)
{
	if (func_id >= f->func_id_cap || f->func_by_id[func_id] == UINT32_MAX)
		return NULL;
	return &f->funcs[f->func_by_id[func_id]];
}

void sprof_free(struct sprof_file *f)
{
	uint32_t i;

	if (!f)
		return;
	free(f->run.exe);
	free(f->run.cmdline);
	for (i = 0; i < f->nmodules; i++)
		free(f->modules[i].path);
	for (i = 0; i < f->nfuncs; i++)
		free(f->funcs[i].name);
	for (i = 0; i < f->nthreads; i++)
		free(f->threads[i].nodes);
	for (i = 0; i < f->ncounters; i++)
		free(f->counters[i].name);
	for (i = 0; i < f->nphases; i++)
		free(f->phases[i].name);
	free(f->modules);
	free(f->funcs);
	free(f->threads);
	free(f->counters);
	free(f->phases);
	free(f->func_by_id);
	sprof_free_sync(f);
	sprof_free_mpi(f);
	free(f->insitu);
	sprof_free_io(f);
	free_samples(f->samples);
	free(f);
}
