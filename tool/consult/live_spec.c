/* SPDX-License-Identifier: MIT */
/*
 * The instrumentation of a (metric, focus) for the live source (live_int.h): the actions of
 * dynamic instrumentation (tool/dyn/live.h) at procedures' entries and exits that make its
 * value — CPU timers, wall timers around the blocking calls, counters of calls, the bytes the
 * data calls return — narrowed to a Code focus by a thread flag, to objects and files by the
 * calls' first argument.
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

/* ---- requests ---- */

static void add_procs(struct dyn_lspec *sp, const struct dyn_session *s,
		      const char *const *names, const struct dyn_lact *act, uint32_t nact)
{
	uint32_t i, k;

	for (i = 0; i < s->nprocs; i++) {
		if (!s->procs[i].library || s->pinfo[i].ifunc)
			continue;
		for (k = 0; names[k] && strcmp(names[k], s->procs[i].name); k++)
			;
		if (!names[k])
			continue;
		sp->pt = xrealloc(sp->pt, (sp->npt + 1) * sizeof(*sp->pt));
		sp->pt[sp->npt] = (struct dyn_lpoint){ .proc = i, .nact = nact };
		memcpy(sp->pt[sp->npt++].act, act, nact * sizeof(*act));
	}
}

/* Actions at the focus's procedures: both forms of a timer, the value counter, or the flag. */
static void add_focus(struct dyn_lspec *sp, const struct dyn_session *s, const char *mod,
		      const char *proc, const struct dyn_lact *act, uint32_t nact)
{
	uint32_t i;

	for (i = 0; i < s->nprocs; i++) {
		if (!lv_in_code(s, i, mod, proc))
			continue;
		sp->pt = xrealloc(sp->pt, (sp->npt + 1) * sizeof(*sp->pt));
		sp->pt[sp->npt] = (struct dyn_lpoint){ .proc = i, .nact = nact };
		memcpy(sp->pt[sp->npt++].act, act, nact * sizeof(*act));
	}
}

/* An action; guarded by thread counter pv > 0 when pv >= 0. */
#define ACT(w, p, v, pv, x) ((struct dyn_lact){ .when = (w), .prim = (p), .var = (v), \
						.pred_var = (pv), .pred_arg = -1, .op = SPROTO_GT, \
						.value = (x) })
/* An action guarded by the first argument == c, or by thread counter pv >= c. */
#define ACT_ARG(w, p, v, x, c) ((struct dyn_lact){ .when = (w), .prim = (p), .var = (v), \
						   .pred_var = -1, .pred_arg = 0, .op = SPROTO_EQ, \
						   .value = (x), .k = (c) })
#define ACT_GE(w, p, v, pv, x, c) ((struct dyn_lact){ .when = (w), .prim = (p), .var = (v), \
						      .pred_var = (pv), .pred_arg = -1, \
						      .op = SPROTO_GE, .value = (x), .k = (c) })

/*
 * Timed calls (sync or I/O) or their count. Narrowed to a Code focus by a flag (var 1, raised
 * at its procedures' entries, lowered at their exits); to objects by their first argument
 * (an object's address, a file's descriptors). Both (one predicate per action): the flag is
 * lifted by OBJ while the argument is the object's, the timer starts (or the count adds) when
 * it is above OBJ, then it is lowered again — four actions a call.
 */
