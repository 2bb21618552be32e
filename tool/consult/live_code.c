/* SPDX-License-Identifier: MIT */
/*
 * The live source's Code hierarchy (live_int.h): the executable's modules (source files) and
 * procedures the search may instrument, and each procedure's callees (its call instructions,
 * read from the process before anything is patched): with inclusive times the search goes
 * down the call graph to the most specific procedure that is still hot.
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "live_int.h"
#include "util.h"

/* ---- the program's procedures ---- */

static int boilerplate(const char *name)
{
	return (name[0] == '_' && name[1] != 'Z') || strstr(name, ".cold") != NULL;
}

/* A procedure of the executable the search may instrument. */
int lv_own_proc(const struct dyn_session *s, uint32_t i)
{
	return !s->procs[i].library && !boilerplate(s->procs[i].name) && s->pinfo[i].size >= 1 &&
	       !s->pinfo[i].ifunc;
}

/* "/Code/MOD" or "/Code/MOD/PROC": 0 with *mod and *proc (NULL: the module) in buf. */
int lv_code_parts(const char *path, char *buf, size_t cap, const char **mod,
		      const char **proc)
{
	char *slash;

	if (!path || strncmp(path, "/Code/", 6) || !path[6])
		return -1;
	snprintf(buf, cap, "%s", path + 6);
	*mod = buf;
	slash = strchr(buf, '/');
	*proc = NULL;
	if (slash) {
		*slash = 0;
		*proc = slash + 1;
	}
	return 0;
}

int lv_in_code(const struct dyn_session *s, uint32_t i, const char *mod, const char *proc)
{
	return lv_own_proc(s, i) && !strcmp(s->procs[i].module, mod) &&
	       (!proc || !strcmp(s->procs[i].name, proc));
}

uint32_t lv_thread_of(const struct cs_focus *f)
{
	const char *t = f->part[H_THREADS];

	return t && !strncmp(t, "/Threads/", 9) ? (uint32_t)strtoul(t + 9, NULL, 10) : 0;
}

static const struct dyn_session *sort_s;

static int by_addr(const void *a, const void *b)
{
	uint64_t x = dyn_proc_addr(sort_s, *(const uint32_t *)a);
	uint64_t y = dyn_proc_addr(sort_s, *(const uint32_t *)b);

	return x < y ? -1 : x > y;
}

static int32_t proc_at(const struct lsrc *ls, uint64_t addr)
{
	uint32_t lo = 0, hi = ls->nby_addr;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		uint64_t a = dyn_proc_addr(ls->s, ls->by_addr[mid]);

		if (a == addr)
			return (int32_t)ls->by_addr[mid];
		if (a < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* The procedures of the executable that p calls directly, read from the process before any
 * patch (an entry patch replaces a call there). */
static void read_callees(struct lsrc *ls, uint32_t p)
{
	const struct dyn_session *s = ls->s;
	struct patch_fn fn;
	uint8_t *code;
	char why[160];
	size_t i;

	ls->callees_read[p] = 1;
	if (ls->memfd < 0 || s->pinfo[p].size > (1u << 20))
		return;
	code = xmalloc(s->pinfo[p].size);
	memset(&fn, 0, sizeof(fn));
	if (pread(ls->memfd, code, s->pinfo[p].size, (off_t)dyn_proc_addr(s, p)) ==
		    (ssize_t)s->pinfo[p].size &&
	    patch_analyze(code, s->pinfo[p].size, dyn_proc_addr(s, p), &fn, why, sizeof(why)) ==
		    0) {
		for (i = 0; i < fn.nr_insns; i++) {
			int32_t q;
			uint32_t k;

			if (fn.insns[i].kind != PI_CALL ||
			    (q = proc_at(ls, fn.insns[i].target)) < 0 || (uint32_t)q == p ||
			    !lv_own_proc(s, (uint32_t)q))
				continue;
			for (k = 0; k < ls->ncallees[p] && ls->callees[p][k] != (uint32_t)q; k++)
				;
			if (k < ls->ncallees[p])
				continue;
			ls->callees[p] = xrealloc(ls->callees[p], (k + 1) * sizeof(uint32_t));
			ls->callees[p][ls->ncallees[p]++] = (uint32_t)q;
		}
		patch_fn_free(&fn);
	}
	free(code);
}

void lv_push_name(char ***out, uint32_t *n, const char *name)
{
	uint32_t i;

	for (i = 0; i < *n; i++)
		if (!strcmp((*out)[i], name))
			return;
	*out = xrealloc(*out, (*n + 1) * sizeof(char *));
	(*out)[(*n)++] = xstrdup(name);
}

uint32_t lv_code_children(struct lsrc *ls, const char *path, char ***out)
{
	const struct dyn_session *s = ls->s;
	char buf[4096], name[4200];
	const char *mod, *proc;
	uint32_t n = 0, i, k;

	if (!path) {
		for (i = 0; i < s->nprocs; i++)
			if (lv_own_proc(s, i)) {
				snprintf(name, sizeof(name), "/Code/%s", s->procs[i].module);
				lv_push_name(out, &n, name);
			}
		return n;
	}
	if (lv_code_parts(path, buf, sizeof(buf), &mod, &proc) != 0)
		return 0;
	for (i = 0; i < s->nprocs; i++) {
		if (!lv_in_code(s, i, mod, proc))
			continue;
		if (!proc) {
			snprintf(name, sizeof(name), "/Code/%s/%s", mod, s->procs[i].name);
			lv_push_name(out, &n, name);
			continue;
		}
		for (k = 0; k < ls->ncallees[i]; k++) {
			uint32_t q = ls->callees[i][k];

			snprintf(name, sizeof(name), "/Code/%s/%s", s->procs[q].module,
				 s->procs[q].name);
			lv_push_name(out, &n, name);
		}
	}
	return n;
}

void lv_code_init(struct lsrc *ls)
{
	const struct dyn_session *s = ls->s;
	uint32_t i;

	ls->by_addr = xmalloc((s->nprocs + 1) * sizeof(uint32_t));
	for (i = 0; i < s->nprocs; i++)
		if (!s->procs[i].library)
			ls->by_addr[ls->nby_addr++] = i;
	sort_s = s;
	qsort(ls->by_addr, ls->nby_addr, sizeof(uint32_t), by_addr);
	ls->callees = xcalloc(s->nprocs + 1, sizeof(uint32_t *));
	ls->ncallees = xcalloc(s->nprocs + 1, sizeof(uint32_t));
	ls->callees_read = xcalloc(s->nprocs + 1, 1);
	for (i = 0; i < s->nprocs; i++)
		if (lv_own_proc(s, i))
			read_callees(ls, i);
}

void lv_code_free(struct lsrc *ls)
{
	uint32_t i;

	for (i = 0; i < ls->s->nprocs; i++)
		free(ls->callees[i]);
	free(ls->callees);
	free(ls->ncallees);
	free(ls->callees_read);
	free(ls->by_addr);
}
