/* SPDX-License-Identifier: MIT */
/*
 * A rank's MPI channels live (live_int.h; docs/consult.md, "Communicator, Peer and Tag live"):
 * the Communicator, Peer and Tag hierarchies of the live search, and which receives a focus
 * with such parts narrows mpi_p2p_time to.
 *
 * Measured: MPI_Recv(buf, count, type, source, tag, comm, status), whose source, tag and
 * communicator are its arguments 3, 4 and 5 at entry (rcx, r8, r9). A Peer is a world rank:
 * the source of a receive on MPI_COMM_WORLD, whose handle in Open MPI is the address of the
 * library's `ompi_mpi_comm_world` (as the dynamic linker resolved it: the executable's copy
 * when it has one). Receives on other communicators count at no Peer (their sources are ranks
 * of those communicators; no translation) and at no Communicator (they have no name that is
 * the same in every rank); a wildcard (MPI_ANY_SOURCE, MPI_ANY_TAG) counts at no Peer or no
 * Tag (its sender is known only at exit, from the status).
 *
 * Two registers, thread counters that requests of their own set at each MPI_Recv's entry
 * (TSET_ARG, docs/protocol.md), serve both the learning and the measuring:
 *   peer  0, then the source + 1 when the communicator is MPI_COMM_WORLD (two actions)
 *   tag   the tag + 1 (one action)
 * Learned: their values come with the samples, so each bucket shows the last receive's
 * channel (peer, tag); one seen is a new resource (generation) — a sample of the arguments,
 * as a PC sample is of the code: a channel used rarely may be seen late or never. A focus's
 * children are the channels seen that agree with its parts (no /Tag/7 under /Peer/rank1 when
 * rank 1 only sent on tag 42), along one chain (chain_step).
 * Measured: a request's predicates test the peer register (shared, DYN_LV_SHARED: one test
 * for "this peer on MPI_COMM_WORLD") and the tag argument, so that a channel costs two
 * actions on MPI_Recv's point (four at a Code focus, five or six for a peer and a tag): the
 * point has room for 31, shared by every MPI request of the rank.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live_int.h"
#include "util.h"

static const char *const recv_calls[] = { "MPI_Recv", NULL };
static const char *const world_sym = "ompi_mpi_comm_world";

enum { C_PEER, C_TAG };
#define TAG_ARG 4
#define PEER_ARG 3
#define COMM_ARG 5

/* lv_with_elf's callback: the value of the symbol f->name that the file defines. */
struct sym_find {
	const char *name;
	uint64_t value;
};

static void sym_fn(Elf *e, void *arg)
{
	struct sym_find *f = arg;

	f->value = lv_dynsym_value(e, f->name);
}

/* MPI_COMM_WORLD's handle in the process: where the dynamic linker found its symbol — the
 * executable first (a copy relocation puts it there), then the libraries. 0: not Open MPI. */
static uint64_t world_handle(const struct dyn_session *s)
{
	char file[4200];
	int i, pass;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < s->nmods; i++) {
			struct sym_find f = { world_sym, 0 };

			if ((pass == 0) != !strcmp(s->mods[i].path, s->exe))
				continue;
			dyn_module_file(s, (uint32_t)i, file, sizeof(file));
			if (lv_with_elf(file, sym_fn, &f) == 0 && f.value)
				return f.value + s->mods[i].bias;
		}
	return 0;
}

static int imports_recv(const struct lsrc *ls)
{
	uint32_t i;

	for (i = 0; ls->mpi_p2p[i]; i++)
		if (!strcmp(ls->mpi_p2p[i], recv_calls[0]))
			return 1;
	return 0;
}

#define REG_ACT(p, x) ((struct dyn_lact){ .when = SPROTO_AT_ENTRY, .prim = (p), .var = 0, \
					  .pred_var = -1, .pred_arg = -1, .value = (x) })

