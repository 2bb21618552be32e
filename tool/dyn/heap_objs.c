/* SPDX-License-Identifier: MIT */
/* Sync objects the runtime saw (heap_objs.h): the recording request, RESOURCES, names. */
#include "heap_objs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sync_names.h"
#include "util.h"

const char *const dyn_heap_uses[DYN_RES_SYNC_KINDS][10] = {
	{ "pthread_mutex_lock", "pthread_mutex_trylock", "pthread_mutex_timedlock",
	  "pthread_mutex_clocklock", NULL },
	{ "pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "pthread_rwlock_tryrdlock",
	  "pthread_rwlock_trywrlock", "pthread_rwlock_timedrdlock", "pthread_rwlock_timedwrlock",
	  "pthread_rwlock_clockrdlock", "pthread_rwlock_clockwrlock", NULL },
	{ "pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait",
	  "pthread_cond_signal", "pthread_cond_broadcast", NULL },
	{ "pthread_barrier_wait", NULL },
	{ "sem_wait", "sem_trywait", "sem_timedwait", "sem_clockwait", "sem_post", NULL },
};
const char *const dyn_heap_inits[DYN_RES_SYNC_KINDS] = {
	"pthread_mutex_init", "pthread_rwlock_init", "pthread_cond_init", "pthread_barrier_init",
	"sem_init",
};

/* Which kind's function proc is (its use or, *init set, its initialisation); -1: none. */
static int kind_of_proc(const char *name, int *init)
{
	int k, i;

	for (k = 0; k < DYN_RES_SYNC_KINDS; k++) {
		for (i = 0; dyn_heap_uses[k][i]; i++)
			if (!strcmp(dyn_heap_uses[k][i], name))
				return *init = 0, k;
		if (!strcmp(dyn_heap_inits[k], name))
			return *init = 1, k;
	}
	return -1;
}

int dyn_heap_record_spec(const struct dyn_session *s, struct dyn_lspec *sp)
{
	uint32_t i;
	int k, init;

	memset(sp, 0, sizeof(*sp));
	sp->nvars = 1; /* a request has a value: this one's is never counted (one action a call) */
	sp->var[0] = DYN_LV_TCOUNTER;
	for (i = 0; i < s->nprocs; i++) {
		struct dyn_lpoint *p;

		if (!s->procs[i].library || s->pinfo[i].ifunc ||
		    (k = kind_of_proc(s->procs[i].name, &init)) < 0)
			continue;
		sp->pt = xrealloc(sp->pt, (sp->npt + 1) * sizeof(*sp->pt));
		p = &sp->pt[sp->npt++];
		*p = (struct dyn_lpoint){ .proc = i, .nact = 1 };
		/* RECORD's var is the kind (live.c maps it to the action's target) */
		p->act[0] = (struct dyn_lact){ .when = SPROTO_AT_ENTRY, .prim = SPROTO_RECORD,
					       .var = (uint8_t)k, .pred_var = -1, .pred_arg = -1,
					       .value = init ? SPROTO_RECORD_INIT
							     : SPROTO_RECORD_USE };
	}
	return sp->npt ? 0 : -1;
}

void dyn_heap_objs_free(struct dyn_heap_objs *o)
{
	free(o->v);
	memset(o, 0, sizeof(*o));
}

struct span {
	uint64_t lo, hi;
};

/* The process's mappings of files (modules' code and data, files mapped): their spans. */
static size_t file_mappings(pid_t pid, struct span **out)
{
	char path[64], line[4600];
	size_t n = 0;
	FILE *f;

	*out = NULL;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;
		int off = 0;

		if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %n", &lo, &hi, &off) < 2 || !off ||
		    line[off] != '/')
			continue;
		*out = xrealloc(*out, (n + 1) * sizeof(**out));
		(*out)[n++] = (struct span){ lo, hi };
	}
	fclose(f);
	return n;
}

static int in_spans(const struct span *v, size_t n, uint64_t addr)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (addr >= v[i].lo && addr < v[i].hi)
			return 1;
	return 0;
}

int dyn_heap_objects(struct dyn_session *s, int new_only, struct dyn_heap_objs *out, char *err,
		     size_t n)
{
	uint8_t msg[64];
	struct sproto_msg m;
	struct sproto_object_cursor c = { 0 };
	struct sproto_object e;
	uint32_t i, k;

	memset(out, 0, sizeof(*out));
	if (dyn_session_request(s, msg, sproto_put_resources(msg, sizeof(msg),
							     ((1u << SPROTO_OBJ_KINDS) - 1) |
							     (new_only ? SPROTO_RES_NEW : 0)),
				SPROTO_RESOURCES_REPLY, &m, err, n) != 0)
		return -1;
	out->slots = m.u.objects.slots;
	for (k = 0; k < DYN_RES_SYNC_KINDS; k++)
		out->dropped[k] = m.u.objects.dropped[k];
	out->v = xcalloc(m.u.objects.n + 1, sizeof(*out->v));
	for (i = 0; i < m.u.objects.n && sproto_object_next(&m.u.objects, &c, &e) == 0; i++) {
		out->v[out->n++] = (struct dyn_heap_obj){ (enum dyn_res_kind)e.kind, e.addr, e.uses,
							  e.inits, e.site, 0 };
	}
	if (out->n) {
		struct span *maps;
		size_t nmaps = file_mappings(s->pid, &maps);

		for (i = 0; i < out->n; i++)
			out->v[i].in_module = in_spans(maps, nmaps, out->v[i].addr);
		free(maps);
	}
	return 0;
}

int dyn_heap_site_name(const struct dyn_session *s, uint64_t site, char *out, size_t cap)
{
	struct sync_names *sn;
	char file[4200];
	int i, r;

	for (i = 0; i < s->nmods; i++)
		if (site > s->mods[i].text_start && site <= s->mods[i].text_end)
			break;
	if (!site || i == s->nmods)
		return -1;
	snprintf(file, sizeof(file), "/proc/%d/root%s", (int)s->pid, s->mods[i].path);
	if (access(file, R_OK) != 0)
		snprintf(file, sizeof(file), "%s", s->mods[i].path);
	sn = sync_names_new();
	r = sn ? sync_names_site(sn, file, site - s->mods[i].bias, out, cap) : -1;
	sync_names_free(sn);
	if (r != 0) {
		const char *b = strrchr(s->mods[i].path, '/');

		snprintf(out, cap, "%s+0x%" PRIx64, b ? b + 1 : s->mods[i].path,
			 site - s->mods[i].bias);
	}
	return 0;
}

void dyn_heap_path(const struct dyn_heap_obj *o, char *out, size_t cap)
{
	snprintf(out, cap, "/SyncObject/%s/0x%" PRIx64, dyn_res_kind_name(o->kind), o->addr);
}
