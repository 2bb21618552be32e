/* SPDX-License-Identifier: MIT */
/*
 * The communicators and the peer table of libsonde-mpi.so, and its records in the profile
 * (MPI_CALL, MPI_PEER, MPI_COMP: docs/format-profile.md). Tables are mapped once at MPI_Init.
 */
#include "mpi_rt.h"

#include <string.h>
#include <sys/mman.h>

#define COMMS 1024
#define PEERS 8192
#define PROBES 32

struct peer_ent {
	uint64_t key; /* comm << 33 | dir << 32 | peer, plus 1; 0 empty */
	int32_t tag, flags;
	uint64_t messages, bytes;
};

static struct mpi_comm_ent *comms;
static uint32_t ncomms;
static struct peer_ent *peers, overflow[2];
static struct peer_ent *last_peer[2]; /* by direction: a loop talks to the same peer */
struct mpi_comm_ent *mpi_world_ent;

static void *map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static uint32_t hash64(uint64_t k)
{
	return (uint32_t)((k * 0x9e3779b97f4a7c15ull) >> 40);
}

/* Ranks of a communicator's (remote) group in MPI_COMM_WORLD: on first sight only. */
static void translate(struct mpi_comm_ent *c, MPI_Comm comm)
{
	MPI_Group g, wg;
	int i, *in;

	PMPI_Comm_test_inter(comm, &c->inter);
	if (c->inter) {
		PMPI_Comm_remote_size(comm, &c->size);
		PMPI_Comm_remote_group(comm, &g);
	} else {
		PMPI_Comm_size(comm, &c->size);
		PMPI_Comm_group(comm, &g);
	}
	c->world = c->size > 0 ? map((size_t)c->size * 2 * sizeof(int)) : NULL;
	if (c->world) {
		in = c->world + c->size;
		for (i = 0; i < c->size; i++)
			in[i] = i;
		PMPI_Comm_group(MPI_COMM_WORLD, &wg);
		if (PMPI_Group_translate_ranks(g, c->size, in, wg, c->world) != MPI_SUCCESS)
			memcpy(c->world, in, (size_t)c->size * sizeof(int));
		PMPI_Group_free(&wg);
	}
	PMPI_Group_free(&g);
}

/* --trace: the communicator's DEF_COMM, with this rank in it and its members' world ranks. */
static void trace_comm(struct mpi_comm_ent *c, MPI_Comm comm)
{
	int r = -1;

	c->tr_id = 0xfffffu; /* STRC_ID_NONE: not traced */
	if (!mpi.tr_comm || c->inter)
		return;
	if (comm == MPI_COMM_WORLD) {
		c->tr_id = mpi.tr_comm(mpi.rank, mpi.size, NULL);
		return;
	}
	PMPI_Comm_rank(comm, &r);
	if (c->world)
		c->tr_id = mpi.tr_comm(r, c->size, c->world);
}

static struct mpi_comm_ent *comm_insert(MPI_Comm comm, uint32_t h)
{
	struct mpi_comm_ent *c;
	uint32_t i;

	for (i = 0; i < PROBES; i++) {
		c = &comms[(h + i) % COMMS];
		if (c->key == (uintptr_t)comm)
			return c;
		if (c->key == 0) {
			c->key = (uintptr_t)comm;
			c->id = ncomms++;
			c->last_wild_t = INT64_MIN;
			if (comm == MPI_COMM_SELF) {
				c->size = 1;
				c->world = map(2 * sizeof(int));
				if (c->world)
					c->world[0] = mpi.rank;
			} else if (comm != MPI_COMM_WORLD) {
				translate(c, comm);
			} else {
				c->size = mpi.size;
			}
			trace_comm(c, comm);
			return c;
		}
	}
	return &comms[COMMS]; /* the shared entry for what does not fit */
}

struct mpi_comm_ent *mpi_comm_slow(MPI_Comm comm)
{
	return comm_insert(comm, hash64((uintptr_t)comm) % COMMS);
}

struct mpi_comm_ent *mpi_comm_unknown(void)
{
	return &comms[COMMS];
}

/* MPI_Comm_free: a later communicator may get the same handle. */
void mpi_comm_forget(MPI_Comm comm)
{
	uint32_t i, h = hash64((uintptr_t)comm) % COMMS;

	if (!comms || comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF)
		return;
	for (i = 0; i < PROBES; i++) {
		struct mpi_comm_ent *c = &comms[(h + i) % COMMS];

		if (c->key == (uintptr_t)comm) {
			c->key = 1; /* a tombstone: no handle is 1 */
			return;
		}
		if (c->key == 0)
			return;
	}
}

int mpi_tables_init(void)
{
	comms = map((COMMS + 1) * sizeof(*comms));
	peers = map(PEERS * sizeof(*peers));
	if (!comms || !peers)
		return -1;
	comms[COMMS].id = UINT32_MAX;
	comms[COMMS].last_wild_t = INT64_MIN;
	comms[COMMS].key = 1;
	comms[COMMS].tr_id = 0xfffffu;
	mpi_world_ent = mpi_comm_slow(MPI_COMM_WORLD); /* id 0 */
	mpi_comm_slow(MPI_COMM_SELF);                  /* id 1 */
	return 0;
}

