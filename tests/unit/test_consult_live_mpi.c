/* SPDX-License-Identifier: MIT */
/*
 * The live search of an MPI program's ranks together (tool/consult/live_mpi.c) over synthetic
 * rank sources whose readings are known exactly: the Process hierarchy, which rank measures a
 * focus, the sums, the waits at collectives (each rank's collective time less the least), the
 * ranks' computing time (max and mean), ranks that end before the others, and the channels
 * (Communicator, Peer, Tag: each rank's own, measured only where they were seen).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "consult/live_mpi.h"
#include "util.h"

/* ---- a synthetic rank: per step, each (metric, Code part) reads a fixed value ---- */

struct fake {
	struct cs_source pub;
	int rank;
	uint32_t steps, last_step; /* steps taken; the step that is its last */
	struct { char metric[32], code[64], peer[32]; int used; } req[64];
	uint32_t nreq;
	int freed;
};

static double value(int rank, const char *metric, const char *code)
{
	/* collectives: rank 2 arrives last (waits least) */
	static const double coll[3] = { 0.045, 0.040, 0.005 };
	/* wall time in /Code/m/a, none of it in MPI */
	static const double wall_a[3] = { 0.010, 0.020, 0.040 };

	if (!strcmp(metric, "mpi_coll_time"))
		return code && strcmp(code, "/Code/m/a") ? 0 : coll[rank];
	if (!strcmp(metric, "mpi_p2p_time"))
		return 0.001 * (rank + 1);
	if (!strcmp(metric, "wall_time"))
		return code && !strcmp(code, "/Code/m/a") ? wall_a[rank] : 0;
	if (!strcmp(metric, "cpu_time"))
		return 0.030;
	if (!strcmp(metric, "mpi_cpu_time"))
		return 0.010;
	return 0; /* mpi_time at /Code/m/a: none */
}

static int f_supports(struct cs_source *s, const char *metric, const struct cs_focus *f)
{
	(void)s, (void)f;
	return strcmp(metric, "page_faults") != 0;
}

static uint32_t f_children(struct cs_source *s, const struct cs_focus *f, int h, char ***out)
{
	struct fake *k = s->impl;
	char buf[64];
	uint32_t n = 0;

	*out = NULL;
	if (h == H_CODE && !f->part[H_CODE]) {
		*out = xcalloc(2, sizeof(char *));
		(*out)[n++] = xstrdup("/Code/m/a");
		if (k->rank == 1) /* a procedure only rank 1 has called so far */
			(*out)[n++] = xstrdup("/Code/m/b");
	} else if (h == H_COMM && !f->part[H_COMM] && k->rank != 1) {
		*out = xcalloc(1, sizeof(char *));
		(*out)[n++] = xstrdup("/Communicator/world");
	} else if (h == H_PEER && f->part[H_COMM] && !f->part[H_PEER] && k->rank != 1) {
		/* rank 0 receives from rank 1, rank 2 from rank 0; rank 1 receives nothing */
		*out = xcalloc(1, sizeof(char *));
		(*out)[n++] = xstrdup(k->rank == 0 ? "/Peer/rank1" : "/Peer/rank0");
	} else if (h == H_THREADS && !f->part[H_THREADS]) {
		snprintf(buf, sizeof(buf), "/Threads/%d", 100 + k->rank);
		*out = xcalloc(1, sizeof(char *));
		(*out)[n++] = xstrdup(buf);
	}
	return n;
}

static int f_request(struct cs_source *s, const char *metric, const struct cs_focus *f)
{
	struct fake *k = s->impl;

	assert_null(f->part[H_PROCESS]); /* a rank measures without its Process part */
	assert_true(k->nreq < 64);
	snprintf(k->req[k->nreq].metric, sizeof(k->req[0].metric), "%s", metric);
	snprintf(k->req[k->nreq].code, sizeof(k->req[0].code), "%s",
		 f->part[H_CODE] ? f->part[H_CODE] : "");
	snprintf(k->req[k->nreq].peer, sizeof(k->req[0].peer), "%s",
		 f->part[H_PEER] ? f->part[H_PEER] : "");
	k->req[k->nreq].used = 1;
	return (int)k->nreq++;
}

