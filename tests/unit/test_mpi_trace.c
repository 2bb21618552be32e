/* SPDX-License-Identifier: MIT */
/*
 * MPI events in traces (docs/format-trace.md "MPI events", docs/analysis.md "MPI runs"): the
 * reader and the writer of MPI_SEND, MPI_RECV, MPI_COLL and DEF_COMM records, the matching of
 * messages and collectives across the traces of a run (tool/mpi_match.c), and the event model's
 * message edges (pt_init_run). Traces are built in memory, written by strc_write_mem and read
 * back by the validating reader; costs are in ticks (1 tick = 1 ns).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mpi_match.h"
#include "perturb.h"

#define MAXEV 256

/* One rank's trace being built: one thread, events appended in time order. */
struct rank {
	struct strc_file f;
	struct strc_thread th;
	struct strc_event ev[MAXEV];
	struct strc_mpi mpi[MAXEV];
	struct strc_comm comms[4];
	int32_t lists[4][8];
	char exe[8], cmd[8];
};

static void rank_init(struct rank *r, int32_t rank, uint32_t size)
{
	memset(r, 0, sizeof(*r));
	r->f.pid = 1000 + (uint32_t)rank;
	r->f.ticks_per_ns = 1;
	r->f.exe = r->exe;
	r->f.cmdline = r->cmd;
	r->f.threads = &r->th;
	r->f.nthreads = 1;
	r->f.mpi = r->mpi;
	r->f.comms = r->comms;
	r->th.ev = r->ev;
	r->th.complete = 1;
	r->th.tid = r->f.pid;
	r->comms[0] = (struct strc_comm){ .id = 0, .size = size, .rank = rank,
					  .flags = STRC_COMM_WORLD };
	r->f.ncomms = 1;
	r->ev[r->th.nev++] = (struct strc_event){ .t = 100, .type = STRC_THREAD_BEGIN,
						  .id = STRC_ID_NONE };
}

/* A communicator of members (world ranks), this rank being member `rank`. */
static uint32_t rank_comm(struct rank *r, int32_t rank, uint32_t n, const int32_t *members)
{
	uint32_t id = r->f.ncomms;

	memcpy(r->lists[id], members, n * 4);
	r->comms[id] = (struct strc_comm){ .id = id, .size = n, .rank = rank,
					   .flags = STRC_COMM_LISTED, .world = r->lists[id] };
	r->f.ncomms++;
	return id;
}

static void add(struct rank *r, unsigned type, uint64_t t, uint32_t comm, struct strc_mpi m)
{
	r->mpi[r->f.nmpi] = m;
	r->ev[r->th.nev++] = (struct strc_event){ .t = t, .type = (uint16_t)type, .id = comm,
						  .arg = r->f.nmpi++ };
}

static void send(struct rank *r, uint64_t t, int peer, int tag, uint32_t comm, uint64_t n)
{
	add(r, STRC_MPI_SEND, t, comm, (struct strc_mpi){ .peer = peer, .tag = tag, .bytes = n });
}

static void recv(struct rank *r, uint64_t t, int peer, int tag, uint32_t comm, uint64_t n,
		 uint64_t wait)
{
	add(r, STRC_MPI_RECV, t, comm,
	    (struct strc_mpi){ .peer = peer, .tag = tag, .bytes = n, .wait = wait });
}

static void coll(struct rank *r, uint64_t t, unsigned op, uint32_t comm, int root, uint64_t wait)
{
	add(r, STRC_MPI_COLL, t, comm,
	    (struct strc_mpi){ .op = op, .peer = root, .bytes = 8, .recvd = 16, .wait = wait });
}

/* Local work: n ENTER/EXIT pairs of function 0 from t, one tick apart. */
static void calls(struct rank *r, uint64_t t, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		r->ev[r->th.nev++] = (struct strc_event){ .t = t + 2 * i, .type = STRC_ENTER };
		r->ev[r->th.nev++] = (struct strc_event){ .t = t + 2 * i + 1, .type = STRC_EXIT };
	}
}

static char no_name[1];
static struct strc_func func0 = { .id = 0, .kind = SPROF_FUNC, .module = -1, .name = no_name };
static uint32_t func0_by_id = 0;

/* The rank's trace written and read back (a copy the reader made). */
static struct strc_file *through_file(struct rank *r)
{
	struct strc_file *back;
	uint8_t *buf;
	size_t len;
	char err[256];

