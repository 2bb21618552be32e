/* SPDX-License-Identifier: MIT */
/* Samples of a run mapped to functions and merged into a call tree; see sample_model.h. */
#include "sample_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile_read.h"
#include "symbols.h"
#include "util.h"

static struct m_samples *samples_of(struct model *m, const struct sprof_samples *s)
{
	struct m_samples *ms = m->samples;

	if (!ms) {
		ms = m->samples = xcalloc(1, sizeof(*ms));
		ms->hz = s->hz;
		ms->period_ns = s->period_ns;
		ms->nodes = xcalloc(1, sizeof(*ms->nodes));
		ms->nodes[0] = (struct ms_node){ M_NONE, M_NONE, M_NONE, M_NONE, 0, 0 };
		ms->nnodes = ms->cap_nodes = 1;
	}
	return ms;
}

static uint32_t line_hash(const char *file, int line, uint32_t func)
{
	uint32_t h = 2166136261u ^ (uint32_t)line * 16777619u ^ func * 2654435761u;

	while (*file)
		h = (h ^ (uint8_t)*file++) * 16777619u;
	return h;
}

static void lines_rehash(struct m_samples *ms)
{
	uint32_t i, cap = ms->cap_hash ? ms->cap_hash * 2 : 256;

	free(ms->line_hash);
	ms->line_hash = xmalloc(cap * sizeof(*ms->line_hash));
	memset(ms->line_hash, 0xff, cap * sizeof(*ms->line_hash));
	ms->cap_hash = cap;
	for (i = 0; i < ms->nlines; i++) {
		const struct ms_line *l = &ms->lines[i];
		uint32_t h = line_hash(l->file, l->line, l->func) & (cap - 1);

		while (ms->line_hash[h] != M_NONE)
			h = (h + 1) & (cap - 1);
		ms->line_hash[h] = i;
	}
}

/* Count the innermost instruction's source line (when the line table knows it). */
static void add_line(struct m_samples *ms, const struct sprof_file *f, struct symtab *st,
		     uint64_t pc, uint32_t func, uint64_t periods)
{
	const char *file;
	int line = 0;
	uint32_t i, h;

	for (i = 0; i < f->nmodules; i++)
		if (pc >= f->modules[i].lo && pc < f->modules[i].hi)
			break;
	if (i == f->nmodules ||
	    symtab__srcline(st, f->modules[i].path, pc - f->modules[i].bias, &file, &line))
		return;
	if ((ms->nlines + 1) * 2 > ms->cap_hash)
		lines_rehash(ms);
	for (h = line_hash(file, line, func) & (ms->cap_hash - 1); ms->line_hash[h] != M_NONE;
	     h = (h + 1) & (ms->cap_hash - 1)) {
		struct ms_line *l = &ms->lines[ms->line_hash[h]];

		if (l->line == line && l->func == func && !strcmp(l->file, file)) {
			l->self += periods;
			return;
		}
	}
	if (ms->nlines == ms->cap_lines) {
		ms->cap_lines = ms->cap_lines ? 2 * ms->cap_lines : 64;
		ms->lines = xrealloc(ms->lines, ms->cap_lines * sizeof(*ms->lines));
	}
	ms->lines[ms->nlines] = (struct ms_line){ xstrdup(file), line, func, periods };
	ms->line_hash[h] = ms->nlines++;
}

/* Function of one code address: its module's symbols, else "[unknown]". */
static uint32_t func_at(struct model *m, const struct sprof_file *f, struct symtab *st,
			uint64_t pc, int leaf)
{
	struct sym_info si = { "[unknown]", "??", "??", 0 };
	uint32_t i;

	for (i = 0; i < f->nmodules; i++) {
		const struct sprof_module *mod = &f->modules[i];

		if (pc >= mod->lo && pc < mod->hi) {
			/* a return address follows its call: the call is what belongs to the caller */
			symtab__resolve(st, mod->path, pc - mod->bias - (leaf ? 0 : 1), &si);
			break;
		}
	}
	return model_intern_func(m, si.func, si.file, si.line, SPROF_FUNC);
}

/* Whether a return address lies in sonde's own runtime (its thread-start trampoline). */
static int in_runtime(const struct sprof_file *f, uint64_t pc)
{
	uint32_t i;
	size_t n;

	for (i = 0; i < f->nmodules; i++)
		if (pc >= f->modules[i].lo && pc < f->modules[i].hi) {
			n = strlen(f->modules[i].path);
			return n >= 11 && !strcmp(f->modules[i].path + n - 11, "libsonde.so");
		}
	return 0;
}

static uint32_t tree_child(struct m_samples *ms, uint32_t parent, uint32_t func)
{
	struct ms_node *n;
	uint32_t c;

	for (c = ms->nodes[parent].first_child; c != M_NONE; c = ms->nodes[c].next_sibling)
		if (ms->nodes[c].func == func)
			return c;
	if (ms->nnodes == ms->cap_nodes) {
		ms->cap_nodes *= 2;
		ms->nodes = xrealloc(ms->nodes, ms->cap_nodes * sizeof(*ms->nodes));
	}
	n = &ms->nodes[ms->nnodes];
	*n = (struct ms_node){ func, parent, M_NONE, ms->nodes[parent].first_child, 0, 0 };
	ms->nodes[parent].first_child = ms->nnodes;
	return ms->nnodes++;
}

/*
 * Where a stack starts to be shown: at its outermost main (libc's start-up above it is left
 * out); other threads' stacks as walked (from libc's start_thread, with frame pointers).
 */
