/*
 * The binary patcher: analyse a function's machine code, plan the bytes that send its entry
 * (or one of its call sites) to a trampoline, build the trampoline, and map the PC of a stopped
 * thread between the original code and the trampoline (docs/dynamic.md, tool/patch/README.md).
 *
 * It works on byte buffers and run-time addresses only: reading and writing the target's
 * memory, and stopping its threads, is tool/inject/'s work. The interface is the same for every
 * architecture; the x86-64 implementation is in tool/patch/x86_64/ (Zydis 4).
 *
 * Every function that can refuse returns 0 on success and -1 with a one-line reason in
 * why[0..n) otherwise; a refused plan writes nothing anywhere but *out and why.
 */
#ifndef SONDE_PATCH_H
#define SONDE_PATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PATCH_SITE_MAX 64	/* bytes replaced at one site, at most (a retry loop at an entry) */
#define PATCH_TRAMP_MAX 256	/* bytes of one trampoline, at most: reserve this much per point */
#define PATCH_MAP_MAX 24	/* instructions displaced from one site, at most */

/* What an instruction does to control flow, as far as patching cares. */
enum patch_insn_kind {
	PI_PLAIN,		/* falls through (may still have a RIP-relative operand) */
	PI_JMP,			/* jmp rel8/rel32 */
	PI_JCC,			/* jcc rel8/rel32 */
	PI_LOOP,		/* jrcxz, jecxz, loop, loope, loopne: rel8 only */
	PI_CALL,		/* call rel32 */
	PI_CALL_IND,		/* call through a register or memory */
	PI_JMP_IND,		/* jmp through a register or memory */
	PI_RET,			/* ret, iret... */
	PI_OTHER_REL,		/* another relative operand (xbegin): never displaced */
};

struct patch_insn {
	uint32_t off;		/* from the function's first byte */
	uint8_t len;
	uint8_t kind;		/* enum patch_insn_kind */
	bool riprel;		/* has a RIP-relative memory operand */
	uint64_t target;	/* relative branches and calls: the run-time target */
};

/* A jump table found in front of an indirect jmp; its entries are read by patch_read_tables. */
struct patch_table {
	uint32_t jmp_off;	/* the indirect jmp */
	uint64_t base;		/* run-time address of the table */
	uint32_t nr;		/* entries, from the bounds check before the jump; 0: unknown */
	uint8_t entry_size;	/* 4: int32 offsets from base (PIC); 8: absolute addresses */
	bool read;
};

/* A decoded function (patch_analyze); free with patch_fn_free. */
struct patch_fn {
	uint64_t addr;		/* run-time address of the first byte */
	size_t len;		/* bytes (the ELF symbol's size) */
	struct patch_insn *insns;
	size_t nr_insns;
	size_t nr_calls;	/* instructions of kind PI_CALL or PI_CALL_IND: the call sites */
	uint32_t entry_off;	/* where an entry patch goes: 0, or 4 past an endbr64 */
	uint32_t sled_len;	/* NOP bytes (whole instructions) at entry_off; 0: no sled */
	struct patch_table *tables;
	size_t nr_tables;
	uint64_t *targets;	/* branch targets not in insns: jump table entries, patch_add_target */
	size_t nr_targets, cap_targets;
	int64_t unknown_ijmp;	/* offset of an indirect jmp that may land anywhere here, or -1 */
	/* the status flags may be read after the entry: its trampoline saves them (flags.c) */
	bool entry_flags_live;
};

/* How a trampoline calls the runtime: void handler(uint32_t point, regs *, uint64_t *ret_slot). */
struct tramp_spec {
	uint64_t entry_handler;	/* run-time address of sonde__dyn_entry (or a stand-in) */
	uint32_t point;		/* passed in edi */
};

enum patch_kind { PATCH_ENTRY, PATCH_CALLSITE };

/* How a displaced instruction was relocated (patch_map_pc_* need it). */
enum patch_map_how {
	PM_COPY,		/* one instruction, same length or re-encoded (rel32, disp32) */
	PM_CALL,		/* a call as lea rsp,[rsp-8]; mov [rsp],lo; mov [rsp+4],hi; jmp */
	PM_LOOP,		/* jrcxz/loop L as "jrcxz 1f; jmp 2f; 1: jmp L; 2:" */
	PM_POINT,		/* a call site's call: the register save and handler call, then PM_CALL */
};

