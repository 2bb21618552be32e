/* SPDX-License-Identifier: MIT */
/*
 * Hand-written entry trampolines for the dynamic instrumentation tests: each tr_NAME is the
 * function t_NAME (tests/unit/dyn_support.c) as the patcher would leave it with a point at its
 * entry — the trampoline of docs/dynamic.md, then a jump to the function's body (what a
 * function on a NOP sled does). sonde__dyn_entry is reached RIP-relative here, where the
 * patcher writes its absolute address with movabs: the same cost.
 */
	.text

.macro ENTRY_TRAMP name, point, body, flags=1
	.globl \name
	.type \name, @function
	.p2align 4
\name:
	.cfi_startproc
	.if \flags
	pushfq
	.else
	sub $8, %rsp			/* the benchmark's variant: no flags saved */
	.endif
	push %r11
	push %r10
	push %rax
	push %r9
	push %r8
	push %rcx
	push %rdx
	push %rsi
	push %rdi
	.cfi_adjust_cfa_offset 80
	mov %rsp, %rsi			/* struct sonde_regs * */
	lea 80(%rsp), %rdx		/* ret_slot: the caller's return address */
	mov $\point, %edi
	sub $8, %rsp
	.cfi_adjust_cfa_offset 8
	lea sonde__dyn_entry(%rip), %rax
	call *%rax
	add $8, %rsp
	.cfi_adjust_cfa_offset -8
	pop %rdi
	pop %rsi
	pop %rdx
	pop %rcx
	pop %r8
	pop %r9
	pop %rax
	pop %r10
	pop %r11
	.if \flags
	popfq
	.else
	add $8, %rsp
	.endif
	.cfi_adjust_cfa_offset -80
	jmp \body
	.cfi_endproc
	.size \name, . - \name
.endm

ENTRY_TRAMP tr_add, 1, t_add
ENTRY_TRAMP tr_rec, 2, t_rec
ENTRY_TRAMP tr_half, 3, t_half
ENTRY_TRAMP tr_pair, 4, t_pair
ENTRY_TRAMP tr_jump, 5, t_jump
ENTRY_TRAMP tr_tail, 6, t_tail_body
ENTRY_TRAMP tr_spin, 7, t_spin
ENTRY_TRAMP tr_hook, 8, t_hook
ENTRY_TRAMP tr_outer, 9, t_outer
ENTRY_TRAMP tr_sig, 10, t_add
ENTRY_TRAMP tr_bench, 11, t_bench
ENTRY_TRAMP tr_bench_off, 12, t_bench
ENTRY_TRAMP tr_bench_noflags, 11, t_bench, 0
ENTRY_TRAMP tr_bench_off_noflags, 12, t_bench, 0

/* A function whose whole body is a tail call to another instrumented function. */
	.globl t_tail_body
	.type t_tail_body, @function
t_tail_body:
	jmp tr_add
	.size t_tail_body, . - t_tail_body

	.section .note.GNU-stack, "", @progbits
