/* SPDX-License-Identifier: MIT */
/*
 * The SAMPLES record (docs/format-profile.md): the sampled threads, then every stored stack.
 * Runs in the writer (at exit, or in a signal handler): no malloc. Stacks stored after the
 * record's size was counted (a thread still in its handler) are left out, never half-written:
 * the first pass marks the slots it counted, the second writes only those.
 */
#include "sample.h"

#define THREAD_BYTES 56
#define STACK_BYTES 24
#define HEAD_BYTES 32

static uint64_t counted[SMP_SLOTS / 64]; /* one bit per table slot */

struct pass {
	struct writer *w;
	uint64_t bytes;
	uint32_t nstacks, slot;
	int writing;
};

static void visit(void *arg, uint32_t slot, uint32_t thread, uint32_t depth, uint64_t samples,
		  uint64_t periods, const uint64_t *pcs)
{
	struct pass *p = arg;
	struct sprof_buf *b;
	uint32_t i;

	if (!p->writing) {
		counted[slot / 64] |= 1ull << (slot % 64);
		p->nstacks++;
		p->bytes += STACK_BYTES + 8ull * depth;
		return;
	}
	if (!(counted[slot / 64] & (1ull << (slot % 64))))
		return;
	b = rt_writer_room(p->w, STACK_BYTES + 8ull * depth);
	sprof_put_u32(b, thread);
	sprof_put_u32(b, depth);
	sprof_put_u64(b, samples);
	sprof_put_u64(b, periods);
	for (i = 0; i < depth; i++)
		sprof_put_u64(b, pcs[i]);
}

static void write_thread(struct writer *w, const struct smp_thread *t)
{
	struct sprof_buf *b = rt_writer_room(w, THREAD_BYTES);

	sprof_put_u32(b, t->index);
	sprof_put_u32(b, (uint32_t)t->tid);
	sprof_put_u32(b, atomic_load(&t->ended) ? 1u : 0u);
	sprof_put_u32(b, 0);
	sprof_put_u64(b, smp_thread_cpu(t));
	sprof_put_u64(b, t->samples);
	sprof_put_u64(b, t->periods);
	sprof_put_u64(b, t->dropped);
	sprof_put_u64(b, t->truncated);
}

void rt_sample_write(struct writer *w)
{
	struct pass p = { .w = w };
	uint32_t n = atomic_load(&smp_nthreads), i;
	struct sprof_buf *b;
	uint64_t size;

	if (!rt_sample_on)
		return;
	if (n > SMP_MAX_THREADS)
		n = SMP_MAX_THREADS;
	for (i = 0; i < sizeof(counted) / sizeof(counted[0]); i++)
		counted[i] = 0;
	smp_table_foreach(visit, &p);
	size = HEAD_BYTES + (uint64_t)THREAD_BYTES * n + p.bytes;
	if (size > UINT32_MAX)
		return; /* cannot happen with the table's size; a record's size is 32 bits */
	rt_writer_header(w, SPROF_REC_SAMPLES, (uint32_t)size);
	b = rt_writer_room(w, HEAD_BYTES);
	sprof_put_u32(b, smp_hz);
	sprof_put_u32(b, (uint32_t)smp_signo);
	sprof_put_u32(b, n);
	sprof_put_u32(b, p.nstacks);
	sprof_put_u32(b, SMP_MAX_DEPTH);
	sprof_put_u32(b, 0);
	sprof_put_u64(b, 1000000000ull / smp_hz);
	for (i = 0; i < n; i++)
		write_thread(w, &smp_threads[i]);
	p.writing = 1;
	smp_table_foreach(visit, &p);
}