/* The request that keeps register c at every MPI_Recv. */
static int reg_request(struct lsrc *ls, int c)
{
	struct dyn_lspec sp = { .nvars = 1, .var = { DYN_LV_TCOUNTER } };
	struct dyn_lact a[2];
	uint32_t i, n = 0;
	char err[256];
	int id;

	if (c == C_PEER) {
		a[n++] = REG_ACT(SPROTO_TSET, 0);
		a[n] = REG_ACT(SPROTO_TSET_ARG, PEER_ARG);
		a[n].pred_arg = COMM_ARG;
		a[n].op = SPROTO_EQ;
		a[n++].k = (int64_t)ls->chan.world;
	} else {
		a[n++] = REG_ACT(SPROTO_TSET_ARG, TAG_ARG);
	}
	for (i = 0; i < ls->s->nprocs; i++)
		if (ls->s->procs[i].library && !ls->s->pinfo[i].ifunc &&
		    !strcmp(ls->s->procs[i].name, recv_calls[0])) {
			sp.pt = xrealloc(sp.pt, (sp.npt + 1) * sizeof(*sp.pt));
			sp.pt[sp.npt] = (struct dyn_lpoint){ .proc = i, .nact = n };
			memcpy(sp.pt[sp.npt++].act, a, n * sizeof(*a));
		}
	id = sp.npt ? dyn_live_add(ls->l, &sp, err, sizeof(err)) : -1;
	free(sp.pt);
	return id;
}

/* Made before any request of the search, so that the registers' actions come first on the
 * point (actions run in the order of the requests' ids: tool/dyn/live.h). */
void lv_chan_start(struct lsrc *ls)
{
	ls->chan.req[C_PEER] = ls->chan.req[C_TAG] = -1;
	if (!imports_recv(ls))
		return;
	ls->chan.world = world_handle(ls->s);
	if (ls->chan.world)
		ls->chan.req[C_PEER] = reg_request(ls, C_PEER);
	ls->chan.req[C_TAG] = reg_request(ls, C_TAG);
}

int64_t lv_chan_decode(int64_t recorded)
{
	int64_t v;

	if (!recorded)
		return -1;
	v = (int32_t)(uint32_t)((uint64_t)recorded - 1); /* an int: the low half */
	return v < 0 ? -1 : v;
}

/* A channel seen. */
static void add_seen(struct lsrc *ls, const struct lv_chan_seen *x)
{
	struct lv_chan *ch = &ls->chan;
	uint32_t i;

	if (x->peer < 0 && x->tag < 0 && !x->world)
		return;
	for (i = 0; i < ch->nseen; i++)
		if (ch->seen[i].peer == x->peer && ch->seen[i].tag == x->tag &&
		    ch->seen[i].world == x->world)
			return;
	ch->seen = xrealloc(ch->seen, (ch->nseen + 1) * sizeof(*ch->seen));
	ch->seen[ch->nseen++] = *x;
	ls->generation++;
}

