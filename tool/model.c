/* SPDX-License-Identifier: MIT */
/* Reading a run directory into a model; see model.h. */
#include "model.h"

#include <dirent.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/compensate.h"
#include "elfinfo.h"
#include "model_sync.h"
#include "model_mpi.h"
#include "profile_read.h"
#include "sample_model.h"
#include "symbols.h"
#include "trace_profile.h"
#include "util.h"

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

static void rehash(struct model *m)
{
	uint32_t i, cap = m->hash_cap ? m->hash_cap * 2 : 1024;

	free(m->func_hash);
	m->func_hash = xmalloc(cap * sizeof(*m->func_hash));
	memset(m->func_hash, 0xff, cap * sizeof(*m->func_hash));
	m->hash_cap = cap;
	for (i = 0; i < m->nfuncs; i++) {
		uint32_t h = hash_str(m->funcs[i].resource) & (cap - 1);

		while (m->func_hash[h] != M_NONE)
			h = (h + 1) & (cap - 1);
		m->func_hash[h] = i;
	}
}

double model_total_t_a(const struct model *m)
{
	double t = 0;
	uint32_t i;

	for (i = 0; i < m->nthreads; i++)
		t += m->threads[i].t_a;
	return t > 0 ? t : 1;
}

/* The model's function for a resource path, added on first sight. */
uint32_t model_intern_func(struct model *m, const char *name, const char *file, int line,
			   int kind)
{
	char resource[1024];
	uint32_t h;
	struct m_func *f;

	snprintf(resource, sizeof(resource), "/Code/%s/%s", file, name);
	if (m->nfuncs * 2 >= m->hash_cap)
		rehash(m);
	for (h = hash_str(resource) & (m->hash_cap - 1); m->func_hash[h] != M_NONE;
	     h = (h + 1) & (m->hash_cap - 1))
		if (!strcmp(m->funcs[m->func_hash[h]].resource, resource))
			return m->func_hash[h];
	if (m->nfuncs == m->cap_funcs) {
		m->cap_funcs = m->cap_funcs ? m->cap_funcs * 2 : 256;
		m->funcs = xrealloc(m->funcs, m->cap_funcs * sizeof(*m->funcs));
	}
	f = &m->funcs[m->nfuncs];
	memset(f, 0, sizeof(*f));
	f->name = xstrdup(name);
	f->file = xstrdup(file);
	f->resource = xstrdup(resource);
	f->line = line;
	f->kind = kind;
	m->func_hash[h] = m->nfuncs;
	return m->nfuncs++;
}

static uint32_t node_new(struct model *m, uint32_t parent, uint32_t func)
{
	struct m_node *n;

	if (m->nnodes == m->cap_nodes) {
		m->cap_nodes = m->cap_nodes ? m->cap_nodes * 2 : 1024;
		m->nodes = xrealloc(m->nodes, m->cap_nodes * sizeof(*m->nodes));
	}
	n = &m->nodes[m->nnodes];
	memset(n, 0, sizeof(*n));
	n->func = func;
	n->parent = parent;
	n->first_child = M_NONE;
	n->next_sibling = M_NONE;
	if (parent != M_NONE) {
		n->next_sibling = m->nodes[parent].first_child;
		m->nodes[parent].first_child = m->nnodes;
	}
	return m->nnodes++;
}

static uint32_t child_of(struct model *m, uint32_t parent, uint32_t func)
{
	uint32_t c;

	for (c = m->nodes[parent].first_child; c != M_NONE; c = m->nodes[c].next_sibling)
		if (m->nodes[c].func == func)
			return c;
	return node_new(m, parent, func);
}

/* Say once when a binary changed since the run: its symbols may no longer match. */
static void check_build_id(const struct sprof_module *mod)
{
	struct elf_info info;

	if (!mod->build_id_len || elfinfo__read(mod->path, &info) != 0)
		return;
	if (info.build_id_len != (int)mod->build_id_len ||
	    memcmp(info.build_id, mod->build_id, mod->build_id_len) != 0)
		warning("%s changed since the run: names may be wrong", mod->path);
}

