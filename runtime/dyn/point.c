/* SPDX-License-Identifier: MIT */
/*
 * The point table and the memory of the points' action lists (control thread only).
 *
 * A point id indexes dyn_points: NULL is an inactive point (one load and a branch at entry),
 * otherwise an immutable action list. POINT_SET builds a new list and publishes it with one
 * store; the list it replaces is retired, and its memory reused only after a grace period, so
 * a thread still running the old actions reads them intact. A thread held up longer than that
 * (stopped, descheduled for seconds) could read another point's actions; every index is masked
 * where it is used, so it would miscount, never crash.
 */
#include "dyn.h"

#define ARENA_BYTES (256ull << 20) /* virtual; pages are touched as lists are made */
#define GRACE_NS 2000000000ull

_Atomic(const struct dyn_prog *) dyn_points[DYN_POINT_SLOTS];
struct dyn_counter dyn_counters[DYN_COUNTERS];
_Atomic int dyn_paused;
_Atomic int dyn_profile_live;
static uint32_t points_hi; /* every point set so far is below (a fork's child clears up to it) */

static uint8_t *arena;
static uint64_t arena_used;
static struct dyn_prog *free_lists[SPROTO_MAX_ACTIONS + 1]; /* by number of actions */
static struct dyn_prog *retired, *retired_last;            /* oldest first */

static uint64_t prog_bytes(unsigned nact)
{
	uint64_t n = sizeof(struct dyn_prog) + nact * sizeof(struct dyn_action);

	return (n + 63) & ~63ull;
}

static struct dyn_prog *prog_alloc(unsigned nact)
{
	struct dyn_prog *p = free_lists[nact];
	uint64_t bytes = prog_bytes(nact);

	if (p) {
		free_lists[nact] = p->next;
		return p;
	}
	if (!arena)
		arena = dyn_sys_map(ARENA_BYTES);
	if (!arena || ARENA_BYTES - arena_used < bytes)
		return NULL;
	p = (struct dyn_prog *)(void *)(arena + arena_used);
	arena_used += bytes;
	p->size_class = (uint8_t)nact;
	return p;
}

static void prog_retire(const struct dyn_prog *cp, uint64_t now_ns)
{
	struct dyn_prog *p = (struct dyn_prog *)(uintptr_t)cp;

	if (!p)
		return;
	p->retired_ns = now_ns;
	p->next = NULL;
	if (retired_last)
		retired_last->next = p;
	else
		retired = p;
	retired_last = p;
}

/* Lists retired for longer than the grace period can be used again. */
void dyn_points_reclaim(uint64_t now_ns)
{
	while (retired && now_ns - retired->retired_ns >= GRACE_NS) {
		struct dyn_prog *p = retired;

		retired = p->next;
		if (!retired)
			retired_last = NULL;
		p->next = free_lists[p->size_class];
		free_lists[p->size_class] = p;
	}
}

static void action_from(struct dyn_action *d, const struct sproto_action *a)
{
	d->prim = a->prim;
	d->pred = a->pred;
	d->op = a->op;
	d->arg = a->pred == SPROTO_PRED_ARG ? (uint8_t)a->pred_index : 0;
	d->target = a->target;
	d->pred_counter = a->pred == SPROTO_PRED_COUNTER || a->pred == SPROTO_PRED_TCOUNTER
				  ? a->pred_index : 0;
	d->pad = 0;
	d->value = a->value;
	d->pred_value = a->pred_value;
}

/* Entry actions first, each group in the order given. */
void dyn_prog_fill(struct dyn_prog *p, const struct sproto_point_set *ps)
{
	unsigned i, k = 0, when;

	p->n_entry = p->n_exit = 0;
	p->needs_thread = 0;
	for (when = SPROTO_AT_ENTRY; when <= SPROTO_AT_EXIT; when++)
		for (i = 0; i < ps->n; i++) {
			if (ps->act[i].when != when)
				continue;
			action_from(&p->act[k++], &ps->act[i]);
			if (when == SPROTO_AT_ENTRY)
				p->n_entry++;
			else
				p->n_exit++;
			if ((ps->act[i].prim >= SPROTO_START_WALL &&
			     ps->act[i].prim != SPROTO_RECORD) ||
			    ps->act[i].pred == SPROTO_PRED_TCOUNTER)
				p->needs_thread = 1;
		}
	if (p->n_exit)
		p->needs_thread = 1;
	p->one_add = p->n_entry == 1 && !p->n_exit && p->act[0].prim == SPROTO_ADD &&
		     p->act[0].pred == SPROTO_PRED_NONE;
	p->one_tadd = p->n_entry == 1 && !p->n_exit && p->act[0].prim == SPROTO_TADD &&
		      p->act[0].pred == SPROTO_PRED_NONE;
}

