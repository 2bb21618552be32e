/* SPDX-License-Identifier: MIT */
/*
 * The I/O, OS and hardware-counter records of each profile, merged for the report: files by
 * path; I/O per phase name (from the rows' thread and phase); OS counters per thread, per
 * interval (labelled with thread 0's phase at its middle), and per phase name (each thread's
 * own counters between its phase markers, summed over threads); hardware counters per process.
 */
#include <stdlib.h>
#include <string.h>

#include "model_io.h"
#include "util.h"

static struct m_ext *ext_of(struct model *m)
{
	if (!m->ext)
		m->ext = xcalloc(1, sizeof(*m->ext));
	return m->ext;
}

static uint32_t file_index(struct m_ext *x, const struct sprof_iofile *f)
{
	uint32_t i;

	for (i = 0; i < x->nfiles; i++)
		if (!strcmp(x->files[i].path, f->path))
			return i;
	x->files = xrealloc(x->files, (x->nfiles + 1) * sizeof(*x->files));
	x->files[x->nfiles] = (struct m_iofile){ .path = xstrdup(f->path), .kind = f->kind };
	return x->nfiles++;
}

/* The k-th PHASE record of a thread in a profile. */
static const struct sprof_phase *phase_of(const struct sprof_file *f, uint32_t thread, uint32_t k)
{
	uint32_t i;

	for (i = 0; i < f->nphases; i++)
		if (f->phases[i].thread == thread && k-- == 0)
			return &f->phases[i];
	return NULL;
}

static struct m_iophase *iophase(struct m_ext *x, const char *name)
{
	uint32_t i;

	for (i = 0; i < x->niophases; i++)
		if (!strcmp(x->iophases[i].name, name))
			return &x->iophases[i];
	x->iophases = xrealloc(x->iophases, (x->niophases + 1) * sizeof(*x->iophases));
	x->iophases[x->niophases] = (struct m_iophase){ .name = xstrdup(name) };
	return &x->iophases[x->niophases++];
}

static void add_phase_row(struct m_iophase *p, uint32_t file, uint64_t ns, uint64_t calls,
			  uint64_t bytes)
{
	uint32_t i;

	p->ns += ns;
	p->calls += calls;
	p->bytes += bytes;
	for (i = 0; i < p->nfiles && p->files[i].file != file; i++)
		;
	if (i == p->nfiles) {
		p->files = xrealloc(p->files, (p->nfiles + 1) * sizeof(*p->files));
		p->files[p->nfiles++] = (struct m_iophase_file){ file, 0, 0, 0 };
	}
	p->files[i].ns += ns;
	p->files[i].calls += calls;
	p->files[i].bytes += bytes;
}

static void add_row(struct m_ext *x, const struct sprof_file *f, uint32_t file,
		    const struct sprof_io_row *r)
{
	struct m_iofile *mf = &x->files[file];
	uint64_t ns = 0, calls = 0;
	const struct sprof_phase *ph;
	int i;

	for (i = 0; i < SPROF_IO_OPS; i++) {
		mf->calls[i] += r->calls[i];
		mf->ns[i] += r->ns[i];
		ns += r->ns[i];
		calls += r->calls[i];
	}
	mf->bytes_read += r->bytes_read;
	mf->bytes_written += r->bytes_written;
	mf->errors += r->errors;
	if (r->phase == SPROF_NO_INDEX || !(ph = phase_of(f, r->thread, r->phase)))
		return;
	add_phase_row(iophase(x, ph->name), file, ns, calls, r->bytes_read + r->bytes_written);
}

/* Each phase name's duration, counted once per thread that had it. */
static void phase_spans(struct m_ext *x, const struct sprof_file *f)
{
	uint32_t i, j;

	for (i = 0; i < x->niophases; i++)
		for (j = 0; j < f->nphases; j++)
			if (!strcmp(f->phases[j].name, x->iophases[i].name))
				x->iophases[i].span_ns += (double)(f->phases[j].end - f->phases[j].start);
}

static void add_io(struct m_ext *x, const struct sprof_file *f, const struct model_filter *flt)
{
	uint32_t i, j, before = x->niophases;

	for (i = 0; i < f->niofiles; i++) {
		const struct sprof_iofile *fi = &f->iofiles[i];
		uint32_t idx = file_index(x, fi);

		for (j = 0; j < fi->nrows; j++)
			if (flt->thread < 0 || fi->rows[j].thread == (uint32_t)flt->thread)
				add_row(x, f, idx, &fi->rows[j]);
	}
	if (x->niophases != before || f->niofiles)
		phase_spans(x, f);
}

