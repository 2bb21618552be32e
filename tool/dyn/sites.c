/* SPDX-License-Identifier: MIT */
/*
 * The points a plan needs (session_int.h): one entry point per procedure with entry or exit
 * requests, one call-site point per call instruction of a procedure with call requests
 * (calls("NAME"): only the calls that reach NAME, callees.h). The procedures' code is read from
 * the process (/proc/PID/mem) to find their calls; the patcher reads it again with the world
 * stopped. What is known to be refused before patching is a refused point with its reason: an
 * IFUNC resolver (the implementation it picks runs instead), code that cannot be read or
 * decoded. Each point belongs to the trampoline area of its procedure's module.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session_int.h"
#include "util.h"

#define IFUNC_WHY "an IFUNC resolver (calls run the implementation it picks at load time)"

struct ctx {
	struct dyn_session *s;
	int fd;             /* /proc/PID/mem */
	uint64_t *seen;     /* addr * 2 + (call sites): entries and functions done (aliases) */
	size_t cap;         /* of seen: a power of two */
	uint32_t *area;     /* per module: its area + 1 */
	uint32_t *first, *next; /* the requests of each procedure, in plan order */
};

static int read_mem(void *arg, uint64_t addr, void *buf, size_t len)
{
	const struct ctx *c = arg;

	return pread(c->fd, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -1;
}

/* The C runtime's own start-up and tear-down code, and compiler-split cold parts. */
static int boilerplate(const char *name)
{
	return (name[0] == '_' && name[1] != 'Z') || strstr(name, ".cold") != NULL;
}

static uint32_t area_of(struct ctx *c, uint32_t mod)
{
	const struct target_module *m = &c->s->mods[mod];

	if (!c->area[mod])
		c->area[mod] = dyn_add_area(&c->s->set, m->text_start, m->text_end) + 1;
	return c->area[mod] - 1;
}

static void add_point(struct ctx *c, const char *name, uint32_t p, int kind, uint64_t call,
		      const uint32_t *req, uint32_t nreq, const char *why)
{
	struct dyn_session *s = c->s;
	struct dyn_func *f;
	struct dyn_site *site;

	if (dyn_add(&s->set, name, dyn_proc_addr(s, p), s->pinfo[p].size, kind, call,
		    area_of(c, s->pinfo[p].mod)) != 0) {
		error("out of memory");
		exit(1);
	}
	s->site = xrealloc(s->site, s->set.n * sizeof(*s->site));
	site = &s->site[s->set.n - 1];
	site->proc = p;
	site->nreq = nreq < DYN_SITE_REQS ? nreq : DYN_SITE_REQS;
	memcpy(site->req, req, site->nreq * sizeof(*req));
	f = &s->set.f[s->set.n - 1];
	if (why) {
		f->state = DYN_REFUSED;
		snprintf(f->why, sizeof(f->why), "%s", why);
	}
}

static void no_call(struct dyn_session *s, const char *proc, const char *callee)
{
	if (!s->nnocall++)
		snprintf(s->nocall, sizeof(s->nocall), callee ? "%s calls no %s" : "%s makes no call",
			 proc, callee);
}

/* A jmp rel32 out of the module: a call site patched by a session that did not detach. */
static int jumps_out(const struct dyn_session *s, uint32_t p, const struct patch_insn *in)
{
	const struct target_module *m = &s->mods[s->pinfo[p].mod];

	return in->kind == PI_JMP && in->len == 5 &&
	       (in->target < m->text_start || in->target >= m->text_end);
}

/* One point per call instruction that some call request at p wants. */
static int each_call(struct ctx *c, uint32_t p, const struct patch_fn *fn, const uint8_t *code,
		     const uint32_t *req, uint32_t nreq, int *found, char *err, size_t n)
{
	struct dyn_session *s = c->s;
	uint32_t m[DYN_SITE_REQS], k, j;
	char name[300];
	size_t i;

	for (i = 0; i < fn->nr_insns; i++) {
		const struct patch_insn *in = &fn->insns[i];

		if (jumps_out(s, p, in))
			return snprintf(err, n, "process %d carries the patches of a sonde that did "
					"not detach (killed?), in %s: a new session would count "
					"with them", (int)s->pid, s->procs[p].name), -1;
		if (in->kind != PI_CALL && in->kind != PI_CALL_IND)
			continue;
		for (j = 0, k = 0; j < nreq && k < DYN_SITE_REQS; j++) {
			const char *callee = s->plan->req[req[j]].callee;

			if (!callee || callees_reach(s->callees, fn, code, in, read_mem, c, callee)) {
				m[k++] = req[j];
				found[j] = 1;
			}
		}
		if (!k)
			continue;
		snprintf(name, sizeof(name), "%s+0x%x", s->procs[p].name, in->off);
		add_point(c, name, p, PATCH_CALLSITE, fn->addr + in->off, m, k, NULL);
	}
	return 0;
}

static int call_sites(struct ctx *c, uint32_t p, const uint32_t *req, uint32_t nreq, char *err,
		      size_t n)
{
	struct dyn_session *s = c->s;
	const char *name = s->procs[p].name;
	uint64_t addr = dyn_proc_addr(s, p), size = s->pinfo[p].size;
	struct patch_fn fn;
	uint8_t *code;
	char why[160];
	int found[DYN_SITE_REQS] = { 0 }, r;
	uint32_t j;

	if (s->pinfo[p].ifunc)
		return add_point(c, name, p, PATCH_CALLSITE, addr, req, nreq, IFUNC_WHY), 0;
	code = xmalloc(size);
	if (read_mem(c, addr, code, size) != 0) {
		free(code);
		return add_point(c, name, p, PATCH_CALLSITE, addr, req, nreq,
				 "cannot read its code"), 0;
	}
	if (patch_analyze(code, size, addr, &fn, why, sizeof(why)) != 0) {
		free(code);
		return add_point(c, name, p, PATCH_CALLSITE, addr, req, nreq, why), 0;
	}
	r = each_call(c, p, &fn, code, req, nreq < DYN_SITE_REQS ? nreq : DYN_SITE_REQS, found,
		      err, n);
	for (j = 0; r == 0 && j < nreq && j < DYN_SITE_REQS; j++)
		if (!found[j])
			no_call(s, name, s->plan->req[req[j]].callee);
	patch_fn_free(&fn);
	free(code);
	return r;
}

/* Whether an alias of procedure p (same address) got this kind of point already: the first
 * name's requests are the ones instrumented. Marks it done. */
static int done_before(struct ctx *c, uint32_t p, int calls)
{
	uint64_t key = dyn_proc_addr(c->s, p) * 2 + (uint64_t)calls + 1;
	uint64_t h = key * 0x9e3779b97f4a7c15ull;

	for (;; h++) {
		uint64_t *slot = &c->seen[h & (c->cap - 1)];

		if (*slot == key)
			return 1;
		if (!*slot) {
			*slot = key;
			return 0;
		}
	}
}

/* The requests at procedure p of one kind: entry and exit, or call sites. */
static uint32_t reqs_at(const struct ctx *c, uint32_t p, int calls, uint32_t *out)
{
	uint32_t k, j = 0;

	for (k = c->first[p]; k && j < DYN_SITE_REQS; k = c->next[k - 1])
		if ((c->s->plan->req[k - 1].point == MDL_CALL) == calls)
			out[j++] = k - 1;
	return j;
}

static int procedure(struct ctx *c, uint32_t p, char *err, size_t n)
{
	struct dyn_session *s = c->s;
	uint32_t e[DYN_SITE_REQS], k[DYN_SITE_REQS];
	uint32_t ne = reqs_at(c, p, 0, e), nk = reqs_at(c, p, 1, k);

	if (!s->pinfo[p].size || boilerplate(s->procs[p].name)) {
		s->nmissing += ne + nk;
		return 0;
	}
	if (ne && !done_before(c, p, 0))
		add_point(c, s->procs[p].name, p, PATCH_ENTRY, 0, e, ne,
			  s->pinfo[p].ifunc ? IFUNC_WHY : NULL);
	return nk && !done_before(c, p, 1) ? call_sites(c, p, k, nk, err, n) : 0;
}

int dyn_sites_collect(struct dyn_session *s, char *err, size_t n)
{
	const struct mdl_plan *pl = s->plan;
	struct ctx c = { .s = s, .fd = -1 };
	uint32_t *order = xcalloc(pl->nreq + 1, sizeof(*order)), *last, no = 0, k;
	char path[64];
	int r = 0;

	for (c.cap = 64; c.cap < 4 * (size_t)pl->nreq; c.cap *= 2)
		;
	c.seen = xcalloc(c.cap, sizeof(*c.seen));
	c.area = xcalloc((size_t)s->nmods + 1, sizeof(*c.area));
	c.first = xcalloc(s->nprocs + 1, sizeof(*c.first));
	last = xcalloc(s->nprocs + 1, sizeof(*last));
	c.next = xcalloc(pl->nreq + 1, sizeof(*c.next));
	for (k = 0; k < pl->nreq; k++) {
		uint32_t p = pl->req[k].proc;

		if (!p) {
			s->nmissing++;
			continue;
		}
		if (!c.first[p - 1])
			order[no++] = p - 1, c.first[p - 1] = k + 1;
		else
			c.next[last[p - 1] - 1] = k + 1;
		last[p - 1] = k + 1;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)s->pid);
	c.fd = open(path, O_RDONLY | O_CLOEXEC);
	for (k = 0; r == 0 && k < no; k++)
		r = procedure(&c, order[k], err, n);
	if (c.fd >= 0)
		close(c.fd);
	free(order);
	free(last);
	free(c.first);
	free(c.next);
	free(c.area);
	free(c.seen);
	return r;
}

