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

	.section .note.GNU-stack, "", @progbits
