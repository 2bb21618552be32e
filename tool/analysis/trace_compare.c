/* SPDX-License-Identifier: MIT */
/* Event time differences between a full and a partial trace of one program: see trace_compare.h. */
#include "trace_compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define NO_EVENT SIZE_MAX

int tc_slot(unsigned type)
{
	switch (type) {
	case STRC_ENTER: return 0;
	case STRC_EXIT: return 1;
	case STRC_REGION_BEGIN: return 2;
	case STRC_REGION_END: return 3;
	case STRC_PHASE: return 4;
	case STRC_USER: return 5;
	case STRC_CREATE: return 6;
	case STRC_JOIN: return 7;
	case STRC_THREAD_BEGIN: return 8;
	case STRC_THREAD_END: return 9;
	default: return -1;
	}
}

static uint32_t func_index(const struct strc_file *f, uint32_t id)
{
	return id < f->func_id_cap && f->func_by_id ? f->func_by_id[id] : PT_NONE;
}

static const char *module_path(const struct strc_file *f, int32_t module)
{
	uint32_t i;

	for (i = 0; i < f->nmodules; i++)
		if ((int32_t)f->modules[i].index == module)
			return f->modules[i].path ? f->modules[i].path : "";
	return "";
}

/* ---- functions of two runs: the same by module path and vaddr, regions by name ---- */

struct fkey {
	const char *s; /* module path (functions) or name */
	uint64_t vaddr;
	uint32_t kind;
};

static struct fkey key_of(const struct strc_file *f, const struct strc_func *fn)
{
	if (fn->kind == SPROF_FUNC)
		return (struct fkey){ module_path(f, fn->module), fn->vaddr, fn->kind };
	return (struct fkey){ fn->name ? fn->name : "", 0, fn->kind };
}

