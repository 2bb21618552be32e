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

static void ranks_text(FILE *out, const struct model_mpi *mm)
{
	char a[32], b[32], c[32], d[32], e[32];
	uint32_t i, r;

	fprintf(out, "  rank      pid          T_m     local(c)  parallel(c)    MPI time"
		     "      MPI(c)  wildcard reordered\n");
	for (i = 0; i < mm->nranks; i++) {
		const struct m_mpi_rank *k = &mm->ranks[i];
		double t = 0, tc = 0;

		for (r = SPROF_MPI_SEND; r < SPROF_MPI_ROUTINES; r++) {
			t += (double)k->calls[r].ns;
			tc += (double)k->calls[r].comp_ns;
		}
		fprintf(out, "  %4u %8u %12s %12s %12s %11s %11s %9llu %9llu\n", k->comp.rank,
			k->pid, fmt_time(a, sizeof(a), k->t_m), fmt_time(b, sizeof(b), k->t_local),
			fmt_time(c, sizeof(c), k->t_par), fmt_time(d, sizeof(d), t),
			fmt_time(e, sizeof(e), tc), (unsigned long long)k->comp.wildcard,
			(unsigned long long)k->comp.reorders);
	}
	fprintf(out, "  (T_m: end of MPI_Init to start of MPI_Finalize; local(c) minus the rank's own "
		     "overhead;\n   parallel(c) minus its delay, the overhead of others it waited "
		     "for included)\n");
}

static void routines_text(FILE *out, const struct model_mpi *mm)
{
	char a[32], b[32], c[32], d[32];
	uint32_t r, i;

	fprintf(out, "\nMPI routines (time per rank: min / mean / max over the ranks that called "
		     "it; mean(c) parallel-compensated)\n"
		     "  routine                    calls          min         mean          max"
		     "      mean(c)   bytes sent   bytes recv\n");
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
		fprintf(out, "  %-22s %9llu %12s %12s %12s %12s %12llu %12llu\n",
			mpi_routine_names[r], (unsigned long long)calls,
			fmt_time(a, sizeof(a), s.min), fmt_time(b, sizeof(b), spread_mean(&s)),
			fmt_time(c, sizeof(c), s.max), fmt_time(d, sizeof(d), spread_mean(&sc)),
			(unsigned long long)sent, (unsigned long long)recvd);
	}
}

static void peers_text(FILE *out, const struct model_mpi *mm, int limit)
{
	uint32_t i, j;
	int shown = 0;

	fprintf(out, "\nMessages per peer (point-to-point; comm 0 = MPI_COMM_WORLD, ranks in it)\n"
		     "  rank  dir   peer   comm     tag     messages        bytes\n");
	for (i = 0; i < mm->nranks; i++)
		for (j = 0; j < mm->ranks[i].npeers; j++) {
			const struct sprof_mpi_peer *p = &mm->ranks[i].peers[j];

			if (limit && shown++ >= limit) {
				fprintf(out, "  ... (--limit)\n");
				return;
			}
			if (p->flags & SPROF_MPI_PEER_OVERFLOW)
				fprintf(out, "  %4u %4s  (others: the table was full) %12llu %12llu\n",
					mm->ranks[i].comp.rank, p->dir ? "from" : "to",
					(unsigned long long)p->messages,
					(unsigned long long)p->bytes);
			else
				fprintf(out, "  %4u %4s %6d %6u %7d %12llu %12llu\n",
					mm->ranks[i].comp.rank, p->dir ? "from" : "to", p->peer,
					p->comm, p->tag, (unsigned long long)p->messages,
					(unsigned long long)p->bytes);
		}
}

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
	char a[32], b[32], c[32];
	int shown = 0;

	for (i = 0; i < mm->nranks; i++) {
		struct model_filter f = { mm->ranks[i].pid, -1 };

		if (model_load(&ranks[loaded], all->dir, &f) == 0)
			loaded++;
	}
	fprintf(out, "\nFunctions across ranks (exclusive time (c) per rank: min / mean / max; "
		     "imbalance = max / mean)\n"
		     "           min         mean          max  imbalance  function\n");
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
		fprintf(out, "  %12s %12s %12s %9.2f  %s\n", fmt_time(a, sizeof(a), s.min),
			fmt_time(b, sizeof(b), spread_mean(&s)), fmt_time(c, sizeof(c), s.max),
			spread_mean(&s) > 0 ? s.max / spread_mean(&s) : 0.0, fn->name);
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
	fprintf(out, "\nMPI: %u of %u ranks here; %s\n", mm->nranks, mm->ranks[0].comp.size,
		mm->ranks[0].comp.flags & SPROF_MPI_PIGGYBACK
			? "parallel compensation (delays piggybacked on every message)"
			: "no parallel compensation (sonde run --mpi-comp): parallel(c) = local(c)");
	fprintf(out, "  wrapper cost (in vitro): %s per call, %s more with piggybacking\n",
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
