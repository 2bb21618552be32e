/* SPDX-License-Identifier: MIT */
/*
 * Metric instances and periodic samples (control thread only; seed 003 §5.2.2, MODELS.md §4).
 *
 * A metric is a sum over counters and timers. Each bucket the control thread reads every
 * enabled metric: counters as they are, timers summed over the threads (or one thread), a
 * running timer worth total + now - start, read under its sequence count. Values go out
 * cumulative, with the change since the previous sample; the tool keeps the histograms. A
 * metric enabled "changes only" (SPROTO_M_CHANGES) is left out of a sample when its value did
 * not change: a counter of a procedure not called, a timer no thread ran, send nothing. One
 * enabled "every N" goes out in every Nth bucket only, its delta covering the buckets since it
 * last went: changed or not, or with "changes only" too, only when it changed (version 6).
 * A metric's value goes in its first entry only; later entries carry the delta (version 6).
 */
#include "dyn.h"

#include <string.h>
#include <time.h>

struct metric {
	int on, first;
	uint16_t n;
	uint8_t flags, every;
	uint32_t skipped;                     /* buckets since its last one (every > 1) */
	struct sproto_term term[SPROTO_MAX_TERMS];
	int64_t last;                         /* the value sent last (or at enable) */
	uint64_t seen[SPROTO_MAX_TERMS];      /* timers: the largest value read */
};

static struct metric metrics[SPROTO_MAX_METRICS];
static uint32_t nmetrics_on;
/* what this connection's SAMPLEs refer to (version 9): the previous one's metrics, each one's
 * last delta; the tool keeps the same */
static struct sproto_sctx sctx;

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t dyn_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* One thread's timer. */
static uint64_t timer_value(const struct dyn_thread *t, const struct sproto_term *term)
{
	uint32_t i = term->index % DYN_TIMERS;

	if (term->kind == SPROTO_TERM_WALL)
		return dyn_timer_value(&t->wall[i], 0, t->tid);
	return dyn_timer_value(&t->cpu[i], 1, t->tid);
}

/* A timer over the threads (those that ended included), in ns. */
static uint64_t timer_sum(const struct sproto_term *term)
{
	const struct dyn_thread *t;
	uint64_t sum = term->tid ? 0 : dyn_departed(term->kind, term->index);

	for (t = atomic_load(&dyn_threads); t; t = t->next)
		if (!term->tid || (uint32_t)t->tid == term->tid)
			sum += timer_value(t, term);
	return term->kind == SPROTO_TERM_WALL ? rt_ticks_to_ns(sum) : sum;
}

static int64_t tcounter_sum(const struct sproto_term *term)
{
	const struct dyn_thread *t;
	uint64_t sum = term->tid ? 0 : dyn_departed(term->kind, term->index);
	uint32_t i = term->index % DYN_TCOUNTERS;

	for (t = atomic_load(&dyn_threads); t; t = t->next)
		if (!term->tid || (uint32_t)t->tid == term->tid)
			sum += (uint64_t)__atomic_load_n(&t->tcounters[i], __ATOMIC_RELAXED);
	return (int64_t)sum;
}

static int64_t term_value(const struct sproto_term *term)
{
	switch (term->kind) {
	case SPROTO_TERM_COUNTER:
		return atomic_load_explicit(&dyn_counters[term->index % DYN_COUNTERS].v,
					    memory_order_relaxed);
	case SPROTO_TERM_WALL:
	case SPROTO_TERM_CPU:
		return (int64_t)timer_sum(term);
	case SPROTO_TERM_TCOUNTER:
		return tcounter_sum(term);
	case SPROTO_TERM_PROC_CPU: /* without this thread's own time: it is never measured */
		return (int64_t)(clock_ns(CLOCK_PROCESS_CPUTIME_ID) -
				 clock_ns(CLOCK_THREAD_CPUTIME_ID));
	default:
		return 0;
	}
}

/*
 * A timer read while its thread keeps it busy may miss the interval in progress (never more
 * than the true value): what was read before stands, so a timer never goes back.
 */
static int64_t metric_value(struct metric *m)
{
	uint64_t sum = 0; /* wraps like the counters it adds */
	uint16_t i;

	for (i = 0; i < m->n; i++) {
		uint64_t v = (uint64_t)term_value(&m->term[i]);

		if (m->term[i].kind != SPROTO_TERM_COUNTER &&
		    m->term[i].kind != SPROTO_TERM_TCOUNTER) {
			if (v < m->seen[i])
				v = m->seen[i];
			m->seen[i] = v;
		}
		sum += v;
	}
	return (int64_t)sum;
}

