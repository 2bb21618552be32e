/* SPDX-License-Identifier: MIT */
/*
 * The table of sampled stacks (after DCPI): one process-wide open-addressing hash table, mapped
 * once with a fixed size, that every thread's signal handler updates without a lock. A stack
 * seen before costs a hash, a compare and two atomic adds; a new one claims an empty slot with a
 * compare-and-swap and its frames take room from a bump-allocated pool. When neither has room
 * the sample is dropped and counted: nothing is lost silently, nothing waits.
 *
 * A slot's state is 0 (empty), SLOT_BUSY (being filled: others pass it by, so one stack may get
 * two slots, which the tool merges) or the stack's hash with bit 0 set (ready: its fields are
 * published by the release store of the state).
 */
#include "sample.h"

#include <string.h>
#include <sys/mman.h>

#define SLOTS SMP_SLOTS
#define POOL_PCS (1u << 21)     /* frames of all the distinct stacks */
#define PROBES 64               /* slots looked at before a sample is dropped */
#define SLOT_BUSY 2u

struct slot {
	_Atomic uint64_t state;
	_Atomic uint64_t samples, periods;
	uint32_t thread, depth;
	uint64_t pcs;           /* index of the first frame in the pool */
};

static struct slot *slots;
static uint64_t *pool;
static _Atomic uint64_t pool_used;

static void *map_zero(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

int smp_table_init(void)
{
	slots = map_zero(SLOTS * sizeof(*slots));
	pool = map_zero(POOL_PCS * sizeof(*pool));
	return slots && pool ? 0 : -1;
}

/* In a forked child: fresh zero pages instead of the parent's samples (touched pages only). */
void smp_table_reset(void)
{
	if (slots)
		madvise(slots, SLOTS * sizeof(*slots), MADV_DONTNEED);
	if (pool)
		madvise(pool, POOL_PCS * sizeof(*pool), MADV_DONTNEED);
	atomic_store(&pool_used, 0);
}

static uint64_t stack_hash(uint32_t thread, const uint64_t *pcs, uint32_t depth)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)thread << 32) ^ depth;
	uint32_t i;

	for (i = 0; i < depth; i++)
		h = (h ^ pcs[i]) * 0xff51afd7ed558ccdull;
	return (h ^ (h >> 29)) | 1;
}

static int same_stack(const struct slot *s, uint32_t thread, const uint64_t *pcs, uint32_t depth)
{
	const uint64_t *p = pool + s->pcs;
	uint32_t i;

	if (s->thread != thread || s->depth != depth)
		return 0;
	for (i = 0; i < depth; i++)
		if (p[i] != pcs[i])
			return 0;
	return 1;
}

/* Fill a slot this thread claimed; 0, or -1 (slot given back) when the pool is full. */
static int fill(struct slot *s, uint64_t h, uint32_t thread, const uint64_t *pcs, uint32_t depth,
		uint64_t periods)
{
	uint64_t at = atomic_fetch_add_explicit(&pool_used, depth, memory_order_relaxed);
	uint32_t i;

	if (at + depth > POOL_PCS) {
		atomic_store_explicit(&s->state, 0, memory_order_release);
		return -1;
	}
	for (i = 0; i < depth; i++)
		pool[at + i] = pcs[i];
	s->pcs = at;
	s->thread = thread;
	s->depth = depth;
	atomic_store_explicit(&s->samples, 1, memory_order_relaxed);
	atomic_store_explicit(&s->periods, periods, memory_order_relaxed);
	atomic_store_explicit(&s->state, h, memory_order_release);
	return 0;
}

/* Count one sample of a stack (pcs[0] innermost); -1 when it could not be stored. */
int smp_table_add(uint32_t thread, const uint64_t *pcs, uint32_t depth, uint64_t periods)
{
	uint64_t h = stack_hash(thread, pcs, depth);
	uint32_t i = (uint32_t)(h >> 20) & (SLOTS - 1), k;

	if (!slots)
		return -1;
	for (k = 0; k < PROBES; k++, i = (i + 1) & (SLOTS - 1)) {
		struct slot *s = &slots[i];
		uint64_t st = atomic_load_explicit(&s->state, memory_order_acquire);

		if (st == 0 && atomic_compare_exchange_strong_explicit(
				       &s->state, &st, SLOT_BUSY, memory_order_acquire,
				       memory_order_acquire))
			return fill(s, h, thread, pcs, depth, periods);
		if (st == h && same_stack(s, thread, pcs, depth)) {
			atomic_fetch_add_explicit(&s->samples, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&s->periods, periods, memory_order_relaxed);
			return 0;
		}
	}
	return -1;
}

void smp_table_foreach(smp_visit_fn fn, void *arg)
{
	uint32_t i;

	if (!slots)
		return;
	for (i = 0; i < SLOTS; i++) {
		const struct slot *s = &slots[i];
		uint64_t st = atomic_load_explicit(&s->state, memory_order_acquire);

		if (st & 1)
			fn(arg, i, s->thread, s->depth, atomic_load(&s->samples),
			   atomic_load(&s->periods), pool + s->pcs);
	}
}
