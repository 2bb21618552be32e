/* SPDX-License-Identifier: MIT */
/* A trace replayed into the profile profile mode would have written; see trace_profile.h. */
#include "trace_profile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- the replayed call stack ---- */

static void push_frame(struct replay *r, const struct strc_event *e)
{
	if (r->depth == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 256;
		r->stack = xrealloc(r->stack, r->cap * sizeof(*r->stack));
	}
	r->stack[r->depth++] = (struct replay_frame){ e->id, 0, e->t };
	if (r->open)
		r->open(r, e);
}

/* Close every call above `keep` open calls, at time t. */
static void close_to(struct replay *r, uint32_t keep, uint64_t t)
{
	while (r->depth > keep) {
		struct replay_frame f = r->stack[--r->depth];

		if (r->close)
			r->close(r, &f, t);
	}
}

/* An exit closes the innermost open call of its id and what is above it; else nothing. */
static void close_id(struct replay *r, uint32_t id, uint64_t t)
{
	uint32_t i = r->depth;

	while (i > 0 && r->stack[i - 1].id != id)
		i--;
	if (i > 0)
		close_to(r, i - 1, t);
}

void replay_thread(struct replay *r, const struct strc_thread *t)
{
	size_t i;

	r->depth = 0;
	for (i = 0; i < t->nev; i++) {
		const struct strc_event *e = &t->ev[i];

		switch (e->type) {
		case STRC_ENTER:
		case STRC_REGION_BEGIN:
			push_frame(r, e);
			break;
		case STRC_EXIT:
		case STRC_REGION_END:
			close_id(r, e->id, e->t);
			break;
		case STRC_UNWIND:
			close_to(r, e->arg < r->depth ? (uint32_t)e->arg : r->depth, e->t);
			break;
		default:
			if (r->other)
				r->other(r, e);
		}
	}
	close_to(r, 0, t->nev ? t->ev[t->nev - 1].t : 0);
}

void replay_free(struct replay *r)
{
	free(r->stack);
	r->stack = NULL;
	r->depth = r->cap = 0;
}

/* ---- the profile of a trace ---- */

#define SEEN_CALL 0x1u  /* a call of the function or region was replayed */
#define SEEN_COUNT 0x2u /* calls of the function were recorded as counts */

/* The state of the conversion of one file. */
struct conv {
	const struct strc_file *f;
	struct sprof_file *p;
	uint8_t *seen;            /* by index in f->funcs: SEEN_* */
	uint64_t *calls;          /* by index in f->funcs: measured calls replayed so far */
	uint64_t *count_at;       /* by index in f->funcs: ns of its first COUNT */
	uint64_t *count_calls;    /* by index in f->funcs: measured calls replayed before then */
	uint32_t *open_phases;    /* phases still open at the end of their thread */
	uint32_t nopen_phases;
	uint64_t proc_end;        /* ticks of PROC_END, 0: none */
	uint64_t last_event;      /* ticks of the latest event of any thread */
	uint64_t origin;          /* ticks: when the measurement began */
	/* the thread being replayed */
	struct sprof_thread *t;
	uint32_t cap_nodes;
	uint32_t *first_child, *next_sibling;
	uint64_t root_start;      /* ticks: the thread's first event, moved past its flushes */
	uint32_t open_phase;      /* index in p->phases of its current phase, or UINT32_MAX */
};

static uint64_t to_ns(const struct strc_file *f, uint64_t ticks)
{
	double ns = strc_ticks_to_ns(f, ticks);

	return ns > 0 ? (uint64_t)llround(ns) : 0;
}

/* Ns since the measurement began (times of threads, phases, throttling, the run). */
static uint64_t since_start(const struct conv *c, uint64_t t)
{
	return t > c->origin ? to_ns(c->f, t - c->origin) : 0;
}

/*
 * When the measurement began: the first event of any thread. The header's start is earlier:
 * the runtime's start-up and calibration happen after it, and are no part of the run's time in
 * a profile either.
 */
static uint64_t origin_of(const struct strc_file *f)
{
	uint64_t o = UINT64_MAX;
	uint32_t i;

	for (i = 0; i < f->nthreads; i++)
		if (f->threads[i].nev && f->threads[i].ev[0].t < o)
			o = f->threads[i].ev[0].t;
	return o == UINT64_MAX || o < f->start_ticks ? f->start_ticks : o;
}

static uint32_t func_index(const struct strc_file *f, uint32_t id)
{
	return id < f->func_id_cap ? f->func_by_id[id] : UINT32_MAX;
}