/* Each step: the registers' values the samples brought (increases since the last step). */
void lv_chan_read(struct lsrc *ls)
{
	struct lv_chan *ch = &ls->chan;
	struct lv_chan_seen x;
	int c;

	if (ch->req[C_TAG] < 0)
		return;
	for (c = 0; c < LV_CHANS; c++)
		if (ch->req[c] >= 0)
			ch->val[c] += dyn_live_take(ls->l, ch->req[c]);
	x.world = ch->val[C_PEER] != 0;
	x.peer = lv_chan_decode(ch->val[C_PEER]);
	x.tag = lv_chan_decode(ch->val[C_TAG]);
	add_seen(ls, &x);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int agrees(const struct lv_chan_seen *x, const struct lv_chan_cond *cond, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if ((cond[i].reg && cond[i].op == SPROTO_GT && !x->world) ||
		    (cond[i].reg && cond[i].op == SPROTO_EQ && x->peer + 1 != cond[i].value) ||
		    (!cond[i].reg && x->tag != cond[i].value))
			return 0;
	return 1;
}

int lv_chan_used(struct lsrc *ls, const struct cs_focus *f)
{
	struct lv_chan_cond cond[LV_CHANS];
	uint32_t ncond, i;

	if (lv_chan_narrow(ls, f, cond, &ncond) != 0)
		return 0;
	if (!ncond)
		return 1;
	for (i = 0; i < ls->chan.nseen; i++)
		if (agrees(&ls->chan.seen[i], cond, ncond))
			return 1;
	return 0;
}

/*
 * The channels are one chain, Communicator -> Peer -> Tag, below the Code part's procedure
 * (or the whole program; not a module: the same receives as its procedure's, more requests):
 * every request of the rank's MPI metrics shares MPI_Recv's point (room for 31 actions), and
 * post mortem's lattice of every order would fill it with foci measuring the same receives.
 * A tag is refined from a peer, or from any focus under which no receive on MPI_COMM_WORLD
 * was seen (tags of other communicators).
 */
static int chain_step(struct lsrc *ls, const struct cs_focus *f, int h)
{
	const char *mod, *proc;
	char buf[4096];
	uint32_t i;

	if (f->part[h] || (f->part[H_CODE] && (lv_code_parts(f->part[H_CODE], buf, sizeof(buf),
							     &mod, &proc) != 0 || !proc)))
		return 0;
	if (h == H_COMM)
		return !f->part[H_PEER] && !f->part[H_TAG];
	if (h == H_PEER)
		return f->part[H_COMM] != NULL;
	if (f->part[H_PEER])
		return 1;
	if (f->part[H_COMM])
		return 0;
	for (i = 0; i < ls->chan.nseen; i++)
		if (ls->chan.seen[i].world)
			return 0;
	return 1;
}

uint32_t lv_chan_children(struct lsrc *ls, const struct cs_focus *f, int h, char ***out)
{
	struct lv_chan *ch = &ls->chan;
	struct lv_chan_cond cond[LV_CHANS];
	int64_t *v = NULL;
	uint32_t n = 0, nv = 0, ncond, i;
	char name[64];

	if (!chain_step(ls, f, h) || lv_chan_narrow(ls, f, cond, &ncond) != 0)
		return 0;
	v = xmalloc((ch->nseen + 1) * sizeof(int64_t));
	for (i = 0; i < ch->nseen; i++) {
		int64_t x = h == H_TAG ? ch->seen[i].tag : h == H_PEER ? ch->seen[i].peer
			    : ch->seen[i].world ? 0 : -1;

		if (x >= 0 && agrees(&ch->seen[i], cond, ncond))
			v[nv++] = x;
	}
	qsort(v, nv, sizeof(int64_t), cmp_i64);
	for (i = 0; i < nv; i++) {
		if (h == H_PEER)
			snprintf(name, sizeof(name), "/Peer/rank%lld", (long long)v[i]);
		else if (h == H_TAG)
			snprintf(name, sizeof(name), "/Tag/%lld", (long long)v[i]);
		else
			snprintf(name, sizeof(name), "/Communicator/world");
		lv_push_name(out, &n, name);
	}
	free(v);
	return n;
}

/* A non-negative int after prefix (the whole rest of s): 0 with *v, else -1. */
static int int_after(const char *s, const char *prefix, int64_t *v)
{
	size_t k = strlen(prefix);
	char *end;
	long long x;

	if (strncmp(s, prefix, k) || s[k] < '0' || s[k] > '9')
		return -1;
	x = strtoll(s + k, &end, 10);
	if (*end || x > INT32_MAX)
		return -1;
	*v = x;
	return 0;
}

/* A Peer is of MPI_COMM_WORLD: the peer register says both (with a Communicator part, the
 * same condition); a Communicator alone is the register above 0; a Tag is the argument. */
int lv_chan_narrow(const struct lsrc *ls, const struct cs_focus *f, struct lv_chan_cond *cond,
		   uint32_t *n)
{
	const char *co = f->part[H_COMM], *pe = f->part[H_PEER], *tg = f->part[H_TAG];
	int64_t v;

	*n = 0;
	if ((co || pe) && (ls->chan.req[C_PEER] < 0 || (co && strcmp(co, "/Communicator/world"))))
		return -1;
	if ((tg && ls->chan.req[C_TAG] < 0) || (co && tg && !pe))
		return -1; /* not in the chain (chain_step) */
	if (pe) {
		if (int_after(pe, "/Peer/rank", &v) != 0)
			return -1;
		cond[(*n)++] = (struct lv_chan_cond){ 1, -1, SPROTO_EQ, v + 1 };
	} else if (co) {
		cond[(*n)++] = (struct lv_chan_cond){ 1, -1, SPROTO_GT, 0 };
	}
	if (tg) {
		if (int_after(tg, "/Tag/", &v) != 0)
			return -1;
		cond[(*n)++] = (struct lv_chan_cond){ 0, TAG_ARG, SPROTO_EQ, v };
	}
	return 0;
}

const char *const *lv_chan_calls(void)
{
	return recv_calls;
}

int lv_chan_reg(const struct lsrc *ls)
{
	return ls->chan.req[C_PEER];
}

void lv_chan_free(struct lsrc *ls)
{
	free(ls->chan.seen);
}