	r->f.funcs = &func0;
	r->f.nfuncs = 1;
	r->f.func_by_id = &func0_by_id;
	r->f.func_id_cap = 1;
	assert_int_equal(strc_write_mem(&r->f, &buf, &len, err, sizeof(err)), 0);
	if (strc_read_mem(buf, len, &back, err, sizeof(err)) != 0)
		fail_msg("read back: %s", err);
	free(buf);
	return back;
}

/* The encoding of r, for tests that damage it. */
static uint8_t *encode(struct rank *r, size_t *len)
{
	uint8_t *buf;
	char err[256];

	r->f.funcs = &func0;
	r->f.nfuncs = 1;
	assert_int_equal(strc_write_mem(&r->f, &buf, len, err, sizeof(err)), 0);
	return buf;
}

static void test_round_trip(void **state)
{
	static const int32_t pair[2] = { 0, 2 };
	struct rank r;
	struct strc_file *g;
	uint32_t sub;
	size_t i;

	(void)state;
	rank_init(&r, 2, 4);
	sub = rank_comm(&r, 1, 2, pair);
	send(&r, 200, 3, 7, 0, 64);
	recv(&r, 300, 1, 0, 0, 1u << 20, 55);
	recv(&r, 400, 0, 5, sub, 1000, 0);
	coll(&r, 500, STRC_COLL_ALLREDUCE, 0, -1, 30);
	coll(&r, 600, STRC_COLL_BCAST, sub, 0, 3);
	g = through_file(&r);
	assert_int_equal(g->ncomms, 2);
	assert_true(g->comms[0].flags & STRC_COMM_WORLD);
	assert_int_equal(g->comms[0].rank, 2);
	assert_int_equal(g->comms[1].size, 2);
	assert_int_equal(g->comms[1].world[1], 2);
	assert_int_equal(g->threads[0].nev, r.th.nev);
	for (i = 1; i < r.th.nev; i++) {
		const struct strc_event *a = &g->threads[0].ev[i], *b = &r.ev[i];
		const struct strc_mpi *ma = strc_mpi_of(g, a), *mb = &r.mpi[b->arg];

		assert_int_equal(a->type, b->type);
		assert_int_equal(a->t, b->t);
		assert_int_equal(a->id, b->id);
		assert_int_equal(ma->peer, mb->peer);
		assert_int_equal(ma->tag, mb->tag);
		assert_int_equal(ma->op, mb->op);
		assert_int_equal(ma->bytes, mb->bytes);
		assert_int_equal(ma->recvd, mb->recvd);
		assert_int_equal(ma->wait, mb->wait);
	}
	assert_string_equal(strc_type_name(STRC_MPI_COLL), "MPI_COLL");
	assert_string_equal(strc_coll_name(STRC_COLL_ALLREDUCE), "Allreduce");
	strc_free(g);
}

/* The offset of the n-th record of type `type` (short records only) after the header. */
static size_t find_record(const uint8_t *d, size_t len, unsigned type)
{
	size_t at = STRC_HEADER_SIZE + STRC_CHUNK_HEADER;

	while (at + 8 <= len) {
		uint64_t w;

		memcpy(&w, d + at, 8);
		if (strc_type_of(w) == type)
			return at;
		at += strc_size_of(w);
	}
	fail_msg("no record of type %u", type);
	return 0;
}

static void expect_refused(uint8_t *d, size_t len, const char *why)
{
	struct strc_file *g;
	char err[256];

	if (strc_read_mem(d, len, &g, err, sizeof(err)) == 0) {
		strc_free(g);
		fail_msg("accepted a trace with %s", why);
	}
	assert_non_null(strstr(err, why));
}

/* A copy of d with one 32-bit field changed. */
static uint8_t *patched(const uint8_t *d, size_t len, size_t at, uint32_t v)
{
	uint8_t *c = malloc(len);

	memcpy(c, d, len);
	memcpy(c + at, &v, 4);
	return c;
}