/* Model function index for each of the file's function ids. */
static uint32_t *map_funcs(struct model *m, const struct sprof_file *f, struct symtab *st)
{
	uint32_t *map = xmalloc((f->func_id_cap ? f->func_id_cap : 1) * sizeof(*map));
	uint32_t i;

	uint8_t *used = xcalloc(f->nmodules, 1);

	for (i = 0; i < f->nfuncs; i++)
		if (f->funcs[i].module >= 0)
			used[f->funcs[i].module] = 1;
	for (i = 0; i < f->nmodules; i++) /* only where names are looked up */
		if (used[i])
			check_build_id(&f->modules[i]);
	free(used);
	for (i = 0; i < f->nfuncs; i++) {
		const struct sprof_func *fn = &f->funcs[i];
		struct sym_info si = { fn->name, "[region]", "", 0 };
		uint32_t idx;

		if (fn->kind == SPROF_FUNC)
			symtab__resolve(st, fn->module >= 0 ? f->modules[fn->module].path : NULL,
					fn->vaddr, &si);
		idx = model_intern_func(m, si.func, si.file, si.line, (int)fn->kind);
		map[fn->id] = idx;
		m->funcs[idx].flags |= fn->flags;
		if (fn->flags & SPROF_FN_THROTTLED) {
			m->funcs[idx].throttled_at = fn->throttled_at;
			m->funcs[idx].throttled_calls = fn->throttled_calls;
		}
	}
	return map;
}

/* What the thread's INSITU record says, with its function as the model's. */
static void insitu_of(struct m_insitu *mi, const struct sprof_file *f, uint32_t thread,
		      const uint32_t *fmap, double price, double skip_price)
{
	const struct sprof_insitu *r = sprof_insitu_of(f, thread);

	if (!r)
		return;
	*mi = (struct m_insitu){ .has = 1, .rec = *r, .price = price, .skip_price = skip_price,
				 .calib_o_full = f->calib.o_full,
				 .func = r->func == SPROF_INSITU_NO_FUNC ? UINT32_MAX : fmap[r->func] };
}

/*
 * How far off a thread's T_a may be, in ns, above (*high) and below (*low). Priced by its
 * calibration: the truth lies above T_a by what the program's own work may hide of each pair
 * (comp_calib_err, by the OVERLAP record), below it by M_COMP_UNCERTAINTY of what was removed
 * (pairs dearer in situ than in vitro). Priced in situ: comp_insitu_err either way (with skip
 * windows, the unmeasured pair's own cost in situ varied from 0.2 to 7 ns against an o_skip of
 * 2.5 to 5.3 in one binary; bare windows leave only their stub's), plus the pairs of the
 * thread's other functions, which its hot leaf's price may not fit.
 */
static void model_thread_err(const struct m_thread *t, const struct sprof_file *f, double *high,
			     double *low)
{
	const struct sprof_insitu *r = &t->insitu.rec;

	if (!t->insitu.has || r->status != SPROF_INSITU_USED) {
		*low = M_COMP_UNCERTAINTY * t->overhead;
		*high = comp_calib_err(t->probes, t->unmeasured, f->calib.o_full, f->calib.o_skip,
				       f->overlap.batches ? f->overlap.o_pair : -1, *low);
		return;
	}
	*high = *low = comp_insitu_err(t->probes, t->unmeasured,
				       comp_insitu_unseen(r->pairs, r->bare_pairs, r->stub_ns,
							  f->calib.o_skip),
				       f->calib.o_skip, r->spread_ns, r->pairs) +
		       comp_insitu_others_err(t->probes, r->calls, r->price_ns);
}

/* Compensate one thread's tree with its process's probe costs (the thread's in-situ price of a
 * measured pair with --insitu), then merge it into the model. */
