/* SPDX-License-Identifier: MIT */
/*
 * The post-mortem source over an MPI run's ranks (tool/consult/trace_mpi.c, docs/consult.md
 * "MPI runs"): synthetic traces of two ranks on one clock (1 tick = 1 ns) whose receive and
 * collective times, late senders and waits at collectives are known exactly, read through the
 * source interface the search uses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "consult/trace_source.h"

#include <math.h>

/* Values in ns, computed from sums of seconds: equal to well within a tick. */
#define assert_ns(v, want) assert_true(fabs((v) - (double)(want)) < 1e-3)

#define MAXEV 64

struct rank {
	struct strc_file f;
	struct strc_thread th;
	struct strc_event ev[MAXEV];
	struct strc_mpi mpi[MAXEV];
	struct strc_comm comm;
	char exe[8], cmd[8];
};

static char no_name[1];
static struct strc_func func0 = { .id = 0, .kind = SPROF_FUNC, .module = -1, .name = no_name };
static uint32_t func0_by_id = 0;

static void rank_init(struct rank *r, int32_t rank)
{
	memset(r, 0, sizeof(*r));
	r->f.pid = 1000 + (uint32_t)rank;
	r->f.ticks_per_ns = 1;
	r->f.exe = r->exe;
	r->f.cmdline = r->cmd;
	r->f.threads = &r->th;
	r->f.nthreads = 1;
	r->f.mpi = r->mpi;
	r->f.comms = &r->comm;
	r->f.ncomms = 1;
	r->f.funcs = &func0;
	r->f.nfuncs = 1;
	r->f.func_by_id = &func0_by_id;
	r->f.func_id_cap = 1;
	r->th.ev = r->ev;
	r->th.complete = 1;
	r->th.tid = r->f.pid;
	r->comm = (struct strc_comm){ .id = 0, .size = 2, .rank = rank, .flags = STRC_COMM_WORLD };
	r->ev[r->th.nev++] = (struct strc_event){ .t = 0, .type = STRC_THREAD_BEGIN,
						  .id = STRC_ID_NONE };
	r->ev[r->th.nev++] = (struct strc_event){ .t = 10, .type = STRC_ENTER, .id = 0 };
}

static void add(struct rank *r, unsigned type, uint64_t t, struct strc_mpi m)
{
	r->mpi[r->f.nmpi] = m;
	r->ev[r->th.nev++] = (struct strc_event){ .t = t, .type = (uint16_t)type, .id = 0,
						  .arg = r->f.nmpi++, .depth = 1 };
}

static void end(struct rank *r, uint64_t t)
{
	r->ev[r->th.nev++] = (struct strc_event){ .t = t, .type = STRC_EXIT, .id = 0 };
	r->ev[r->th.nev++] = (struct strc_event){ .t = t, .type = STRC_THREAD_END,
						  .id = STRC_ID_NONE };
}

/*
 * Both ranks meet in a Barrier ending at 1000 (rank 0 entered at 500, rank 1 at 900: the span
 * searched begins there, the last rank's first MPI call). Rank 0: a receive from rank 1 with
 * tag 42 from 1000 to 5000 (rank 1 sends at 4000: 3000 of
 * late sender), then a Barrier from 6000 to 10000 (rank 1 enters at 9000: 3000 waited), then a
 * Bcast from rank 1 from 11000 to 14000 (the root enters at 13000: 2000), then it is the root
 * of a Reduce from 15000 to 19000 (rank 1 enters at 18000: 3000). Rank 1 waits nowhere.
 */
static struct cs_source *two_ranks(struct rank *r)
{
	static const struct strc_file *files[2];
	char err[256];
	struct cs_source *s;

	rank_init(&r[0], 0);
	rank_init(&r[1], 1);
	add(&r[0], STRC_MPI_COLL, 1000, (struct strc_mpi){ .op = 1, .peer = -1, .wait = 500 });
	add(&r[1], STRC_MPI_COLL, 1000, (struct strc_mpi){ .op = 1, .peer = -1, .wait = 100 });
	add(&r[0], STRC_MPI_RECV, 5000, (struct strc_mpi){ .peer = 1, .tag = 42, .bytes = 8,
							   .wait = 4000 });
	add(&r[1], STRC_MPI_SEND, 4000, (struct strc_mpi){ .peer = 0, .tag = 42, .bytes = 8 });
	add(&r[0], STRC_MPI_COLL, 10000, (struct strc_mpi){ .op = 1, .peer = -1, .wait = 4000 });
	add(&r[1], STRC_MPI_COLL, 10000, (struct strc_mpi){ .op = 1, .peer = -1, .wait = 1000 });
	add(&r[0], STRC_MPI_COLL, 14000, (struct strc_mpi){ .op = 2, .peer = 1, .wait = 3000 });
	add(&r[1], STRC_MPI_COLL, 13500, (struct strc_mpi){ .op = 2, .peer = 1, .wait = 500 });
	add(&r[0], STRC_MPI_COLL, 19000, (struct strc_mpi){ .op = 9, .peer = 0, .wait = 4000 });
	add(&r[1], STRC_MPI_COLL, 18500, (struct strc_mpi){ .op = 9, .peer = 0, .wait = 500 });
	end(&r[0], 20000);
	end(&r[1], 20000);
	files[0] = &r[0].f;
	files[1] = &r[1].f;
	s = trace_source_new_run(files, 2, 1000, err, sizeof(err));
	if (!s)
		fprintf(stderr, "%s\n", err);
	assert_non_null(s);
	return s;
}

