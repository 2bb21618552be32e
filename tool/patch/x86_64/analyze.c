/*
 * Function analysis: decode a whole function linearly (compilers put no data in x86-64 text),
 * note each instruction's kind and branch target, the endbr64 and NOP sled at its entry,
 * whether the flags are live there (flags.c), and where its indirect jumps may go: a jump
 * table (whose entries become branch targets once read), a tail call, or anywhere (which makes
 * entry patching refuse unless one instruction is displaced).
 */
#include <stdlib.h>
#include <string.h>

#include "x86.h"

#define TABLE_WINDOW 16		/* instructions searched back from an indirect jmp */
#define TABLE_MAX 4096		/* entries read from a table of unknown size, at most */
#define TABLE_CHUNK 64		/* entries read at once */

/* Append one instruction to fn; -1 when out of memory. */
static int add_insn(struct patch_fn *fn, size_t *cap, const struct patch_insn *pi)
{
	struct patch_insn *p;

	if (fn->nr_insns == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		p = realloc(fn->insns, *cap * sizeof(*p));
		if (!p)
			return -1;
		fn->insns = p;
	}
	fn->insns[fn->nr_insns++] = *pi;
	return 0;
}

/* Summarise the decoded instruction at offset off of fn. */
static struct patch_insn summarise(struct patch_fn *fn, const struct x86_insn *in,
				   uint32_t off)
{
	struct patch_insn pi = { .off = off, .len = in->d.length };

	pi.kind = (uint8_t)x86_kind(in);
	pi.riprel = x86_riprel(in);
	if (!x86_target(in, fn->addr + off, &pi.target))
		pi.target = 0;
	if (pi.kind == PI_CALL || pi.kind == PI_CALL_IND)
		fn->nr_calls++;
	return pi;
}

/* An endbr64 at the entry stays in place (indirect branches must land on it); skip it. */
static void find_entry(struct patch_fn *fn, const uint8_t *code)
{
	struct x86_insn in;
	size_t i = 0;
	uint32_t sled = 0;

	if (fn->nr_insns && !x86_decode(code, fn->len, &in) &&
	    in.d.mnemonic == ZYDIS_MNEMONIC_ENDBR64) {
		fn->entry_off = in.d.length;
		i = 1;
	}
	/* gcc -fpatchable-function-entry=N,0 emits N 0x90s, clang one N-byte nop */
	for (; i < fn->nr_insns; i++) {
		const struct patch_insn *pi = &fn->insns[i];

		if (x86_decode(code + pi->off, fn->len - pi->off, &in) ||
		    in.d.mnemonic != ZYDIS_MNEMONIC_NOP)
			break;
		sled += pi->len;
	}
	fn->sled_len = sled >= JMP_REL32_LEN ? sled : 0;
}

int patch_analyze(const uint8_t *code, size_t len, uint64_t addr, struct patch_fn *out,
		  char *why, size_t n)
{
	struct x86_insn in;
	struct patch_insn pi;
	size_t off = 0, cap = 0;

	memset(out, 0, sizeof(*out));
	out->addr = addr;
	out->len = len;
	out->unknown_ijmp = -1;
	while (off < len) {
		if (x86_decode(code + off, len - off, &in)) {
			patch_fn_free(out);
			return refuse(why, n, "bytes at +0x%zx do not decode", off);
		}
		pi = summarise(out, &in, (uint32_t)off);
		if (add_insn(out, &cap, &pi)) {
			patch_fn_free(out);
			return refuse(why, n, "out of memory");
		}
		off += in.d.length;
	}
	find_entry(out, code);
	/* from the entry: instruction 1 past an endbr64, else 0 */
	out->entry_flags_live = x86_flags_live(out, code, out->entry_off ? 1 : 0);
	x86_find_tables(out, code);
	return 0;
}

void patch_fn_free(struct patch_fn *fn)
{
	free(fn->insns);
	free(fn->tables);
	free(fn->targets);
	memset(fn, 0, sizeof(*fn));
	fn->unknown_ijmp = -1;
}

