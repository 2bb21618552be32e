/* SPDX-License-Identifier: MIT */
/*
 * sonde analyze on the run directory of an MPI program (docs/analysis.md, "MPI runs"): the
 * traces of its ranks are analyzed together by the event model, with an edge from every
 * message's MPI_SEND to its MPI_RECV and between the members of each collective
 * (tool/mpi_match.c), so that the approximated timeline keeps message causality once the probes
 * are removed: a receive that waited for a delayed sender takes the sender's approximated time
 * plus the measured latency (seed 001's rule, post mortem), and a collective's end follows the
 * begins it depends on.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze_mpi.h"
#include "mpi_match.h"
#include "perturb.h"
#include "report.h"
#include "util.h"

/* Clocks of different traces disagreeing by more than this (wall clock against the trace's
 * clock at each start) are of different machines: their ticks cannot be compared. */
#define SAME_CLOCK_NS 2e6

struct mpi_an {
	struct strc_file **f;
	const char **path;
	uint32_t nf;
	struct mm_run mm;
	struct pt_trace t;
	double tpn;
};

static const char *ns_str(char *buf, size_t cap, double ticks, double tpn)
{
	double ns = ticks / tpn;
	char tmp[32];

	if (ns >= 0)
		return fmt_time(buf, cap, ns);
	snprintf(buf, cap, "-%s", fmt_time(tmp, sizeof(tmp), -ns));
	return buf;
}

/* How far the wall clock moved between the starts of f and g, less how far f's trace clock did
 * (ns): about 0 when they share a clock. Differences only: the rate's error does not grow with
 * the clock's value. */
static double clock_gap(const struct strc_file *f, const struct strc_file *g)
{
	double wall = (double)g->start_unix_ns - (double)f->start_unix_ns;
	double ticks = (double)g->start_ticks - (double)f->start_ticks;

	return wall - strc_ticks_to_ns(f, 1) * ticks;
}

/* Read the traces that have an MPI world rank; the others are left to the caller. */
static int load(struct mpi_an *a, char **paths, uint32_t n, char *done)
{
	uint32_t i;
	char err[256];

	a->f = xcalloc(n, sizeof(*a->f));
	a->path = xcalloc(n, sizeof(*a->path));
	for (i = 0; i < n; i++) {
		struct strc_file *f;
		uint32_t c;

		if (strc_read_file(paths[i], &f, err, sizeof(err)) != 0)
			return error("analyze: %s: %s", paths[i], err);
		for (c = 0; c < f->ncomms && !(f->comms[c].flags & STRC_COMM_WORLD); c++)
			;
		if (c == f->ncomms) {
			strc_free(f);
			continue;
		}
		if (f->truncated || f->warning[0])
			warning("%s: %s", paths[i], f->warning[0] ? f->warning : "cut short");
		done[i] = 1;
		a->path[a->nf] = paths[i];
		a->f[a->nf++] = f;
	}
	return 0;
}

static int check_clocks(const struct mpi_an *a)
{
	uint32_t i;

	for (i = 1; i < a->nf; i++) {
		double d = clock_gap(a->f[0], a->f[i]);

		if (fabs(d) > SAME_CLOCK_NS)
			return error("analyze: the clocks of %s and %s differ by %.3f ms (traces of "
				     "several machines?): analyze them one by one with --pid",
				     a->path[0], a->path[i], d / 1e6);
	}
	return 0;
}

static void print_ranks(const struct mpi_an *a)
{
	char b1[32], b2[32], b3[32];
	uint32_t p, k;

	printf("\nEvent times (model: events, with message and collective edges)\n");
	printf("  %-5s %8s %8s %10s %13s %13s %12s\n", "rank", "pid", "threads", "events",
	       "measured end", "approx. end", "removed");
	for (p = 0; p < a->nf; p++) {
		double tm = 0, ta = 0;
		uint64_t nev = 0;

		for (k = a->t.first_thread[p]; k < a->t.first_thread[p + 1]; k++) {
			const struct pt_thread *th = &a->t.th[k];

			if (!th->nev)
				continue;
			nev += th->nev;
			tm = fmax(tm, (double)(th->ev[th->nev - 1].t - a->t.t0));
			ta = fmax(ta, th->ta[th->nev - 1]);
		}
		printf("  %-5d %8u %8u %10llu %13s %13s %12s\n", a->mm.rank[p], a->f[p]->pid,
		       a->f[p]->nthreads, (unsigned long long)nev, ns_str(b1, sizeof(b1), tm, a->tpn),
		       ns_str(b2, sizeof(b2), ta, a->tpn), ns_str(b3, sizeof(b3), tm - ta, a->tpn));
	}
}

/* Messages whose approximated receive precedes their approximated send (should be none). */
static uint64_t causality_broken(const struct mpi_an *a)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < a->mm.nmsgs; i++) {
		const struct mm_msg *m = &a->mm.msgs[i];
		const struct pt_thread *s = &a->t.th[pt_thread_of(&a->t, m->send.proc, m->send.thr)];
		const struct pt_thread *r = &a->t.th[pt_thread_of(&a->t, m->recv.proc, m->recv.thr)];

		n += r->ta[m->recv.ev] < s->ta[m->send.ev];
	}
	return n;
}

