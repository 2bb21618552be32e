/* Internals of the x86-64 patcher shared by its files (tool/patch/patch.h is the interface). */
#ifndef SONDE_PATCH_X86_H
#define SONDE_PATCH_X86_H

#include <Zydis/Zydis.h>
#include <stdarg.h>

#include "../patch.h"

#define JMP_REL32_LEN 5

/* Machine code being written for run-time address base; full once it would overflow cap. */
struct emit {
	uint8_t *buf;
	size_t len, cap;
	uint64_t base;
	bool full;
};

/* One decoded instruction with all its operands. */
struct x86_insn {
	ZydisDecodedInstruction d;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
};

/* A site's displaced instructions: fn->insns[first .. first+count), bytes [start, end). */
struct region {
	size_t first, count;
	uint32_t start, end;	/* offsets in the function */
};

/* decode.c */
int x86_decode(const uint8_t *code, size_t len, struct x86_insn *out);
enum patch_insn_kind x86_kind(const struct x86_insn *in);
bool x86_target(const struct x86_insn *in, uint64_t addr, uint64_t *target);
bool x86_riprel(const struct x86_insn *in);
ZydisRegister x86_reg64(ZydisRegister reg);
int refuse(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* emit.c */
void emit_bytes(struct emit *e, const void *p, size_t n);
void emit_u8(struct emit *e, uint8_t v);
void emit_u32(struct emit *e, uint32_t v);
void emit_u64(struct emit *e, uint64_t v);
uint64_t emit_pc(const struct emit *e);
bool rel32_fits(uint64_t target, uint64_t next, int32_t *rel);
int emit_jmp(struct emit *e, uint64_t target, char *why, size_t n);
void emit_push_ret(struct emit *e, uint64_t ret);

/* analyze.c */
void x86_find_tables(struct patch_fn *fn, const uint8_t *code);

/* flags.c */
bool x86_flags_live(const struct patch_fn *fn, const uint8_t *code, size_t i);

/* reloc.c */
int x86_relocate(const uint8_t *src, size_t avail, uint64_t from, bool last, struct emit *e,
		 struct patch_map *m, char *why, size_t n);

/* tramp.c */
#define SAVE_PUSHES 10
extern const uint8_t x86_push_len[SAVE_PUSHES];
#define REDZONE_LEA_LEN 5
uint64_t x86_emit_save(struct emit *e, const struct tramp_spec *spec, bool callsite,
		       bool flags);

#endif /* SONDE_PATCH_X86_H */
