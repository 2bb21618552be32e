/* SPDX-License-Identifier: MIT */
/*
 * The object table of the RECORD primitive (docs/dynamic.md, "Heap sync objects"): the
 * addresses a point's first argument carried (a mutex, an rwlock... the tool tells the kind),
 * each with the uses counted, the initialisations seen and the return address of the last one
 * (its site). Read by the control thread for RESOURCES (docs/protocol.md).
 *
 * Fixed size, mapped with one system call at the first recording, never grown nor freed:
 * open addressing over DYN_OBJ_SLOTS slots; a slot is claimed by one compare-and-swap of its
 * key (the address and the kind in one word) and never released, so a key, once there, stays
 * in its slot for the process's life and every count is a single atomic add. Nothing locks,
 * allocates or calls libc: a thread interrupted anywhere in it by a signal whose handler
 * records too (the same object or another) finds the table consistent. An object whose
 * DYN_OBJ_PROBES slots from its hash are all taken by others is dropped, counted per kind: a
 * full table loses recordings, never counts.
 *
 * A session's figures are the counts less those when it began (dyn_objects_reset, the control
 * thread's base copies): counts never go down, so no thread racing a reset can corrupt them.
 * What was sent of each object is kept too (sent), for a RESOURCES that asks for the new
 * objects only (SPROTO_RES_NEW, version 8).
 */
#include "dyn.h"

#define SLOTS SPROTO_MAX_OBJECTS /* a power of two */
#define PROBES 64
#define KEY_SHIFT 56
_Static_assert(SLOTS == 1u << 13, "slot_of takes 13 bits");
_Static_assert(SPROTO_OBJ_ADDR_LIMIT == 1ull << KEY_SHIFT, "an address fits below the kind");

struct dyn_obj {
	_Atomic uint64_t key;   /* addr | (kind + 1) << KEY_SHIFT; 0: free */
	_Atomic uint64_t uses;
	_Atomic uint64_t site;  /* return address of the last initialisation seen, 0: none */
	_Atomic uint32_t inits;
	uint32_t base_inits;    /* control thread: the counts when the session began */
	uint64_t base_uses;
	uint8_t sent;           /* control thread: SENT_* this session */
};

enum { SENT_NOT, SENT_UNUSED, SENT_USED };

static _Atomic(struct dyn_obj *) table;
static _Atomic uint64_t dropped[SPROTO_OBJ_KINDS];
static uint64_t base_dropped[SPROTO_OBJ_KINDS];
static struct sproto_object *scratch; /* control thread: a reply's entries, sorted */

static uint64_t table_bytes(void)
{
	return (SLOTS * sizeof(struct dyn_obj) + 4095) & ~4095ull;
}

/* The table, mapped by the first thread that records; a thread that loses the race unmaps its
 * own mapping. NULL when no memory could be had. */
static struct dyn_obj *table_get(void)
{
	struct dyn_obj *t = atomic_load_explicit(&table, memory_order_acquire), *none = NULL;

	if (likely(t))
		return t;
	t = dyn_sys_map(table_bytes());
	if (!t)
		return NULL;
	if (!atomic_compare_exchange_strong_explicit(&table, &none, t, memory_order_acq_rel,
						     memory_order_acquire)) {
		dyn_sys2(SYS_munmap, (long)t, (long)table_bytes());
		t = none;
	}
	return t;
}

static inline uint64_t slot_of(uint64_t key)
{
	return (key * 0x9e3779b97f4a7c15ull) >> (64 - 13);
}

void dyn_record(unsigned kind, uint64_t addr, int init, uint64_t site)
{
	struct dyn_obj *t;
	uint64_t key, h;
	unsigned i;

	kind %= SPROTO_OBJ_KINDS;
	if (!addr) /* the call fails (or crashes) without sonde: nothing to name */
		return;
	t = addr < SPROTO_OBJ_ADDR_LIMIT ? table_get() : NULL;
	if (unlikely(!t)) {
		atomic_fetch_add_explicit(&dropped[kind], 1, memory_order_relaxed);
		return;
	}
	key = addr | (uint64_t)(kind + 1) << KEY_SHIFT;
	h = slot_of(key);
	for (i = 0; i < PROBES; i++) {
		struct dyn_obj *o = &t[(h + i) & (SLOTS - 1)];
		uint64_t k = atomic_load_explicit(&o->key, memory_order_acquire);

		if (!k && atomic_compare_exchange_strong_explicit(&o->key, &k, key,
								   memory_order_acq_rel,
								   memory_order_acquire))
			k = key;
		if (k != key)
			continue;
		if (init) {
			if (site)
				atomic_store_explicit(&o->site, site, memory_order_relaxed);
			atomic_fetch_add_explicit(&o->inits, 1, memory_order_relaxed);
		} else {
			atomic_fetch_add_explicit(&o->uses, 1, memory_order_relaxed);
		}
		return;
	}
	atomic_fetch_add_explicit(&dropped[kind], 1, memory_order_relaxed);
}