struct patch_map {
	uint8_t orig_off, orig_len;	/* the instruction, from the site */
	uint16_t tramp_off, tramp_len;	/* its relocated copy, from the trampoline */
	uint8_t how;			/* enum patch_map_how */
	uint64_t target;		/* PM_LOOP: the branch target */
};

/*
 * What to write, where. Insert: write code[0..tramp_len) at tramp, then bytes[0..len) at site,
 * moving stopped threads with patch_map_pc_into. Remove: write orig[0..len) back at site,
 * moving threads with patch_map_pc_out.
 */
struct patch_plan {
	enum patch_kind kind;
	uint32_t point;
	uint64_t site;			/* first byte replaced */
	uint32_t len;			/* bytes replaced */
	uint8_t orig[PATCH_SITE_MAX];
	uint8_t bytes[PATCH_SITE_MAX];	/* jmp rel32 to the trampoline, int3 up to len */
	uint64_t resume;		/* where the trampoline jumps back to: site + len */
	bool on_sled;			/* the displaced bytes are NOPs: nothing relocated */
	/* pushfq/popfq; else push rax and lea rsp,[rsp+8] (flags dead: the same save offsets) */
	bool saves_flags;
	uint64_t tramp;
	uint32_t tramp_len;
	uint8_t code[PATCH_TRAMP_MAX];
	uint16_t save_off, save_len;	/* register save, handler call, restore: in code */
	uint64_t save_orig;		/* the original address the save part stands for */
	uint64_t handler_ret;		/* return address of the handler call (inside tramp) */
	uint32_t nr_map;
	struct patch_map map[PATCH_MAP_MAX];
};

/* Reads len bytes of the target at addr into buf; 0 on success. */
typedef int (*patch_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/*
 * Decode the function code[0..len) that runs at addr: its instructions, branch targets, call
 * sites, jump tables, NOP sled. Fails on bytes that do not decode.
 */
int patch_analyze(const uint8_t *code, size_t len, uint64_t addr, struct patch_fn *out,
		  char *why, size_t n);
void patch_fn_free(struct patch_fn *fn);

/* Read the entries of fn's jump tables through read(ctx, ...): each becomes a branch target. */
int patch_read_tables(struct patch_fn *fn, patch_read_fn read, void *ctx, char *why, size_t n);

/* A branch target that analysis cannot see (from another function, e.g. a .cold part). */
void patch_add_target(struct patch_fn *fn, uint64_t target);
/* Every branch of other (analysed, tables read) that lands in fn: gcc's f.cold jumps into f. */
void patch_add_targets_from(struct patch_fn *fn, const struct patch_fn *other);

/*
 * Plan the entry point of fn (code: its bytes, as given to patch_analyze) with its trampoline
 * at tramp_addr (PATCH_TRAMP_MAX bytes reserved there).
 */
int patch_plan_entry(const struct patch_fn *fn, const uint8_t *code, uint64_t tramp_addr,
		     const struct tramp_spec *spec, struct patch_plan *out, char *why, size_t n);

/* Plan the call-site point of the call instruction at call_addr in fn. */
int patch_plan_callsite(const struct patch_fn *fn, const uint8_t *code, uint64_t call_addr,
			uint64_t tramp_addr, const struct tramp_spec *spec,
			struct patch_plan *out, char *why, size_t n);

/* Whether two plans replace some of the same bytes (only one of them can be applied). */
bool patch_plans_overlap(const struct patch_plan *a, const struct patch_plan *b);

/*
 * Inserting: where a thread stopped at pc must continue once plan's bytes are written. pc
 * itself when it needs no move (outside the replaced bytes, or at their first byte, which
 * becomes the jmp); the relocated copy of the instruction at pc; on a sled, resume. 0 when
 * pc is not on an instruction boundary of the replaced bytes (cannot happen for a stopped
 * thread).
 */
uint64_t patch_map_pc_into(const struct patch_plan *plan, uint64_t pc);

/*
 * Removing: where a thread stopped at pc must continue once the original bytes are back and the
 * trampoline is gone; *sp_adjust (may be NULL if the caller only accepts 0) is what to add to
 * the thread's rsp. pc itself when outside the trampoline. 0 when the thread is in the middle
 * of the handler call's register save or restore: let it run on and stop it again.
 */
uint64_t patch_map_pc_out(const struct patch_plan *plan, uint64_t pc, int64_t *sp_adjust);

#endif /* SONDE_PATCH_H */