/* The metric at the focus (a string as the engine writes it) over the whole run, in ns. */
static double total(struct cs_source *s, const char *metric, const char *focus)
{
	struct cs_focus f;
	struct cs_step st;
	double v = 0;
	int req;

	assert_int_equal(cs_focus_parse(&f, focus), 0);
	assert_true(s->ops->supports(s, metric, &f));
	req = s->ops->request(s, metric, &f);
	assert_true(req >= 0);
	cs_focus_free(&f);
	while (memset(&st, 0, sizeof(st)), s->ops->step(s, &st) == 0)
		v += s->ops->read(s, req);
	s->ops->cancel(s, req);
	return v * 1e9;
}

static void test_waits(void **state)
{
	struct rank *r = calloc(2, sizeof(*r));
	struct cs_source *s;

	(void)state;
	/* each total on a fresh source: a request counts from the step after it */
	s = two_ranks(r);
	assert_ns(total(s, "mpi_p2p_time", "/Process/rank0"), 4000);
	trace_source_free(s);
	s = two_ranks(r);
	assert_ns(total(s, "mpi_late_sender", "/Process/rank0,/Peer/rank1,/Tag/42"), 3000);
	trace_source_free(s);
	s = two_ranks(r);
	assert_ns(total(s, "mpi_late_sender", "/Tag/7"), 0);
	trace_source_free(s);
	s = two_ranks(r);
	/* the first Barrier from 900 on only: before, rank 1 was not yet in MPI */
	assert_ns(total(s, "mpi_coll_time", "/Process/rank0"), 100 + 4000 + 3000 + 4000);
	trace_source_free(s);
	s = two_ranks(r);
	assert_ns(total(s, "mpi_coll_wait", "/Process/rank0,/Communicator/world"),
		  3000 + 2000 + 3000);
	trace_source_free(s);
	s = two_ranks(r);
	assert_ns(total(s, "mpi_coll_wait", "/Process/rank1"), 0);
	trace_source_free(s);
	s = two_ranks(r);
	assert_ns(total(s, "mpi_coll_time", "/Process/rank1"), 100 + 1000 + 500 + 500);
	trace_source_free(s);
	s = two_ranks(r);
	/* computing: rank 1 in its MPI interval (900 to 18500) less its MPI calls; rank 0 from
	 * 5000 to 6000, 10000 to 11000, 14000 to 15000 */
	assert_ns(total(s, "cpu_time", "/Process/rank1"), 17600 - 2100);
	trace_source_free(s);
	s = two_ranks(r);
	assert_ns(total(s, "cpu_time", "/Process/rank0"), 3000);
	trace_source_free(s);
	s = two_ranks(r);
	assert_ns(total(s, "cpu_time_rank_max", "/"), 15500);
	trace_source_free(s);
	s = two_ranks(r);
	assert_ns(total(s, "cpu_time_rank_mean", "/Process/rank0"), (15500 + 3000) / 2.0);
	trace_source_free(s);
	s = two_ranks(r);
	assert_ns(total(s, "active_ranks", "/"), 18100 + 17600);
	trace_source_free(s);
	free(r);
}

/* The resources seen: ranks, the receive's peer and tag, the communicator. */
static void test_children(void **state)
{
	struct rank *r = calloc(2, sizeof(*r));
	struct cs_source *s = two_ranks(r);
	struct cs_focus f;
	struct cs_step st;
	char **kids;
	uint32_t n, i;

	(void)state;
	while (memset(&st, 0, sizeof(st)), s->ops->step(s, &st) == 0)
		;
	assert_int_equal(cs_focus_parse(&f, "/"), 0);
	n = s->ops->children(s, &f, H_PROCESS, &kids);
	assert_int_equal(n, 2);
	assert_string_equal(kids[0], "/Process/rank0");
	assert_string_equal(kids[1], "/Process/rank1");
	for (i = 0; i < n; i++)
		free(kids[i]);
	free(kids);
	n = s->ops->children(s, &f, H_PEER, &kids);
	assert_int_equal(n, 1);
	assert_string_equal(kids[0], "/Peer/rank1");
	free(kids[0]);
	free(kids);
	n = s->ops->children(s, &f, H_COMM, &kids);
	assert_int_equal(n, 1);
	assert_string_equal(kids[0], "/Communicator/world");
	free(kids[0]);
	free(kids);
	cs_focus_free(&f);
	assert_int_equal(cs_focus_parse(&f, "/Process/rank1"), 0);
	assert_int_equal(s->ops->children(s, &f, H_TAG, &kids), 0); /* rank 1 received nothing */
	cs_focus_free(&f);
	assert_int_equal(cs_focus_parse(&f, "/Tag/42"), 0);
	assert_false(s->ops->supports(s, "cpu_time", &f)); /* time is not per tag */
	assert_true(s->ops->supports(s, "mpi_late_sender", &f));
	cs_focus_free(&f);
	trace_source_free(s);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_waits),
		cmocka_unit_test(test_children),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