static void f_cancel(struct cs_source *s, int id)
{
	((struct fake *)s->impl)->req[id].used = 0;
}

static double f_cost(struct cs_source *s, const char *metric, const struct cs_focus *f)
{
	(void)s, (void)metric, (void)f;
	return 0.01;
}

static double f_rate(struct cs_source *s, const char *metric, const struct cs_focus *f)
{
	(void)s, (void)metric, (void)f;
	return 1e9;
}

static int f_step(struct cs_source *s, struct cs_step *st)
{
	struct fake *k = s->impl;

	if (k->steps > k->last_step)
		return -1;
	st->t0 = (uint64_t)k->steps * 50000000ull;
	st->t1 = st->t0 + 50000000ull;
	st->load = 1;
	st->last = k->steps == k->last_step;
	k->steps++;
	return 0;
}

static double f_read(struct cs_source *s, int id)
{
	struct fake *k = s->impl;

	return k->req[id].used ? value(k->rank, k->req[id].metric,
				       k->req[id].code[0] ? k->req[id].code : NULL) : 0;
}

static uint64_t f_zero(struct cs_source *s)
{
	(void)s;
	return 0;
}

static uint64_t f_phase_end(struct cs_source *s, uint64_t t)
{
	(void)s, (void)t;
	return 0;
}

static const struct cs_source_ops fake_ops = {
	.supports = f_supports, .children = f_children, .request = f_request,
	.cancel = f_cancel, .cost = f_cost, .max_rate = f_rate, .step = f_step, .read = f_read,
	.run_end = f_zero, .phase_end = f_phase_end, .generation = f_zero, .sample_bytes = 24,
};

/* live_mpi.c frees its ranks' sources through the live source's functions: here, fakes. */
void live_source_free(struct cs_source *src)
{
	free(src->impl);
}

void live_source_info(struct cs_source *src, struct live_source_info *out)
{
	memset(out, 0, sizeof(*out));
	out->requests = ((struct fake *)src->impl)->nreq;
}

/* The same (metric, Code part) requested twice in a rank reads the same data (live_source.c
 * shares its instrumentation). */
int live_source_data_id(struct cs_source *src, int req)
{
	struct fake *k = src->impl;
	int i;

	for (i = 0; i < req; i++)
		if (k->req[i].used && !strcmp(k->req[i].metric, k->req[req].metric) &&
		    !strcmp(k->req[i].code, k->req[req].code))
			return i;
	return req;
}

/* The channels each rank receives on (f_children). */
int live_source_chan_used(struct cs_source *src, const struct cs_focus *f)
{
	int rank = ((struct fake *)src->impl)->rank;

	if (!f->part[H_COMM] && !f->part[H_PEER] && !f->part[H_TAG])
		return 1;
	if (rank == 1 || f->part[H_TAG])
		return 0;
	return !f->part[H_PEER] || !strcmp(f->part[H_PEER], rank ? "/Peer/rank0" : "/Peer/rank1");
}

double live_source_call_rate(struct cs_source *src, const char *module, const char *proc)
{
	(void)module, (void)proc;
	return ((struct fake *)src->impl)->rank == 1 ? 10 : -1;
}

/* Exactly, but for rounding. */
#define assert_near(a, b) assert_true(fabs((a) - (b)) <= 1e-12)

static struct cs_source *ranks3(uint32_t last1)
{
	struct cs_source *r[3];
	int32_t rank[3] = { 0, 1, 2 };
	uint32_t i;