void patch_add_target(struct patch_fn *fn, uint64_t target)
{
	uint64_t *p;

	if (fn->nr_targets == fn->cap_targets) {
		size_t cap = fn->cap_targets ? fn->cap_targets * 2 : 16;

		p = realloc(fn->targets, cap * sizeof(*p));
		if (!p) {
			/* without the target the function must not be patched at all */
			fn->unknown_ijmp = 0;
			return;
		}
		fn->targets = p;
		fn->cap_targets = cap;
	}
	fn->targets[fn->nr_targets++] = target;
}

void patch_add_targets_from(struct patch_fn *fn, const struct patch_fn *other)
{
	size_t i;

	for (i = 0; i < other->nr_insns; i++) {
		const struct patch_insn *pi = &other->insns[i];

		if (pi->kind != PI_PLAIN && pi->target - fn->addr < fn->len)
			patch_add_target(fn, pi->target);
	}
	for (i = 0; i < other->nr_targets; i++)
		if (other->targets[i] - fn->addr < fn->len)
			patch_add_target(fn, other->targets[i]);
}

/* Entry i of table t (its bytes in raw) as a run-time address. */
static uint64_t table_entry(const struct patch_table *t, const uint8_t *raw, uint32_t i)
{
	int32_t rel;
	uint64_t abs;

	if (t->entry_size == 4) {
		memcpy(&rel, raw + 4 * (size_t)i, 4);
		return t->base + (uint64_t)(int64_t)rel;
	}
	memcpy(&abs, raw + 8 * (size_t)i, 8);
	return abs;
}

/*
 * Entries [i, i + k) of table t into raw: all in one read (one system call for the tool), else
 * one by one up to the first unreadable. Returns how many were read.
 */
static uint32_t read_entries(const struct patch_table *t, uint32_t i, uint32_t k,
			     patch_read_fn read, void *ctx, uint8_t *raw)
{
	uint32_t j;

	if (!read(ctx, t->base + (uint64_t)i * t->entry_size, raw, (size_t)k * t->entry_size))
		return k;
	for (j = 0; j < k; j++)
		if (read(ctx, t->base + (uint64_t)(i + j) * t->entry_size,
			 raw + (size_t)j * t->entry_size, t->entry_size))
			break;
	return j;
}

/*
 * Every entry of a table of known size is a target. A table of unknown size is read until an
 * entry leaves the function: what follows a table is other data, whose first non-address ends
 * the walk (an entry of this very table pointing to a .cold part would end it early too).
 */
static int read_table(struct patch_fn *fn, struct patch_table *t, patch_read_fn read, void *ctx,
		      char *why, size_t n)
{
	uint8_t raw[TABLE_CHUNK * 8];
	uint32_t i = 0, j, got, max = t->nr ? t->nr : TABLE_MAX;

	while (i < max) {
		uint32_t k = max - i < TABLE_CHUNK ? max - i : TABLE_CHUNK;

		got = read_entries(t, i, k, read, ctx, raw);
		if (got < k && (t->nr || !got))
			return refuse(why, n, "jump table at 0x%lx is unreadable",
				      (unsigned long)t->base);
		for (j = 0; j < got; j++) {
			uint64_t target = table_entry(t, raw, j);

			if (target - fn->addr < fn->len)
				patch_add_target(fn, target);
			else if (!t->nr)
				break;
		}
		if (j < k)
			break;
		i += k;
	}
	t->read = true;
	return 0;
}

int patch_read_tables(struct patch_fn *fn, patch_read_fn read, void *ctx, char *why, size_t n)
{
	size_t i;

	for (i = 0; i < fn->nr_tables; i++)
		if (!fn->tables[i].read && read_table(fn, &fn->tables[i], read, ctx, why, n))
			return -1;
	return 0;
}

/* ---- jump tables: the compilers' dispatch sequences, matched backwards from the jmp ---- */

