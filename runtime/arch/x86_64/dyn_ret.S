/* SPDX-License-Identifier: MIT */
/*
 * The return trampoline of dynamic instrumentation (docs/dynamic.md). sonde__dyn_entry puts
 * its address in place of the return address of a call whose point has exit actions; the
 * function returns here, with its return value in rax/rdx or xmm0/xmm1 and the stack pointer
 * just above the slot that held the return address.
 *
 * It must change no register but rip: with -fipa-ra (gcc -O2's default) a caller keeps values
 * in call-clobbered registers across a call to a function it knows leaves them alone, so after
 * the return every register may be live. It saves rax, rdx, rcx, rsi, rdi, r8-r11 and
 * xmm0-xmm15 in a struct sonde_retregs (its first fields { rax, rdx, sp, pad, xmm0, xmm1 } are
 * what the C side reads), calls sonde__dyn_exit (through a hidden alias: no PLT), which runs the
 * exit actions and gives back the real return address, writes that address back into the slot
 * the function returned from, restores everything and returns through it with `ret` (jumping
 * through a register would clobber one). Legacy-SSE moves keep the upper halves of ymm
 * registers. Flags are dead after a return (no compiler keeps them across a call).
 *
 *   on entry: rsp = slot + 8 (any alignment); rax, rdx, xmm0, xmm1: the return value
 *
 * Unwinding (docs/dynamic.md, "Exceptions and unwinding through a hooked return"): an unwinder
 * that steps out of the hooked function finds the trampoline's address as its return address.
 * The trampoline's own unwind information (written by hand below, in .eh_frame) makes it an
 * ordinary frame to every DWARF unwinder (libgcc's for C++ exceptions and pthread_exit, gdb,
 * backtrace): its caller's stack pointer is the one it was entered with, and its return address
 * is found by a DWARF expression that looks the slot up on the shadow stack. Its personality
 * routine (runtime/dyn/unwind.c) closes the calls an exception or a forced unwinding leaves.
 */
#include "../../dyn/unwind_layout.h"

	.text
	.globl sonde__dyn_ret_tramp
	.type sonde__dyn_ret_tramp, @function
	.globl dyn_ret_tramp_local
	.hidden dyn_ret_tramp_local
/*
 * What the expression needs besides the stack, at a fixed distance before the trampoline (the
 * expression knows the trampoline's address: it is the value in the slot): where the list of
 * every thread's record is (dyn_threads, relative to here: fixed at link time, no relocation
 * at run time).
 */
	.p2align 4
dyn_ret_anchor:
	.quad dyn_threads - dyn_ret_anchor
	.type dyn_ret_anchor, @object
	.size dyn_ret_anchor, 8
	.fill 23, 1, 0xcc
/*
 * An unwinder looks up the frame of a return address at the address - 1: this byte, which the
 * FDE covers. Symbolizers that look frames up the same way name a hooked return by it.
 */
	.type dyn_hooked_return, @function
.Ltramp_fde_start:
dyn_hooked_return:
	nop
	.size dyn_hooked_return, 1
sonde__dyn_ret_tramp:
dyn_ret_tramp_local:
	sub $8, %rsp			/* rsp = the slot again: the real address goes here */
.Lcfi_sub:
	push %rbp
.Lcfi_push:
	mov %rsp, %rbp			/* the slot is at 8(%rbp) */
