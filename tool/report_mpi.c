/* SPDX-License-Identifier: MIT */
/*
 * The MPI sections of `sonde report` (docs/mpi.md): per rank the measured, locally compensated
 * and parallel-compensated times; per routine the time across ranks (min / mean / max); the
 * point-to-point messages per peer; the functions across ranks. Nothing when the run had no MPI.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_mpi.h"
#include "report.h"
#include "term.h"
#include "util.h"

struct spread {
	double min, max, sum;
	uint32_t n;
};

static void spread_add(struct spread *s, double v)
{
	if (!s->n || v < s->min)
		s->min = v;
	if (!s->n || v > s->max)
		s->max = v;
	s->sum += v;
	s->n++;
}

static double spread_mean(const struct spread *s)
{
	return s->n ? s->sum / s->n : 0;
}

static const struct term_col rank_cols[] = {
	{ "rank", 4, 0, 0, 0 },		  { "pid", 8, 1, 0, 3 },      { "T_m", 12, 1, 0, 0 },
	{ "local(c)", 12, 1, 0, 0 },	  { "parallel(c)", 12, 1, 0, 0 }, { "MPI time", 11, 1, 0, 0 },
	{ "MPI(c)", 11, 1, 0, 4 },	  { "wildcard", 9, 1, 0, 2 }, { "reordered", 9, 1, 0, 1 },
};

static void ranks_text(FILE *out, const struct model_mpi *mm)
{
	struct term_table t;
	char b[32];
	uint32_t i, r;

	term_table_init(&t, out, "  ", rank_cols, 9);
	term_table_head(&t);
	for (i = 0; i < mm->nranks; i++) {
		const struct m_mpi_rank *k = &mm->ranks[i];
		double tm = 0, tc = 0;

		for (r = SPROF_MPI_SEND; r < SPROF_MPI_ROUTINES; r++) {
			tm += (double)k->calls[r].ns;
			tc += (double)k->calls[r].comp_ns;
		}
		term_cell(&t, "%u", k->comp.rank);
		term_cell(&t, "%u", k->pid);
		term_cell(&t, "%s", fmt_time(b, sizeof(b), k->t_m));
		term_cell(&t, "%s", fmt_time(b, sizeof(b), k->t_local));
		term_cell(&t, "%s", fmt_time(b, sizeof(b), k->t_par));
		term_cell(&t, "%s", fmt_time(b, sizeof(b), tm));
		term_cell(&t, "%s", fmt_time(b, sizeof(b), tc));
		term_cell(&t, "%llu", (unsigned long long)k->comp.wildcard);
		term_cell(&t, "%llu", (unsigned long long)k->comp.reorders);
		term_row(&t);
	}
	term_text(out, "  (T_m: end of MPI_Init to start of MPI_Finalize; local(c) minus the rank's "
		       "own overhead;\n   parallel(c) minus its delay, the overhead of others it "
		       "waited for included)");
}

static const struct term_col routine_cols[] = {
	{ "routine", 25, 0, TC_NAME, 0 }, { "calls", 9, 1, 0, 0 },	 { "min", 12, 1, 0, 3 },
	{ "mean", 12, 1, 0, 0 },	  { "max", 12, 1, 0, 4 },	 { "mean(c)", 12, 1, 0, 0 },
	{ "bytes sent", 12, 1, 0, 2 },	  { "bytes recv", 12, 1, 0, 1 },
};

static void routines_text(FILE *out, const struct model_mpi *mm)
{
	struct term_table t;
	char b[32];
	uint32_t r, i;

	term_text(out, "\nMPI routines (time per rank: min / mean / max over the ranks that called "
		       "it; mean(c) parallel-compensated)");
	term_table_init(&t, out, "  ", routine_cols, 8);
	term_table_head(&t);
	for (r = 0; r < SPROF_MPI_ROUTINES; r++) {
		struct spread s = { 0 }, sc = { 0 };
		uint64_t calls = 0, sent = 0, recvd = 0;

		for (i = 0; i < mm->nranks; i++) {
			const struct sprof_mpi_call *k = &mm->ranks[i].calls[r];

			if (!k->calls)
				continue;
			calls += k->calls;
			sent += k->bytes_sent;
			recvd += k->bytes_recv;
			spread_add(&s, (double)k->ns);
			spread_add(&sc, (double)k->comp_ns);
		}
		if (!calls)
			continue;
		term_cell(&t, "%s", mpi_routine_names[r]);
		term_cell(&t, "%llu", (unsigned long long)calls);
		term_cell(&t, "%s", fmt_time(b, sizeof(b), s.min));
		term_cell(&t, "%s", fmt_time(b, sizeof(b), spread_mean(&s)));
		term_cell(&t, "%s", fmt_time(b, sizeof(b), s.max));
		term_cell(&t, "%s", fmt_time(b, sizeof(b), spread_mean(&sc)));
		term_cell(&t, "%llu", (unsigned long long)sent);
		term_cell(&t, "%llu", (unsigned long long)recvd);
		term_row(&t);
	}
}

static const struct term_col peer_cols[] = {
	{ "rank", 4, 0, 0, 0 }, { "dir", 4, 1, 0, 0 },	     { "peer", 6, 1, 0, 0 },
	{ "comm", 6, 1, 0, 2 }, { "tag", 7, 1, 0, 1 },	     { "messages", 12, 1, 0, 0 },
	{ "bytes", 12, 1, 0, 0 },
};

static void peers_text(FILE *out, const struct model_mpi *mm, int limit)
{
	struct term_table t;
	uint32_t i, j;
	int shown = 0;

	term_text(out, "\nMessages per peer (point-to-point; comm 0 = MPI_COMM_WORLD, ranks in it)");
	term_table_init(&t, out, "  ", peer_cols, 7);
	term_table_head(&t);
	for (i = 0; i < mm->nranks; i++)
		for (j = 0; j < mm->ranks[i].npeers; j++) {
			const struct sprof_mpi_peer *p = &mm->ranks[i].peers[j];

			if (limit && shown++ >= limit) {
				term_text(out, "  ... (--limit)");
				return;
			}
			term_cell(&t, "%u", mm->ranks[i].comp.rank);
			term_cell(&t, "%s", p->dir ? "from" : "to");
			if (p->flags & SPROF_MPI_PEER_OVERFLOW) { /* the table was full */
				term_cell(&t, "others");
				term_cell(&t, "-");
				term_cell(&t, "-");
			} else {
				term_cell(&t, "%d", p->peer);
				term_cell(&t, "%u", p->comm);
				term_cell(&t, "%d", p->tag);
			}
			term_cell(&t, "%llu", (unsigned long long)p->messages);
			term_cell(&t, "%llu", (unsigned long long)p->bytes);
			term_row(&t);
		}
}