/* Decode fn's instruction number i. */
static bool decode_nr(const struct patch_fn *fn, const uint8_t *code, size_t i,
		      struct x86_insn *in)
{
	const struct patch_insn *pi = &fn->insns[i];

	return !x86_decode(code + pi->off, fn->len - pi->off, in);
}

/* Whether the instruction's first operand is register reg (any width) and is written. */
static bool writes_reg(const struct x86_insn *in, ZydisRegister reg)
{
	const ZydisDecodedOperand *op = &in->ops[0];

	return in->d.operand_count && op->type == ZYDIS_OPERAND_TYPE_REGISTER &&
	       x86_reg64(op->reg.value) == reg && (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE);
}

/* The nearest instruction before number j (within the window) writing reg; -1 if none. */
static long find_writer(const struct patch_fn *fn, const uint8_t *code, size_t j,
			ZydisRegister reg, struct x86_insn *in)
{
	size_t i;

	for (i = j; i-- > 0 && j - i <= TABLE_WINDOW;)
		if (decode_nr(fn, code, i, in) && writes_reg(in, reg))
			return (long)i;
	return -1;
}

/* base = the address `lea base, [rip+d]` before instruction j loads, if there is one. */
static bool find_lea_base(const struct patch_fn *fn, const uint8_t *code, size_t j,
			  ZydisRegister base, uint64_t *addr)
{
	struct x86_insn in;
	long i = find_writer(fn, code, j, base, &in);

	if (i < 0 || in.d.mnemonic != ZYDIS_MNEMONIC_LEA || in.ops[1].mem.base != ZYDIS_REGISTER_RIP)
		return false;
	return ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in.d, &in.ops[1],
						     fn->addr + fn->insns[i].off, addr));
}

/* Whether a relative branch of fn lands on one of instructions [from, to]. */
static bool lands_on(const struct patch_fn *fn, size_t from, size_t to)
{
	uint64_t lo = fn->addr + fn->insns[from].off, hi = fn->addr + fn->insns[to].off;
	size_t i;

	for (i = 0; i < fn->nr_insns; i++)
		if (fn->insns[i].target >= lo && fn->insns[i].target <= hi)
			return true;
	return false;
}