static uint64_t key_hash(const struct fkey *k)
{
	uint64_t h = 1469598103934665603ull ^ k->kind;
	const unsigned char *p;

	for (p = (const unsigned char *)k->s; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	h ^= k->vaddr * 0x9e3779b97f4a7c15ull;
	return h ^ h >> 29;
}

static int key_eq(const struct fkey *a, const struct fkey *b)
{
	return a->kind == b->kind && a->vaddr == b->vaddr && !strcmp(a->s, b->s);
}

/* For each function of pf, the index in ff->funcs of the same function, or PT_NONE. */
static uint32_t *func_map(const struct strc_file *ff, const struct strc_file *pf)
{
	uint32_t cap = 16, mask, i, *slot, *map = xmalloc((pf->nfuncs + 1) * sizeof(*map));

	while (cap < 2 * ff->nfuncs)
		cap *= 2;
	mask = cap - 1;
	slot = xmalloc(cap * sizeof(*slot));
	memset(slot, 0xff, cap * sizeof(*slot));
	for (i = 0; i < ff->nfuncs; i++) {
		struct fkey k = key_of(ff, &ff->funcs[i]);
		uint32_t h = (uint32_t)key_hash(&k) & mask;

		while (slot[h] != PT_NONE)
			h = (h + 1) & mask;
		slot[h] = i;
	}
	for (i = 0; i < pf->nfuncs; i++) {
		struct fkey k = key_of(pf, &pf->funcs[i]);
		uint32_t h = (uint32_t)key_hash(&k) & mask;

		map[i] = PT_NONE;
		for (; slot[h] != PT_NONE; h = (h + 1) & mask) {
			struct fkey o = key_of(ff, &ff->funcs[slot[h]]);

			if (key_eq(&k, &o)) {
				map[i] = slot[h];
				break;
			}
		}
	}
	free(slot);
	return map;
}

/* ---- matching events: per key, the full thread's occurrences as a linked list ---- */

struct matcher {
	const struct strc_file *ff, *pf;
	uint32_t *map;
	uint32_t nf1;           /* functions of the full trace, plus one for "no id" */
	size_t *first, *cur;    /* per key: first occurrence, next to match */
	uint32_t *first_gen, *cur_gen, gen; /* validity of first/cur (no clearing per thread) */
	size_t *next;           /* per full event: the next of the same key */
	size_t next_cap;
};

/* Key of an event: its slot and its function in the full trace's numbering; < 0 if none. */
static int64_t event_key(const struct matcher *m, const struct strc_event *e, int partial)
{
	int slot = tc_slot(e->type);
	uint32_t fi;

	if (slot < 0)
		return -1;
	if (e->id == STRC_ID_NONE) {
		fi = m->nf1 - 1;
	} else if (partial) {
		fi = func_index(m->pf, e->id);
		fi = fi == PT_NONE ? PT_NONE : m->map[fi];
	} else {
		fi = func_index(m->ff, e->id);
	}
	if (fi == PT_NONE)
		return -2; /* a function the other run does not have */
	return (int64_t)slot * m->nf1 + fi;
}

static uint64_t index_full(struct matcher *m, const struct pt_thread *th)
{
	uint64_t n = 0;
	size_t i;

	if (th->nev > m->next_cap) {
		m->next_cap = th->nev;
		m->next = xrealloc(m->next, m->next_cap * sizeof(*m->next));
	}
	for (i = th->nev; i-- > 0;) {
		int64_t k = event_key(m, &th->ev[i], 0);

		if (k < 0)
			continue;
		n++;
		m->next[i] = m->first_gen[k] == m->gen ? m->first[k] : NO_EVENT;
		m->first[k] = i;
		m->first_gen[k] = m->gen;
	}
	return n;
}

/* The full trace's event matching partial event e, or NO_EVENT. */
static size_t match(struct matcher *m, const struct strc_event *e)
{
	int64_t k = event_key(m, e, 1);
	size_t at;

	if (k < 0)
		return NO_EVENT;
	if (m->cur_gen[k] != m->gen) {
		m->cur[k] = m->first_gen[k] == m->gen ? m->first[k] : NO_EVENT;
		m->cur_gen[k] = m->gen;
	}
	at = m->cur[k];
	if (at != NO_EVENT)
		m->cur[k] = m->next[at];
	return at;
}

/* ---- the tables ---- */

struct side {
	const struct pt_trace *t;
	double tpn; /* ticks per ns */
};

static double ns_m(const struct side *s, const struct strc_event *e)
{
	return (double)(int64_t)(e->t - s->t->t0) / s->tpn;
}

static double ns_a(const struct side *s, const struct pt_thread *th, size_t i)
{
	return th->ta[i] / s->tpn;
}

static void finish_row(struct tc_row *r)
{
	r->mean = r->matched ? r->total / (double)r->matched : 0;
	r->percent = r->an_time > 0 ? 100.0 * r->mean / r->an_time : 0;
}

static const struct pt_thread *thread_by_index(const struct pt_trace *t, uint32_t index)
{
	uint32_t k;

	for (k = 0; k < t->nth; k++)
		if (t->th[k].index == index)
			return &t->th[k];
	return NULL;
}

static void compare_thread(struct matcher *m, const struct side *full, const struct side *part,
			   const struct pt_thread *pt, struct tc_row *ra, struct tc_row *rm,
			   uint64_t *unmatched)
{
	const struct pt_thread *ft = thread_by_index(full->t, pt->index);
	size_t i;

	m->gen++;
	ra->thread = rm->thread = pt->index;
	if (ft && ft->nev) {
		ra->ref_events = rm->ref_events = index_full(m, ft);
		ra->ref_time = ns_a(full, ft, ft->nev - 1);
		rm->ref_time = ns_m(full, &ft->ev[ft->nev - 1]);
	}
	if (pt->nev) {
		ra->an_time = ns_a(part, pt, pt->nev - 1);
		rm->an_time = ns_m(part, &pt->ev[pt->nev - 1]);
	}
	for (i = 0; i < pt->nev; i++) {
		const struct strc_event *e = &pt->ev[i];
		size_t j;

		if (tc_slot(e->type) < 0)
			continue;
		ra->an_events++;
		j = ft ? match(m, e) : NO_EVENT;
		if (j == NO_EVENT) {
			(*unmatched)++;
			continue;
		}
		ra->matched++;
		ra->total += fabs(ns_a(full, ft, j) - ns_a(part, pt, i));
		rm->total += fabs(ns_m(full, &ft->ev[j]) - ns_m(part, e));
	}
	rm->an_events = ra->an_events;
	rm->matched = ra->matched;
	finish_row(ra);
	finish_row(rm);
}

static void add_row(struct tc_row *all, const struct tc_row *r)
{
	all->ref_events += r->ref_events;
	all->an_events += r->an_events;
	all->matched += r->matched;
	all->total += r->total;
}

static double run_time(const struct side *s, int approx)
{
	double end = 0;
	uint32_t k;

	for (k = 0; k < s->t->nth; k++) {
		const struct pt_thread *th = &s->t->th[k];
		double v;

		if (!th->nev)
			continue;
		v = approx ? ns_a(s, th, th->nev - 1) : ns_m(s, &th->ev[th->nev - 1]);
		if (v > end)
			end = v;
	}
	return end;
}

static void matcher_init(struct matcher *m, const struct strc_file *ff, const struct strc_file *pf)
{
	size_t nkeys = (size_t)TC_SLOTS * (ff->nfuncs + 1);

	*m = (struct matcher){ .ff = ff, .pf = pf, .nf1 = ff->nfuncs + 1 };
	m->map = func_map(ff, pf);
	m->first = xmalloc(nkeys * sizeof(*m->first));
	m->cur = xmalloc(nkeys * sizeof(*m->cur));
	m->first_gen = xcalloc(nkeys, sizeof(*m->first_gen));
	m->cur_gen = xcalloc(nkeys, sizeof(*m->cur_gen));
}

static void matcher_free(struct matcher *m)
{
	free(m->map);
	free(m->first);
	free(m->cur);
	free(m->first_gen);
	free(m->cur_gen);
	free(m->next);
}

void tc_compare(const struct strc_file *ff, const struct pt_trace *full,
		const struct strc_file *pf, const struct pt_trace *part, struct tc_result *out)
{
	struct side fs = { full, pt_ticks_per_ns(ff) }, ps = { part, pt_ticks_per_ns(pf) };
	struct matcher m;
	uint32_t k;

	*out = (struct tc_result){ 0 };
	matcher_init(&m, ff, pf);
	out->approx.rows = xcalloc(part->nth, sizeof(struct tc_row));
	out->measured.rows = xcalloc(part->nth, sizeof(struct tc_row));
	out->approx.nrows = out->measured.nrows = part->nth;
	for (k = 0; k < part->nth; k++) {
		compare_thread(&m, &fs, &ps, &part->th[k], &out->approx.rows[k],
			       &out->measured.rows[k], &out->unmatched);
		add_row(&out->approx.all, &out->approx.rows[k]);
		add_row(&out->measured.all, &out->measured.rows[k]);
	}
	for (k = 0; k < full->nth; k++)
		if (!thread_by_index(part, full->th[k].index))
			out->ref_only_threads++;
	out->approx.all.ref_time = run_time(&fs, 1);
	out->approx.all.an_time = run_time(&ps, 1);
	out->measured.all.ref_time = run_time(&fs, 0);
	out->measured.all.an_time = run_time(&ps, 0);
	finish_row(&out->approx.all);
	finish_row(&out->measured.all);
	matcher_free(&m);
}

void tc_free(struct tc_result *r)
{
	free(r->approx.rows);
	free(r->measured.rows);
	*r = (struct tc_result){ 0 };
}