void mpi_peer_add(const struct mpi_comm_ent *c, int peer, int tag, uint32_t dir, uint64_t bytes)
{
	uint64_t key;
	uint32_t i, h;
	struct peer_ent *e;

	if (peer < 0 || mpi.multiple)
		return;
	peer = mpi_world_rank(c, peer);
	key = ((uint64_t)c->id << 33 | (uint64_t)dir << 32 | (uint32_t)peer) + 1;
	e = last_peer[dir & 1];
	if (mlikely(e && e->key == key && e->tag == tag))
		goto found;
	h = hash64(key ^ (uint64_t)(uint32_t)tag << 20);
	for (i = 0; i < PROBES; i++) {
		e = &peers[(h + i) % PEERS];
		if (e->key == key && e->tag == tag)
			goto found;
		if (e->key == 0) {
			e->key = key;
			e->tag = tag;
			goto found;
		}
	}
	e = &overflow[dir];
found:
	last_peer[dir & 1] = e;
	e->messages++;
	e->bytes += bytes;
}

/* ---- the records, written by libsonde.so's writer at the end (mpi_link.h) ---- */

static void write_calls(struct writer *w)
{
	struct sprof_mpi_call c;
	uint32_t r;

	for (r = 0; r < SPROF_MPI_ROUTINES; r++) {
		const struct mpi_stat *s = &mpi.stat[r];

		if (!s->calls)
			continue;
		c = (struct sprof_mpi_call){ .routine = r, .calls = s->calls,
					     .ns = sonde_rt_mpi_ns(s->ticks),
					     .max_ns = sonde_rt_mpi_ns(s->max_ticks),
					     .bytes_sent = s->bytes_sent,
					     .bytes_recv = s->bytes_recv };
		if (c.max_ns > c.ns)
			c.max_ns = c.ns;
		c.comp_ns = (int64_t)c.ns + s->comp_delta_ns;
		sprof_put_mpi_call(sonde_rt_mpi_record(w, SPROF_REC_MPI_CALL, SPROF_MPI_CALL_SIZE),
				   &c);
	}
}

static void write_peer(struct writer *w, const struct peer_ent *e, uint32_t flags)
{
	uint64_t k = e->key - 1;
	struct sprof_mpi_peer p = {
		.comm = (uint32_t)(k >> 33), .dir = (uint32_t)(k >> 32) & 1,
		.peer = flags ? -1 : (int32_t)(uint32_t)k, .tag = flags ? 0 : e->tag,
		.flags = flags, .messages = e->messages, .bytes = e->bytes,
	};

	sprof_put_mpi_peer(sonde_rt_mpi_record(w, SPROF_REC_MPI_PEER, SPROF_MPI_PEER_SIZE), &p);
}

static void write_comp(struct writer *w)
{
	uint64_t now = mpi_now(), start = sonde_rt_mpi_start();
	struct sprof_mpi_comp c = {
		.rank = (uint32_t)mpi.rank, .size = (uint32_t)mpi.size,
		.flags = (mpi.comp ? SPROF_MPI_PIGGYBACK : 0) |
			 (mpi.finalized ? SPROF_MPI_FINALIZED : 0) |
			 (mpi.multiple ? SPROF_MPI_MULTIPLE : 0),
		.thread_level = (uint32_t)mpi.thread_level,
		.calls = mpi.calls, .pb_calls = mpi.pb_calls,
		.o_call_ns = mpi.o_call_ns, .o_pb_ns = mpi.o_pb_ns,
		.o_init_ns = mpi.o_init_ns, .x_init_ns = mpi.x_init_ns,
		.extra_ns = sonde_rt_mpi_ns(mpi.extra_ticks),
		.waits = mpi.waits, .wait_ns = mpi.wait_ns, .wait_c_ns = mpi.wait_c_ns,
		.wildcard = mpi.wildcard, .reorders = mpi.reorders,
	};

	if (!mpi.finalized) { /* ended without MPI_Finalize: up to now */
		mpi.fin_ticks = now;
		mpi.o_fin_ns = mpi_overhead_ns();
		mpi.x_fin_ns = mpi.comp ? mpi_delay() : mpi.o_fin_ns;
	}
	c.o_fin_ns = mpi.o_fin_ns < mpi.o_init_ns ? mpi.o_init_ns : mpi.o_fin_ns;
	c.x_fin_ns = mpi.x_fin_ns;
	c.init_ns = mpi.init_ticks > start ? sonde_rt_mpi_ns(mpi.init_ticks - start) : 0;
	c.fin_ns = mpi.fin_ticks > start ? sonde_rt_mpi_ns(mpi.fin_ticks - start) : 0;
	if (c.fin_ns < c.init_ns)
		c.fin_ns = c.init_ns;
	sprof_put_mpi_comp(sonde_rt_mpi_record(w, SPROF_REC_MPI_COMP, SPROF_MPI_COMP_SIZE), &c);
}

void mpi_write(struct writer *w)
{
	uint32_t i;

	if (!mpi.size)
		return; /* MPI_Init never completed */
	write_calls(w);
	for (i = 0; peers && i < PEERS; i++)
		if (peers[i].key)
			write_peer(w, &peers[i], 0);
	for (i = 0; i < 2; i++)
		if (overflow[i].messages) {
			overflow[i].key = ((uint64_t)i << 32) + 1;
			write_peer(w, &overflow[i], SPROF_MPI_PEER_OVERFLOW);
		}
	write_comp(w);
}
