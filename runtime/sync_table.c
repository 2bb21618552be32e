/* SPDX-License-Identifier: MIT */
/*
 * The table of synchronization objects: 2^16 slots mapped once at start (no malloc), keyed by the
 * object's address, open addressing with a bounded linear probe, slots claimed by
 * compare-and-swap and never freed. When an object finds no slot within RT_PROBE of its home
 * (the table is nearly full), its calls are counted in one overflow slot per kind, flagged
 * SPROF_SYNC_F_OVERFLOW in the profile: totals stay right, that object loses its identity.
 * An address reused by another object after pthread_*_destroy keeps the first object's slot.
 */
#include "rt.h"
#include "sync_rule.h"
#include "sync_inline.h"

#include <string.h>

#define TABLE_SIZE (1u << RT_SYNC_BITS)
#define RT_PROBE 64

struct rt_sync_obj *rt_sync_table;
#define table rt_sync_table
static struct rt_sync_obj overflow[SPROF_SYNC_KINDS];

int rt_sync_table_init(void)
{
	uint32_t k;

	table = rt_map((size_t)TABLE_SIZE * sizeof(*table));
	for (k = 0; k < SPROF_SYNC_KINDS; k++) {
		atomic_store(&overflow[k].kind, k);
		atomic_store(&overflow[k].flags, SPROF_SYNC_F_OVERFLOW);
	}
	return table ? 0 : -1;
}

#define home rt_sync_home

static RT_COLD struct rt_sync_obj *claim(uintptr_t key, uint32_t kind, uintptr_t site)
{
	uint32_t h = home(key), i;

	for (i = 0; i < RT_PROBE; i++) {
		struct rt_sync_obj *o = &table[(h + i) & (TABLE_SIZE - 1)];
		uintptr_t k = atomic_load_explicit(&o->key, memory_order_acquire);

		if (k == 0) {
			uintptr_t expect = 0;

			if (!atomic_compare_exchange_strong(&o->key, &expect, key) && expect != key)
				continue; /* another object took it first */
			if (expect == 0) {
				atomic_store_explicit(&o->site, site, memory_order_relaxed);
				atomic_store_explicit(&o->kind, kind, memory_order_relaxed);
			}
			return o;
		}
		if (k == key)
			return o;
	}
	return &overflow[kind < SPROF_SYNC_KINDS ? kind : 0];
}

/* The object at `addr`, made on first sight with `site` (the caller's code address). */
struct rt_sync_obj *rt_sync_find(const void *addr, uint32_t kind, uintptr_t site)
{
	uintptr_t key = (uintptr_t)addr;
	struct rt_sync_obj *o;

	if (unlikely(!table))
		return &overflow[kind < SPROF_SYNC_KINDS ? kind : 0];
	o = &table[home(key)];
	if (likely(atomic_load_explicit(&o->key, memory_order_relaxed) == key))
		return o;
	return claim(key, kind, site);
}

/* pthread_*_init names the object by its initialisation call, unless it was used before. */
void rt_sync_set_init_site(struct rt_sync_obj *o, uintptr_t site)
{
	if (atomic_load_explicit(&o->flags, memory_order_relaxed) & SPROF_SYNC_F_OVERFLOW)
		return;
	if (!atomic_load_explicit(&o->acquires, memory_order_relaxed) &&
	    !atomic_load_explicit(&o->contended, memory_order_relaxed)) {
		atomic_store_explicit(&o->site, site, memory_order_relaxed);
		atomic_fetch_or_explicit(&o->flags, SPROF_SYNC_F_INIT, memory_order_relaxed);
	}
}

