/*
 * Entry and call-site plans: which instructions to displace, whether that is safe, the
 * trampoline (docs/dynamic.md's ABI) and the bytes that jump to it.
 *
 * An entry, before and after (gcc -O2, no sled):
 *
 *	f:   push r12                 f:   jmp  tramp             e9 rel32
 *	     push rbp                      int3                   cc
 *	     mov  rbp, rdi                 (rest of f unchanged)
 *	     ...
 *	tramp: push rax; push r11 .. rdi; mov rsi, rsp; lea rdx, [rsp+80]; mov edi, POINT
 *	       push rbx; mov rbx, rsp; and rsp, -16; movabs rax, handler; call rax
 *	       mov rsp, rbx; pop rbx; pop rdi .. r11; lea rsp, [rsp+8]
 *	       push r12; push rbp; mov rbp, rdi          (displaced, relocated)
 *	       jmp  f+6
 *
 * (pushfq and popfq in place of push rax and lea where the flags are live at the entry.)
 */
#include <string.h>

#include "x86.h"

/* after the rflags slot: r11, r10, rax, r9, r8, rcx, rdx, rsi, rdi (struct sonde_regs) */
static const uint8_t save_regs[] = { 0x41, 0x53, 0x41, 0x52, 0x50, 0x41, 0x51, 0x41, 0x50,
				     0x51, 0x52, 0x56, 0x57 };
static const uint8_t restore_regs[] = { 0x5f, 0x5e, 0x5a, 0x59, 0x41, 0x58, 0x41, 0x59,
					0x58, 0x41, 0x5a, 0x41, 0x5b };
const uint8_t x86_push_len[SAVE_PUSHES] = { 1, 2, 2, 1, 2, 2, 1, 1, 1, 1 };

/*
 * The pushes that make struct sonde_regs. Its rflags slot is filled by pushfq where the flags
 * are live at the site (flags.c), else by push rax: pushfq/popfq take most of a one-counter
 * point's time, push rax next to nothing; it has pushfq's length (the save part's PC map is the
 * same) and leaves the flags alone (a thread stopped after it still rolls back exactly). The
 * runtime never reads the slot.
 */
static void emit_regs_save(struct emit *e, bool flags)
{
	emit_u8(e, flags ? 0x9c : 0x50);				/* pushfq / push rax */
	emit_bytes(e, save_regs, sizeof(save_regs));
}

/* The pops, then popfq or the rflags slot dropped (lea: touches nothing but rsp). */
static void emit_regs_restore(struct emit *e, bool flags)
{
	static const uint8_t drop_slot[] = { 0x48, 0x8d, 0x64, 0x24, 0x08 }; /* lea rsp,[rsp+8] */

	emit_bytes(e, restore_regs, sizeof(restore_regs));
	if (flags)
		emit_u8(e, 0x9d);					/* popfq */
	else
		emit_bytes(e, drop_slot, sizeof(drop_slot));
}

/*
 * The handler's arguments and the call, aligned at run time (rbx keeps the old rsp; the handler
 * preserves it): the ABI's rsp = 8 mod 16 at entries and 0 mod 16 at calls does not hold for
 * calls gcc makes to its own local functions (-fipa-stack-alignment), so docs/dynamic.md's
 * fixed `sub rsp, 8` would misalign them. regs, ret_slot and point are as that ABI says; a call
 * site has no ret_slot (NULL: the call has not pushed its return address yet). Returns the
 * handler's return address.
 */
static uint64_t emit_handler_call(struct emit *e, const struct tramp_spec *spec, bool callsite)
{
	static const uint8_t regs_arg[] = { 0x48, 0x89, 0xe6 };			/* mov rsi, rsp */
	static const uint8_t slot_arg[] = { 0x48, 0x8d, 0x54, 0x24, 0x50 };	/* lea rdx,[rsp+80] */
	static const uint8_t no_slot[] = { 0x31, 0xd2 };				/* xor edx, edx */
	/* push rbx; mov rbx, rsp; and rsp, -16 */
	static const uint8_t align[] = { 0x53, 0x48, 0x89, 0xe3, 0x48, 0x83, 0xe4, 0xf0 };
	static const uint8_t unalign[] = { 0x48, 0x89, 0xdc, 0x5b };		/* mov rsp, rbx; pop rbx */
	static const uint8_t call_rax[] = { 0xff, 0xd0 };
	uint64_t ret;

	emit_bytes(e, regs_arg, sizeof(regs_arg));
	if (callsite)
		emit_bytes(e, no_slot, sizeof(no_slot));
	else
		emit_bytes(e, slot_arg, sizeof(slot_arg));
	emit_u8(e, 0xbf);						/* mov edi, POINT */
	emit_u32(e, spec->point);
	emit_bytes(e, align, sizeof(align));
	emit_u8(e, 0x48);						/* movabs rax, handler */
	emit_u8(e, 0xb8);
	emit_u64(e, spec->entry_handler);
	emit_bytes(e, call_rax, sizeof(call_rax));
	ret = emit_pc(e);
	emit_bytes(e, unalign, sizeof(unalign));
	return ret;
}

