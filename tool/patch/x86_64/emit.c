/* Writing machine code into a bounded buffer that will run at a known address. */
#include <string.h>

#include "x86.h"

void emit_bytes(struct emit *e, const void *p, size_t n)
{
	if (e->full || e->len + n > e->cap) {
		e->full = true;
		return;
	}
	memcpy(e->buf + e->len, p, n);
	e->len += n;
}

void emit_u8(struct emit *e, uint8_t v)
{
	emit_bytes(e, &v, 1);
}

/* Little-endian, as x86 immediates and displacements are. */
void emit_u32(struct emit *e, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	emit_bytes(e, b, sizeof(b));
}

void emit_u64(struct emit *e, uint64_t v)
{
	emit_u32(e, (uint32_t)v);
	emit_u32(e, (uint32_t)(v >> 32));
}

/* The run-time address of the next byte written. */
uint64_t emit_pc(const struct emit *e)
{
	return e->base + e->len;
}

/* The rel32 that reaches target from the instruction ending at next, if within ±2 GB. */
bool rel32_fits(uint64_t target, uint64_t next, int32_t *rel)
{
	int64_t d = (int64_t)(target - next);

	if (d < INT32_MIN || d > INT32_MAX)
		return false;
	*rel = (int32_t)d;
	return true;
}

/* jmp rel32 to target. */
int emit_jmp(struct emit *e, uint64_t target, char *why, size_t n)
{
	int32_t rel;

	if (!rel32_fits(target, emit_pc(e) + JMP_REL32_LEN, &rel))
		return refuse(why, n, "jump from 0x%lx to 0x%lx is beyond ±2 GB",
			      (unsigned long)emit_pc(e), (unsigned long)target);
	emit_u8(e, 0xe9);
	emit_u32(e, (uint32_t)rel);
	return 0;
}

/*
 * Push the 64-bit return address of a relocated call without touching a register or the flags
 * (push imm32 would sign-extend, and most code lives above 2 GB):
 *	lea rsp, [rsp-8]		48 8d 64 24 f8
 *	mov dword [rsp], lo		c7 04 24 lo32
 *	mov dword [rsp+4], hi		c7 44 24 04 hi32
 */
void emit_push_ret(struct emit *e, uint64_t ret)
{
	static const uint8_t lea[] = { 0x48, 0x8d, 0x64, 0x24, 0xf8 };
	static const uint8_t mov_lo[] = { 0xc7, 0x04, 0x24 };
	static const uint8_t mov_hi[] = { 0xc7, 0x44, 0x24, 0x04 };

	emit_bytes(e, lea, sizeof(lea));
	emit_bytes(e, mov_lo, sizeof(mov_lo));
	emit_u32(e, (uint32_t)ret);
	emit_bytes(e, mov_hi, sizeof(mov_hi));
	emit_u32(e, (uint32_t)(ret >> 32));
}