#define OBJ (INT64_C(1) << 40)
static void calls_spec(struct dyn_lspec *sp, const struct dyn_session *s, const char *mod,
		       const char *proc, const struct narrow *nw, int count, int cpu)
{
	int8_t flag = mod ? 1 : -1;
	struct dyn_lact a[DYN_LREQ_ACTS];
	uint32_t k = 0, i;

	if (nw->on && nw->nval && !mod && !count) { /* one object: its calls, timed */
		sp->nvars = 1;
		sp->var[0] = DYN_LV_WALL;
		for (i = 0; i < nw->nval && k < 4; i++)
			a[k++] = ACT_ARG(SPROTO_AT_ENTRY, SPROTO_START_WALL, 0, 0, nw->val[i]);
		a[k++] = ACT(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 0, -1, 0);
		add_procs(sp, s, nw->timed, a, k);
		return;
	}
	if (nw->on && nw->nval) { /* an object's calls counted, or inside a Code focus */
		sp->nvars = mod ? 2 : 1;
		sp->var[0] = count ? DYN_LV_TCOUNTER : DYN_LV_WALL;
		sp->var[1] = DYN_LV_TCOUNTER;
		if (!mod) {
			for (i = 0; i < nw->nval && k < 4; i++)
				a[k++] = ACT_ARG(SPROTO_AT_ENTRY, SPROTO_TADD, 0, 1, nw->val[i]);
		} else {
			/* the Code flag (var 1, its procedures' entries) lifted above OBJ for the
			 * moment of the test when the argument is the object's */
			for (i = 0; i < nw->nval && i < 2; i++)
				a[k++] = ACT_ARG(SPROTO_AT_ENTRY, SPROTO_TADD, 1, OBJ, nw->val[i]);
			a[k++] = ACT_GE(SPROTO_AT_ENTRY, count ? SPROTO_TADD : SPROTO_START_WALL, 0, 1,
					count ? 1 : 0, OBJ + 1);
			for (i = 0; i < nw->nval && i < 2; i++)
				a[k++] = ACT_ARG(SPROTO_AT_ENTRY, SPROTO_TSUB, 1, OBJ, nw->val[i]);
			if (!count) /* a stop whose start was not seen does nothing */
				a[k++] = ACT(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 0, -1, 0);
		}
		add_procs(sp, s, nw->timed, a, k);
		if (count && nw->more)
			add_procs(sp, s, nw->more, a, k);
		if (mod) {
			a[0] = ACT(SPROTO_AT_ENTRY, SPROTO_TADD, 1, -1, 1);
			a[1] = ACT(SPROTO_AT_EXIT, SPROTO_TSUB, 1, 1, 1);
			add_focus(sp, s, mod, proc, a, 2);
		}
		return;
	}

	sp->nvars = mod ? 2 : 1;
	sp->var[0] = count ? DYN_LV_TCOUNTER : cpu ? DYN_LV_CPU : DYN_LV_WALL;
	sp->var[1] = DYN_LV_TCOUNTER;
	if (count)
		a[0] = ACT(SPROTO_AT_ENTRY, SPROTO_TADD, 0, flag, 1);
	else {
		a[0] = ACT(SPROTO_AT_ENTRY, cpu ? SPROTO_START_CPU : SPROTO_START_WALL, 0, flag, 0);
		a[1] = ACT(SPROTO_AT_EXIT, cpu ? SPROTO_STOP_CPU : SPROTO_STOP_WALL, 0, flag, 0);
	}
	add_procs(sp, s, nw->timed, a, count ? 1 : 2);
	if (count && nw->more)
		add_procs(sp, s, nw->more, a, 1);
	if (mod) {
		a[0] = ACT(SPROTO_AT_ENTRY, SPROTO_TADD, 1, -1, 1);
		a[1] = ACT(SPROTO_AT_EXIT, SPROTO_TSUB, 1, 1, 1); /* never below 0: a call entered
								     * before the request */
		add_focus(sp, s, mod, proc, a, 2);
	}
}

/*
 * io_bytes: the return value of the data calls added at their exits (TADD_RET: a positive
 * return only). Narrowed to a Code focus by its flag (var 1); to a file by a flag of the call
 * (var 1) raised at entry when the descriptor is the file's, tested and lowered at exit. Not
 * both (a file inside a procedure): -1.
 */
static int bytes_spec(struct dyn_lspec *sp, const struct dyn_session *s, const char *mod,
		      const char *proc, const struct narrow *nw)
{
	struct dyn_lact a[DYN_LREQ_ACTS];
	uint32_t k = 0, i;

	if (nw->on && mod)
		return -1;
	sp->nvars = mod || nw->on ? 2 : 1;
	sp->var[0] = DYN_LV_TCOUNTER;
	sp->var[1] = DYN_LV_TCOUNTER;
	for (i = 0; nw->on && i < nw->nval && k < 4; i++)
		a[k++] = ACT_ARG(SPROTO_AT_ENTRY, SPROTO_TADD, 1, 1, nw->val[i]);
	a[k++] = ACT(SPROTO_AT_EXIT, SPROTO_TADD_RET, 0, mod || nw->on ? 1 : -1, 0);
	if (nw->on)
		a[k++] = ACT(SPROTO_AT_EXIT, SPROTO_TSUB, 1, 1, 1);
	add_procs(sp, s, lv_io_data_calls, a, k);
	if (mod) {
		a[0] = ACT(SPROTO_AT_ENTRY, SPROTO_TADD, 1, -1, 1);
		a[1] = ACT(SPROTO_AT_EXIT, SPROTO_TSUB, 1, 1, 1);
		add_focus(sp, s, mod, proc, a, 2);
	}
	return 0;
}