static void test_refused(void **state)
{
	struct rank r;
	uint8_t *d, *c;
	size_t len, s, k, co;
	uint64_t w;

	(void)state;
	rank_init(&r, 1, 4);
	send(&r, 200, 3, 7, 0, 64);
	coll(&r, 300, STRC_COLL_BARRIER, 0, -1, 5);
	d = encode(&r, &len);
	s = find_record(d, len, STRC_MPI_SEND);
	co = find_record(d, len, STRC_MPI_COLL);
	memcpy(&w, d + s, 8);
	c = patched(d, len, s, (uint32_t)(w & ~(uint64_t)0xfffff00) | 3u << 8); /* comm 3 */
	expect_refused(c, len, "names communicator 3, defined nowhere");
	free(c);
	c = patched(d, len, s + 8, 4); /* peer 4 of a world of 4 */
	expect_refused(c, len, "names rank 4, not in communicator 0 of 4 ranks");
	free(c);
	c = patched(d, len, s + 12, (uint32_t)-1); /* a wildcard tag */
	expect_refused(c, len, "negative tag");
	free(c);
	c = patched(d, len, co + 8, STRC_COLL_OPS); /* op */
	expect_refused(c, len, "unknown collective operation");
	free(c);
	c = patched(d, len, co + 12, 9); /* root */
	expect_refused(c, len, "has root 9");
	free(c);
	/* the DEF_COMM: u32 id, size, rank, flags, listed, 0 after its header word */
	for (k = STRC_HEADER_SIZE + STRC_CHUNK_HEADER; k + 8 <= len; k += strc_size_of(w)) {
		memcpy(&w, d + k, 8);
		if (strc_type_of(w) == STRC_DEF_COMM)
			break;
	}
	assert_true(k + 8 <= len);
	c = patched(d, len, k + 16, 4); /* rank 4 of 4 */
	expect_refused(c, len, "DEF_COMM record is malformed");
	free(c);
	c = patched(d, len, k + 24, 4); /* 4 ranks listed, none present */
	expect_refused(c, len, "DEF_COMM record is malformed");
	free(c);
	c = patched(d, len, k + 20, 0x10); /* unknown flag */
	expect_refused(c, len, "DEF_COMM record is malformed");
	free(c);
	free(d);
}

/* Four ranks: a ring; 1 sends tags 10, 11 to 2, received in the other order; 0 -> 2 on a
 * communicator {0, 2}; one receive whose send is not in the run; a collective on each rank. */
static void four_ranks(struct rank r[4])
{
	static const int32_t pair[2] = { 0, 2 };
	int i;

	for (i = 0; i < 4; i++)
		rank_init(&r[i], i, 4);
	rank_comm(&r[0], 0, 2, pair);
	rank_comm(&r[2], 1, 2, pair);
	send(&r[0], 1000, 1, 0, 0, 8);
	recv(&r[1], 1100, 0, 0, 0, 8, 900);
	send(&r[1], 1200, 2, 0, 0, 8);
	send(&r[1], 1210, 2, 10, 0, 1);
	send(&r[1], 1220, 2, 11, 0, 2);
	recv(&r[2], 1300, 1, 0, 0, 8, 1100);
	recv(&r[2], 1310, 1, 11, 0, 2, 0);
	recv(&r[2], 1320, 1, 10, 0, 1, 0);
	send(&r[2], 1400, 3, 0, 0, 8);
	recv(&r[3], 1500, 2, 0, 0, 8, 1300);
	send(&r[3], 1600, 0, 0, 0, 8);
	recv(&r[0], 1700, 3, 0, 0, 8, 600);
	send(&r[0], 1800, 1, 5, 1, 100); /* on {0, 2}: to world rank 2 */
	recv(&r[2], 1900, 0, 5, 1, 100, 400);
	recv(&r[3], 1950, 1, 99, 0, 4, 10); /* never sent */
	for (i = 0; i < 4; i++)
		coll(&r[i], 2000 + 10 * (uint64_t)i, STRC_COLL_BARRIER, 0, -1, 50);
}

static void read_ranks(struct rank *r, struct strc_file **g, int n)
{
	int i;

	for (i = 0; i < n; i++)
		g[i] = through_file(&r[i]);
}

/* The event of a reference. */
static const struct strc_event *at(struct strc_file *const *g, const struct mm_ref *x)
{
	return &g[x->proc]->threads[x->thr].ev[x->ev];
}