/* A new session: its figures start from the counts now (control thread). */
void dyn_objects_reset(void)
{
	struct dyn_obj *t = atomic_load_explicit(&table, memory_order_acquire);
	unsigned i;

	for (i = 0; i < SPROTO_OBJ_KINDS; i++)
		base_dropped[i] = atomic_load_explicit(&dropped[i], memory_order_relaxed);
	for (i = 0; t && i < SLOTS; i++) {
		if (!atomic_load_explicit(&t[i].key, memory_order_acquire))
			continue;
		t[i].base_uses = atomic_load_explicit(&t[i].uses, memory_order_relaxed);
		t[i].base_inits = atomic_load_explicit(&t[i].inits, memory_order_relaxed);
		t[i].sent = SENT_NOT;
	}
}

static int before(const struct sproto_object *a, const struct sproto_object *b)
{
	return a->kind < b->kind || (a->kind == b->kind && a->addr < b->addr);
}

static void sift(struct sproto_object *v, size_t i, size_t n)
{
	for (;;) {
		size_t c = 2 * i + 1;
		struct sproto_object x;

		if (c >= n)
			return;
		if (c + 1 < n && before(&v[c], &v[c + 1]))
			c++;
		if (!before(&v[i], &v[c]))
			return;
		x = v[i];
		v[i] = v[c];
		v[c] = x;
		i = c;
	}
}

/* Heapsort by (kind, address): no libc, no memory but the entries'. */
static void sort_objects(struct sproto_object *v, size_t n)
{
	size_t i;

	for (i = n / 2; i-- > 0;)
		sift(v, i, n);
	for (i = n; i-- > 1;) {
		struct sproto_object x = v[0];

		v[0] = v[i];
		v[i] = x;
		sift(v, 0, i);
	}
}

/* The entries of the kinds wanted seen since the session began (with SPROTO_RES_NEW: not sent
 * yet, or sent before their first use and used since), into scratch: their number. Those
 * taken are noted as sent. */
static size_t gather(struct dyn_obj *t, uint32_t kinds)
{
	size_t n = 0;
	unsigned i;

	for (i = 0; t && i < SLOTS; i++) {
		uint64_t key = atomic_load_explicit(&t[i].key, memory_order_acquire);
		struct sproto_object e;

		if (!key)
			continue;
		e.kind = (uint8_t)((key >> KEY_SHIFT) - 1);
		e.addr = key & (SPROTO_OBJ_ADDR_LIMIT - 1);
		e.uses = atomic_load_explicit(&t[i].uses, memory_order_relaxed) - t[i].base_uses;
		e.inits = atomic_load_explicit(&t[i].inits, memory_order_relaxed) - t[i].base_inits;
		e.site = atomic_load_explicit(&t[i].site, memory_order_relaxed);
		if (e.kind >= SPROTO_OBJ_KINDS || !(kinds >> e.kind & 1) || !(e.uses || e.inits))
			continue;
		if ((kinds & SPROTO_RES_NEW) &&
		    (t[i].sent == SENT_USED || (t[i].sent == SENT_UNUSED && !e.uses)))
			continue;
		t[i].sent = e.uses ? SENT_USED : SENT_UNUSED;
		scratch[n++] = e;
	}
	return n;
}

size_t dyn_objects_reply(void *buf, size_t cap, uint32_t kinds)
{
	struct dyn_obj *t = atomic_load_explicit(&table, memory_order_acquire);
	uint64_t drops[SPROTO_OBJ_KINDS];
	struct sproto_buf b;
	size_t n = 0, i;

	if (t && !scratch && !(scratch = dyn_sys_map(SLOTS * sizeof(*scratch))))
		return 0;
	for (i = 0; i < SPROTO_OBJ_KINDS; i++)
		drops[i] = (kinds >> i & 1) ? atomic_load_explicit(&dropped[i], memory_order_relaxed) -
						      base_dropped[i]
					    : 0;
	if (t) {
		n = gather(t, kinds);
		sort_objects(scratch, n);
	}
	sproto_objects_begin(&b, buf, cap, t ? SLOTS : 0, drops);
	for (i = 0; i < n; i++)
		sproto_objects_add(&b, &scratch[i]);
	return sproto_end(&b);
}