/* Action a guarded by a channel condition (live_chan.c): the tag argument, or the shared peer
 * register (var reg). */
static struct dyn_lact chan_guard(struct dyn_lact a, const struct lv_chan_cond *c, int8_t reg)
{
	a.pred_var = c->reg ? reg : -1;
	a.pred_arg = c->reg ? -1 : c->arg;
	a.op = c->op;
	a.k = c->value;
	return a;
}

/*
 * mpi_p2p_time at a Communicator, Peer or Tag focus: a wall timer around the receives of the
 * channel (live_chan.c), in as few actions as can be on MPI_Recv's point (room for 31, shared
 * by every MPI request of the rank). Two for one condition, or a peer and a tag (START_WALL_IF:
 * the predicate one, the second guard the other — the peer register, or the Code flag); four
 * for a peer and a tag at a Code focus (the tag lifts the flag by OBJ for the start's
 * predicate, then lowers it, as calls_spec does). The last var is the peer register.
 */
static void chan_spec(struct dyn_lspec *sp, struct lsrc *ls, const char *mod, const char *proc,
		      const struct lv_chan_cond *cond, uint32_t ncond)
{
	struct dyn_lact a[DYN_LREQ_ACTS];
	uint32_t k = 0, i;
	int8_t reg;

	sp->var[0] = DYN_LV_WALL;
	sp->nvars = 1;
	if (mod) /* var 1: the Code flag */
		sp->var[sp->nvars++] = DYN_LV_TCOUNTER;
	reg = (int8_t)sp->nvars;
	for (i = 0; i < ncond; i++)
		if (cond[i].reg && reg == (int8_t)sp->nvars) {
			sp->share[sp->nvars] = lv_chan_reg(ls);
			sp->var[sp->nvars++] = DYN_LV_SHARED;
		}
	if (ncond == 1 && !mod) {
		a[k++] = chan_guard(ACT(SPROTO_AT_ENTRY, SPROTO_START_WALL, 0, -1, 0), &cond[0], reg);
	} else if (ncond == 1) {
		a[k++] = chan_guard(ACT(SPROTO_AT_ENTRY, SPROTO_START_WALL_IF, 0, -1,
					DYN_GUARD(1, SPROTO_GT, 0)), &cond[0], reg);
	} else if (!mod) { /* cond[0] is the peer register's (lv_chan_narrow), cond[1] the tag */
		a[k++] = chan_guard(ACT(SPROTO_AT_ENTRY, SPROTO_START_WALL_IF, 0, -1,
					DYN_GUARD(reg, cond[0].op, cond[0].value)), &cond[1], reg);
	} else {
		a[k++] = chan_guard(ACT(SPROTO_AT_ENTRY, SPROTO_TADD, 1, -1, OBJ), &cond[1], reg);
		a[k] = ACT_GE(SPROTO_AT_ENTRY, SPROTO_START_WALL_IF, 0, 1, 0, OBJ + 1);
		a[k++].value = DYN_GUARD(reg, cond[0].op, cond[0].value);
		a[k++] = chan_guard(ACT(SPROTO_AT_ENTRY, SPROTO_TSUB, 1, -1, OBJ), &cond[1], reg);
	}
	a[k++] = ACT(SPROTO_AT_EXIT, SPROTO_STOP_WALL, 0, -1, 0); /* no start seen: nothing */
	add_procs(sp, ls->s, lv_chan_calls(), a, k);
	if (mod) {
		a[0] = ACT(SPROTO_AT_ENTRY, SPROTO_TADD, 1, -1, 1);
		a[1] = ACT(SPROTO_AT_EXIT, SPROTO_TSUB, 1, 1, 1);
		add_focus(sp, ls->s, mod, proc, a, 2);
	}
}