static const char *name_of(const struct strc_file *f, uint32_t id)
{
	const struct strc_func *fn = strc_func_of(f, id);

	return fn && fn->name ? fn->name : "";
}

static uint32_t node_new(struct conv *c, uint32_t parent, uint32_t func)
{
	struct sprof_thread *t = c->t;
	uint32_t n = t->nnodes;

	if (n == c->cap_nodes) {
		c->cap_nodes = c->cap_nodes ? c->cap_nodes * 2 : 256;
		t->nodes = xrealloc(t->nodes, c->cap_nodes * sizeof(*t->nodes));
		c->first_child = xrealloc(c->first_child, c->cap_nodes * sizeof(uint32_t));
		c->next_sibling = xrealloc(c->next_sibling, c->cap_nodes * sizeof(uint32_t));
	}
	t->nodes[n] = (struct sprof_node){ .parent = parent, .func = func };
	c->first_child[n] = UINT32_MAX;
	c->next_sibling[n] = UINT32_MAX;
	if (parent != SPROF_NO_PARENT) {
		c->next_sibling[n] = c->first_child[parent];
		c->first_child[parent] = n;
	}
	t->nnodes++;
	return n;
}

/* The node of a call path: its parent's child for func, made on first sight. */
static uint32_t child_of(struct conv *c, uint32_t parent, uint32_t func)
{
	uint32_t n;

	for (n = c->first_child[parent]; n != UINT32_MAX; n = c->next_sibling[n])
		if (c->t->nodes[n].func == func)
			return n;
	return node_new(c, parent, func);
}

/* The node of the innermost open call, or the thread's root. */
static uint32_t top_node(const struct replay *r)
{
	return r->depth ? r->stack[r->depth - 1].data : 0;
}

static void conv_open(struct replay *r, const struct strc_event *e)
{
	struct conv *c = r->arg;
	uint32_t fi = func_index(c->f, e->id);
	uint32_t parent = r->depth > 1 ? r->stack[r->depth - 2].data : 0; /* the caller's node */

	r->stack[r->depth - 1].data = child_of(c, parent, e->id);
	if (fi != UINT32_MAX)
		c->seen[fi] |= SEEN_CALL;
}

/* Nodes hold ticks in incl until their thread is done (then ns). */
static void conv_close(struct replay *r, const struct replay_frame *f, uint64_t t)
{
	struct conv *c = r->arg;
	struct sprof_node *n = &c->t->nodes[f->data];
	uint32_t fi = func_index(c->f, f->id);

	n->calls++;
	n->incl += t > f->start ? t - f->start : 0;
	if (fi != UINT32_MAX)
		c->calls[fi]++;
}

/* The runtime's own time is no part of any call open while it flushed. */
static void conv_flush(struct replay *r, struct conv *c, uint64_t ticks)
{
	uint32_t i;

	for (i = 0; i < r->depth; i++)
		r->stack[i].start += ticks;
	c->root_start += ticks;
}

/* Calls recorded only as a count (rate throttling): unmeasured calls inside the current path. */
static void conv_count(struct replay *r, struct conv *c, const struct strc_event *e)
{
	uint32_t fi = func_index(c->f, e->id);

	c->t->nodes[top_node(r)].skipped += e->arg;
	if (fi == UINT32_MAX)
		return;
	if (!(c->seen[fi] & SEEN_COUNT) || since_start(c, e->t) < c->count_at[fi]) {
		c->count_at[fi] = since_start(c, e->t);
		c->count_calls[fi] = c->calls[fi];
	}
	c->seen[fi] |= SEEN_COUNT;
}

static void conv_counter(struct conv *c, const struct strc_event *e)
{
	struct sprof_file *p = c->p;
	const char *name = name_of(c->f, e->id);
	struct sprof_counter *k = NULL;
	uint32_t i;

	for (i = 0; i < p->ncounters && !k; i++)
		if (p->counters[i].thread == c->t->index && !strcmp(p->counters[i].name, name))
			k = &p->counters[i];
	if (!k) {
		p->counters = xrealloc(p->counters, (p->ncounters + 1) * sizeof(*k));
		k = &p->counters[p->ncounters++];
		*k = (struct sprof_counter){ c->t->index, 0, 0, e->value, e->value, xstrdup(name) };
	}
	k->count++;
	k->sum += e->value;
	k->min = e->value < k->min ? e->value : k->min;
	k->max = e->value > k->max ? e->value : k->max;
}