/*
 * The register save, handler call and restore (flags: with pushfq/popfq); returns the handler's
 * return address. A call site's first steps over the red zone.
 */
uint64_t x86_emit_save(struct emit *e, const struct tramp_spec *spec, bool callsite,
		       bool flags)
{
	static const uint8_t redzone_in[] = { 0x48, 0x8d, 0x64, 0x24, 0x80 };	/* lea rsp,[rsp-128] */
	static const uint8_t redzone_out[] = { 0x48, 0x8d, 0xa4, 0x24, 0x80, 0, 0, 0 };
	uint64_t ret;

	if (callsite)
		emit_bytes(e, redzone_in, sizeof(redzone_in));
	emit_regs_save(e, flags);
	ret = emit_handler_call(e, spec, callsite);
	emit_regs_restore(e, flags);
	if (callsite)
		emit_bytes(e, redzone_out, sizeof(redzone_out));
	return ret;
}

/* The instruction number of offset off in fn, or -1 if off is not an instruction's start. */
static long insn_at(const struct patch_fn *fn, uint32_t off)
{
	size_t lo = 0, hi = fn->nr_insns;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (fn->insns[mid].off == off)
			return (long)mid;
		if (fn->insns[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Whether a branch to target would land on the displaced bytes after their first. */
static bool inside(const struct patch_fn *fn, const struct region *r, uint64_t target)
{
	return target > fn->addr + r->start && target < fn->addr + r->end;
}

/* Instruction i of the function is one of the region's. */
static bool in_region(const struct region *r, size_t i)
{
	return i >= r->first && i < r->first + r->count;
}

/* A jmp or jcc of the region to another of its instructions: its copy goes to the copy. */
static bool internal_branch(const struct patch_fn *fn, const struct region *r, size_t i)
{
	const struct patch_insn *pi = &fn->insns[i];

	return in_region(r, i) && (pi->kind == PI_JMP || pi->kind == PI_JCC) &&
	       inside(fn, r, pi->target);
}

/*
 * A retry loop whose head is one of the first instructions (a compare-and-swap loop, as in
 * glibc 2.36's sem_trywait and pthread_rwlock_tryrdlock): a jmp or jcc further on branches back
 * into the bytes to displace. The region grows to take in that branch, so that the whole loop
 * is copied into the trampoline and runs there, its branches to its own instructions going to
 * their copies (relocate_range); nothing branches into the original bytes any more. Within the
 * limits of a site; beyond them check_branches refuses.
 */
static void grow_over_loops(const struct patch_fn *fn, struct region *r)
{
	bool grown = true;
	size_t i, j;

	while (grown) {
		grown = false;
		for (i = r->first + r->count; i < fn->nr_insns; i++) {
			const struct patch_insn *pi = &fn->insns[i];
			uint32_t end = pi->off + pi->len;

			if ((pi->kind != PI_JMP && pi->kind != PI_JCC) || !inside(fn, r, pi->target))
				continue;
			if (end - r->start > PATCH_SITE_MAX || i + 1 - r->first > PATCH_MAP_MAX)
				return;
			for (j = r->first + r->count; j <= i; j++)
				r->count++;
			r->end = end;
			grown = true;
		}
	}
}

/* Whole instructions from fn's entry (or its sled) covering a jmp rel32. */
static int entry_region(const struct patch_fn *fn, struct region *r, char *why, size_t n)
{
	long i = insn_at(fn, fn->entry_off);

	if (i < 0)
		return refuse(why, n, "function shorter than %d bytes", JMP_REL32_LEN);
	r->first = (size_t)i;
	r->start = fn->entry_off;
	r->end = r->start;
	r->count = 0;
	while (r->end - r->start < JMP_REL32_LEN && r->first + r->count < fn->nr_insns)
		r->end += fn->insns[r->first + r->count++].len;
	if (r->end - r->start < JMP_REL32_LEN)
		return refuse(why, n, "function shorter than %d bytes from its entry",
			      JMP_REL32_LEN);
	grow_over_loops(fn, r);
	return 0;
}

/*
 * The call and as many instructions before it as make 5 bytes: the region ends with the call,
 * so its return address is the first byte after the patched ones.
 */
static int callsite_region(const struct patch_fn *fn, uint64_t call_addr, struct region *r,
			   char *why, size_t n)
{
	long i = call_addr - fn->addr < fn->len ? insn_at(fn, (uint32_t)(call_addr - fn->addr)) : -1;

	if (i < 0 || (fn->insns[i].kind != PI_CALL && fn->insns[i].kind != PI_CALL_IND))
		return refuse(why, n, "no call instruction at 0x%lx", (unsigned long)call_addr);
	r->first = (size_t)i;
	r->count = 1;
	r->start = fn->insns[i].off;
	r->end = r->start + fn->insns[i].len;
	while (r->end - r->start < JMP_REL32_LEN && r->first > 0 &&
	       fn->insns[r->first - 1].off >= fn->entry_off) {
		r->first--;
		r->count++;
		r->start = fn->insns[r->first].off;
	}
	if (r->end - r->start < JMP_REL32_LEN)
		return refuse(why, n, "call site at 0x%lx: fewer than %d bytes to displace",
			      (unsigned long)call_addr, JMP_REL32_LEN);
	return 0;
}

/* At an entry, whether a jump to target would re-enter it (at the site or its endbr64). */
static bool reenters(const struct patch_fn *fn, const struct region *r, uint64_t target)
{
	return target >= fn->addr && target <= fn->addr + r->start;
}

/*
 * No branch may land inside the displaced bytes (it would hit the jmp's tail), except, at an
 * entry, a branch of the region to another of its instructions (grow_over_loops). At an entry, no
 * jump of the function itself may land on the entry (or on the endbr64 before it) either: its
 * loop would run the entry point on every iteration (calls to it are real entries).
 */
static int check_branches(const struct patch_fn *fn, const struct region *r, bool entry,
			  char *why, size_t n)
{
	size_t i;

	for (i = 0; i < fn->nr_insns; i++) {
		const struct patch_insn *pi = &fn->insns[i];
		bool call = pi->kind == PI_CALL;

		if (pi->kind != PI_JMP && pi->kind != PI_JCC && pi->kind != PI_LOOP && !call)
			continue;
		if (inside(fn, r, pi->target) && !(entry && internal_branch(fn, r, i)))
			return refuse(why, n, "branch at +0x%x targets +0x%lx, inside the %u bytes "
				      "to displace", pi->off, (unsigned long)(pi->target - fn->addr),
				      r->end - r->start);
		if (entry && !call && reenters(fn, r, pi->target))
			return refuse(why, n, "jump at +0x%x back to the entry (a loop would run "
				      "the entry point on every iteration)", pi->off);
	}
	return 0;
}

/*
 * The same for targets from jump tables and other parts of the function, which must all be
 * known: tables read, and no indirect jump that may land anywhere. Compilers never jump into a
 * NOP sled, so that one only matters for displaced code of more than one instruction.
 */
static int check_other_targets(const struct patch_fn *fn, const struct region *r, bool entry,
			       bool sled, char *why, size_t n)
{
	size_t i;

	for (i = 0; i < fn->nr_tables; i++)
		if (!fn->tables[i].read)
			return refuse(why, n, "jump table of the jmp at +0x%x not read",
				      fn->tables[i].jmp_off);
	for (i = 0; i < fn->nr_targets; i++)
		if (inside(fn, r, fn->targets[i]) || (entry && reenters(fn, r, fn->targets[i])))
			return refuse(why, n, "jump table entry (or .cold part) targets +0x%lx, in "
				      "the bytes to displace", (unsigned long)(fn->targets[i] - fn->addr));
	if (fn->unknown_ijmp >= 0 && r->count > 1 && !sled)
		return refuse(why, n, "indirect jump at +0x%lx may land in the bytes to displace",
			      (long)fn->unknown_ijmp);
	return 0;
}

/* The site must reach the trampoline, and all of the trampoline the resume address. */
static int check_tramp_range(const struct patch_fn *fn, const struct region *r, uint64_t tramp,
			     char *why, size_t n)
{
	uint64_t site = fn->addr + r->start, resume = fn->addr + r->end;
	int32_t rel;

	if (rel32_fits(tramp, site + JMP_REL32_LEN, &rel) && rel32_fits(resume, tramp, &rel) &&
	    rel32_fits(resume, tramp + PATCH_TRAMP_MAX, &rel))
		return 0;
	return refuse(why, n, "trampoline at 0x%lx is beyond ±2 GB of 0x%lx",
		      (unsigned long)tramp, (unsigned long)site);
}

/* Start a plan: the site, its original bytes, where the trampoline goes. */
static void plan_init(struct patch_plan *p, enum patch_kind kind, const struct patch_fn *fn,
		      const uint8_t *code, const struct region *r, uint64_t tramp,
		      const struct tramp_spec *spec, struct emit *e)
{
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->point = spec->point;
	p->site = fn->addr + r->start;
	p->len = r->end - r->start;
	p->resume = p->site + p->len;
	memcpy(p->orig, code + r->start, p->len);
	p->tramp = tramp;
	*e = (struct emit){ .buf = p->code, .cap = sizeof(p->code), .base = tramp };
}

/*
 * The copy of a branch to another instruction of the region (grow_over_loops): jmp rel32 or
 * jcc rel32 with its displacement left 0; *fix gets where that is, for resolve_internal.
 */
static int emit_internal(const uint8_t *src, size_t avail, struct emit *e, size_t *fix,
			 char *why, size_t n)
{
	struct x86_insn in;

	if (x86_decode(src, avail, &in))
		return refuse(why, n, "branch in the bytes to displace does not decode");
	if (x86_kind(&in) == PI_JMP) {
		emit_u8(e, 0xe9);
	} else {
		emit_u8(e, 0x0f);
		emit_u8(e, (uint8_t)(0x80 | (in.d.opcode & 0x0f)));
	}
	*fix = e->len;
	emit_u32(e, 0);
	return 0;
}

/* Point the copies of the region's internal branches at the copies of their targets. */
static int resolve_internal(struct patch_plan *p, const struct patch_fn *fn,
			    const struct region *r, const size_t *fix, struct emit *e, char *why,
			    size_t n)
{
	size_t i, j;

	for (i = 0; i < r->count; i++) {
		const struct patch_insn *pi = &fn->insns[r->first + i];
		uint32_t to = (uint32_t)(pi->target - fn->addr) - r->start;
		int32_t rel;

		if (!internal_branch(fn, r, r->first + i))
			continue;
		for (j = 0; j < p->nr_map && p->map[j].orig_off != to; j++)
			;
		if (j == p->nr_map || e->full)
			return refuse(why, n, "branch at +0x%x targets no displaced instruction",
				      pi->off);
		rel = (int32_t)p->map[j].tramp_off - (int32_t)(fix[i] + 4);
		memcpy(e->buf + fix[i], &rel, sizeof(rel));
	}
	return 0;
}

/* Relocate instructions [from, to) of the region into the trampoline, mapping each. */
static int relocate_range(struct patch_plan *p, const struct patch_fn *fn, const uint8_t *code,
			  const struct region *r, size_t from, size_t to, struct emit *e,
			  char *why, size_t n)
{
	size_t i, fix[PATCH_MAP_MAX] = { 0 };

	for (i = from; i < to; i++) {
		const struct patch_insn *pi = &fn->insns[r->first + i];
		struct patch_map *m = &p->map[p->nr_map++];

		m->orig_off = (uint8_t)(pi->off - r->start);
		m->orig_len = pi->len;
		m->tramp_off = (uint16_t)e->len;
		m->how = PM_COPY;
		if (internal_branch(fn, r, r->first + i)) {
			if (emit_internal(code + pi->off, fn->len - pi->off, e, &fix[i], why, n))
				return -1;
		} else if (x86_relocate(code + pi->off, fn->len - pi->off, fn->addr + pi->off,
					i + 1 == r->count, e, m, why, n)) {
			return -1;
		}
		m->tramp_len = (uint16_t)(e->len - m->tramp_off);
	}
	return resolve_internal(p, fn, r, fix, e, why, n);
}

/* The bytes at the site: jmp rel32 to the trampoline, int3 up to the displaced length. */
static int plan_site(struct patch_plan *p, char *why, size_t n)
{
	struct emit site = { .buf = p->bytes, .cap = sizeof(p->bytes), .base = p->site };

	if (emit_jmp(&site, p->tramp, why, n))
		return refuse(why, n, "trampoline at 0x%lx is beyond ±2 GB of 0x%lx",
			      (unsigned long)p->tramp, (unsigned long)p->site);
	while (site.len < p->len)
		emit_u8(&site, 0xcc);
	return 0;
}

/* Finish a plan: the trampoline's size checked, the site's bytes. */
static int plan_finish(struct patch_plan *p, struct emit *e, char *why, size_t n)
{
	if (e->full)
		return refuse(why, n, "trampoline longer than %d bytes", PATCH_TRAMP_MAX);
	p->tramp_len = (uint32_t)e->len;
	return plan_site(p, why, n);
}

/* The region and its checks, shared by both kinds of plan. */
static int region_checks(const struct patch_fn *fn, const struct region *r, bool entry,
			 bool sled, char *why, size_t n)
{
	if (r->count > PATCH_MAP_MAX || r->end - r->start > PATCH_SITE_MAX)
		return refuse(why, n, "too many bytes to displace");
	if (check_branches(fn, r, entry, why, n))
		return -1;
	return check_other_targets(fn, r, entry, sled, why, n);
}

int patch_plan_entry(const struct patch_fn *fn, const uint8_t *code, uint64_t tramp_addr,
		     const struct tramp_spec *spec, struct patch_plan *out, char *why, size_t n)
{
	struct region r;
	struct emit e;
	bool sled = fn->sled_len >= JMP_REL32_LEN;

	memset(out, 0, sizeof(*out));
	if (entry_region(fn, &r, why, n) || region_checks(fn, &r, true, sled, why, n) ||
	    check_tramp_range(fn, &r, tramp_addr, why, n))
		return -1;
	plan_init(out, PATCH_ENTRY, fn, code, &r, tramp_addr, spec, &e);
	out->on_sled = sled;
	out->saves_flags = fn->entry_flags_live;
	out->save_orig = out->site;
	out->handler_ret = x86_emit_save(&e, spec, false, out->saves_flags);
	out->save_len = (uint16_t)e.len;
	/* on a sled the displaced instructions are NOPs: nothing to relocate */
	if (!sled && relocate_range(out, fn, code, &r, 0, r.count, &e, why, n))
		return -1;
	if (emit_jmp(&e, out->resume, why, n) || plan_finish(out, &e, why, n))
		return -1;
	return 0;
}

/*
 * A call site's trampoline: the instructions displaced before the call, relocated; the red
 * zone step, save, handler call, restore; the call, relocated (it pushes the original return
 * address, so the callee returns straight to the original code: no jmp back is needed).
 */
int patch_plan_callsite(const struct patch_fn *fn, const uint8_t *code, uint64_t call_addr,
			uint64_t tramp_addr, const struct tramp_spec *spec,
			struct patch_plan *out, char *why, size_t n)
{
	struct region r;
	struct emit e;
	struct patch_map *call;

	memset(out, 0, sizeof(*out));
	if (callsite_region(fn, call_addr, &r, why, n) ||
	    region_checks(fn, &r, false, false, why, n) ||
	    check_tramp_range(fn, &r, tramp_addr, why, n))
		return -1;
	plan_init(out, PATCH_CALLSITE, fn, code, &r, tramp_addr, spec, &e);
	if (relocate_range(out, fn, code, &r, 0, r.count - 1, &e, why, n))
		return -1;
	out->save_off = (uint16_t)e.len;
	out->save_orig = call_addr;
	/*
	 * The save runs right before the call (the instructions displaced before it have run):
	 * where the flags are dead, as flags.c's walk ends at a call. The callee may not read
	 * them (the ABI passes nothing there) nor the caller after it (none are kept across).
	 */
	out->saves_flags = false;
	out->handler_ret = x86_emit_save(&e, spec, true, out->saves_flags);
	out->save_len = (uint16_t)(e.len - out->save_off);
	if (relocate_range(out, fn, code, &r, r.count - 1, r.count, &e, why, n))
		return -1;
	call = &out->map[out->nr_map - 1];
	call->tramp_off = out->save_off;
	call->tramp_len = (uint16_t)(e.len - out->save_off);
	call->how = PM_POINT;
	return plan_finish(out, &e, why, n);
}

bool patch_plans_overlap(const struct patch_plan *a, const struct patch_plan *b)
{
	return a->site < b->site + b->len && b->site < a->site + a->len;
}
