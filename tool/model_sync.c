/* SPDX-License-Identifier: MIT */
/* The synchronization part of a model; see model_sync.h. */
#include "model_sync.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "profile_read.h"
#include "sync_names.h"
#include "sync_price.h"
#include "util.h"

static const char *const kind_names[SPROF_SYNC_KINDS] = { "?", "mutex", "rwlock", "spin",
							  "cond", "barrier", "sem", "thread" };

/* Bytes of one object of a kind on x86-64 glibc: arrays of them are shown as name[i]. */
static const uint64_t kind_size[SPROF_SYNC_KINDS] = { 0, 40, 56, 4, 48, 32, 32, 0 };

const char *sync_kind_name(uint32_t kind)
{
	return kind < SPROF_SYNC_KINDS ? kind_names[kind] : "?";
}

/* A variable of some module, else the site of its init or first use, else its address. */
static char *object_name(const struct sprof_file *f, const struct sprof_sync *s,
			 struct sync_names *sn)
{
	char buf[1024], site[900];
	uint32_t i;

	if (s->flags & SPROF_SYNC_F_OVERFLOW) {
		snprintf(buf, sizeof(buf), "(other objects of kind %s: the table was full)",
			 sync_kind_name(s->kind));
		return xstrdup(buf);
	}
	for (i = 0; s->kind != SPROF_SYNC_THREAD && i < f->nmodules; i++)
		if (s->addr >= f->modules[i].bias &&
		    sync_names_data(sn, f->modules[i].path, s->addr - f->modules[i].bias,
				    kind_size[s->kind], buf, sizeof(buf)) == 0)
			return xstrdup(buf);
	if (s->site_module >= 0 &&
	    sync_names_site(sn, f->modules[s->site_module].path, s->site_vaddr, site,
			    sizeof(site)) == 0) {
		snprintf(buf, sizeof(buf), "%s at %s", s->flags & SPROF_SYNC_F_INIT ? "initialised"
										    : "first used",
			 site);
		return xstrdup(buf);
	}
	snprintf(buf, sizeof(buf), "%s 0x%llx", sync_kind_name(s->kind),
		 (unsigned long long)s->addr);
	return xstrdup(buf);
}

static void add_objects(struct model_sync *ms, const struct sprof_file *f)
{
	struct sync_names *sn = sync_names_new();
	uint32_t i;

	ms->objs = xrealloc(ms->objs, (ms->nobjs + f->nsyncs + 1) * sizeof(*ms->objs));
	for (i = 0; i < f->nsyncs; i++) {
		const struct sprof_sync *s = &f->syncs[i];
		struct m_sync *o = &ms->objs[ms->nobjs++];

		*o = (struct m_sync){ .pid = f->run.pid, .kind = s->kind, .flags = s->flags,
				      .addr = s->addr, .acquires = s->acquires, .shared = s->shared,
				      .contended = s->contended, .failed = s->failed,
				      .timeouts = s->timeouts, .releases = s->releases,
				      .broadcasts = s->broadcasts, .wait = (double)s->wait_ns,
				      .wait_max = (double)s->wait_max_ns,
				      .hold_samples = s->hold_samples };
		if (s->hold_samples)
			o->hold = (double)s->hold_ns * (double)s->acquires / (double)s->hold_samples;
		o->name = sn ? object_name(f, s, sn) : xstrdup("?");
	}
	sync_names_free(sn);
}

static const struct sprof_thread *thread_of(const struct sprof_file *f, uint32_t index)
{
	uint32_t i;

	for (i = 0; i < f->nthreads; i++)
		if (f->threads[i].index == index)
			return &f->threads[i];
	return NULL;
}

static void add_threads(struct model_sync *ms, const struct sprof_file *f,
			const struct model_filter *flt)
{
	uint32_t i;
	double x_main = 0, calib_main = 0;

	ms->threads = xrealloc(ms->threads,
			       (ms->nthreads + f->nsync_comps + 1) * sizeof(*ms->threads));
	for (i = 0; i < f->nsync_comps; i++) {
		const struct sprof_sync_comp *c = &f->sync_comps[i];
		const struct sprof_thread *t = thread_of(f, c->thread);
		struct m_sync_thread *mt;
		struct sprof_calib cal = f->calib;
		double o, x;

		cal.o_full = sprof_thread_price(f, c->thread); /* --insitu: its own prices */
		cal.o_skip = sprof_thread_skip_price(f, c->thread);
		x = sync_comp_x(c, &cal, &o);
		if (c->thread == 0) {
			x_main = x;
			calib_main = (double)c->calib_ns;
		}
		if (!t || (flt->thread >= 0 && c->thread != (uint32_t)flt->thread))
			continue;
		mt = &ms->threads[ms->nthreads++];
		*mt = (struct m_sync_thread){ .pid = f->run.pid, .index = c->thread,
					      .t_m = (double)t->nodes[0].incl, .o = o,
					      .x0 = (double)c->x0_ns, .x = x, .waits = c->waits,
					      .ops = c->ops, .wait = (double)c->wait_ns,
					      .wait_c = (double)c->wait_c_ns,
					      .wakes_unneeded = c->wakes_unneeded };
		mt->t_local = mt->t_m - o;
		mt->t_par = mt->t_m - (x - mt->x0);
	}
	if (!f->nsync_comps)
		return;
	ms->procs = xrealloc(ms->procs, (ms->nprocs + 1) * sizeof(*ms->procs));
	ms->procs[ms->nprocs++] = (struct m_sync_proc){
		.pid = f->run.pid, .t_m = (double)f->run.wall_ns,
		.t_par = (double)f->run.wall_ns + calib_main - x_main
	};
}

void model_sync_merge(struct model *m, const struct sprof_file *f, const struct model_filter *flt)
{
	struct model_sync *ms;

	if (!f->nsyncs && !f->nsync_comps)
		return;
	if (!m->sync)
		m->sync = xcalloc(1, sizeof(*m->sync));
	ms = m->sync;
	add_objects(ms, f);
	add_threads(ms, f, flt);
	if (ms->nprocs && m->nprocs && m->procs[m->nprocs - 1].pid == f->run.pid)
		ms->procs[ms->nprocs - 1].t_a = m->procs[m->nprocs - 1].t_a;
}

void model_sync_free(struct model *m)
{
	uint32_t i;

	if (!m->sync)
		return;
	for (i = 0; i < m->sync->nobjs; i++)
		free(m->sync->objs[i].name);
	free(m->sync->objs);
	free(m->sync->threads);
	free(m->sync->procs);
	free(m->sync);
	m->sync = NULL;
}