static double merge_thread(struct model *m, const struct sprof_file *f,
			   const struct sprof_thread *t, const uint32_t *fmap)
{
	/* --insitu: the thread's measured pairs at their in-situ price (docs/measurement.md) */
	struct comp_costs costs = { f->calib.o_in, sprof_thread_price(f, t->index),
				    sprof_thread_skip_price(f, t->index) };
	struct comp_node *cn = xcalloc(t->nnodes, sizeof(*cn));
	uint32_t *where = xmalloc(t->nnodes * sizeof(*where)), i;
	struct m_thread *mt;
	double overhead;

	for (i = 0; i < t->nnodes; i++) {
		cn[i] = (struct comp_node){ .parent = t->nodes[i].parent, .calls = t->nodes[i].calls,
					    .skipped = t->nodes[i].skipped,
					    .incl = (double)t->nodes[i].incl,
					    .excl = (double)t->nodes[i].excl };
	}
	comp_tree(cn, t->nnodes, &costs);
	where[0] = 0;
	for (i = 0; i < t->nnodes; i++) {
		struct m_node *n;

		if (i)
			where[i] = child_of(m, where[t->nodes[i].parent], fmap[t->nodes[i].func]);
		n = &m->nodes[where[i]];
		n->calls += cn[i].calls;
		n->child_calls += cn[i].child_calls;
		n->incl += cn[i].incl;
		n->excl += cn[i].excl;
		n->incl_c += cn[i].incl_c;
		n->excl_c += cn[i].excl_c;
		n->cpu_incl += (double)t->nodes[i].cpu_incl;
		n->cpu_excl += (double)t->nodes[i].cpu_excl;
	}
	overhead = comp_thread_overhead(&cn[0], &costs);
	m->threads = xrealloc(m->threads, (m->nthreads + 1) * sizeof(*m->threads));
	mt = &m->threads[m->nthreads++];
	*mt = (struct m_thread){ .proc = m->nprocs, .pid = f->run.pid, .index = t->index, .tid = t->tid,
				 .t_m = cn[0].incl, .overhead = overhead,
				 .t_a = cn[0].incl > overhead ? cn[0].incl - overhead : 0,
				 .probes = cn[0].desc_calls, .unmeasured = cn[0].desc_skipped,
				 .depth_skips = t->depth_skips, .lost_calls = t->lost_calls };
	insitu_of(&mt->insitu, f, t->index, fmap, costs.o_full, costs.o_skip);
	model_thread_err(mt, f, &mt->t_a_err, &mt->t_a_err_low);
	free(cn);
	free(where);
	return overhead;
}

/*
 * A process's T_a errors, as comp_total takes its threads: the main thread's and those of the
 * other thread with the largest overhead (its threads are m->threads[first...]; other_oh the
 * others' overheads in their order there).
 */
static void process_err(struct m_process *p, const struct model *m, uint32_t first,
			const double *other_oh, uint32_t nother)
{
	const struct m_thread *main_t = NULL, *max_t = NULL;
	double max_oh = 0;
	uint32_t i, k = 0;

	for (i = first; i < m->nthreads; i++) {
		if (m->threads[i].index == 0) {
			main_t = &m->threads[i];
			continue;
		}
		if (k < nother && other_oh[k] > max_oh) {
			max_oh = other_oh[k];
			max_t = &m->threads[i];
		}
		k++;
	}
	p->t_a_err = (main_t ? main_t->t_a_err : 0) + (max_t ? max_t->t_a_err : 0);
	p->t_a_err_low = (main_t ? main_t->t_a_err_low : 0) + (max_t ? max_t->t_a_err_low : 0);
}