/* A phase marker ends the thread's current phase and starts the named one (none: no phase). */
static void conv_phase(struct conv *c, const struct strc_event *e)
{
	struct sprof_file *p = c->p;

	if (c->open_phase != UINT32_MAX)
		p->phases[c->open_phase].end = since_start(c, e->t);
	c->open_phase = UINT32_MAX;
	if (e->id == STRC_ID_NONE)
		return;
	p->phases = xrealloc(p->phases, (p->nphases + 1) * sizeof(*p->phases));
	p->phases[p->nphases] = (struct sprof_phase){ c->t->index, since_start(c, e->t), 0,
						      xstrdup(name_of(c->f, e->id)) };
	c->open_phase = p->nphases++;
}

static void conv_other(struct replay *r, const struct strc_event *e)
{
	struct conv *c = r->arg;

	switch (e->type) {
	case STRC_FLUSH:
		conv_flush(r, c, e->arg);
		break;
	case STRC_COUNT:
		conv_count(r, c, e);
		break;
	case STRC_USER:
		conv_counter(c, e);
		break;
	case STRC_PHASE:
		conv_phase(c, e);
		break;
	case STRC_PROC_END:
		c->proc_end = e->t;
		break;
	default:
		break;
	}
}

/* Times to ns; exclusive time is inclusive minus the children's inclusive, as the runtime's,
 * taken after the conversion: a recursive function's exclusive time (the sum over its nodes)
 * then telescopes to at most its inclusive time, where rounding each node's exclusive time on
 * its own could add up past it. */
static void finish_nodes(struct conv *c)
{
	struct sprof_thread *t = c->t;
	uint64_t *kids = xcalloc(t->nnodes, sizeof(*kids));
	uint32_t i;

	for (i = 0; i < t->nnodes; i++)
		t->nodes[i].incl = to_ns(c->f, t->nodes[i].incl);
	for (i = 1; i < t->nnodes; i++)
		kids[t->nodes[i].parent] += t->nodes[i].incl;
	for (i = 0; i < t->nnodes; i++) {
		struct sprof_node *n = &t->nodes[i];

		n->excl = n->incl > kids[i] ? n->incl - kids[i] : 0;
	}
	free(kids);
}

static void convert_thread(struct conv *c, struct replay *r, const struct strc_thread *st)
{
	uint64_t first = st->nev ? st->ev[0].t : c->f->start_ticks;
	uint64_t last = st->nev ? st->ev[st->nev - 1].t : first;
	struct sprof_thread *t = &c->p->threads[c->p->nthreads++];

	*t = (struct sprof_thread){ .index = st->index, .tid = st->tid,
				    .flags = st->complete ? 1u : 0u,
				    .lost_calls = (st->dropped + 1) / 2 };
	c->t = t;
	c->cap_nodes = 0;
	c->root_start = first;
	c->open_phase = UINT32_MAX;
	node_new(c, SPROF_NO_PARENT, SPROF_ROOT_FUNC);
	replay_thread(r, st);
	t->nodes[0].incl = last > c->root_start ? last - c->root_start : 0;
	finish_nodes(c);
	t->start = since_start(c, first);
	t->end = since_start(c, last);
	if (c->open_phase != UINT32_MAX) {
		c->open_phases = xrealloc(c->open_phases, (c->nopen_phases + 1) * sizeof(uint32_t));
		c->open_phases[c->nopen_phases++] = c->open_phase;
	}
	if (last > c->last_event)
		c->last_event = last;
}

/* Every function (excluded ones too, as the runtime writes them) and every region called. */
static void copy_funcs(struct conv *c)
{
	const struct strc_file *f = c->f;
	struct sprof_file *p = c->p;
	uint32_t i;

	p->funcs = xcalloc(f->nfuncs, sizeof(*p->funcs));
	p->func_id_cap = f->func_id_cap;
	p->func_by_id = xmalloc((f->func_id_cap ? f->func_id_cap : 1) * sizeof(uint32_t));
	memset(p->func_by_id, 0xff, (f->func_id_cap ? f->func_id_cap : 1) * sizeof(uint32_t));
	for (i = 0; i < f->nfuncs; i++) {
		const struct strc_func *s = &f->funcs[i];
		struct sprof_func *d = &p->funcs[p->nfuncs];

		if (s->kind != SPROF_FUNC && !(c->seen[i] & SEEN_CALL))
			continue; /* the name of a phase or a counter */
		*d = (struct sprof_func){ .id = s->id, .kind = s->kind, .flags = s->flags,
					  .module = s->module < (int32_t)f->nmodules ? s->module : -1,
					  .addr = s->addr, .vaddr = s->vaddr,
					  .name = xstrdup(s->kind == SPROF_FUNC || !s->name ? ""
										  : s->name) };
		if (c->seen[i] & SEEN_COUNT) {
			d->flags |= SPROF_FN_THROTTLED;
			d->throttled_at = c->count_at[i];
			d->throttled_calls = c->count_calls[i];
		}
		if (s->id < p->func_id_cap)
			p->func_by_id[s->id] = p->nfuncs;
		p->nfuncs++;
	}
}