.Lcfi_frame:
	and $-16, %rsp
	sub $352, %rsp
	mov %rax, 0(%rsp)
	mov %rdx, 8(%rsp)
	lea 16(%rbp), %rax		/* the stack pointer after the return */
	mov %rax, 16(%rsp)
	movdqu %xmm0, 32(%rsp)
	movdqu %xmm1, 48(%rsp)
	movdqu %xmm2, 64(%rsp)
	movdqu %xmm3, 80(%rsp)
	movdqu %xmm4, 96(%rsp)
	movdqu %xmm5, 112(%rsp)
	movdqu %xmm6, 128(%rsp)
	movdqu %xmm7, 144(%rsp)
	movdqu %xmm8, 160(%rsp)
	movdqu %xmm9, 176(%rsp)
	movdqu %xmm10, 192(%rsp)
	movdqu %xmm11, 208(%rsp)
	movdqu %xmm12, 224(%rsp)
	movdqu %xmm13, 240(%rsp)
	movdqu %xmm14, 256(%rsp)
	movdqu %xmm15, 272(%rsp)
	mov %rcx, 288(%rsp)
	mov %rsi, 296(%rsp)
	mov %rdi, 304(%rsp)
	mov %r8, 312(%rsp)
	mov %r9, 320(%rsp)
	mov %r10, 328(%rsp)
	mov %r11, 336(%rsp)
	mov %rsp, %rdi
	call dyn_exit_local		/* -> the real return address (its frame popped) */
.Lcfi_in_rax:
	mov %rax, 8(%rbp)
.Lcfi_in_slot:
	mov 288(%rsp), %rcx
	mov 296(%rsp), %rsi
	mov 304(%rsp), %rdi
	mov 312(%rsp), %r8
	mov 320(%rsp), %r9
	mov 328(%rsp), %r10
	mov 336(%rsp), %r11
	movdqu 32(%rsp), %xmm0
	movdqu 48(%rsp), %xmm1
	movdqu 64(%rsp), %xmm2
	movdqu 80(%rsp), %xmm3
	movdqu 96(%rsp), %xmm4
	movdqu 112(%rsp), %xmm5
	movdqu 128(%rsp), %xmm6
	movdqu 144(%rsp), %xmm7
	movdqu 160(%rsp), %xmm8
	movdqu 176(%rsp), %xmm9
	movdqu 192(%rsp), %xmm10
	movdqu 208(%rsp), %xmm11
	movdqu 224(%rsp), %xmm12
	movdqu 240(%rsp), %xmm13
	movdqu 256(%rsp), %xmm14
	movdqu 272(%rsp), %xmm15
	mov 0(%rsp), %rax
	mov 8(%rsp), %rdx
	mov %rbp, %rsp
.Lcfi_unframe:
	pop %rbp
.Lcfi_pop:
	ret
.Ltramp_fde_end:
	.size sonde__dyn_ret_tramp, . - sonde__dyn_ret_tramp

/*
 * The trampoline's CIE and FDE. A CIE of its own ("zPRS"): the personality routine and FDE
 * addresses pc-relative, 4 bytes (the routine is hidden in this library); and S, a signal
 * frame. The trampoline's frame has no size when an unwinder passes it: its CFA (slot + 8, the
 * caller's stack pointer after the return) is the hooked function's too, and an unwinder tells
 * frames apart by CFA (libgcc's second phase finds the frame that catches by it). A signal
 * frame's caller is told apart (libgcc: CFA - 1), and its pc is taken as it is, not as a return
 * address (pc - 1): so the expression gives the real return address - 1, inside the call, which
 * is what an unwinder looks up for an ordinary caller (its FDE, its landing pads). The rows:
 *   the nop and the first instruction (a frame that has just "returned" here): CFA = rsp, the
 *     caller's rip = the real return address - 1 (the expression, below); every other register
 *     is the caller's already (callee-saved ones untouched);
 *   then the trampoline's own pushes, rbp as frame pointer; after sonde__dyn_exit returned
 *     the real address is in rax, then in the slot (cfa - 8): rip is that - 1.
 */
#define DW_CFA_advance_loc4 0x04
#define DW_CFA_def_cfa 0x0c
#define DW_CFA_def_cfa_register 0x0d
#define DW_CFA_def_cfa_offset 0x0e
#define DW_CFA_val_expression 0x16
#define DW_CFA_offset_rip 0x90	/* DW_CFA_offset | 16 */
#define DW_CFA_offset_rbp 0x86	/* DW_CFA_offset | 6 */
#define DW_CFA_restore_rbp 0xc6	/* DW_CFA_restore | 6 */