	for (i = 0; i < 3; i++) {
		struct fake *k = xcalloc(1, sizeof(*k));

		k->rank = (int)i;
		k->last_step = i == 1 ? last1 : 9;
		k->pub.ops = &fake_ops;
		k->pub.impl = k;
		r[i] = &k->pub;
	}
	return live_mpi_new(r, rank, 3);
}

static void focus(struct cs_focus *f, const char *code, const char *process)
{
	memset(f, 0, sizeof(*f));
	f->part[H_CODE] = (char *)(uintptr_t)code;
	f->part[H_PROCESS] = (char *)(uintptr_t)process;
}

static int req(struct cs_source *s, const char *metric, const char *code, const char *process)
{
	struct cs_focus f;

	focus(&f, code, process);
	return s->ops->request(s, metric, &f);
}

static void step(struct cs_source *s, int want_last)
{
	struct cs_step st;

	memset(&st, 0, sizeof(st));
	assert_int_equal(s->ops->step(s, &st), 0);
	assert_int_equal(st.last, want_last);
	assert_true(st.t1 > st.t0);
}

static void test_hierarchy(void **state)
{
	struct cs_source *s = ranks3(9);
	struct cs_focus f;
	char **kids;
	uint32_t n, i;

	(void)state;
	assert_true(live_mpi_is(s));
	focus(&f, NULL, NULL);
	n = s->ops->children(s, &f, H_PROCESS, &kids);
	assert_int_equal(n, 3);
	assert_string_equal(kids[0], "/Process/rank0");
	assert_string_equal(kids[2], "/Process/rank2");
	for (i = 0; i < n; i++)
		free(kids[i]);
	free(kids);
	/* the ranks' procedures together; threads only under a rank */
	n = s->ops->children(s, &f, H_CODE, &kids);
	assert_int_equal(n, 2);
	assert_string_equal(kids[1], "/Code/m/b");
	for (i = 0; i < n; i++)
		free(kids[i]);
	free(kids);
	assert_int_equal(s->ops->children(s, &f, H_THREADS, &kids), 0);
	focus(&f, NULL, "/Process/rank2");
	n = s->ops->children(s, &f, H_THREADS, &kids);
	assert_int_equal(n, 1);
	assert_string_equal(kids[0], "/Threads/102");
	free(kids[0]);
	free(kids);
	assert_int_equal(s->ops->children(s, &f, H_PROCESS, &kids), 0);
	/* channels and message matching are post mortem only; no such rank */
	focus(&f, NULL, NULL);
	assert_false(s->ops->supports(s, "mpi_late_sender", &f));
	f.part[H_COMM] = (char *)(uintptr_t)"/Communicator/world";
	assert_false(s->ops->supports(s, "mpi_coll_time", &f));
	focus(&f, NULL, "/Process/rank7");
	assert_false(s->ops->supports(s, "mpi_coll_time", &f));
	focus(&f, NULL, "/Process/rank1");
	assert_true(s->ops->supports(s, "mpi_coll_wait", &f));
	assert_false(s->ops->supports(s, "page_faults", &f)); /* the rank's own answer */
	live_mpi_free(s);
}

static void free_kids(char **kids, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		free(kids[i]);
	free(kids);
}

/* Communicator, Peer and Tag: the ranks' channels together; a channel's ranks are those that
 * received on it, the only ones that measure it; its only metric is mpi_p2p_time. */