/* One timer (DYN_LV_CPU or DYN_LV_WALL) around the focus's procedures, inclusive. */
static void timer_spec(struct dyn_lspec *sp, const struct dyn_session *s, const char *mod,
		       const char *proc, int var)
{
	int cpu = var == DYN_LV_CPU;
	struct dyn_lact a[2] = {
		ACT(SPROTO_AT_ENTRY, cpu ? SPROTO_START_CPU : SPROTO_START_WALL, 0, -1, 0),
		ACT(SPROTO_AT_EXIT, cpu ? SPROTO_STOP_CPU : SPROTO_STOP_WALL, 0, -1, 0),
	};

	sp->nvars = 1;
	sp->var[0] = var;
	add_focus(sp, s, mod, proc, a, 2);
}

/* A Peer is of MPI_COMM_WORLD: with one, the Communicator part names the same receives (one
 * request for both). */
static void chan_key(const struct cs_focus *f, char *fs, size_t cap)
{
	struct cs_focus g = *f;

	if (g.part[H_PEER])
		g.part[H_COMM] = NULL;
	cs_focus_str(fs, cap, &g);
}

/* The instrumentation of (metric, focus): 0 with sp filled and key named, -1 when none. */
int lv_dyn_spec(struct lsrc *ls, enum lm m, const struct cs_focus *f, struct dyn_lspec *sp,
		    char *key, size_t cap)
{
	const char *code = f->part[H_CODE], *mod = NULL, *proc = NULL;
	char buf[4096], fs[8192];
	struct lv_chan_cond cond[LV_CHANS];
	struct dyn_lact a[2];
	struct narrow nw;
	uint32_t ncond;

	memset(sp, 0, sizeof(*sp));
	sp->tid = lv_thread_of(f);
	if (code && lv_code_parts(code, buf, sizeof(buf), &mod, &proc) != 0)
		return -1;
	cs_focus_str(fs, sizeof(fs), f);
	switch (m) {
	case LM_CPU:
		if (!code)
			sp->proc_cpu = 1;
		else
			timer_spec(sp, ls->s, mod, proc, DYN_LV_CPU);
		break;
	case LM_CALLS:
		if (!code)
			return -1;
		sp->nvars = 1;
		sp->var[0] = DYN_LV_TCOUNTER;
		a[0] = ACT(SPROTO_AT_ENTRY, SPROTO_TADD, 0, -1, 1);
		add_focus(sp, ls->s, mod, proc, a, 1);
		break;
	case LM_SYNC:
	case LM_SYNC_OPS:
	case LM_IO:
	case LM_IO_OPS:
		if (lv_narrow_of(ls, m, f, &nw) != 0)
			return -1;
		calls_spec(sp, ls->s, mod, proc, &nw, m == LM_SYNC_OPS || m == LM_IO_OPS, 0);
		break;
	case LM_MPI_P2P:
	case LM_MPI_COLL:
	case LM_MPI:
	case LM_MPI_CPU:
		if (f->part[H_SYNC] || f->part[H_FILES] || lv_chan_narrow(ls, f, cond, &ncond) != 0 ||
		    (ncond && m != LM_MPI_P2P))
			return -1;
		if (ncond) {
			chan_spec(sp, ls, mod, proc, cond, ncond);
			chan_key(f, fs, sizeof(fs));
			break;
		}
		/* a program that imports no collective: mpi_time is the receives' time, one
		 * request for both (MPI_Recv's point has room for 31 actions of them all) */
		if (m == LM_MPI && !ls->mpi_coll[0])
			m = LM_MPI_P2P;
		nw = (struct narrow){ .timed = m == LM_MPI_P2P ? ls->mpi_p2p
					     : m == LM_MPI_COLL ? ls->mpi_coll : ls->mpi_all };
		calls_spec(sp, ls->s, mod, proc, &nw, 0, m == LM_MPI_CPU);
		break;
	case LM_WALL: /* inclusive wall time in the focus's procedures (live_mpi.c) */
		if (!code)
			return -1;
		timer_spec(sp, ls->s, mod, proc, DYN_LV_WALL);
		break;
	case LM_IO_BYTES:
		if (lv_narrow_of(ls, LM_IO, f, &nw) != 0 || bytes_spec(sp, ls->s, mod, proc, &nw) != 0)
			return -1;
		break;
	default:
		return -1;
	}
	if (!sp->proc_cpu && !sp->npt) {
		free(sp->pt);
		return -1;
	}
	snprintf(key, cap, "%d %s", (int)m, fs);
	return 0;
}
