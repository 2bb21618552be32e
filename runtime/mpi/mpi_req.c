/* SPDX-License-Identifier: MIT */
/*
 * Non-blocking requests: a map from request to what its completion needs (receive or send, the
 * source asked for, the communicator, the piggyback slot), and the Wait and Test families that
 * complete them. A receive's bytes, peer and delay are known only at its completion: the rule
 * applies there, with the completing call's wait and, when it completes several receives, the
 * least delay among their senders (the last message to arrive decides when the call returns).
 */
#include "mpi_rt.h"

#include <sys/mman.h>

#define REQS 8192       /* map entries */
#define SLOTS 4096      /* piggyback slots of requests in flight */
#define PROBES 64
#define SCRATCH 4096    /* requests per Wait/Test call that are looked at */

static struct mpi_req_ent *reqs;
static struct mpi_pb *slots, spare; /* spare: when every slot is in flight */
struct mpi_pb mpi_blocking_slot[2];
static uint32_t free_slots[SLOTS], nfree;
static struct mpi_req_ent *found[SCRATCH];
static MPI_Status scratch_st[SCRATCH];

int mpi_req_init(void)
{
	uint32_t i;
	void *p = mmap(NULL, REQS * sizeof(*reqs) + SLOTS * sizeof(*slots),
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	reqs = p;
	slots = (struct mpi_pb *)(reqs + REQS);
	for (i = 0; i < REQS; i++)
		reqs[i].req = MPI_REQUEST_NULL;
	/* last in, first out: a steady pattern reuses the same slots, so the same struct types */
	for (i = 0; i < SLOTS; i++)
		free_slots[i] = SLOTS - 1 - i;
	nfree = SLOTS;
	return 0;
}

struct mpi_pb *mpi_slot_get(void)
{
	return nfree ? &slots[free_slots[--nfree]] : &spare;
}

/* Slots not in the pool (requests in flight, or given up by MPI_Request_free): a diagnostic. */
uint32_t mpi_slots_out(void)
{
	return SLOTS - nfree;
}

void mpi_slot_put(struct mpi_pb *s)
{
	if (s && s != &spare && nfree < SLOTS)
		free_slots[nfree++] = (uint32_t)(s - slots);
}

static uint32_t req_hash(MPI_Request r)
{
	return (uint32_t)(((uint64_t)(uintptr_t)r * 0x9e3779b97f4a7c15ull) >> 40) % REQS;
}

struct mpi_req_ent *mpi_req_put(MPI_Request req, int recv, int src, struct mpi_comm_ent *c,
				struct mpi_pb *slot)
{
	struct mpi_req_ent *e, *tomb = NULL;
	uint32_t i, h = req_hash(req);

	if (!reqs || req == MPI_REQUEST_NULL) {
		mpi_slot_put(slot);
		return NULL;
	}
	for (i = 0; i < PROBES; i++) {
		e = &reqs[(h + i) % REQS];
		if (e->req == req) /* a handle reused after a completion we did not see */
			goto set;
		if (e->req == MPI_REQUEST_NULL) {
			if (!tomb)
				tomb = e; /* the first free entry */
			if (!e->tomb)
				break;    /* never used: the handle is not further on */
		}
	}
	if (!tomb) {
		mpi_slot_put(slot); /* the map is full: this request is not followed */
		return NULL;
	}
	e = tomb;
set:
	if (e->req == req && e->coll_shape)
		mpi_icoll_drop(e); /* its delay exchange may still use its slot */
	else if (e->req == req)
		mpi_slot_put(e->slot);
	*e = (struct mpi_req_ent){ .req = req, .recv = (uint8_t)recv, .pb = slot != NULL,
				   .src = src, .comm = c, .slot = slot, .dreq = MPI_REQUEST_NULL };
	return e;
}

struct mpi_req_ent *mpi_req_find(MPI_Request req)
{
	struct mpi_req_ent *e;
	uint32_t i, h;

	if (!reqs || req == MPI_REQUEST_NULL)
		return NULL;
	h = req_hash(req);
	for (i = 0; i < PROBES; i++) {
		e = &reqs[(h + i) % REQS];
		if (e->req == req)
			return e;
		if (e->req == MPI_REQUEST_NULL && !e->tomb)
			return NULL;
	}
	return NULL;
}

/* A cancelled operation transferred nothing: its status says so (asked only when cancelled). */
static int was_cancelled(const struct mpi_req_ent *e, const MPI_Status *st)
{
	int flag = 0;

	return e->cancelled && PMPI_Test_cancelled(st, &flag) == MPI_SUCCESS && flag;
}

static void complete(struct mpi_round *r, struct mpi_req_ent *e, MPI_Status *st)
{
	uint64_t bytes;

	if (!e || (e->persist && !e->active))
		return; /* an inactive persistent request completes at once, with nothing */
	if (e->coll_shape) { /* a non-blocking collective (mpi_icoll.c) */
		mpi_icoll_complete(r, e);
		e->req = MPI_REQUEST_NULL;
		e->tomb = 1;
		return;
	}
	if (e->recv && st->MPI_SOURCE != MPI_PROC_NULL && !was_cancelled(e, st)) {
		bytes = e->pb ? mpi_pb_status(st, 1) : mpi_status_bytes(st);
		mpi.stat[r->rid].bytes_recv += bytes;
		mpi_peer_add(e->comm, st->MPI_SOURCE, st->MPI_TAG, SPROF_MPI_RECEIVED, bytes);
		if (munlikely(mpi.tr_recv != NULL) && st->MPI_SOURCE >= 0)
			mpi.tr_recv(st->MPI_SOURCE, st->MPI_TAG, e->comm->tr_id, bytes, r->t0);
		mpi.wildcard += e->src == MPI_ANY_SOURCE;
		if (e->pb) {
			int64_t x_s = mpi_sender_delay(e->slot, mpi_real_at(r->t0));

			if (!r->any_pb || x_s < r->x_s)
				r->x_s = x_s;
			r->any_pb = 1;
			if (e->src == MPI_ANY_SOURCE)
				mpi_wildcard(e->comm, e->slot);
		}
	}
	e->cancelled = 0;
	if (e->persist) { /* the handle stays the program's, inactive, until MPI_Request_free */
		e->active = 0;
		return;
	}
	mpi_slot_put(e->slot);
	e->req = MPI_REQUEST_NULL;
	e->tomb = 1;
}

/* The round's rule: the call ended when the last of what it completed was there, so the least
 * of the new delays that its receives (sync_rule_wait) and collectives (mpi_rule_icoll) give. */
static void finish(struct mpi_round *r, uint64_t t0, uint64_t t1, int64_t x_r)
{
	uint64_t w = mpi_ns(t1 - t0);
	int64_t x_new = x_r + (int64_t)w;

	mpi_count(r->rid, t0, t1, 0, 0);
	if (r->any_pb && r->x_s < x_new)
		x_new = r->x_s;
	if (r->any_coll && r->x_coll < x_new)
		x_new = r->x_coll;
	if (r->any_pb || r->any_coll)
		mpi_rule_to(r->rid, w, x_r, x_new);
	if (munlikely(mpi_icoll_pending))
		mpi_icoll_settle(r->any_pb || r->any_coll, x_new, w);
}

/* Before the call: the requests' entries (the call sets completed handles to NULL). */
static int look_up(int n, const MPI_Request *rq)
{
	int i, any = 0;

	for (i = 0; i < n && i < SCRATCH; i++)
		any |= (found[i] = mpi_req_find(rq[i])) != NULL;
	return any;
}

static int followed(void)
{
	return mlikely(mpi.on) && !mpi.multiple;
}

/* Delay exchanges of non-blocking collectives that completed since are applied first. */
#define START()                                                          \
	uint64_t t0 = poll_pending();                                    \
	int64_t x_r = mpi.comp && followed() ? mpi_delay() : 0;          \
	r.x_r = x_r

static uint64_t poll_pending(void)
{
	if (munlikely(mpi_icoll_pending) && followed())
		mpi_icoll_poll(0);
	return mpi_now();
}

MPI_EXPORT int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
	MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
	struct mpi_round r = { .rid = SPROF_MPI_WAIT };
	struct mpi_req_ent *e = followed() ? mpi_req_find(*req) : NULL;
	START();
	r.t0 = t0;
	int ret = PMPI_Wait(req, e ? st : status);

	if (!mpi.on)
		return ret;
	if (ret == MPI_SUCCESS)
		complete(&r, e, st);
	finish(&r, t0, mpi_now(), x_r);
	return ret;
}