static uint32_t stack_root(const struct model *m, const uint32_t *fn, uint32_t depth)
{
	uint32_t i;

	for (i = depth; i-- > 0;)
		if (!strcmp(m->funcs[fn[i]].name, "main"))
			return i;
	return depth - 1;
}

static void grow_funcs(struct m_samples *ms, uint32_t nfuncs)
{
	if (nfuncs <= ms->nfuncs)
		return;
	ms->funcs = xrealloc(ms->funcs, nfuncs * sizeof(*ms->funcs));
	memset(ms->funcs + ms->nfuncs, 0, (nfuncs - ms->nfuncs) * sizeof(*ms->funcs));
	ms->nfuncs = nfuncs;
}

/* One stored stack: its functions root-first into the tree, and into the per-function counts. */
static void add_stack(struct model *m, const struct sprof_file *f, struct symtab *st,
		      const struct sprof_stack *s, uint32_t *fn, uint8_t *seen)
{
	struct m_samples *ms = m->samples;
	uint32_t i, root, node = 0, depth = 0;

	/* the runtime's frames between the program's (the pthread_create trampoline) are left out;
	 * an innermost one stays: it is where the time went (a probe) */
	for (i = 0; i < s->depth; i++)
		if (i == 0 || !in_runtime(f, s->pcs[i]))
			fn[depth++] = func_at(m, f, st, s->pcs[i], i == 0);
	grow_funcs(ms, m->nfuncs);
	root = stack_root(m, fn, depth);
	for (i = root + 1; i-- > 0;) {
		node = tree_child(ms, node, fn[i]);
		ms->nodes[node].total += s->periods;
		if (!seen[fn[i]]) {
			seen[fn[i]] = 1;
			ms->funcs[fn[i]].total += s->periods;
		}
	}
	for (i = 0; i <= root; i++)
		seen[fn[i]] = 0;
	ms->nodes[node].self += s->periods;
	ms->nodes[0].total += s->periods;
	ms->funcs[fn[0]].self += s->periods;
	ms->funcs[fn[0]].self_signals += s->samples;
	ms->stored_periods += s->periods;
	add_line(ms, f, st, s->pcs[0], fn[0], s->periods);
}

static int selected(const struct model_filter *flt, uint32_t thread)
{
	return flt->thread < 0 || thread == (uint32_t)flt->thread;
}

static void add_threads(struct m_samples *ms, const struct sprof_file *f,
			const struct model_filter *flt)
{
	const struct sprof_samples *s = f->samples;
	uint32_t i;

	for (i = 0; i < s->nthreads; i++) {
		const struct sprof_sample_thread *t = &s->threads[i];

		if (!selected(flt, t->index))
			continue;
		ms->threads = xrealloc(ms->threads, (ms->nthreads + 1) * sizeof(*ms->threads));
		ms->threads[ms->nthreads++] = (struct ms_thread){
			f->run.pid, t->index, t->tid, t->flags & 1, t->cpu_ns, t->samples,
			t->periods, t->dropped, t->truncated };
		ms->signals += t->samples;
		ms->periods += t->periods;
		ms->dropped += t->dropped;
		ms->truncated += t->truncated;
	}
}

void sample_merge(struct model *m, const struct sprof_file *f, struct symtab *st,
		  const struct model_filter *flt)
{
	const struct sprof_samples *s = f->samples;
	struct m_samples *ms;
	uint32_t *fn, i, cap = 0;
	uint8_t *seen = NULL;

	if (!s)
		return;
	ms = samples_of(m, s);
	add_threads(ms, f, flt);
	fn = xmalloc((s->max_depth + 1) * sizeof(*fn));
	for (i = 0; i < s->nstacks; i++) {
		uint32_t need = m->nfuncs + s->stacks[i].depth + 1;

		if (!selected(flt, s->stacks[i].thread))
			continue;
		if (need > cap) { /* functions are interned as stacks are read; marks start clear */
			seen = xrealloc(seen, 2 * need);
			memset(seen + cap, 0, 2 * need - cap);
			cap = 2 * need;
		}
		add_stack(m, f, st, &s->stacks[i], fn, seen);
	}
	grow_funcs(ms, m->nfuncs);
	free(seen);
	free(fn);
}

void sample_free(struct m_samples *s)
{
	uint32_t i;

	if (!s)
		return;
	for (i = 0; i < s->nlines; i++)
		free(s->lines[i].file);
	free(s->lines);
	free(s->line_hash);
	free(s->funcs);
	free(s->nodes);
	free(s->threads);
	free(s);
}

double sample_stderr(double p, uint64_t n)
{
	return n ? sqrt(p * (1 - p) / (double)n) : 0;
}

/*
 * What the sampled shares are compared with: shares of CPU time when the run measured it
 * (--cpu), as the samples count, of the threads' top-level calls; else of the threads'
 * compensated wall time, which also holds their waits (a system call preempted on a loaded
 * machine weighs there, and not in the samples).
 */
double sample_measured_total(const struct model *m)
{
	double t = 0;
	uint32_t i;

	if (!m->has_cpu)
		return model_total_t_a(m);
	for (i = m->nnodes ? m->nodes[0].first_child : M_NONE; i != M_NONE;
	     i = m->nodes[i].next_sibling)
		t += m->nodes[i].cpu_incl;
	return t > 0 ? t : 1;
}

double sample_measured_incl(const struct model *m, const struct m_func *f)
{
	return m->has_cpu ? f->cpu_incl : f->incl_c;
}

double sample_measured_excl(const struct model *m, const struct m_func *f)
{
	return m->has_cpu ? f->cpu_excl : f->excl_c;
}
