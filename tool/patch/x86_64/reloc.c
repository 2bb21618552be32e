/*
 * Relocation of one displaced instruction into a trampoline. What moves with an instruction
 * is what is relative to its own address:
 * - a RIP-relative memory operand: its disp32 is rewritten (the length stays the same);
 * - jmp/jcc rel8/rel32: re-encoded as rel32 by hand (E9; 0F 80+cc), prefixes dropped;
 * - jrcxz/jecxz/loop/loope/loopne, which exist only as rel8: "op 1f; jmp 2f; 1: jmp L; 2:";
 * - call: the ORIGINAL return address is pushed and the call becomes a jmp, so that the callee
 *   returns into the original code and unwinders see the caller they expect. The return address
 *   is the next original instruction, so a call must be the last displaced instruction.
 * Anything else relative (xbegin, EIP-relative operands, a call using rsp) is refused.
 */
#include <string.h>

#include "x86.h"

/* The instruction with its RIP-relative disp32 rewritten for the address it is copied to. */
static int copy_riprel(const struct x86_insn *in, const uint8_t *src, uint64_t from,
		       struct emit *e, char *why, size_t n)
{
	uint8_t buf[ZYDIS_MAX_INSTRUCTION_LENGTH];
	uint8_t len = in->d.length, at = in->d.raw.disp.offset;
	uint64_t target = from + len + (uint64_t)in->d.raw.disp.value;
	int32_t disp;

	if (in->d.address_width != 64 || in->d.raw.disp.size != 32)
		return refuse(why, n, "EIP-relative operand at 0x%lx", (unsigned long)from);
	if (!rel32_fits(target, emit_pc(e) + len, &disp))
		return refuse(why, n, "data at 0x%lx is beyond ±2 GB of the trampoline",
			      (unsigned long)target);
	memcpy(buf, src, len);
	memcpy(buf + at, &disp, sizeof(disp));
	emit_bytes(e, buf, len);
	return 0;
}

/* jcc rel8 (70+cc) or rel32 (0F 80+cc) as jcc rel32. */
static int emit_jcc(struct emit *e, uint8_t cc, uint64_t target, char *why, size_t n)
{
	int32_t rel;

	if (!rel32_fits(target, emit_pc(e) + 6, &rel))
		return refuse(why, n, "branch target 0x%lx is beyond ±2 GB of the trampoline",
			      (unsigned long)target);
	emit_u8(e, 0x0f);
	emit_u8(e, (uint8_t)(0x80 | cc));
	emit_u32(e, (uint32_t)rel);
	return 0;
}

/* jrcxz/loop L (rel8 only): the same instruction to a local jmp rel32, 9+ bytes in all. */
static int emit_loop(const struct x86_insn *in, const uint8_t *src, uint64_t target,
		     struct emit *e, struct patch_map *m, char *why, size_t n)
{
	uint8_t at = in->d.raw.imm[0].offset;

	emit_bytes(e, src, at);		/* prefixes (67 for jecxz) and opcode */
	emit_u8(e, 2);			/* over the short jmp */
	emit_u8(e, 0xeb);		/* jmp 2f: not taken */
	emit_u8(e, JMP_REL32_LEN);
	m->how = PM_LOOP;
	m->target = target;
	return emit_jmp(e, target, why, n);
}

/* Whether any operand reads rsp (a relocated call changes it before the operand is used). */
static bool uses_rsp(const struct x86_insn *in)
{
	uint8_t i;

	for (i = 0; i < in->d.operand_count_visible; i++) {
		const ZydisDecodedOperand *op = &in->ops[i];

		if (op->type == ZYDIS_OPERAND_TYPE_REGISTER && x86_reg64(op->reg.value) ==
							       ZYDIS_REGISTER_RSP)
			return true;
		if (op->type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    (x86_reg64(op->mem.base) == ZYDIS_REGISTER_RSP ||
		     x86_reg64(op->mem.index) == ZYDIS_REGISTER_RSP))
			return true;
	}
	return false;
}

/* call *X as: push the original return address; jmp *X (the ModRM's /2 becomes /4). */
static int emit_call_ind(const struct x86_insn *in, const uint8_t *src, uint64_t from,
			 struct emit *e, char *why, size_t n)
{
	uint8_t buf[ZYDIS_MAX_INSTRUCTION_LENGTH];
	uint8_t len = in->d.length, at = in->d.raw.modrm.offset;
	struct x86_insn jmp;

	if (in->d.raw.modrm.reg != 2)
		return refuse(why, n, "far call at 0x%lx", (unsigned long)from);
	if (uses_rsp(in))
		return refuse(why, n, "call at 0x%lx addresses its target through rsp",
			      (unsigned long)from);
	emit_push_ret(e, from + len);
	memcpy(buf, src, len);
	buf[at] = (uint8_t)((buf[at] & 0xc7) | (4 << 3));
	if (x86_decode(buf, len, &jmp))
		return refuse(why, n, "call at 0x%lx does not re-encode", (unsigned long)from);
	if (!x86_riprel(&jmp)) {
		emit_bytes(e, buf, len);
		return 0;
	}
	return copy_riprel(&jmp, buf, from, e, why, n);
}

/*
 * Emit the relocated copy of the instruction src[0..avail) that ran at from; last: whether it
 * is the last instruction displaced (the only place a call may be). Sets m->how (and target).
 */
int x86_relocate(const uint8_t *src, size_t avail, uint64_t from, bool last, struct emit *e,
		 struct patch_map *m, char *why, size_t n)
{
	struct x86_insn in;
	uint64_t target = 0;
	enum patch_insn_kind kind;

	if (x86_decode(src, avail, &in))
		return refuse(why, n, "bytes at 0x%lx do not decode", (unsigned long)from);
	kind = x86_kind(&in);
	x86_target(&in, from, &target);
	m->how = PM_COPY;
	if ((kind == PI_CALL || kind == PI_CALL_IND) && !last)
		return refuse(why, n, "call at 0x%lx would return into the patched bytes",
			      (unsigned long)from);
	switch (kind) {
	case PI_JMP:
		return emit_jmp(e, target, why, n);
	case PI_JCC:
		return emit_jcc(e, in.d.opcode & 0x0f, target, why, n);
	case PI_LOOP:
		return emit_loop(&in, src, target, e, m, why, n);
	case PI_CALL:
		m->how = PM_CALL;
		emit_push_ret(e, from + in.d.length);
		return emit_jmp(e, target, why, n);
	case PI_CALL_IND:
		m->how = PM_CALL;
		return emit_call_ind(&in, src, from, e, why, n);
	case PI_OTHER_REL:
		return refuse(why, n, "%s at 0x%lx cannot be relocated",
			      ZydisMnemonicGetString(in.d.mnemonic), (unsigned long)from);
	default:
		break;
	}
	if (x86_riprel(&in))
		return copy_riprel(&in, src, from, e, why, n);
	emit_bytes(e, src, in.d.length);
	return 0;
}