/* What a sample carries: the value, or in units of 1024 (SPROTO_M_KILO) or 65536
 * (SPROTO_M_K64, version 7). */
static int64_t sent_value(struct metric *m)
{
	uint64_t v = (uint64_t)metric_value(m);

	return (int64_t)(m->flags & SPROTO_M_KILO ? v >> 10 : m->flags & SPROTO_M_K64 ? v >> 16 : v);
}

int64_t dyn_metric_value(uint32_t id)
{
	return id < SPROTO_MAX_METRICS && metrics[id].on ? metric_value(&metrics[id]) : 0;
}

static int same_terms(const struct metric *m, const struct sproto_metric *sm)
{
	uint16_t i;

	if (m->n != sm->n)
		return 0;
	for (i = 0; i < sm->n; i++)
		if (m->term[i].kind != sm->term[i].kind || m->term[i].index != sm->term[i].index ||
		    m->term[i].tid != sm->term[i].tid)
			return 0;
	return 1;
}

/* Enabling an enabled id replaces its terms (its values start again), or with the same terms
 * and units only changes how it is sent. */
int dyn_metric_enable(const struct sproto_metric *sm)
{
	struct metric *m;
	uint16_t i;
	int same;

	if (sm->id >= SPROTO_MAX_METRICS || !sm->n || sm->n > SPROTO_MAX_TERMS)
		return -1;
	m = &metrics[sm->id];
	same = m->on && same_terms(m, sm) && !((m->flags ^ sm->flags) & SPROTO_M_UNITS);
	m->flags = sm->flags;
	m->every = sm->every;
	m->skipped = 0;
	if (same)
		return 0; /* the same terms: its values go on, only how it is sent changes */
	for (i = 0; i < sm->n; i++) {
		m->term[i] = sm->term[i];
		m->seen[i] = 0;
	}
	m->n = sm->n;
	m->last = sent_value(m);
	m->first = 1;
	if (!m->on)
		nmetrics_on++;
	m->on = 1;
	return 0;
}

void dyn_metric_disable(uint32_t id)
{
	if (id >= SPROTO_MAX_METRICS || !metrics[id].on)
		return;
	metrics[id].on = 0;
	nmetrics_on--;
}

void dyn_metrics_clear(void)
{
	uint32_t i;

	for (i = 0; i < SPROTO_MAX_METRICS; i++)
		metrics[i].on = 0;
	nmetrics_on = 0;
}

void dyn_sample_reset(void)
{
	memset(&sctx, 0, sizeof(sctx));
}

uint32_t dyn_metrics_on(void)
{
	return nmetrics_on;
}

size_t dyn_sample(void *buf, size_t cap, uint64_t after_ns, uint64_t start_ns, uint64_t end_ns,
		  int how, uint64_t asked_ns)
{
	int last = (how & DYN_SAMPLE_LAST) != 0;
	struct sproto_buf b;
	uint32_t i;

	if (!nmetrics_on && !(how & DYN_SAMPLE_ANSWER))
		return 0;
	if (how & DYN_SAMPLE_ANSWER)
		sproto_bucket_reply_begin(&b, buf, cap, asked_ns, after_ns, start_ns, end_ns,
					  dyn_lost_total());
	else
		sproto_sample_begin(&b, buf, cap, after_ns, start_ns, end_ns, dyn_lost_total());
	sproto_sample_context(&b, &sctx);
	for (i = 0; i < SPROTO_MAX_METRICS; i++) {
		struct metric *m = &metrics[i];
		struct sproto_sample_entry e;
		int valued;

		if (!m->on)
			continue;
		/* the value once, in its first entry, sent whatever its pace; the tool adds the
		 * deltas to it (version 6) — unless deltas only (version 7) */
		valued = m->first && !(m->flags & SPROTO_M_DELTAS);
		e.metric = i;
		e.flags = (m->first ? SPROTO_S_FIRST : 0) | (last ? SPROTO_S_LAST : 0) |
			  (valued ? SPROTO_S_VALUE : 0);
		e.value = sent_value(m);
		e.delta = (int64_t)((uint64_t)e.value - (uint64_t)m->last);
		if (!valued && !last && m->every > 1 && ++m->skipped < m->every)
			continue; /* not its bucket */
		m->skipped = 0;
		/* changes only: nothing to send, in the last sample too (version 7) */
		if (!valued && !e.delta && (m->flags & SPROTO_M_CHANGES))
			continue;
		m->last = e.value;
		m->first = 0;
		if (!valued)
			e.value = 0;
		sproto_sample_add(&b, &e);
	}
	return sproto_end(&b);
}