static const char *intern_name(struct m_ext *x, const char *name)
{
	uint32_t i;

	for (i = 0; i < x->nnames; i++)
		if (!strcmp(x->names[i], name))
			return x->names[i];
	x->names = xrealloc(x->names, (x->nnames + 1) * sizeof(*x->names));
	x->names[x->nnames] = xstrdup(name);
	return x->names[x->nnames++];
}

static struct m_osphase *osphase(struct m_ext *x, const char *name)
{
	uint32_t i;

	for (i = 0; i < x->nosphases; i++)
		if (!strcmp(x->osphases[i].name, name))
			return &x->osphases[i];
	x->osphases = xrealloc(x->osphases, (x->nosphases + 1) * sizeof(*x->osphases));
	x->osphases[x->nosphases] = (struct m_osphase){ .name = xstrdup(name) };
	return &x->osphases[x->nosphases++];
}

/* A thread's own counters between the two ends of one of its phases, summed by phase name. */
static void add_osphase(struct m_ext *x, const struct sprof_file *f, const struct sprof_os *o)
{
	const struct sprof_phase *p = phase_of(f, o->thread, o->phase);
	struct m_osphase *q;

	if (!p)
		return;
	q = osphase(x, p->name);
	q->threads++;
	q->span_ns += (double)o->wall_ns;
	q->user_ns += (double)o->v.user_ns;
	q->sys_ns += (double)o->v.sys_ns;
	q->minflt += (double)o->v.minflt;
	q->majflt += (double)o->v.majflt;
	q->nvcsw += (double)o->v.nvcsw;
	q->nivcsw += (double)o->v.nivcsw;
}

static const char *phase_at(const struct sprof_file *f, uint64_t t)
{
	uint32_t i;

	for (i = 0; i < f->nphases; i++)
		if (f->phases[i].thread == 0 && f->phases[i].start <= t && t < f->phases[i].end)
			return f->phases[i].name;
	return NULL;
}

static void add_os(struct m_ext *x, const struct sprof_file *f, const struct model_filter *flt)
{
	uint32_t i;

	for (i = 0; i < f->nos; i++) {
		const struct sprof_os *o = &f->os[i];

		if (flt->thread >= 0 && o->thread != (uint32_t)flt->thread &&
		    o->thread != SPROF_NO_INDEX)
			continue;
		if (o->phase != SPROF_NO_INDEX) {
			add_osphase(x, f, o);
			continue;
		}
		x->os = xrealloc(x->os, (x->nos + 1) * sizeof(*x->os));
		x->os[x->nos++] = (struct m_os){ f->run.pid, o->thread, o->tid, o->wall_ns, o->v };
	}
	for (i = 0; i < f->nintervals; i++) {
		const struct sprof_os_interval *v = &f->intervals[i];
		const char *ph = phase_at(f, v->start / 2 + v->end / 2);

		x->intervals = xrealloc(x->intervals, (x->nintervals + 1) * sizeof(*x->intervals));
		x->intervals[x->nintervals++] = (struct m_interval){
			f->run.pid, v->start, v->end, v->v, ph ? intern_name(x, ph) : NULL };
	}
}

static void add_hw(struct m_ext *x, const struct sprof_file *f)
{
	uint32_t i;

	for (i = 0; i < f->nhw; i++) {
		const struct sprof_hw *h = &f->hw[i];

		x->hw = xrealloc(x->hw, (x->nhw + 1) * sizeof(*x->hw));
		x->hw[x->nhw++] = (struct m_hw){ f->run.pid, h->status, h->value, h->enabled_ns,
						 h->running_ns, xstrdup(h->event),
						 xstrdup(h->reason) };
	}
}

void model_ext_add(struct model *m, const struct sprof_file *f, const struct model_filter *flt)
{
	struct m_ext *x;

	if (!f->niofiles && !f->nos && !f->nintervals && !f->nhw)
		return;
	x = ext_of(m);
	add_io(x, f, flt);
	add_os(x, f, flt);
	add_hw(x, f);
}

void model_ext_free(struct model *m)
{
	struct m_ext *x = m->ext;
	uint32_t i;

	if (!x)
		return;
	for (i = 0; i < x->nfiles; i++)
		free(x->files[i].path);
	for (i = 0; i < x->niophases; i++) {
		free(x->iophases[i].name);
		free(x->iophases[i].files);
	}
	for (i = 0; i < x->nosphases; i++)
		free(x->osphases[i].name);
	for (i = 0; i < x->nhw; i++) {
		free(x->hw[i].event);
		free(x->hw[i].reason);
	}
	for (i = 0; i < x->nnames; i++)
		free(x->names[i]);
	free(x->files);
	free(x->iophases);
	free(x->os);
	free(x->intervals);
	free(x->osphases);
	free(x->hw);
	free(x->names);
	free(x);
	m->ext = NULL;
}
