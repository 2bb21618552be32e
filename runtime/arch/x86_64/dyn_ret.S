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
	sub $8, %rsp			/* rsp = the slot again: the real address goes here */
	.cfi_adjust_cfa_offset 8
	push %rbp
	.cfi_adjust_cfa_offset 8
	mov %rsp, %rbp			/* the slot is at 8(%rbp) */
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
	call dyn_exit_local		/* -> the real return address */
	mov %rax, 8(%rbp)
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
	pop %rbp
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size sonde__dyn_ret_tramp, . - sonde__dyn_ret_tramp

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