static void add_process(struct model *m, const struct sprof_file *f, double main_oh,
			const double *other_oh, uint32_t nother, uint32_t first_thread)
{
	struct m_process *p;
	uint32_t i;

	m->procs = xrealloc(m->procs, (m->nprocs + 1) * sizeof(*m->procs));
	p = &m->procs[m->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = f->run.pid;
	p->ppid = f->run.ppid;
	p->end_reason = f->run.end_reason;
	p->end_signal = f->run.end_signal;
	p->exe = xstrdup(f->run.exe);
	p->cmdline = xstrdup(f->run.cmdline);
	p->calib = f->calib;
	p->overlap = f->overlap;
	p->run_flags = f->run.flags;
	p->throttle_calls = f->run.throttle_calls;
	p->throttle_ns = f->run.throttle_ns;
	p->depth = f->run.depth;
	p->t_m = (double)f->run.wall_ns;
	p->t_a = comp_total(p->t_m, main_oh, other_oh, nother);
	for (i = first_thread; i < m->nthreads; i++) {
		p->probes += m->threads[i].probes;
		p->unmeasured += m->threads[i].unmeasured;
	}
	process_err(p, m, first_thread, other_oh, nother);
}

static void add_user_data(struct model *m, const struct sprof_file *f, const struct model_filter *flt)
{
	uint32_t i, j;

	for (i = 0; i < f->ncounters; i++) {
		const struct sprof_counter *c = &f->counters[i];
		struct m_counter *mc = NULL;

		if (flt->thread >= 0 && c->thread != (uint32_t)flt->thread)
			continue;
		for (j = 0; j < m->ncounters && !mc; j++)
			if (!strcmp(m->counters[j].name, c->name))
				mc = &m->counters[j];
		if (!mc) {
			m->counters = xrealloc(m->counters, (m->ncounters + 1) * sizeof(*mc));
			mc = &m->counters[m->ncounters++];
			*mc = (struct m_counter){ xstrdup(c->name), 0, 0, c->min, c->max };
		}
		mc->count += c->count;
		mc->sum += c->sum;
		mc->min = c->min < mc->min ? c->min : mc->min;
		mc->max = c->max > mc->max ? c->max : mc->max;
	}
	for (i = 0; i < f->nphases; i++) {
		const struct sprof_phase *p = &f->phases[i];

		if (flt->thread >= 0 && p->thread != (uint32_t)flt->thread)
			continue;
		m->phases = xrealloc(m->phases, (m->nphases + 1) * sizeof(*m->phases));
		m->phases[m->nphases++] = (struct m_phase){ f->run.pid, p->thread, xstrdup(p->name),
							    p->start, p->end };
	}
}

static void merge_file(struct model *m, const struct sprof_file *f, struct symtab *st,
		       const struct model_filter *flt)
{
	uint32_t *fmap = map_funcs(m, f, st), i, first = m->nthreads, nother = 0;
	double main_oh = 0, *other = xcalloc(f->nthreads, sizeof(double));

	m->has_cpu |= (f->features & SPROF_F_CPU) != 0;
	for (i = 0; i < f->nthreads; i++) {
		const struct sprof_thread *t = &f->threads[i];
		double oh;

		if (flt->thread >= 0 && t->index != (uint32_t)flt->thread)
			continue;
		oh = merge_thread(m, f, t, fmap);
		if (t->index == 0)
			main_oh = oh;
		else
			other[nother++] = oh;
	}
	add_process(m, f, main_oh, other, nother, first);
	add_user_data(m, f, flt);
	model_sync_merge(m, f, flt);
	model_mpi_merge(m, f);
	model_ext_add(m, f, flt);
	sample_merge(m, f, st, flt);
	free(other);
	free(fmap);
}

/* Flat values per function: exclusive summed over paths, inclusive over outermost calls. */
static void flatten(struct model *m)
{
	uint32_t *active = xcalloc(m->nfuncs, sizeof(*active));
	uint32_t *stack = xmalloc((m->nnodes + 1) * sizeof(*stack)), sp = 0, n;
	uint8_t *done = xcalloc(m->nnodes, 1);

	stack[sp++] = 0;
	while (sp) {
		const struct m_node *x;
		struct m_func *f;

		n = stack[sp - 1];
		x = &m->nodes[n];
		f = x->func != M_NONE ? &m->funcs[x->func] : NULL;
		if (done[n]) { /* leaving the node */
			sp--;
			if (f)
				active[x->func]--;
			continue;
		}
		done[n] = 1;
		if (f) {
			f->calls += x->calls;
			f->child_calls += x->child_calls;
			f->excl += x->excl;
			f->excl_c += x->excl_c;
			f->cpu_excl += x->cpu_excl;
			if (!active[x->func]++) {
				f->incl += x->incl;
				f->incl_c += x->incl_c;
				f->cpu_incl += x->cpu_incl;
			}
		}
		for (n = x->first_child; n != M_NONE; n = m->nodes[n].next_sibling)
			stack[sp++] = n;
	}
	free(active);
	free(stack);
	free(done);
}

static void flag_unreliable(struct model *m)
{
	const struct sprof_calib *c;
	uint32_t i;

	if (!m->nprocs)
		return;
	c = &m->procs[0].calib;
	for (i = 0; i < m->nfuncs; i++) {
		struct m_func *f = &m->funcs[i];

		if (f->calls)
			f->unreliable = f->incl_c / (double)f->calls < c->o_full ||
					f->incl / (double)f->calls < c->dt_ns ||
					f->excl - f->excl_c > 0.5 * f->excl;
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = xmalloc(n);

	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* The pid in a file name "profile.PID[.N].sprof" or "trace.PID.strc". */
static unsigned long pid_of(const char *name)
{
	return strtoul(name + strcspn(name, ".") + 1, NULL, 10);
}

/* A trace stands in for a profile only where its process wrote none (`sonde run --trace`). */
static int wanted(const char *name, char **names, uint32_t n)
{
	uint32_t i;

	if (!fnmatch("profile.*.sprof", name, 0))
		return 1;
	for (i = 0; i < n; i++)
		if (!fnmatch("profile.*.sprof", names[i], 0) && pid_of(names[i]) == pid_of(name))
			return 0;
	return 1;
}

/* Paths of the profiles of a directory, and of traces of processes without a profile, sorted
 * (so the launched process, the oldest pid, is first); or the file named, if it is one. */
static char **list_profiles(const char *dir, uint32_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL, **paths;
	uint32_t i, k = 0;

	*n = 0;
	if (!d) {
		if (access(dir, R_OK) != 0 || (fnmatch("*.sprof", dir, 0) && fnmatch("*.strc", dir, 0)))
			return NULL;
		paths = xmalloc(sizeof(*paths));
		paths[(*n)++] = xstrdup(dir);
		return paths;
	}
	while ((e = readdir(d)))
		if (!fnmatch("profile.*.sprof", e->d_name, 0) || !fnmatch("trace.*.strc", e->d_name, 0)) {
			names = xrealloc(names, (*n + 1) * sizeof(*names));
			names[(*n)++] = xstrdup(e->d_name);
		}
	closedir(d);
	paths = xmalloc((*n ? *n : 1) * sizeof(*paths));
	for (i = 0; i < *n; i++)
		if (wanted(names[i], names, *n))
			paths[k++] = path_join(dir, names[i]);
	for (i = 0; i < *n; i++)
		free(names[i]);
	free(names);
	*n = k;
	if (*n)
		qsort(paths, *n, sizeof(*paths), cmp_str);
	return *n ? paths : (free(paths), NULL);
}

static int load_files(struct model *m, char **paths, uint32_t n, const struct model_filter *flt)
{
	struct symtab *st = symtab__new();
	char err[256];
	uint32_t i;
	int ret = 0;

	for (i = 0; i < n && !ret; i++) {
		struct sprof_file *f;
		int bad = fnmatch("*.strc", paths[i], 0)
				  ? sprof_read_file(paths[i], &f, err, sizeof(err))
				  : trace_profile_read(paths[i], &f, err, sizeof(err));

		if (bad) {
			ret = error("%s: %s", paths[i], err);
			break;
		}
		if (!flt->pid || f->run.pid == flt->pid)
			merge_file(m, f, st, flt);
		sprof_free(f);
	}
	symtab__delete(st);
	return ret;
}

/* How far off a compensated value may be per ns removed from it: the processes' T_a errors over
 * what was removed from them (M_COMP_UNCERTAINTY when nothing was). */
static double err_ratio(const struct model *m)
{
	double err = 0, removed = 0;
	uint32_t i;

	for (i = 0; i < m->nprocs; i++) {
		err += m->procs[i].t_a_err;
		removed += m->procs[i].t_m - m->procs[i].t_a;
	}
	return removed > 0 ? err / removed : M_COMP_UNCERTAINTY;
}

int model_load(struct model *m, const char *dir, const struct model_filter *flt)
{
	uint32_t n, i;
	char **names;
	int ret;

	memset(m, 0, sizeof(*m));
	m->dir = xstrdup(dir);
	names = list_profiles(dir, &n);
	if (!names)
		return error("%s: no profiles here (is it a run directory of 'sonde run'?)", dir);
	node_new(m, M_NONE, M_NONE);
	ret = load_files(m, names, n, flt);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (ret)
		return ret;
	if (!m->nprocs)
		return error("%s: no process matches the selection", dir);
	flatten(m);
	m->err_ratio = err_ratio(m);
	flag_unreliable(m);
	model_mpi_sort(m);
	return 0;
}

void model_free(struct model *m)
{
	uint32_t i;

	for (i = 0; i < m->nfuncs; i++) {
		free(m->funcs[i].name);
		free(m->funcs[i].file);
		free(m->funcs[i].resource);
	}
	for (i = 0; i < m->nprocs; i++) {
		free(m->procs[i].exe);
		free(m->procs[i].cmdline);
	}
	for (i = 0; i < m->ncounters; i++)
		free(m->counters[i].name);
	for (i = 0; i < m->nphases; i++)
		free(m->phases[i].name);
	free(m->funcs);
	free(m->procs);
	free(m->threads);
	free(m->nodes);
	free(m->counters);
	free(m->phases);
	free(m->func_hash);
	model_ext_free(m);
	sample_free(m->samples);
	free(m->dir);
	model_sync_free(m);
	model_mpi_free(m);
	memset(m, 0, sizeof(*m));
}