static void test_match(void **state)
{
	struct rank r[4];
	struct strc_file *g[4];
	struct mm_run mm;
	char err[256];
	size_t i;

	(void)state;
	four_ranks(r);
	read_ranks(r, g, 4);
	assert_int_equal(mm_match(&mm, (const struct strc_file *const *)g, 4, err, sizeof(err)), 0);
	assert_int_equal(mm.nranks, 4);
	assert_int_equal(mm.ncomms, 2);
	assert_int_equal(mm.sends, 7);
	assert_int_equal(mm.recvs, 8);
	assert_int_equal(mm.nmsgs, 7);
	assert_int_equal(mm.unmatched_sends, 0);
	assert_int_equal(mm.unmatched_recvs, 1);
	for (i = 0; i < mm.nmsgs; i++) {
		const struct mm_msg *m = &mm.msgs[i];
		const struct strc_mpi *s = strc_mpi_of(g[m->send.proc], at(g, &m->send));
		const struct strc_mpi *v = strc_mpi_of(g[m->recv.proc], at(g, &m->recv));

		assert_int_equal(s->tag, v->tag);
		assert_int_equal(s->bytes, v->bytes);
		assert_true(at(g, &m->send)->t < at(g, &m->recv)->t);
		assert_int_equal(mm_msg_of(&mm, 0, m->send.proc, m->send.thr, m->send.ev), i);
		assert_int_equal(mm_msg_of(&mm, 1, m->recv.proc, m->recv.thr, m->recv.ev), i);
	}
	assert_int_equal(mm.ncolls, 1);
	assert_int_equal(mm.colls[0].n, 4);
	assert_int_equal(mm.coll_incomplete, 0);
	mm_free(&mm);
	for (i = 0; i < 4; i++)
		strc_free(g[i]);
}

static void test_match_refused(void **state)
{
	struct rank r[2];
	struct strc_file *g[2];
	struct mm_run mm;
	char err[256];

	(void)state;
	rank_init(&r[0], 1, 4);
	rank_init(&r[1], 1, 4);
	g[0] = through_file(&r[0]);
	g[1] = through_file(&r[1]);
	assert_int_equal(mm_match(&mm, (const struct strc_file *const *)g, 2, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "are of MPI rank 1"));
	strc_free(g[1]);
	rank_init(&r[1], 0, 3);
	g[1] = through_file(&r[1]);
	assert_int_equal(mm_match(&mm, (const struct strc_file *const *)g, 2, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "runs of 4 and 3 ranks"));
	strc_free(g[0]);
	strc_free(g[1]);
}

/*
 * Rank 0 runs 100 calls (200 probes of 10 ticks) and then waits for a message that rank 1 sends
 * late, with one probe before it. Times from t0 = 100 (both THREAD_BEGINs):
 *   rank 1: MPI_SEND measured 4900, delay 10 (its THREAD_BEGIN): approximated 4890; the
 *           message leaves after the send's probe: ready at 4910 measured, 4900 approximated
 *   rank 0: MPI_RECV measured 5000, its call began at 4700 (wait 300); delay 10 + 2000 = 2010:
 *           ready at 4700 measured, 2690 approximated. The source was ready last:
 *           t_a = 4890 + (5000 - max(4700, 4910)) = 4980. Alone, 5000 - 2010 = 2990 < 4890.
 */
static void test_message_edge(void **state)
{
	struct rank r[2];
	struct strc_file *g[2];
	struct pt_costs c = { .alpha = 10, .skip = 1, .dt = 1 };
	struct mm_run mm;
	struct pt_trace t;
	char err[256];
	const struct pt_thread *r0, *r1;

	(void)state;
	rank_init(&r[0], 0, 2);
	rank_init(&r[1], 1, 2);
	calls(&r[0], 200, 100);
	recv(&r[0], 5100, 1, 0, 0, 8, 300);
	send(&r[1], 5000, 0, 0, 0, 8);
	read_ranks(r, g, 2);
	assert_int_equal(mm_match(&mm, (const struct strc_file *const *)g, 2, err, sizeof(err)), 0);
	assert_int_equal(mm.nmsgs, 1);
	assert_int_equal(pt_init_run(&t, (const struct strc_file *const *)g, 2, &mm, &c), 0);
	assert_int_equal(t.nedges, 1);
	assert_int_equal(t.edges[0].kind, PT_EDGE_MESSAGE);
	assert_int_equal(t.edges[0].wait, 300);
	pt_events(&t);
	r0 = &t.th[pt_thread_of(&t, 0, 0)];
	r1 = &t.th[pt_thread_of(&t, 1, 0)];
	assert_int_equal(t.t0, 100);
	assert_float_equal(r1->ta[1], 5000 - 100 - 10, 1e-9);
	assert_float_equal(r0->ta[201], 4980, 1e-9);
	assert_int_equal(t.waited, 1);
	assert_int_equal(t.dep_before, 1);
	pt_free(&t);
	mm_free(&mm);
	strc_free(g[0]);
	strc_free(g[1]);
}