static void print_edges(const struct mpi_an *a)
{
	size_t i, n[PT_EDGE_KINDS] = { 0 };

	for (i = 0; i < a->t.nedges; i++)
		n[a->t.edges[i].kind % PT_EDGE_KINDS]++;
	printf("  happens-before edges: %zu message, %zu collective, %zu create, %zu join",
	       n[PT_EDGE_MESSAGE], n[PT_EDGE_COLL], n[PT_EDGE_CREATE], n[PT_EDGE_JOIN]);
	if (n[PT_EDGE_LOCK])
		printf(", %zu synchronization (--sync)", n[PT_EDGE_LOCK]);
	printf("; dependents that waited for their source: %llu",
	       (unsigned long long)a->t.waited);
	if (a->t.broken)
		printf("; %llu ignored (they closed a cycle)", (unsigned long long)a->t.broken);
	printf("\n  messages received before they were sent once approximated: %llu\n",
	       (unsigned long long)causality_broken(a));
	printf("  reorderings: %llu across threads (and %llu ties within dt); %llu dependents whose "
	       "local approximation fell before their source\n",
	       (unsigned long long)a->t.reorders, (unsigned long long)a->t.ties,
	       (unsigned long long)a->t.dep_before);
}

static void print_header(const struct mpi_an *a)
{
	char b1[32], b2[32];

	printf("MPI run: %u rank%s of %u", a->nf, a->nf == 1 ? "" : "s",
	       a->mm.ncomms ? a->mm.comms[0].size : 0);
	printf(" (%s", a->f[0]->exe[0] ? a->f[0]->exe : a->path[0]);
	printf("), %llu events, %u communicator%s\n", (unsigned long long)a->t.nevents,
	       a->mm.ncomms, a->mm.ncomms == 1 ? "" : "s");
	printf("  messages: %llu sent, %llu received, %zu matched; %llu sends and %llu receives "
	       "without a partner in these traces\n",
	       (unsigned long long)a->mm.sends, (unsigned long long)a->mm.recvs, a->mm.nmsgs,
	       (unsigned long long)a->mm.unmatched_sends, (unsigned long long)a->mm.unmatched_recvs);
	printf("  collectives: %zu, %llu events", a->mm.ncolls,
	       (unsigned long long)a->mm.coll_events);
	if (a->mm.coll_incomplete)
		printf(" (%llu of collectives whose members are not all here)",
		       (unsigned long long)a->mm.coll_incomplete);
	printf("\n  probe cost per event record %s (rank %d's o_full/2 or --alpha), clock "
	       "resolution %s\n",
	       ns_str(b1, sizeof(b1), a->t.c.alpha, a->tpn), a->mm.rank[0],
	       ns_str(b2, sizeof(b2), a->t.c.dt, a->tpn));
}

static int32_t world_rank(const struct strc_file *f)
{
	uint32_t i;

	for (i = 0; i < f->ncomms; i++)
		if (f->comms[i].flags & STRC_COMM_WORLD)
			return f->comms[i].rank;
	return -1;
}

/* The traces in rank order (an insertion sort: paths move with their files). */
static void sort_by_rank(struct mpi_an *a)
{
	uint32_t i, j;

	for (i = 1; i < a->nf; i++)
		for (j = i; j > 0 && world_rank(a->f[j - 1]) > world_rank(a->f[j]); j--) {
			struct strc_file *f = a->f[j];
			const char *p = a->path[j];

			a->f[j] = a->f[j - 1];
			a->path[j] = a->path[j - 1];
			a->f[j - 1] = f;
			a->path[j - 1] = p;
		}
}

static void unload(struct mpi_an *a)
{
	uint32_t i;

	pt_free(&a->t);
	mm_free(&a->mm);
	for (i = 0; i < a->nf; i++)
		strc_free(a->f[i]);
	free(a->f);
	free(a->path);
}

static int analyze(struct mpi_an *a, double alpha_ns)
{
	struct pt_costs c;
	char err[256];

	if (check_clocks(a))
		return 1;
	if (mm_match(&a->mm, (const struct strc_file *const *)a->f, a->nf, err, sizeof(err)))
		return error("analyze: %s", err), 1;
	if (pt_costs_of(a->f[0], alpha_ns, &c) != 0)
		return error("analyze: %s has no calibration record; give the probe cost with "
			     "--alpha NS", a->path[0]), 1;
	a->tpn = pt_ticks_per_ns(a->f[0]);
	if (pt_init_run(&a->t, (const struct strc_file *const *)a->f, a->nf, &a->mm, &c) != 0)
		return error("analyze: the MPI traces hold no event"), 1;
	pt_events(&a->t);
	pt_reorders(&a->t);
	print_header(a);
	print_ranks(a);
	print_edges(a);
	return 0;
}

int analyze_mpi(char **paths, uint32_t n, double alpha_ns, char *done)
{
	struct mpi_an a = { 0 };
	int ret;

	if (load(&a, paths, n, done)) {
		unload(&a);
		return 1;
	}
	if (!a.nf) {
		unload(&a);
		return -1;
	}
	sort_by_rank(&a);
	ret = analyze(&a, alpha_ns);
	unload(&a);
	return ret;
}