static const struct term_col across_cols[] = {
	{ "min", 12, 0, 0, 2 }, { "mean", 12, 1, 0, 0 },	       { "max", 12, 1, 0, 0 },
	{ "imbalance", 9, 1, 0, 1 }, { "function", 24, 2, TC_NAME, 0 },
};

/* One model per rank, for the functions' spread across ranks. */
struct per_rank {
	struct model *m;
	uint32_t n;
};

static void functions_text(FILE *out, const struct model *all, int limit)
{
	const struct model_mpi *mm = all->mpi;
	struct model *ranks = xcalloc(mm->nranks, sizeof(*ranks));
	uint32_t *idx = report_order(all, SORT_EXCL), i, j, k, loaded = 0;
	struct term_table t;
	char a[32];
	int shown = 0;

	for (i = 0; i < mm->nranks; i++) {
		struct model_filter f = { mm->ranks[i].pid, -1 };

		if (model_load(&ranks[loaded], all->dir, &f) == 0)
			loaded++;
	}
	term_text(out, "\nFunctions across ranks (exclusive time (c) per rank: min / mean / max; "
		       "imbalance = max / mean)");
	term_table_init(&t, out, "  ", across_cols, 5);
	term_table_head(&t);
	for (i = 0; i < all->nfuncs && (!limit || shown < limit); i++) {
		const struct m_func *fn = &all->funcs[idx[i]];
		struct spread s = { 0 };

		if (!fn->calls)
			continue;
		for (j = 0; j < loaded; j++) {
			double v = 0;

			for (k = 0; k < ranks[j].nfuncs; k++)
				if (!strcmp(ranks[j].funcs[k].resource, fn->resource))
					v = ranks[j].funcs[k].excl_c;
			spread_add(&s, v);
		}
		term_cell(&t, "%s", fmt_time(a, sizeof(a), s.min));
		term_cell(&t, "%s", fmt_time(a, sizeof(a), spread_mean(&s)));
		term_cell(&t, "%s", fmt_time(a, sizeof(a), s.max));
		term_cell(&t, "%.2f", spread_mean(&s) > 0 ? s.max / spread_mean(&s) : 0.0);
		term_cell(&t, "%s", fn->name);
		term_row(&t);
		shown++;
	}
	for (j = 0; j < loaded; j++)
		model_free(&ranks[j]);
	free(ranks);
	free(idx);
}

static int has_funcs(const struct model *m)
{
	uint32_t i;

	for (i = 0; i < m->nfuncs; i++)
		if (m->funcs[i].calls)
			return 1;
	return 0;
}