/* Update the registers holding the compared value after instruction in (copies add to it). */
static size_t track_copies(const struct x86_insn *in, ZydisRegister *held, size_t nr, size_t max)
{
	bool copy = (in->d.mnemonic == ZYDIS_MNEMONIC_MOV || in->d.mnemonic == ZYDIS_MNEMONIC_MOVZX) &&
		    in->ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER;
	ZydisRegister src = copy ? x86_reg64(in->ops[1].reg.value) : ZYDIS_REGISTER_NONE;
	bool from_held = false;
	size_t k, o;

	for (k = 0; k < nr; k++)
		from_held |= held[k] == src;
	for (o = 0; o < in->d.operand_count; o++) {
		const ZydisDecodedOperand *op = &in->ops[o];
		ZydisRegister w = x86_reg64(op->reg.value);

		if (op->type != ZYDIS_OPERAND_TYPE_REGISTER ||
		    !(op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			continue;
		for (k = 0; k < nr; k++)
			if (held[k] == w)
				held[k--] = held[--nr];
		if (o == 0 && from_held && nr < max)
			held[nr++] = w;
	}
	return nr;
}

/*
 * Whether idx still holds the value compared by instruction cmp when the load j runs: written
 * in between only by copies of it, and no branch lands after the check (bypassing it).
 */
static bool still_compared(const struct patch_fn *fn, const uint8_t *code, size_t cmp, size_t j,
			   ZydisRegister reg, ZydisRegister idx)
{
	ZydisRegister held[4] = { reg };
	struct x86_insn in;
	size_t i, k, nr = 1;

	if (lands_on(fn, cmp + 2, j))
		return false;
	for (i = cmp + 1; i < j; i++) {
		if (!decode_nr(fn, code, i, &in))
			return false;
		nr = track_copies(&in, held, nr, 4);
	}
	for (k = 0; k < nr; k++)
		if (held[k] == idx)
			return true;
	return false;
}

/* Entries implied by `cmp reg, imm; ja/jae` guarding the load j with index idx; 0 if none. */
static uint32_t find_bound(const struct patch_fn *fn, const uint8_t *code, size_t j,
			   ZydisRegister idx)
{
	struct x86_insn br, cmp;
	size_t i;

	for (i = j; i-- > 1 && j - i <= TABLE_WINDOW;) {
		if (!decode_nr(fn, code, i, &br) || (br.d.mnemonic != ZYDIS_MNEMONIC_JNBE &&
						      br.d.mnemonic != ZYDIS_MNEMONIC_JNB))
			continue;
		if (!decode_nr(fn, code, i - 1, &cmp) || cmp.d.mnemonic != ZYDIS_MNEMONIC_CMP ||
		    cmp.ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER ||
		    cmp.ops[1].type != ZYDIS_OPERAND_TYPE_IMMEDIATE ||
		    !still_compared(fn, code, i - 1, j, x86_reg64(cmp.ops[0].reg.value), idx))
			return 0;
		if (cmp.ops[1].imm.value.u >= TABLE_MAX)
			return 0;
		return (uint32_t)cmp.ops[1].imm.value.u + (br.d.mnemonic == ZYDIS_MNEMONIC_JNBE);
	}
	return 0;
}

/* Record a table found for the jmp number j. */
static void add_table(struct patch_fn *fn, size_t j, uint64_t base, uint32_t nr, uint8_t size)
{
	struct patch_table *t = realloc(fn->tables, (fn->nr_tables + 1) * sizeof(*t));

	if (!t) {
		fn->unknown_ijmp = fn->insns[j].off;
		return;
	}
	fn->tables = t;
	t[fn->nr_tables++] = (struct patch_table){ .jmp_off = fn->insns[j].off, .base = base,
						   .nr = nr, .entry_size = size };
}

/*
 * A table of absolute addresses, from memory operand mem of instruction number i:
 * [base + idx*8] with base loaded by a RIP-relative lea, or [disp + idx*8] (non-PIC).
 */
static bool match_abs64(struct patch_fn *fn, const uint8_t *code, size_t i, size_t j,
			const ZydisDecodedOperand *mem)
{
	uint64_t base;

	if (mem->type != ZYDIS_OPERAND_TYPE_MEMORY || mem->mem.scale != 8 ||
	    mem->mem.index == ZYDIS_REGISTER_NONE)
		return false;
	if (mem->mem.base == ZYDIS_REGISTER_NONE)
		base = (uint64_t)mem->mem.disp.value;
	else if (!find_lea_base(fn, code, i, x86_reg64(mem->mem.base), &base))
		return false;
	else
		base += (uint64_t)mem->mem.disp.value;
	add_table(fn, j, base, find_bound(fn, code, i, x86_reg64(mem->mem.index)), 8);
	return true;
}

/*
 * The instruction number (< j) that loads r with a sign-extended int32 from memory: movsxd r,
 * dword [...], or mov eax, [...]; cdqe (gcc -O0). *idx: the index register if scaled by 4.
 */
static long find_offset_load(const struct patch_fn *fn, const uint8_t *code, size_t j,
			     ZydisRegister r, ZydisRegister *idx)
{
	struct x86_insn in;
	long i = find_writer(fn, code, j, r, &in);

	*idx = ZYDIS_REGISTER_NONE;
	if (i >= 0 && in.d.mnemonic == ZYDIS_MNEMONIC_MOVSXD &&
	    in.ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY) {
		if (in.ops[1].mem.scale == 4)
			*idx = x86_reg64(in.ops[1].mem.index);
		return i;
	}
	if (i < 0 || in.d.mnemonic != ZYDIS_MNEMONIC_CDQE)
		return -1;
	i = find_writer(fn, code, (size_t)i, ZYDIS_REGISTER_RAX, &in);
	if (i >= 0 && in.d.mnemonic == ZYDIS_MNEMONIC_MOV && in.ops[0].size == 32 &&
	    in.ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY)
		return i;
	return -1;
}

/*
 * The PIC table of int32 offsets from its own start (gcc and clang alike):
 *	lea B, [rip+table]; movsxd X, dword [B + idx*4]; add R, X (or add R, B); jmp R
 */
static bool match_rel32(struct patch_fn *fn, const uint8_t *code, size_t j, ZydisRegister r)
{
	struct x86_insn add;
	ZydisRegister x, idx;
	long ia, il;
	uint64_t base;
	int k;

	ia = find_writer(fn, code, j, r, &add);
	if (ia < 0 || add.d.mnemonic != ZYDIS_MNEMONIC_ADD ||
	    add.ops[1].type != ZYDIS_OPERAND_TYPE_REGISTER)
		return false;
	x = x86_reg64(add.ops[1].reg.value);
	/* either operand of the add may be the table's base, the other the offset loaded */
	for (k = 0; k < 2; k++) {
		if (!find_lea_base(fn, code, (size_t)ia, k ? r : x, &base))
			continue;
		il = find_offset_load(fn, code, (size_t)ia, k ? x : r, &idx);
		if (il < 0)
			continue;
		add_table(fn, j, base, idx == ZYDIS_REGISTER_NONE ? 0 :
				       find_bound(fn, code, (size_t)il, idx), 4);
		return true;
	}
	return false;
}

/* `mov R, [table + idx*8]; jmp R`. */
static bool match_load_abs64(struct patch_fn *fn, const uint8_t *code, size_t j, ZydisRegister r)
{
	struct x86_insn load;
	long i = find_writer(fn, code, j, r, &load);

	return i >= 0 && load.d.mnemonic == ZYDIS_MNEMONIC_MOV &&
	       match_abs64(fn, code, (size_t)i, j, &load.ops[1]);
}

/* Whether the function takes the address of its own code (computed goto, hand-made tables). */
static bool takes_own_address(const struct patch_fn *fn, const uint8_t *code)
{
	struct x86_insn in;
	uint64_t a;
	size_t i;

	for (i = 0; i < fn->nr_insns; i++)
		if (fn->insns[i].riprel && decode_nr(fn, code, i, &in) &&
		    in.d.mnemonic == ZYDIS_MNEMONIC_LEA &&
		    ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in.d, &in.ops[1],
							  fn->addr + fn->insns[i].off, &a)) &&
		    a - fn->addr < fn->len)
			return true;
	return false;
}

