/* SPDX-License-Identifier: MIT */
/* The validating reader of the INSITU record (18; profile_insitu.h, docs/format-profile.md);
 * called by profile_read.c for that record type. */
#include "profile_read.h"

#include <stdio.h>
#include <stdlib.h>

static int thread_known(const struct sprof_file *f, uint32_t index)
{
	uint32_t i;

	for (i = 0; i < f->nthreads; i++)
		if (f->threads[i].index == index)
			return 1;
	return 0;
}

static int price_ok(double v)
{
	return v >= 0 && v < 1e9;
}

/* The checks once the fields are read: the reason, or NULL. */
static const char *insitu_problem(const struct sprof_file *f, const struct sprof_insitu *s)
{
	uint32_t i;

	if (!thread_known(f, s->thread))
		return "no such thread";
	for (i = 0; i + 1 < f->ninsitu; i++)
		if (f->insitu[i].thread == s->thread)
			return "a second record for it";
	if (s->status >= SPROF_INSITU_STATUSES)
		return "unknown status";
	if ((s->status == SPROF_INSITU_NONE) != (s->func == SPROF_INSITU_NO_FUNC))
		return "a function without a status or a status without a function";
	if (s->func != SPROF_INSITU_NO_FUNC && !sprof_func_of(f, s->func))
		return "unknown function";
	if (s->status != SPROF_INSITU_NONE && (!s->window || !s->period))
		return "no window";
	if (s->preempted > s->pairs)
		return "more pairs preempted than kept";
	if (!price_ok(s->price_ns) || !price_ok(s->spread_ns) || !price_ok(s->o_full_ns) ||
	    !price_ok(s->o_skip_ns))
		return "prices out of range";
	/* a used price may be 0: a probe pair that costs nothing measurable in situ */
	if (s->status == SPROF_INSITU_USED && !s->pairs)
		return "a price used without pairs";
	if (s->bare_pairs > s->pairs || !s->bare_pairs != !s->bare_exits ||
	    (!s->bare_pairs && s->stub_ns != 0))
		return "bare pairs without exits, more than the pairs, or a stub without them";
	if (!price_ok(s->stub_ns))
		return "stub cost out of range";
	return NULL;
}

int sprof_read_insitu(struct sprof_file *f, struct sprof_buf *b, uint32_t size, char *err,
		      size_t errlen)
{
	struct sprof_insitu *s;
	const char *why;

	f->insitu = sprof_grow(f->insitu, &f->ninsitu, sizeof(*s));
	if (!f->insitu)
		return snprintf(err, errlen, "too many INSITU records"), -1;
	s = &f->insitu[f->ninsitu - 1];
	s->thread = sprof_get_u32(b);
	s->status = sprof_get_u32(b);
	s->func = sprof_get_u32(b);
	s->window = sprof_get_u32(b);
	s->pairs = sprof_get_u32(b);
	s->rejected = sprof_get_u32(b);
	s->period = sprof_get_u32(b);
	s->preempted = sprof_get_u32(b);
	s->b_calls = sprof_get_u64(b);
	s->calls = sprof_get_u64(b);
	s->price_ns = sprof_get_f64(b);
	s->spread_ns = sprof_get_f64(b);
	s->o_full_ns = sprof_get_f64(b);
	s->o_skip_ns = sprof_get_f64(b);
	s->bare_pairs = s->bare_exits = 0;
	s->stub_ns = 0;
	if (size == SPROF_INSITU_SIZE) {
		s->bare_pairs = sprof_get_u32(b);
		s->bare_exits = sprof_get_u32(b);
		s->stub_ns = sprof_get_f64(b);
	}
	if (b->error || (size != SPROF_INSITU_SIZE && size != SPROF_INSITU_SIZE_V1))
		return 0; /* the caller reports the size */
	why = insitu_problem(f, s);
	if (why)
		return snprintf(err, errlen, "INSITU record for thread %u: %s", s->thread, why), -1;
	return 0;
}