/* The lists set so far (the control thread sets them): each new one is told apart. */
static uint16_t list_gen;
_Atomic uint8_t dyn_session;

void dyn_session_next(void)
{
	atomic_fetch_add_explicit(&dyn_session, 1, memory_order_relaxed);
}

/* Replace a point's actions (the message is validated already). 0, or -1 and why. */
int dyn_point_set(const struct sproto_point_set *ps, const char **why)
{
	uint64_t now = dyn_mono_ns();
	struct dyn_prog *p;
	const struct dyn_prog *old;

	dyn_points_reclaim(now);
	p = ps->n <= SPROTO_MAX_ACTIONS ? prog_alloc(ps->n) : NULL;
	if (!p) {
		*why = "out of memory for point actions";
		return -1;
	}
	dyn_prog_fill(p, ps);
	if (++list_gen == 0) /* never 0: a frame's "none" */
		list_gen = 1;
	p->gen = list_gen;
	if (ps->point % DYN_POINTS >= points_hi)
		points_hi = ps->point % DYN_POINTS + 1;
	old = atomic_exchange_explicit(&dyn_points[ps->point % DYN_POINTS], p,
				       memory_order_acq_rel);
	prog_retire(old, now);
	return 0;
}

void dyn_points_clear(uint32_t first, uint32_t count)
{
	uint64_t now = dyn_mono_ns();
	uint32_t i;

	for (i = first; i < DYN_POINTS && i - first < count; i++)
		if (atomic_load_explicit(&dyn_points[i], memory_order_relaxed))
			prog_retire(atomic_exchange(&dyn_points[i], NULL), now);
}

/* Only counters that were used are written: the others' pages stay untouched. */
void dyn_counters_reset(void)
{
	uint32_t i;

	for (i = 0; i < DYN_COUNTERS; i++)
		if (atomic_load_explicit(&dyn_counters[i].v, memory_order_relaxed))
			atomic_store_explicit(&dyn_counters[i].v, 0, memory_order_relaxed);
}

/* Name and time first, the count last: a sample that sees the count sees them (or later). */
void dyn_note_phase(const char *name)
{
	atomic_store_explicit(&dyn_counters[SPROTO_COUNTER_PHASE_NS].v,
			      (int64_t)dyn_sys_clock_ns(CLOCK_MONOTONIC), memory_order_relaxed);
	atomic_store_explicit(&dyn_counters[SPROTO_COUNTER_PHASE_NAME].v,
			      (int64_t)(uintptr_t)name, memory_order_relaxed);
	atomic_fetch_add_explicit(&dyn_counters[SPROTO_COUNTER_PHASES].v, 1, memory_order_release);
}

static int all_profile(const struct dyn_prog *p)
{
	unsigned i;

	for (i = 0; i < (unsigned)p->n_entry + p->n_exit; i++)
		if (p->act[i].prim != SPROTO_PROFILE)
			return 0;
	return 1;
}

/*
 * In a forked child (one thread, nothing running concurrently): the points of the parent's
 * session would count into values nobody reads, so they go (the inherited trampolines then
 * cost an inactive point's load and branch). PROFILE points feed the child's own profile where
 * it writes one (keep_profile: sonde run --dynamic). The action lists' memory stays as it is.
 */
void dyn_points_after_fork(int keep_profile)
{
	uint32_t i;

	for (i = 0; i < points_hi; i++) {
		const struct dyn_prog *p = atomic_load_explicit(&dyn_points[i], memory_order_relaxed);

		if (p && !(keep_profile && all_profile(p)))
			atomic_store_explicit(&dyn_points[i], NULL, memory_order_relaxed);
	}
	atomic_store(&dyn_paused, 0);
}
