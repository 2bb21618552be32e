/* SPDX-License-Identifier: MIT */
/*
 * The post-mortem source's synchronization metrics, from `sonde run --trace --sync`
 * (docs/format-trace.md): a SYNC_WAIT starts a blocked call on an object, its SYNC_DONE (or any
 * other event of the thread, for a call that timed out) ends it; the time between is waiting,
 * charged to the object and to the innermost open call (the procedure that called the lock
 * function). Blocking calls and releases count as operations; uncontended acquisitions record
 * nothing. Objects are the SyncObject hierarchy: /SyncObject/KIND/NAME, named as `sonde report`
 * names them (a variable, else the site of their first use, else the address).
 */
#include <stdlib.h>
#include <string.h>

#include "model_sync.h"
#include "sync_names.h"
#include "trace_source_int.h"
#include "util.h"

/* Bytes of one object of a kind (x86-64 glibc), to name an element of an array of them. */
static const uint64_t kind_size[SPROF_SYNC_KINDS] = { 0, 40, 56, 4, 48, 32, 32, 8 };

/* '/' and ',' separate foci: not in a name. */
static void clean(char *s)
{
	for (; *s; s++)
		if (*s == '/' || *s == ',')
			*s = '_';
}

static char *object_path(const struct strc_file *f, const struct strc_sync *s,
			 struct sync_names *sn)
{
	char name[900], site[800], path[1024];
	uint32_t i;
	int named = 0;

	for (i = 0; sn && s->kind != SPROF_SYNC_THREAD && i < f->nmodules && !named; i++)
		named = s->addr >= f->modules[i].bias &&
			sync_names_data(sn, f->modules[i].path, s->addr - f->modules[i].bias,
					s->kind < SPROF_SYNC_KINDS ? kind_size[s->kind] : 0, name,
					sizeof(name)) == 0;
	if (!named && sn && s->site_module >= 0 && (uint32_t)s->site_module < f->nmodules &&
	    sync_names_site(sn, f->modules[s->site_module].path, s->site_vaddr, site,
			    sizeof(site)) == 0) {
		snprintf(name, sizeof(name), "at %s", site);
		named = 1;
	}
	if (!named)
		snprintf(name, sizeof(name), "0x%llx", (unsigned long long)s->addr);
	clean(name);
	snprintf(path, sizeof(path), "/SyncObject/%s/%s", sync_kind_name(s->kind), name);
	return xstrdup(path);
}