static void test_channels(void **state)
{
	struct cs_source *s = ranks3(9);
	struct cs_focus f;
	char **kids;
	uint32_t n;
	int id;

	(void)state;
	focus(&f, NULL, NULL);
	n = s->ops->children(s, &f, H_COMM, &kids);
	assert_int_equal(n, 1); /* ranks 0 and 2's, once */
	assert_string_equal(kids[0], "/Communicator/world");
	free_kids(kids, n);
	f.part[H_COMM] = (char *)(uintptr_t)"/Communicator/world";
	n = s->ops->children(s, &f, H_PEER, &kids);
	assert_int_equal(n, 2);
	assert_string_equal(kids[0], "/Peer/rank1");
	assert_string_equal(kids[1], "/Peer/rank0");
	free_kids(kids, n);
	assert_int_equal(s->ops->children(s, &f, H_CODE, &kids), 0); /* Code before channels */
	f.part[H_PEER] = (char *)(uintptr_t)"/Peer/rank1";
	n = s->ops->children(s, &f, H_PROCESS, &kids);
	assert_int_equal(n, 1); /* only rank 0 received from rank 1 */
	assert_string_equal(kids[0], "/Process/rank0");
	free_kids(kids, n);
	assert_true(s->ops->supports(s, "mpi_p2p_time", &f));
	assert_true(s->ops->supports(s, "active_threads", &f));
	assert_false(s->ops->supports(s, "cpu_time", &f));
	assert_false(s->ops->supports(s, "mpi_coll_wait", &f));
	assert_false(s->ops->supports(s, "cpu_time_rank_max", &f));
	id = s->ops->request(s, "mpi_p2p_time", &f);
	assert_true(id >= 0);
	step(s, 0);
	assert_near(s->ops->read(s, id), 0.001); /* rank 0's alone */
	live_mpi_free(s);
}

static void test_channel_requests(void **state)
{
	struct cs_source *r[3];
	struct fake *k[3];
	int32_t rank[3] = { 0, 1, 2 };
	struct cs_source *s;
	struct cs_focus f;
	uint32_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		k[i] = xcalloc(1, sizeof(*k[i]));
		k[i]->rank = (int)i;
		k[i]->last_step = 9;
		k[i]->pub.ops = &fake_ops;
		k[i]->pub.impl = k[i];
		r[i] = &k[i]->pub;
	}
	s = live_mpi_new(r, rank, 3);
	focus(&f, "/Code/m/a", NULL);
	f.part[H_COMM] = (char *)(uintptr_t)"/Communicator/world";
	f.part[H_PEER] = (char *)(uintptr_t)"/Peer/rank0";
	assert_true(s->ops->request(s, "mpi_p2p_time", &f) >= 0);
	/* instrumentation only in rank 2, the one seen receiving from rank 0 */
	assert_int_equal(k[0]->nreq, 0);
	assert_int_equal(k[1]->nreq, 0);
	assert_int_equal(k[2]->nreq, 1);
	assert_string_equal(k[2]->req[0].peer, "/Peer/rank0");
	assert_string_equal(k[2]->req[0].code, "/Code/m/a");
	live_mpi_free(s);
}

static void test_values(void **state)
{
	struct cs_source *s = ranks3(9);
	int p2p_all, p2p_r1, wait_all, wait_r0, wait_r2, max_all, max_r0, mean_r0, cpu;

	(void)state;
	p2p_all = req(s, "mpi_p2p_time", NULL, NULL);
	p2p_r1 = req(s, "mpi_p2p_time", NULL, "/Process/rank1");
	wait_all = req(s, "mpi_coll_wait", NULL, NULL);
	wait_r0 = req(s, "mpi_coll_wait", NULL, "/Process/rank0");
	wait_r2 = req(s, "mpi_coll_wait", NULL, "/Process/rank2");
	max_all = req(s, "cpu_time_rank_max", "/Code/m/a", NULL);
	max_r0 = req(s, "cpu_time_rank_max", "/Code/m/a", "/Process/rank0");
	mean_r0 = req(s, "cpu_time_rank_mean", "/Code/m/a", "/Process/rank0");
	cpu = req(s, "cpu_time", NULL, NULL);
	step(s, 0); /* after a first round that only installs (its values dropped) */
	assert_near(s->ops->read(s, p2p_all), 0.006);
	assert_near(s->ops->read(s, p2p_r1), 0.002);
	/* 0.045 - 0.005 + 0.040 - 0.005: rank 2 came last */
	assert_near(s->ops->read(s, wait_all), 0.075);
	assert_near(s->ops->read(s, wait_r0), 0.040);
	assert_near(s->ops->read(s, wait_r2), 0);
	assert_near(s->ops->read(s, max_all), 0.040);
	assert_near(s->ops->read(s, max_r0), 0.010);
	assert_near(s->ops->read(s, mean_r0), 0.070 / 3);
	assert_near(s->ops->read(s, cpu), 3 * 0.020); /* less MPI's CPU time */
	step(s, 0);
	assert_near(s->ops->read(s, wait_all), 0.075);
	assert_near(s->ops->read(s, max_all), 0.040);
	s->ops->cancel(s, wait_all);
	live_mpi_free(s);
}