/* DWARF expression operations (only those every unwinder implements the same way: no
 * comparison but eq and ne, whose operand order does not matter; no pick of the bottom) */
#define DW_OP_deref 0x06
#define DW_OP_const1u 0x08
#define DW_OP_const8u 0x0e
#define DW_OP_dup 0x12
#define DW_OP_drop 0x13
#define DW_OP_over 0x14
#define DW_OP_pick 0x15
#define DW_OP_and 0x1a
#define DW_OP_minus 0x1c
#define DW_OP_mul 0x1e
#define DW_OP_plus 0x22
#define DW_OP_plus_uconst 0x23
#define DW_OP_bra 0x28
#define DW_OP_eq 0x29
#define DW_OP_ne 0x2e
#define DW_OP_skip 0x2f
#define DW_OP_lit0 0x30
#define DW_OP_lit1 0x31
#define DW_OP_lit8 0x38
#define DW_OP_breg0 0x70
#define DW_OP_deref_size 0x94

/* a branch: the offset counts from the end of its 2-byte operand */
#define BRA(label) .byte DW_OP_bra; .2byte label - . - 2
#define SKIP(label) .byte DW_OP_skip; .2byte label - . - 2
#define ADVANCE(from, to) .byte DW_CFA_advance_loc4; .long to - from
#define SIGN_BIT .byte DW_OP_const8u; .quad 0x8000000000000000

/* the distance of the anchor before the trampoline */
#define ANCHOR_BACK (sonde__dyn_ret_tramp - dyn_ret_anchor)

	.section .eh_frame, "a", @progbits
	.p2align 3
.Lcie:
	.long .Lcie_end - .Lcie_id
.Lcie_id:
	.long 0				/* a CIE */
	.byte 1				/* version */
	.string "zPRS"
	.uleb128 1			/* code alignment */
	.sleb128 -8			/* data alignment */
	.uleb128 16			/* return address column: rip */
	.uleb128 .Lcie_aug_end - .Lcie_aug
.Lcie_aug:
	.byte 0x1b			/* personality: DW_EH_PE_pcrel | DW_EH_PE_sdata4 */
	.long dyn_unwind_personality - .
	.byte 0x1b			/* FDE addresses: the same */
.Lcie_aug_end:
	.byte DW_CFA_def_cfa, 7, 8	/* the usual initial rules: CFA = rsp + 8 */
	.byte DW_CFA_offset_rip, 1	/* rip at cfa - 8 */
	.p2align 3			/* zeros: DW_CFA_nop */
.Lcie_end:

	.long .Lfde_end - .Lfde_cie
.Lfde_cie:
	.long .Lfde_cie - .Lcie		/* its CIE */
	.long .Ltramp_fde_start - .	/* pc begin */
	.long .Ltramp_fde_end - .Ltramp_fde_start
	.uleb128 0			/* no augmentation data */
	.byte DW_CFA_def_cfa_offset, 0	/* CFA = rsp = slot + 8 */
	.byte DW_CFA_val_expression, 16
	.uleb128 .Lexpr_end - .Lexpr
.Lexpr:
/*
 * Initial stack: CFA. Leaves on top the real return address - 1: frames[i].ret of the newest
 * frame whose slot is CFA - 8 (skipping frames of tail calls, whose ret is the trampoline
 * itself), in a live thread's record; or 0, which ends the walk, when there is none.
 * Stack comments: C CFA (kept at the bottom: libgcc refuses to pick the bottom entry),
 * S slot, V the trampoline's address, F first pass (range check on), T record, p frame.
 */
	.byte DW_OP_dup, DW_OP_lit8, DW_OP_minus	/* C S */
	.byte DW_OP_dup, DW_OP_deref			/* C S V */
	.byte DW_OP_lit1				/* C S V F */
	.byte DW_OP_over, DW_OP_const1u, ANCHOR_BACK, DW_OP_minus	/* ... F anchor */
	.byte DW_OP_dup, DW_OP_deref, DW_OP_plus, DW_OP_deref	/* C S V F T=dyn_threads */