void report_mpi_text(FILE *out, const struct model *m, int limit)
{
	const struct model_mpi *mm = m->mpi;
	char a[32], b[32];

	if (!mm || !mm->nranks)
		return;
	term_text(out, "\nMPI: %u of %u ranks here; %s", mm->nranks, mm->ranks[0].comp.size,
		  mm->ranks[0].comp.flags & SPROF_MPI_PIGGYBACK
			  ? "parallel compensation (delays piggybacked on every message)"
			  : "no parallel compensation (sonde run --mpi-comp): parallel(c) = local(c)");
	term_text(out, "  wrapper cost (in vitro): %s per call, %s more with piggybacking",
		  fmt_time(a, sizeof(a), mm->ranks[0].comp.o_call_ns),
		  fmt_time(b, sizeof(b), mm->ranks[0].comp.o_pb_ns));
	ranks_text(out, mm);
	routines_text(out, mm);
	peers_text(out, mm, limit);
	if (mm->nranks > 1 && has_funcs(m))
		functions_text(out, m, limit);
}

static void json_i(FILE *out, const char *k, long long v, int comma)
{
	fprintf(out, "%s\"%s\":%lld", comma ? "," : "", k, v);
}

static void json_rank(FILE *out, const struct m_mpi_rank *k)
{
	uint32_t r, j, n = 0;

	json_i(out, "rank", k->comp.rank, 0);
	json_i(out, "pid", k->pid, 1);
	json_i(out, "size", k->comp.size, 1);
	fprintf(out, ",\"piggyback\":%s", k->comp.flags & SPROF_MPI_PIGGYBACK ? "true" : "false");
	fprintf(out, ",\"finalized\":%s", k->comp.flags & SPROF_MPI_FINALIZED ? "true" : "false");
	json_i(out, "t_m_ns", llround(k->t_m), 1);
	json_i(out, "t_local_ns", llround(k->t_local), 1);
	json_i(out, "t_par_ns", llround(k->t_par), 1);
	json_i(out, "overhead_ns", k->comp.o_fin_ns - k->comp.o_init_ns, 1);
	json_i(out, "delay_ns", k->comp.x_fin_ns - k->comp.x_init_ns, 1);
	json_i(out, "extra_ns", (long long)k->comp.extra_ns, 1);
	json_i(out, "calls", (long long)k->comp.calls, 1);
	json_i(out, "waits", (long long)k->comp.waits, 1);
	json_i(out, "wait_ns", (long long)k->comp.wait_ns, 1);
	json_i(out, "wait_c_ns", k->comp.wait_c_ns, 1);
	json_i(out, "wildcard", (long long)k->comp.wildcard, 1);
	json_i(out, "reorders", (long long)k->comp.reorders, 1);
	fprintf(out, ",\"o_call_ns\":%.3f,\"o_pb_ns\":%.3f,\"routines\":[", k->comp.o_call_ns,
		k->comp.o_pb_ns);
	for (r = 0; r < SPROF_MPI_ROUTINES; r++) {
		const struct sprof_mpi_call *c = &k->calls[r];

		if (!c->calls)
			continue;
		fprintf(out, "%s{\"name\":\"%s\"", n++ ? "," : "", mpi_routine_names[r]);
		json_i(out, "calls", (long long)c->calls, 1);
		json_i(out, "ns", (long long)c->ns, 1);
		json_i(out, "comp_ns", c->comp_ns, 1);
		json_i(out, "max_ns", (long long)c->max_ns, 1);
		json_i(out, "bytes_sent", (long long)c->bytes_sent, 1);
		json_i(out, "bytes_recv", (long long)c->bytes_recv, 1);
		fputc('}', out);
	}
	fprintf(out, "],\"peers\":[");
	for (j = 0; j < k->npeers; j++) {
		const struct sprof_mpi_peer *p = &k->peers[j];

		fprintf(out, "%s{\"dir\":\"%s\"", j ? "," : "", p->dir ? "received" : "sent");
		json_i(out, "peer", p->peer, 1);
		json_i(out, "comm", p->comm, 1);
		json_i(out, "tag", p->tag, 1);
		json_i(out, "messages", (long long)p->messages, 1);
		json_i(out, "bytes", (long long)p->bytes, 1);
		fprintf(out, ",\"overflow\":%s}", p->flags ? "true" : "false");
	}
	fputs("]}", out);
}

void report_mpi_json(FILE *out, const struct model *m)
{
	uint32_t i;

	if (!m->mpi)
		return;
	fprintf(out, ",\"mpi\":{\"ranks\":[");
	for (i = 0; i < m->mpi->nranks; i++) {
		fputs(i ? ",{" : "{", out);
		json_rank(out, &m->mpi->ranks[i]);
	}
	fputs("]}", out);
}