static int cmp_obj(const void *a, const void *b)
{
	const struct ts_obj *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

void ts_sync_objects(struct tsrc *t)
{
	const struct strc_file *f = t->f;
	struct sync_names *sn = f->nsyncs ? sync_names_new() : NULL;
	uint32_t i;

	t->objs = xcalloc(f->nsyncs ? f->nsyncs : 1, sizeof(*t->objs));
	for (i = 0; i < f->nsyncs; i++)
		t->objs[i] = (struct ts_obj){ f->syncs[i].id, f->syncs[i].kind,
					      object_path(f, &f->syncs[i], sn), UINT32_MAX };
	t->nobjs = f->nsyncs;
	qsort(t->objs, t->nobjs, sizeof(*t->objs), cmp_obj);
	sync_names_free(sn);
	t->wait_obj = UINT32_MAX;
}

void ts_sync_free(struct tsrc *t)
{
	uint32_t i;

	for (i = 0; i < t->nobjs; i++)
		free(t->objs[i].path);
	free(t->objs);
}

static uint32_t obj_index(const struct tsrc *t, uint32_t id)
{
	const struct ts_obj key = { .id = id };
	const struct ts_obj *o = bsearch(&key, t->objs, t->nobjs, sizeof(key), cmp_obj);

	return o ? (uint32_t)(o - t->objs) : UINT32_MAX;
}

static struct ts_sentry *sentry(struct tsrc *t, uint32_t node, uint32_t bucket, uint32_t obj)
{
	struct ts_node *n = &t->nodes[node];
	uint32_t i;

	/* entries of one period are together at the end: look back through them */
	for (i = n->nse; i > 0 && n->se[i - 1].bucket == bucket; i--)
		if (n->se[i - 1].obj == obj)
			return &n->se[i - 1];
	if (n->nse == n->capse) {
		n->capse = n->capse ? n->capse * 2 : 4;
		n->se = xrealloc(n->se, n->capse * sizeof(*n->se));
	}
	n->se[n->nse] = (struct ts_sentry){ .bucket = bucket, .obj = obj };
	if (t->objs[obj].first_bucket > bucket)
		t->objs[obj].first_bucket = bucket;
	return &n->se[n->nse++];
}

void ts_sync_wait(struct tsrc *t, uint32_t node, uint64_t a, uint64_t b)
{
	while (a < b) {
		uint32_t k = ts_bucket_of(t, a);
		uint64_t end = (uint64_t)(k + 1) * t->period;
		uint64_t upto = b < end || k == t->nbuckets - 1 ? b : end;

		sentry(t, node, k, t->wait_obj)->wait += (double)(upto - a) / 1e9;
		a = upto;
	}
}

void ts_sync_event(struct tsrc *t, uint32_t node, const struct strc_event *e)
{
	uint32_t obj = obj_index(t, e->id);

	if (e->type == STRC_SYNC_DONE || obj == UINT32_MAX)
		return;
	sentry(t, node, ts_bucket_of(t, t->last), obj)->ops++;
	if (e->type == STRC_SYNC_WAIT)
		t->wait_obj = obj;
}

int ts_sync_focus(const struct tsrc *t, const char *part, uint32_t *obj, uint32_t *kind)
{
	uint32_t i, k;
	size_t len;

	*obj = UINT32_MAX;
	*kind = 0;
	if (!part)
		return 0;
	for (i = 0; i < t->nobjs; i++)
		if (!strcmp(t->objs[i].path, part)) {
			*obj = i;
			return 0;
		}
	for (k = 1; k < SPROF_SYNC_KINDS; k++) {
		len = strlen(sync_kind_name(k));
		if (!strncmp(part, "/SyncObject/", 12) && !strcmp(part + 12, sync_kind_name(k)) &&
		    len) {
			*kind = k;
			return 0;
		}
	}
	return -1;
}

static void push_unique(char ***out, uint32_t *n, const char *s)
{
	uint32_t i;

	for (i = 0; i < *n; i++)
		if (!strcmp((*out)[i], s))
			return;
	*out = xrealloc(*out, (*n + 1) * sizeof(char *));
	(*out)[(*n)++] = xstrdup(s);
}

uint32_t ts_sync_children(const struct tsrc *t, const char *part, uint32_t upto, char ***out)
{
	uint32_t obj, kind, i, n = 0;
	char buf[128];

	*out = NULL;
	if (ts_sync_focus(t, part, &obj, &kind) || obj != UINT32_MAX)
		return 0;
	for (i = 0; i < t->nobjs; i++) {
		if (t->objs[i].first_bucket >= upto)
			continue;
		if (!part) {
			snprintf(buf, sizeof(buf), "/SyncObject/%s", sync_kind_name(t->objs[i].kind));
			push_unique(out, &n, buf);
		} else if (t->objs[i].kind == kind) {
			push_unique(out, &n, t->objs[i].path);
		}
	}
	return n;
}

static int matches(const struct tsrc *t, const struct ts_req *r, uint32_t obj)
{
	if (r->obj != UINT32_MAX)
		return obj == r->obj;
	return !r->kind || t->objs[obj].kind == r->kind;
}

double ts_sync_read(const struct tsrc *t, const struct ts_node *n, uint32_t *cursor,
		    uint32_t b, const struct ts_req *r)
{
	double v = 0;

	while (*cursor < n->nse && n->se[*cursor].bucket < b)
		(*cursor)++;
	for (; *cursor < n->nse && n->se[*cursor].bucket == b; (*cursor)++)
		if (matches(t, r, n->se[*cursor].obj))
			v += r->m == M_SYNC_OPS ? n->se[*cursor].ops : n->se[*cursor].wait;
	return v;
}