.Lrec:							/* C S V F T */
	.byte DW_OP_dup
	BRA(.Lhave)
	.byte DW_OP_drop				/* C S V F: end of the list */
	.byte DW_OP_dup
	BRA(.Lpass2)
	.byte DW_OP_lit0				/* C S V F 0: not found */
	SKIP(.Lend)
.Lpass2:		/* again without the range check (frames not in stack order: sigaltstack) */
	.byte DW_OP_drop, DW_OP_lit0			/* C S V 0 */
	.byte DW_OP_over, DW_OP_const1u, ANCHOR_BACK, DW_OP_minus
	.byte DW_OP_dup, DW_OP_deref, DW_OP_plus, DW_OP_deref	/* C S V 0 T */
	SKIP(.Lrec)
.Lhave:							/* C S V F T */
	.byte DW_OP_dup, DW_OP_plus_uconst
	.uleb128 DYN_UW_STATE
	.byte DW_OP_deref_size, 4, DW_OP_lit1, DW_OP_ne
	BRA(.Lnext)					/* not a live thread's */
	.byte DW_OP_dup, DW_OP_deref_size, 4		/* C S V F T depth */
	.byte DW_OP_dup
	BRA(.Lnonempty)
	SKIP(.Lnext1)
.Lnonempty:
	.byte DW_OP_lit1, DW_OP_minus, DW_OP_const1u, DYN_UW_FRAME_SIZE, DW_OP_mul
	.byte DW_OP_over, DW_OP_plus, DW_OP_plus_uconst
	.uleb128 DYN_UW_FRAMES				/* C S V F T p=&frames[depth-1] */
	.byte DW_OP_pick, 2, DW_OP_lit0, DW_OP_eq
	BRA(.Lscan)					/* second pass */
	/* S below the newest frame's slot, or above the oldest one's: another thread's */
	.byte DW_OP_pick, 4, DW_OP_over, DW_OP_plus_uconst, DYN_UW_FRAME_SLOT, DW_OP_deref
	.byte DW_OP_minus				/* ... p S-p.slot */
	SIGN_BIT
	.byte DW_OP_and
	BRA(.Lnext1)
	.byte DW_OP_pick, 1, DW_OP_plus_uconst
	.uleb128 DYN_UW_FRAMES + DYN_UW_FRAME_SLOT
	.byte DW_OP_deref, DW_OP_pick, 5, DW_OP_minus	/* ... p frames[0].slot-S */
	SIGN_BIT
	.byte DW_OP_and
	BRA(.Lnext1)
.Lscan:							/* C S V F T p */
	.byte DW_OP_dup, DW_OP_plus_uconst, DYN_UW_FRAME_SLOT, DW_OP_deref
	.byte DW_OP_pick, 5, DW_OP_eq			/* ... p slot==S */
	.byte DW_OP_over, DW_OP_deref, DW_OP_pick, 5, DW_OP_ne	/* ... p slot==S ret!=V */
	.byte DW_OP_and
	BRA(.Lfound)
	.byte DW_OP_dup, DW_OP_pick, 2, DW_OP_plus_uconst
	.uleb128 DYN_UW_FRAMES
	.byte DW_OP_eq
	BRA(.Lnext1)					/* frames[0] seen */
	.byte DW_OP_const1u, DYN_UW_FRAME_SIZE, DW_OP_minus
	SKIP(.Lscan)
.Lnext1:						/* C S V F T x */
	.byte DW_OP_drop
.Lnext:							/* C S V F T */
	.byte DW_OP_plus_uconst, DYN_UW_NEXT, DW_OP_deref
	SKIP(.Lrec)
.Lfound:						/* C S V F T p */
	.byte DW_OP_deref, DW_OP_lit1, DW_OP_minus	/* ... ret - 1 */
