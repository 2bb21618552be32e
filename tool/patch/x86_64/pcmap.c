/*
 * Moving a stopped thread's PC between the original code and a trampoline (docs/dynamic.md:
 * the tool patches with every thread stopped).
 *
 * Inserting: a thread at the site's first byte needs no move (it will take the jmp and run the
 * point, as it has not entered yet); one inside the displaced bytes goes to the same
 * instruction in the relocated copy (it entered before the point existed, so the point does not
 * run for it); one inside a sled goes past it.
 *
 * Removing: a thread in a relocated copy goes back to the original instruction (the copy does
 * exactly what the original does, with the same registers and stack). One at the jmp back goes
 * to resume. One in the register save is rolled back to the instruction the save stands for
 * (the site at an entry, the call at a call site): until `mov rsi, rsp` the save has only pushed
 * (registers and flags untouched: pushfq, or push rax in its place where the flags are dead,
 * has the same length), so adding back what was pushed (and the red zone step) to rsp undoes it
 * exactly. Later, rsi, rdx, rdi, rax and the flags hold the handler's arguments and the saved
 * values are on the stack: the thread is let run on until it leaves the restore (0 is
 * returned; the restore ends with popfq, or lea rsp, [rsp+8] where pushfq was not used). A
 * thread inside the handler itself (its PC is not in the trampoline) will return into the
 * trampoline: the trampoline's memory must stay as it is while any thread's stack holds
 * plan->handler_ret.
 */
#include "x86.h"

uint64_t patch_map_pc_into(const struct patch_plan *p, uint64_t pc)
{
	uint64_t off = pc - p->site;
	uint32_t i;

	if (pc <= p->site || off >= p->len)
		return pc;
	if (p->on_sled)
		return p->resume;
	for (i = 0; i < p->nr_map; i++)
		if (p->map[i].orig_off == off)
			return p->tramp + p->map[i].tramp_off;
	return 0;
}

/* A thread at offset off of the register save: undo the pushes, or 0 if too late. */
static uint64_t out_of_save(const struct patch_plan *p, uint32_t off, int64_t *sp)
{
	int64_t adj = 0;
	uint32_t i;

	if (p->kind == PATCH_CALLSITE) {
		if (off == 0)
			return p->save_orig;
		if (off == p->save_len - 8u) {	/* at the red zone's lea rsp, [rsp+128] */
			*sp = 128;
			return p->save_orig;
		}
		if (off < REDZONE_LEA_LEN)
			return 0;
		off -= REDZONE_LEA_LEN;
		adj = 128;
	}
	for (i = 0; i <= SAVE_PUSHES; i++) {
		if (off == 0) {
			*sp = adj;
			return p->save_orig;
		}
		if (i == SAVE_PUSHES || off < x86_push_len[i])
			return 0;
		off -= x86_push_len[i];
		adj += 8;
	}
	return 0;
}

/* A thread at offset off of the relocated copy of map entry m (off relative to the copy). */
static uint64_t out_of_copy(const struct patch_plan *p, const struct patch_map *m, uint32_t off,
			    int64_t *sp)
{
	uint64_t orig = p->site + m->orig_off;
	uint32_t jcc = m->tramp_len - 2u - JMP_REL32_LEN;	/* the relocated jrcxz/loop's size */

	if (off == 0)
		return orig;
	switch (m->how) {
	case PM_CALL:		/* the return address pushed, partly or wholly: pop it */
	case PM_POINT:
		*sp = 8;
		return orig;
	case PM_LOOP:		/* not taken: after it; taken: its target (rcx already updated) */
		if (off == jcc)
			return orig + m->orig_len;
		if (off == jcc + 2)
			return m->target;
		return 0;
	default:
		return 0;
	}
}

/* Where a thread at pc inside the trampoline goes (pc - tramp = off). */
static uint64_t out_of_tramp(const struct patch_plan *p, uint32_t off, int64_t *sp)
{
	uint32_t i;

	if (off >= p->save_off && off < p->save_off + p->save_len)
		return out_of_save(p, off - p->save_off, sp);
	for (i = 0; i < p->nr_map; i++) {
		const struct patch_map *m = &p->map[i];
		uint32_t start = m->tramp_off;

		if (m->how == PM_POINT)
			start += p->save_len;	/* the save part is handled above */
		if (off >= start && off < (uint32_t)m->tramp_off + m->tramp_len)
			return out_of_copy(p, m, off - start, sp);
	}
	return off == p->tramp_len - JMP_REL32_LEN && p->kind == PATCH_ENTRY ? p->resume : 0;
}

uint64_t patch_map_pc_out(const struct patch_plan *p, uint64_t pc, int64_t *sp_adjust)
{
	int64_t sp = 0;
	uint64_t to;

	if (sp_adjust)
		*sp_adjust = 0;
	if (pc < p->tramp || pc - p->tramp >= p->tramp_len)
		return pc;
	to = out_of_tramp(p, (uint32_t)(pc - p->tramp), &sp);
	if (sp && !sp_adjust)
		return 0;
	if (sp_adjust)
		*sp_adjust = sp;
	return to;
}