/* The mean of a procedure's time over the ranks is the same data whatever rank the focus
 * names, and so are the collectives' times every wait is derived from: one sample a step, not
 * one a pair; the count as each pair had it is kept apart (pair_samples). */
static void test_shared_samples(void **state)
{
	struct cs_source *s = ranks3(9);
	struct live_source_info li;
	int mean_r0, mean_r1, wait_r0, wait_r2, p2p_r1, p2p_r2;

	(void)state;
	mean_r0 = req(s, "cpu_time_rank_mean", "/Code/m/a", "/Process/rank0");
	mean_r1 = req(s, "cpu_time_rank_mean", "/Code/m/a", "/Process/rank1");
	wait_r0 = req(s, "mpi_coll_wait", NULL, "/Process/rank0");
	wait_r2 = req(s, "mpi_coll_wait", NULL, "/Process/rank2");
	p2p_r1 = req(s, "mpi_p2p_time", NULL, "/Process/rank1");
	p2p_r2 = req(s, "mpi_p2p_time", NULL, "/Process/rank2");
	step(s, 0);
	step(s, 0);
	assert_int_equal(s->ops->fresh(s, mean_r0), 1);
	assert_int_equal(s->ops->fresh(s, mean_r1), 0);
	assert_int_equal(s->ops->fresh(s, wait_r0), 1);
	assert_int_equal(s->ops->fresh(s, wait_r2), 0);
	assert_int_equal(s->ops->fresh(s, p2p_r1), 1); /* each rank's own */
	assert_int_equal(s->ops->fresh(s, p2p_r2), 1);
	assert_near(s->ops->read(s, mean_r1), 0.070 / 3); /* the values are each pair's */
	assert_near(s->ops->read(s, wait_r2), 0);
	live_mpi_info(s, &li);
	assert_int_equal(li.pair_samples, 2 * 6);
	live_mpi_free(s);
}

static void test_rank_ends(void **state)
{
	struct cs_source *s = ranks3(3); /* rank 1 ends at the search's 3rd step */
	struct live_source_info li;
	uint32_t i;
	int act, ranks, p2p;

	(void)state;
	act = req(s, "active_threads", NULL, NULL);
	ranks = req(s, "active_ranks", NULL, "/Process/rank1");
	p2p = req(s, "mpi_p2p_time", NULL, NULL);
	step(s, 0);
	step(s, 0);
	step(s, 0);
	assert_true(s->ops->read(s, ranks) > 0);
	assert_near(s->ops->read(s, p2p), 0.006);
	for (i = 0; i < 5; i++)
		step(s, 0);
	assert_near(s->ops->read(s, ranks), 0); /* gone */
	assert_near(s->ops->read(s, p2p), 0.004);
	assert_true(s->ops->read(s, act) >= 0);
	step(s, 1); /* the others' last */
	live_mpi_info(s, &li);
	assert_int_equal(li.ranks, 3);
	assert_int_equal(li.requests, 3); /* p2p in every rank; threads and ranks read none */
	assert_near(live_mpi_call_rate(s, "m", "a"), 10);
	live_mpi_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hierarchy),
		cmocka_unit_test(test_channels),
		cmocka_unit_test(test_channel_requests),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_shared_samples),
		cmocka_unit_test(test_rank_ends),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