MPI_EXPORT int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
	MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
	struct mpi_round r = { .rid = SPROF_MPI_TEST };
	struct mpi_req_ent *e = followed() ? mpi_req_find(*req) : NULL;
	START();
	r.t0 = t0;
	int ret = PMPI_Test(req, flag, e ? st : status);

	if (!mpi.on)
		return ret;
	if (ret == MPI_SUCCESS && *flag)
		complete(&r, e, st);
	finish(&r, t0, mpi_now(), x_r);
	return ret;
}

/* The statuses to give MPI: the program's, or ours when it ignores them and we need them. */
static MPI_Status *statuses(int n, MPI_Status *given, int any)
{
	if (given != MPI_STATUSES_IGNORE || !any || n > SCRATCH)
		return given;
	return scratch_st;
}

MPI_EXPORT int MPI_Waitall(int n, MPI_Request reqs_[], MPI_Status sts[])
{
	struct mpi_round r = { .rid = SPROF_MPI_WAITALL };
	int any = followed() && look_up(n, reqs_), i, ret;
	MPI_Status *st = statuses(n, sts, any);
	START();
	r.t0 = t0;

	ret = PMPI_Waitall(n, reqs_, st);
	if (!mpi.on)
		return ret;
	if (ret == MPI_SUCCESS && any && st != MPI_STATUSES_IGNORE)
		for (i = 0; i < n && i < SCRATCH; i++)
			complete(&r, found[i], &st[i]);
	finish(&r, t0, mpi_now(), x_r);
	return ret;
}

