/* Zydis in one place: decoding an instruction and the questions patching asks of it. */
#include <stdio.h>
#include <string.h>

#include "x86.h"

/* Decode the instruction at code[0..len); 0, or -1 if the bytes are not one. */
int x86_decode(const uint8_t *code, size_t len, struct x86_insn *out)
{
	ZydisDecoder dec;	/* a few bytes to fill: no shared state, callable from any thread */

	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	return ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code, len, &out->d, out->ops)) ? 0 : -1;
}

/* The relative immediate operand (a branch's displacement), or NULL. */
static const ZydisDecodedOperand *rel_operand(const struct x86_insn *in)
{
	uint8_t i;

	for (i = 0; i < in->d.operand_count; i++)
		if (in->ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && in->ops[i].imm.is_relative)
			return &in->ops[i];
	return NULL;
}

static bool is_loop(ZydisMnemonic m)
{
	return m == ZYDIS_MNEMONIC_JRCXZ || m == ZYDIS_MNEMONIC_JECXZ || m == ZYDIS_MNEMONIC_JCXZ ||
	       m == ZYDIS_MNEMONIC_LOOP || m == ZYDIS_MNEMONIC_LOOPE || m == ZYDIS_MNEMONIC_LOOPNE;
}

/*
 * What the instruction does to control flow (patch.h). Relative branches are told apart by
 * opcode, not by Zydis' category: only those re-encoded by reloc.c may be anything but
 * PI_OTHER_REL (xbegin, for one, is a "conditional branch" too).
 */
enum patch_insn_kind x86_kind(const struct x86_insn *in)
{
	const ZydisDecodedInstruction *d = &in->d;
	bool one = d->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT;

	if (!rel_operand(in)) {
		switch (d->meta.category) {
		case ZYDIS_CATEGORY_RET:
			return PI_RET;
		case ZYDIS_CATEGORY_CALL:
			return PI_CALL_IND;
		case ZYDIS_CATEGORY_UNCOND_BR:
			return PI_JMP_IND;
		default:
			return PI_PLAIN;
		}
	}
	if (one && d->opcode == 0xe8)
		return PI_CALL;
	if (one && (d->opcode == 0xe9 || d->opcode == 0xeb))
		return PI_JMP;
	if ((one && (d->opcode & 0xf0) == 0x70) ||
	    (d->opcode_map == ZYDIS_OPCODE_MAP_0F && (d->opcode & 0xf0) == 0x80))
		return PI_JCC;
	if (one && d->opcode >= 0xe0 && d->opcode <= 0xe3 && is_loop(d->mnemonic))
		return PI_LOOP;
	return PI_OTHER_REL;
}

/* The target of a relative branch or call at run-time address addr. */
bool x86_target(const struct x86_insn *in, uint64_t addr, uint64_t *target)
{
	const ZydisDecodedOperand *op = rel_operand(in);

	return op && ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in->d, op, addr, target));
}

/* Whether a memory operand is addressed relative to the instruction pointer. */
bool x86_riprel(const struct x86_insn *in)
{
	uint8_t i;

	for (i = 0; i < in->d.operand_count; i++)
		if (in->ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    (in->ops[i].mem.base == ZYDIS_REGISTER_RIP ||
		     in->ops[i].mem.base == ZYDIS_REGISTER_EIP))
			return true;
	return false;
}

/* The 64-bit register holding reg (eax -> rax), so that widths compare equal. */
ZydisRegister x86_reg64(ZydisRegister reg)
{
	ZydisRegister big = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);

	return big == ZYDIS_REGISTER_NONE ? reg : big;
}

/* Write the reason for a refusal and return -1. */
int refuse(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	if (why && n) {
		va_start(ap, fmt);
		vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return -1;
}