/* A jmp rel32 out of the module at a function's entry (after an endbr64): a trampoline left
 * by a session that could not detach (killed). Its point ids would be ours too. */
static int left_patch(const struct dyn_session *s, int fd, uint32_t p)
{
	static const uint8_t endbr[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	const struct target_module *m = &s->mods[s->pinfo[p].mod];
	uint64_t addr = dyn_proc_addr(s, p), to;
	uint8_t b[9];
	int32_t rel;
	size_t at;

	if (s->pinfo[p].size < 5 || pread(fd, b, sizeof(b), (off_t)addr) != (ssize_t)sizeof(b))
		return 0;
	at = memcmp(b, endbr, 4) ? 0 : 4;
	if (b[at] != 0xe9)
		return 0;
	memcpy(&rel, b + at + 1, 4);
	to = addr + at + 5 + (uint64_t)(int64_t)rel;
	return to < m->text_start || to >= m->text_end;
}

int dyn_sites_left_patch(const struct dyn_session *s, char *err, size_t n)
{
	char path[64];
	uint32_t i;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)s->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* the patcher will say why it cannot read */
	for (i = 0; i < s->nprocs && !left_patch(s, fd, i); i++)
		;
	close(fd);
	if (i == s->nprocs)
		return 0;
	return snprintf(err, n, "process %d carries patches of another session, at %s and maybe "
			"more (of a sonde that did not detach, killed?, or its parent's, inherited at "
			"a fork during a watch): a new session would count with them", (int)s->pid,
			s->procs[i].name), -1;
}