MPI_EXPORT int MPI_Testall(int n, MPI_Request reqs_[], int *flag, MPI_Status sts[])
{
	struct mpi_round r = { .rid = SPROF_MPI_TESTALL };
	int any = followed() && look_up(n, reqs_), i, ret;
	MPI_Status *st = statuses(n, sts, any);
	START();
	r.t0 = t0;

	ret = PMPI_Testall(n, reqs_, flag, st);
	if (!mpi.on)
		return ret;
	if (ret == MPI_SUCCESS && *flag && any && st != MPI_STATUSES_IGNORE)
		for (i = 0; i < n && i < SCRATCH; i++)
			complete(&r, found[i], &st[i]);
	finish(&r, t0, mpi_now(), x_r);
	return ret;
}

static int any_one(int rid, int n, MPI_Request reqs_[], int *idx, int *flag, MPI_Status *status)
{
	MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
	struct mpi_round r = { .rid = rid };
	int any = followed() && look_up(n, reqs_), ret;
	START();
	r.t0 = t0;

	ret = flag ? PMPI_Testany(n, reqs_, idx, flag, any ? st : status)
		   : PMPI_Waitany(n, reqs_, idx, any ? st : status);
	if (!mpi.on)
		return ret;
	if (ret == MPI_SUCCESS && any && (!flag || *flag) && *idx != MPI_UNDEFINED &&
	    *idx >= 0 && *idx < SCRATCH)
		complete(&r, found[*idx], st);
	finish(&r, t0, mpi_now(), x_r);
	return ret;
}

MPI_EXPORT int MPI_Waitany(int n, MPI_Request reqs_[], int *idx, MPI_Status *status)
{
	return any_one(SPROF_MPI_WAITANY, n, reqs_, idx, NULL, status);
}

MPI_EXPORT int MPI_Testany(int n, MPI_Request reqs_[], int *idx, int *flag, MPI_Status *status)
{
	return any_one(SPROF_MPI_TESTANY, n, reqs_, idx, flag, status);
}

static int some(int rid, int n, MPI_Request reqs_[], int *outcount, int idx[], MPI_Status sts[])
{
	struct mpi_round r = { .rid = rid };
	int any = followed() && look_up(n, reqs_), k, ret;
	MPI_Status *st = statuses(n, sts, any);
	START();
	r.t0 = t0;

	ret = rid == SPROF_MPI_WAITSOME ? PMPI_Waitsome(n, reqs_, outcount, idx, st)
					: PMPI_Testsome(n, reqs_, outcount, idx, st);
	if (!mpi.on)
		return ret;
	if (ret == MPI_SUCCESS && any && st != MPI_STATUSES_IGNORE && *outcount != MPI_UNDEFINED)
		for (k = 0; k < *outcount; k++)
			if (idx[k] >= 0 && idx[k] < SCRATCH)
				complete(&r, found[idx[k]], &st[k]);
	finish(&r, t0, mpi_now(), x_r);
	return ret;
}

MPI_EXPORT int MPI_Waitsome(int n, MPI_Request reqs_[], int *outcount, int idx[],
			    MPI_Status sts[])
{
	return some(SPROF_MPI_WAITSOME, n, reqs_, outcount, idx, sts);
}

MPI_EXPORT int MPI_Testsome(int n, MPI_Request reqs_[], int *outcount, int idx[],
			    MPI_Status sts[])
{
	return some(SPROF_MPI_TESTSOME, n, reqs_, outcount, idx, sts);
}

/*
 * MPI_Cancel: the completion will say whether the operation was cancelled (then nothing was
 * received). MPI_Request_free: the entry goes; an operation still in flight may yet write or
 * read its piggyback slot, so that slot is given up rather than reused.
 */
MPI_EXPORT int MPI_Cancel(MPI_Request *req)
{
	struct mpi_req_ent *e = followed() ? mpi_req_find(*req) : NULL;

	if (e)
		e->cancelled = 1;
	return PMPI_Cancel(req);
}

MPI_EXPORT int MPI_Request_free(MPI_Request *req)
{
	struct mpi_req_ent *e = followed() ? mpi_req_find(*req) : NULL;
	int ret = PMPI_Request_free(req);

	if (e && ret == MPI_SUCCESS) {
		if (e->coll_shape)
			mpi_icoll_drop(e);
		else if (e->persist && !e->active)
			mpi_slot_put(e->slot);
		e->req = MPI_REQUEST_NULL;
		e->tomb = 1;
	}
	return ret;
}