static uint64_t ld(_Atomic uint64_t *p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

static int used(struct rt_sync_obj *o)
{
	return ld(&o->acquires) | ld(&o->shared) | ld(&o->contended) | ld(&o->failed) |
	       ld(&o->timeouts) | ld(&o->releases) | ld(&o->broadcasts);
}

/* The trace's id of an object: its slot, or beyond the table its kind's overflow entry. */
uint32_t rt_sync_id(const struct rt_sync_obj *o)
{
	if (table && o >= table && o < table + TABLE_SIZE)
		return (uint32_t)(o - table);
	return TABLE_SIZE + (uint32_t)(o - overflow);
}

/* The module holding a code address, and the address as its ELF file sees it. */
int32_t rt_sync_site_module(uintptr_t addr, uint64_t *vaddr)
{
	uint32_t i, n = rt_module_count();

	for (i = 0; i < n; i++) {
		const struct rt_module *m = rt_module_at(i);

		if (addr >= m->lo && addr < m->hi) {
			*vaddr = addr - m->bias;
			return (int32_t)i;
		}
	}
	*vaddr = 0;
	return -1;
}

static void write_obj(struct writer *w, struct rt_sync_obj *o, uintptr_t key)
{
	struct sprof_buf *b = rt_writer_record(w, SPROF_REC_SYNC, SPROF_SYNC_SIZE);
	uintptr_t site = atomic_load_explicit(&o->site, memory_order_relaxed);
	uint64_t vaddr;
	int32_t mod = site ? rt_sync_site_module(site, &vaddr) : (vaddr = 0, -1);

	sprof_put_u32(b, atomic_load_explicit(&o->kind, memory_order_relaxed));
	sprof_put_u32(b, atomic_load_explicit(&o->flags, memory_order_relaxed) & 0xffu);
	sprof_put_u64(b, key);
	sprof_put_u64(b, site);
	sprof_put_u32(b, (uint32_t)mod);
	sprof_put_u32(b, 0);
	sprof_put_u64(b, vaddr);
	sprof_put_u64(b, ld(&o->acquires));
	sprof_put_u64(b, ld(&o->shared));
	sprof_put_u64(b, ld(&o->contended));
	sprof_put_u64(b, ld(&o->failed));
	sprof_put_u64(b, ld(&o->timeouts));
	sprof_put_u64(b, ld(&o->releases));
	sprof_put_u64(b, ld(&o->broadcasts));
	sprof_put_u64(b, rt_ticks_to_ns(ld(&o->wait)));
	sprof_put_u64(b, rt_ticks_to_ns(ld(&o->wait_max)));
	sprof_put_u64(b, rt_ticks_to_ns(ld(&o->hold)));
	sprof_put_u64(b, ld(&o->hold_samples));
}

/*
 * x0 and shift hold delays inherited from other threads, counted by the runtime with its start-up
 * costs; the tool counts each thread's own probe pairs with the file's CALIB costs (the in-run
 * batches when there are enough). So that a probe pair costs the same in every delay, their
 * probe-cost parts are priced again here at the costs the file says (docs/measurement.md).
 */
static void write_comp(struct writer *w, const struct rt_thread *t)
{
	struct sprof_buf *b = rt_writer_record(w, SPROF_REC_SYNC_COMP, SPROF_SYNC_COMP_SIZE);
	const struct rt_sync_thread *s = &t->sync;
	double tpn = rt_ticks_per_ns();
	double price = rt_insitu_on ? rt_insitu_mean_price() : rt_calib.o_full;
	double k = rt_sync_full_ns > 0 && price > 0 ? price / rt_sync_full_ns : 1;
	double x0 = sync_reprice((double)s->x0, (double)s->x0q, k);
	double shift = sync_reprice((double)s->shift, (double)s->shiftq, k);

	sprof_put_u32(b, t->index);
	sprof_put_u32(b, (uint32_t)(s->wakes_unneeded < UINT32_MAX ? s->wakes_unneeded : UINT32_MAX));
	sprof_put_u64(b, t->probes);
	sprof_put_u64(b, t->skips);
	sprof_put_u64(b, s->ops);
	sprof_put_f64(b, rt_sync_o_ns);
	sprof_put_u64(b, rt_ticks_to_ns(t->calib_ticks));
	sprof_put_u64(b, (uint64_t)(int64_t)(x0 / tpn));
	sprof_put_u64(b, (uint64_t)(int64_t)(shift / tpn));
	sprof_put_u64(b, s->waits);
	sprof_put_u64(b, rt_ticks_to_ns(s->wait));
	sprof_put_u64(b, (uint64_t)(int64_t)((double)s->wait_c / tpn));
}

static void reset(struct rt_sync_obj *o)
{
	_Atomic uint64_t *c[] = { &o->acquires, &o->shared, &o->contended, &o->failed,
				  &o->timeouts, &o->releases, &o->broadcasts, &o->wait,
				  &o->wait_max, &o->hold, &o->hold_samples };
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		atomic_store_explicit(c[i], 0, memory_order_relaxed);
	atomic_store_explicit(&o->x, 0, memory_order_relaxed);
}

/* A forked child's profile starts empty: the objects stay, their counts restart. */
void rt_sync_table_reset(void)
{
	uint32_t i;

	for (i = 0; table && i < TABLE_SIZE; i++)
		if (atomic_load_explicit(&table[i].key, memory_order_relaxed))
			reset(&table[i]);
	for (i = 0; i < SPROF_SYNC_KINDS; i++)
		reset(&overflow[i]);
}

/* The SYNC records of every object used, and a SYNC_COMP record per thread. */
void rt_sync_write(struct writer *w)
{
	const struct rt_thread *t;
	uint32_t i;

	if (!rt_sync_on)
		return;
	for (i = 0; table && i < TABLE_SIZE; i++) {
		uintptr_t key = atomic_load_explicit(&table[i].key, memory_order_relaxed);

		if (key && key != RT_SYNC_DEAD && used(&table[i]))
			write_obj(w, &table[i], key);
	}
	for (i = 0; i < SPROF_SYNC_KINDS; i++)
		if (used(&overflow[i]))
			write_obj(w, &overflow[i], 0);
	for (t = atomic_load(&rt_threads); t; t = t->next)
		write_comp(w, t);
	rt_sync_collide_log();
}