static void copy_modules(struct conv *c)
{
	const struct strc_file *f = c->f;
	struct sprof_file *p = c->p;
	uint32_t i;

	p->modules = xcalloc(f->nmodules, sizeof(*p->modules));
	for (i = 0; i < f->nmodules; i++) {
		const struct strc_module *s = &f->modules[i];
		struct sprof_module *d = &p->modules[i];

		*d = (struct sprof_module){ .id = s->index, .build_id_len = s->build_id_len,
					    .bias = s->bias, .lo = s->lo, .hi = s->hi,
					    .path = xstrdup(s->path ? s->path : "") };
		memcpy(d->build_id, s->build_id, sizeof(d->build_id));
	}
	p->nmodules = f->nmodules;
}

/* Flush time of the main thread is the runtime's, not the program's (as in-run calibration). */
static uint64_t main_flush_ticks(const struct strc_file *f)
{
	uint32_t i;

	for (i = 0; i < f->nthreads; i++)
		if (f->threads[i].index == 0)
			return f->threads[i].flush_ticks;
	return 0;
}

const char *trace_exe(const struct strc_file *f)
{
	if (f->exe && f->exe[0])
		return f->exe;
	return f->nmodules && f->modules[0].path ? f->modules[0].path : "";
}

static void fill_run(struct conv *c)
{
	const struct strc_file *f = c->f;
	struct sprof_run *run = &c->p->run;
	uint64_t wall = since_start(c, c->proc_end ? c->proc_end : c->last_event);
	uint64_t flush = to_ns(f, main_flush_ticks(f));
	uint32_t i;

	*run = (struct sprof_run){ .pid = f->pid, .ppid = f->ppid, .end_reason = f->end_reason,
				   .end_signal = f->end_signal, .flags = f->run_flags,
				   .nthreads = f->nthreads, .start_unix_ns = f->start_unix_ns,
				   .wall_ns = wall > flush ? wall - flush : 0,
				   .exe = xstrdup(trace_exe(f)),
				   .cmdline = xstrdup(f->cmdline ? f->cmdline : "") };
	for (i = 0; i < c->nopen_phases; i++)
		c->p->phases[c->open_phases[i]].end = wall;
	if (f->has_calib) {
		c->p->calib = f->calib;
	} else {
		c->p->calib = (struct sprof_calib){ .ticks_per_ns = f->ticks_per_ns };
	}
}

struct sprof_file *trace_profile(const struct strc_file *f)
{
	struct sprof_file *p = xcalloc(1, sizeof(*p));
	struct conv c = { .f = f, .p = p, .origin = origin_of(f) };
	struct replay r = { .arg = &c, .open = conv_open, .close = conv_close,
			    .other = conv_other };
	uint32_t i;

	c.seen = xcalloc(f->nfuncs, 1);
	c.calls = xcalloc(f->nfuncs, sizeof(uint64_t));
	c.count_at = xcalloc(f->nfuncs, sizeof(uint64_t));
	c.count_calls = xcalloc(f->nfuncs, sizeof(uint64_t));
	p->version = SPROF_VERSION;
	p->threads = xcalloc(f->nthreads, sizeof(*p->threads));
	for (i = 0; i < f->nthreads; i++)
		convert_thread(&c, &r, &f->threads[i]);
	copy_funcs(&c);
	copy_modules(&c);
	fill_run(&c);
	replay_free(&r);
	free(c.first_child);
	free(c.next_sibling);
	free(c.seen);
	free(c.calls);
	free(c.count_at);
	free(c.count_calls);
	free(c.open_phases);
	return p;
}

int trace_profile_read(const char *path, struct sprof_file **out, char *err, size_t errlen)
{
	struct strc_file *f;

	*out = NULL;
	if (strc_read_file(path, &f, err, errlen) != 0)
		return -1;
	if (f->truncated || f->warning[0])
		warning("%s: %s", path, f->warning[0] ? f->warning : "cut short");
	*out = trace_profile(f);
	strc_free(f);
	return 0;
}
