/* SPDX-License-Identifier: MIT */
/*
 * The return trampoline of dynamic instrumentation (docs/dynamic.md). sonde__dyn_entry puts
 * its address in place of the return address of a call whose point has exit actions; the
 * function returns here, with its return value in rax/rdx or xmm0/xmm1 and the stack pointer
 * just above the slot that held the return address.
 *
 * It saves the return registers in a struct sonde_retregs { rax, rdx, sp, pad, xmm0, xmm1 },
 * calls sonde__dyn_exit (through a hidden alias: no PLT), which runs the exit actions and
 * gives back the real return address, restores the registers and jumps there through r11,
 * which no caller expects to survive a call. Flags and the other caller-saved registers are
 * dead after a return; rbp is kept. Legacy-SSE moves keep the upper halves of ymm registers.
 *
 *   on entry: rsp = slot + 8 (any alignment); rax, rdx, xmm0, xmm1: the return value
 */
	.text
	.globl sonde__dyn_ret_tramp
	.type sonde__dyn_ret_tramp, @function
	.globl dyn_ret_tramp_local
	.hidden dyn_ret_tramp_local
	.p2align 4
sonde__dyn_ret_tramp:
dyn_ret_tramp_local:
	.cfi_startproc
	.cfi_undefined rip		/* the real return address is on the shadow stack */
	push %rbp
	.cfi_adjust_cfa_offset 8
	mov %rsp, %rbp
	and $-16, %rsp
	sub $64, %rsp
	mov %rax, 0(%rsp)
	mov %rdx, 8(%rsp)
	lea 8(%rbp), %rax
	mov %rax, 16(%rsp)
	movdqu %xmm0, 32(%rsp)
	movdqu %xmm1, 48(%rsp)
	mov %rsp, %rdi
	call dyn_exit_local		/* -> the real return address */
	mov %rax, %r11
	mov 0(%rsp), %rax
	mov 8(%rsp), %rdx
	movdqu 32(%rsp), %xmm0
	movdqu 48(%rsp), %xmm1
	mov %rbp, %rsp
	pop %rbp
	.cfi_adjust_cfa_offset -8
	jmp *%r11
	.cfi_endproc
	.size sonde__dyn_ret_tramp, . - sonde__dyn_ret_tramp

/*
 * void dyn_call_keeping_vectors(void (*fn)(void *, void *), void *arg): fn(arg, NULL) with
 * xmm0-xmm7 kept — at a function's entry they may hold its arguments, which the entry
 * trampoline does not save, and fn (the profile runtime's probe) is ordinary C.
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
	sub $128, %rsp
	movdqu %xmm0, 0(%rsp)
	movdqu %xmm1, 16(%rsp)
	movdqu %xmm2, 32(%rsp)
	movdqu %xmm3, 48(%rsp)
	movdqu %xmm4, 64(%rsp)
	movdqu %xmm5, 80(%rsp)
	movdqu %xmm6, 96(%rsp)
	movdqu %xmm7, 112(%rsp)
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
	mov %rbp, %rsp
	pop %rbp
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc
	.size dyn_call_keeping_vectors, . - dyn_call_keeping_vectors

	.section .note.GNU-stack, "", @progbits
