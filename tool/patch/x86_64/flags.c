/*
 * Whether the status flags (CF PF AF ZF SF OF) are live at a function's entry: if not, the
 * entry trampoline need not save them (pushfq/popfq cost more than the rest of a one-counter
 * point). The SysV ABI passes nothing in them and keeps none of them across a call (DF, the only
 * one it defines there, is clear and the handler leaves it clear), so compiled code never reads
 * them at an entry; hand-written code may (the corpus' pc_asm_max jumps to pc_asm_jcc_sel with
 * the result of a cmp), hence a walk rather than an assumption.
 *
 * The walk follows fall-through only, from the entry, and uses Zydis' accessed-flags table:
 * a flag tested before the walk has written it is live; once all six are written (modified,
 * set to 0 or 1, or left undefined: no correct program reads an undefined flag) they are dead.
 * A ret or a call before that ends the walk with the flags dead (the ABI: a caller cannot read
 * the flags its callee leaves, a callee cannot read its caller's); anything else that leaves the
 * straight line (jmp, jcc, loop, indirect jmp), leaves the program (system calls, traps: a signal
 * handler sees the flags) or ends the function makes them live.
 */
#include "x86.h"

#define STATUS_FLAGS (ZYDIS_CPUFLAG_CF | ZYDIS_CPUFLAG_PF | ZYDIS_CPUFLAG_AF | \
		      ZYDIS_CPUFLAG_ZF | ZYDIS_CPUFLAG_SF | ZYDIS_CPUFLAG_OF)

/*
 * An instruction whose effect on the flags the table does not tell: syscall "modifies all"
 * there, yet the kernel gives them back; int3, ud2 and hlt hand them to a signal handler.
 */
static bool opaque(const ZydisDecodedInstruction *d)
{
	switch (d->meta.category) {
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_SYSRET:
	case ZYDIS_CATEGORY_INTERRUPT:
	case ZYDIS_CATEGORY_SYSTEM:
		return true;
	default:
		return d->mnemonic == ZYDIS_MNEMONIC_UD0 || d->mnemonic == ZYDIS_MNEMONIC_UD1 ||
		       d->mnemonic == ZYDIS_MNEMONIC_UD2 || d->mnemonic == ZYDIS_MNEMONIC_HLT ||
		       !d->cpu_flags;
	}
}

static bool is_shift(ZydisMnemonic m)
{
	return m == ZYDIS_MNEMONIC_SHL || m == ZYDIS_MNEMONIC_SHR || m == ZYDIS_MNEMONIC_SAR ||
	       m == ZYDIS_MNEMONIC_ROL || m == ZYDIS_MNEMONIC_ROR || m == ZYDIS_MNEMONIC_RCL ||
	       m == ZYDIS_MNEMONIC_RCR || m == ZYDIS_MNEMONIC_SHLD || m == ZYDIS_MNEMONIC_SHRD;
}

/*
 * A shift or rotate by a count that is, or may be, 0 after masking leaves every flag as it was,
 * although the table says "modified": only an immediate, non-zero count is sure to write them.
 * (rep cmps / rep scas, the other instructions that may not run at all, test ZF: the walk stops
 * at them before their writes count.)
 */
static bool count_may_be_zero(const struct x86_insn *in)
{
	const ZydisDecodedOperand *count;
	uint64_t mask = in->d.operand_width == 64 ? 63 : 31;

	if (!is_shift(in->d.mnemonic))
		return false;
	count = &in->ops[in->d.mnemonic == ZYDIS_MNEMONIC_SHLD ||
			 in->d.mnemonic == ZYDIS_MNEMONIC_SHRD ? 2 : 1];
	return count->type != ZYDIS_OPERAND_TYPE_IMMEDIATE || !(count->imm.value.u & mask);
}

/* The status flags the instruction surely overwrites. */
static uint32_t flags_written(const struct x86_insn *in)
{
	const ZydisAccessedFlags *f = in->d.cpu_flags;

	if (count_may_be_zero(in))
		return 0;
	return (f->modified | f->set_0 | f->set_1 | f->undefined) & STATUS_FLAGS;
}

/* Whether the status flags may be read after instruction number i of fn, before being written. */
bool x86_flags_live(const struct patch_fn *fn, const uint8_t *code, size_t i)
{
	uint32_t written = 0;
	struct x86_insn in;

	for (; i < fn->nr_insns; i++) {
		const struct patch_insn *pi = &fn->insns[i];

		if (x86_decode(code + pi->off, fn->len - pi->off, &in) || opaque(&in.d) ||
		    (in.d.cpu_flags->tested & STATUS_FLAGS & ~written))
			return true;
		if (pi->kind == PI_RET || pi->kind == PI_CALL || pi->kind == PI_CALL_IND)
			return false;
		if (pi->kind != PI_PLAIN)
			return true;
		written |= flags_written(&in);
		if (written == STATUS_FLAGS)
			return false;
	}
	return true;	/* the function falls through its end */
}