/*
 * Classify the indirect jmp number j: a jump table (recorded), or a tail call through a
 * pointer. The latter cannot land inside this function unless it computes addresses of its own
 * code, or unless it is a table of a shape not matched here (a movsxd feeds it).
 */
static void classify_ijmp(struct patch_fn *fn, const uint8_t *code, size_t j, bool own)
{
	struct x86_insn in, w;
	ZydisRegister r;

	if (!decode_nr(fn, code, j, &in))
		return;
	if (in.ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY) {
		if (match_abs64(fn, code, j, j, &in.ops[0]) || !own)
			return;
	} else if (in.ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER) {
		r = x86_reg64(in.ops[0].reg.value);
		if (match_rel32(fn, code, j, r) || match_load_abs64(fn, code, j, r))
			return;
		if (!own && !(find_writer(fn, code, j, r, &w) >= 0 &&
			      (w.d.mnemonic == ZYDIS_MNEMONIC_ADD ||
			       w.d.mnemonic == ZYDIS_MNEMONIC_MOVSXD)))
			return;
	}
	if (fn->unknown_ijmp < 0)
		fn->unknown_ijmp = fn->insns[j].off;
}

void x86_find_tables(struct patch_fn *fn, const uint8_t *code)
{
	bool own = takes_own_address(fn, code);
	size_t j;

	for (j = 0; j < fn->nr_insns; j++)
		if (fn->insns[j].kind == PI_JMP_IND)
			classify_ijmp(fn, code, j, own);
}
