/* SPDX-License-Identifier: MIT */
/*
 * Trampolines for setjmp, _setjmp and __sigsetjmp. A C wrapper cannot stand in for them: the
 * context they save would be the wrapper's frame, dead once it returns. These note the probe
 * stack's depth for the jump buffer (rt_note_setjmp, which returns the real function), restore
 * the argument registers and the stack exactly as they were on entry, and *jump* to the real
 * function, so it saves the caller's context as if called directly. longjmp (wrap.c) then
 * closes exactly the frames above the noted depth.
 *
 *   on entry: rdi = env, rsi = savemask (__sigsetjmp), rsp = caller's rsp - 8 (return address)
 */
	.text

.macro TRAMPOLINE name, which
	.globl \name
	.type \name, @function
\name:
	.cfi_startproc
	push %rdi
	.cfi_adjust_cfa_offset 8
	push %rsi
	.cfi_adjust_cfa_offset 8
	sub $8, %rsp			/* 16-byte alignment for the call */
	.cfi_adjust_cfa_offset 8
	mov $\which, %esi
	call rt_note_setjmp		/* (env, which) -> address of the real function */
	add $8, %rsp
	.cfi_adjust_cfa_offset -8
	pop %rsi
	.cfi_adjust_cfa_offset -8
	pop %rdi
	.cfi_adjust_cfa_offset -8
	jmp *%rax
	.cfi_endproc
	.size \name, . - \name
.endm

TRAMPOLINE setjmp, 0
TRAMPOLINE _setjmp, 1
TRAMPOLINE __sigsetjmp, 2

	.section .note.GNU-stack, "", @progbits