/* The same message when the receiver was ready last: its own (local) time stays. */
static void test_message_no_wait(void **state)
{
	struct rank r[2];
	struct strc_file *g[2];
	struct pt_costs c = { .alpha = 10, .skip = 1, .dt = 1 };
	struct mm_run mm;
	struct pt_trace t;
	char err[256];

	(void)state;
	rank_init(&r[0], 0, 2);
	rank_init(&r[1], 1, 2);
	send(&r[1], 1000, 0, 0, 0, 8);
	recv(&r[0], 5100, 1, 0, 0, 8, 20);
	read_ranks(r, g, 2);
	assert_int_equal(mm_match(&mm, (const struct strc_file *const *)g, 2, err, sizeof(err)), 0);
	assert_int_equal(pt_init_run(&t, (const struct strc_file *const *)g, 2, &mm, &c), 0);
	pt_events(&t);
	assert_float_equal(t.th[0].ta[1], 5100 - 100 - 10, 1e-9);
	assert_int_equal(t.waited, 0);
	assert_int_equal(t.dep_before, 0);
	pt_free(&t);
	mm_free(&mm);
	strc_free(g[0]);
	strc_free(g[1]);
}

/*
 * A barrier of two ranks: rank 0 enters late (measured 4900 from t0, delay 10), rank 1 early
 * (1010) but with 2010 of delay. Each end follows the later approximated begin:
 *   begins approximated: rank 0 4890, rank 1 1010 - 2010 = -1000
 *   rank 1's end: 4890 + (5010 - max(1010, 4900)) = 5000 (alone: 5010 - 2010 = 3000)
 *   rank 0's end: its own begin was the later: 4890 + (5000 - 4900) = 4990
 */
static void test_barrier(void **state)
{
	struct rank r[2];
	struct strc_file *g[2];
	struct pt_costs c = { .alpha = 10, .skip = 1, .dt = 1 };
	struct mm_run mm;
	struct pt_trace t;
	char err[256];

	(void)state;
	rank_init(&r[0], 0, 2);
	rank_init(&r[1], 1, 2);
	coll(&r[0], 5100, STRC_COLL_BARRIER, 0, -1, 100);
	calls(&r[1], 200, 100);
	coll(&r[1], 5110, STRC_COLL_BARRIER, 0, -1, 4000);
	read_ranks(r, g, 2);
	assert_int_equal(mm_match(&mm, (const struct strc_file *const *)g, 2, err, sizeof(err)), 0);
	assert_int_equal(pt_init_run(&t, (const struct strc_file *const *)g, 2, &mm, &c), 0);
	assert_int_equal(t.nedges, 2);
	assert_int_equal(t.edges[0].kind, PT_EDGE_COLL);
	pt_events(&t);
	assert_int_equal(t.broken, 0);
	assert_float_equal(t.th[0].ta[1], 4990, 1e-9);
	assert_float_equal(t.th[1].ta[201], 5000, 1e-9);
	assert_int_equal(t.waited, 1);
	assert_int_equal(t.dep_before, 1);
	pt_free(&t);
	mm_free(&mm);
	strc_free(g[0]);
	strc_free(g[1]);
}

/* A broadcast: only the non-root waits for the root's begin. */
static void test_bcast(void **state)
{
	struct rank r[3];
	struct strc_file *g[3];
	struct pt_costs c = { .alpha = 10, .skip = 1, .dt = 1 };
	struct mm_run mm;
	struct pt_trace t;
	char err[256];
	int i;

	(void)state;
	for (i = 0; i < 3; i++) {
		rank_init(&r[i], i, 3);
		coll(&r[i], 1000 + 10 * (uint64_t)i, STRC_COLL_BCAST, 0, 1, 50);
	}
	read_ranks(r, g, 3);
	assert_int_equal(mm_match(&mm, (const struct strc_file *const *)g, 3, err, sizeof(err)), 0);
	assert_int_equal(pt_init_run(&t, (const struct strc_file *const *)g, 3, &mm, &c), 0);
	assert_int_equal(t.nedges, 2);
	assert_int_equal(t.edges[0].src_thr, 1);
	assert_int_equal(t.edges[1].src_thr, 1);
	pt_events(&t);
	assert_int_equal(t.broken, 0);
	pt_free(&t);
	mm_free(&mm);
	for (i = 0; i < 3; i++)
		strc_free(g[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_match_refused),
		cmocka_unit_test(test_message_edge),
		cmocka_unit_test(test_message_no_wait),
		cmocka_unit_test(test_barrier),
		cmocka_unit_test(test_bcast),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