.Lend:
.Lexpr_end:
	ADVANCE(.Ltramp_fde_start, .Lcfi_sub)
	.byte DW_CFA_def_cfa_offset, 8
	ADVANCE(.Lcfi_sub, .Lcfi_push)
	.byte DW_CFA_def_cfa_offset, 16, DW_CFA_offset_rbp, 2
	ADVANCE(.Lcfi_push, .Lcfi_frame)
	.byte DW_CFA_def_cfa_register, 6
	ADVANCE(.Lcfi_frame, .Lcfi_in_rax)
	.byte DW_CFA_val_expression, 16, 4, DW_OP_breg0, 0, DW_OP_lit1, DW_OP_minus	/* rax - 1 */
	ADVANCE(.Lcfi_in_rax, .Lcfi_in_slot)
	.byte DW_CFA_val_expression, 16, 5, DW_OP_lit8, DW_OP_minus, DW_OP_deref, DW_OP_lit1
	.byte DW_OP_minus				/* *(cfa - 8) - 1 */
	ADVANCE(.Lcfi_in_slot, .Lcfi_unframe)
	.byte DW_CFA_def_cfa, 7, 16
	ADVANCE(.Lcfi_unframe, .Lcfi_pop)
	.byte DW_CFA_def_cfa_offset, 8, DW_CFA_restore_rbp
	.p2align 3
.Lfde_end:

	.text
/*
 * void dyn_call_keeping_vectors(void (*fn)(void *, void *), void *arg): fn(arg, NULL) with
 * xmm0-xmm15 kept — at a function's entry they may hold its arguments (xmm0-7) or, with
 * -fipa-ra, a caller's values it expects the function to leave alone; the entry trampoline does
 * not save them, and fn (the profile runtime's probe) is ordinary C.
 */
	.globl dyn_call_keeping_vectors
	.hidden dyn_call_keeping_vectors
	.type dyn_call_keeping_vectors, @function
	.p2align 4
dyn_call_keeping_vectors:
	.cfi_startproc
	push %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbp, 0
	mov %rsp, %rbp
	.cfi_def_cfa_register rbp
	and $-16, %rsp
	sub $256, %rsp
	movdqu %xmm0, 0(%rsp)
	movdqu %xmm1, 16(%rsp)
	movdqu %xmm2, 32(%rsp)
	movdqu %xmm3, 48(%rsp)
	movdqu %xmm4, 64(%rsp)
	movdqu %xmm5, 80(%rsp)
	movdqu %xmm6, 96(%rsp)
	movdqu %xmm7, 112(%rsp)
	movdqu %xmm8, 128(%rsp)
	movdqu %xmm9, 144(%rsp)
	movdqu %xmm10, 160(%rsp)
	movdqu %xmm11, 176(%rsp)
	movdqu %xmm12, 192(%rsp)
	movdqu %xmm13, 208(%rsp)
	movdqu %xmm14, 224(%rsp)
	movdqu %xmm15, 240(%rsp)
	mov %rdi, %rax
	mov %rsi, %rdi
	xor %esi, %esi
	call *%rax
	movdqu 0(%rsp), %xmm0
	movdqu 16(%rsp), %xmm1
	movdqu 32(%rsp), %xmm2
	movdqu 48(%rsp), %xmm3
	movdqu 64(%rsp), %xmm4
	movdqu 80(%rsp), %xmm5
	movdqu 96(%rsp), %xmm6
	movdqu 112(%rsp), %xmm7
	movdqu 128(%rsp), %xmm8
	movdqu 144(%rsp), %xmm9
	movdqu 160(%rsp), %xmm10
	movdqu 176(%rsp), %xmm11
	movdqu 192(%rsp), %xmm12
	movdqu 208(%rsp), %xmm13
	movdqu 224(%rsp), %xmm14
	movdqu 240(%rsp), %xmm15
	mov %rbp, %rsp
	pop %rbp
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc
	.size dyn_call_keeping_vectors, . - dyn_call_keeping_vectors

	.section .note.GNU-stack, "", @progbits
