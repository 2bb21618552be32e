/*
 * Hand-written functions for the patcher's corpus (with patch_corpus.c): the first instructions
 * that compilers rarely or never emit. Exported ones follow the corpus' signature,
 * long pc_asm_NAME(long a, long b, long c = callback, long d = small count).
 */
	.text

/* Starts with a jcc on the caller's flags; both paths give a + b. */
	.globl pc_asm_jcc_first
	.type pc_asm_jcc_first, @function
pc_asm_jcc_first:
	jne 1f
	lea (%rdi,%rsi), %rax
	ret
1:	lea (%rdi,%rsi), %rax
	ret
	.size pc_asm_jcc_first, .-pc_asm_jcc_first

/* max(a, b) through flags set by the caller (pc_asm_max): the entry point must keep them. */
	.type pc_asm_jcc_sel, @function
pc_asm_jcc_sel:
	jl 1f
	mov %rdi, %rax
	ret
1:	mov %rsi, %rax
	ret
	.size pc_asm_jcc_sel, .-pc_asm_jcc_sel

	.globl pc_asm_max
	.type pc_asm_max, @function
pc_asm_max:
	cmp %rsi, %rdi
	jmp pc_asm_jcc_sel
	.size pc_asm_max, .-pc_asm_max

/*
 * a + b + 1 + CF, CF from the caller (pc_asm_carry): inc writes every status flag but CF, which
 * adc reads, so the entry point must keep the flags.
 */
	.type pc_asm_inc_adc, @function
pc_asm_inc_adc:
	mov %rdi, %rax
	inc %rax
	adc %rsi, %rax
	ret
	.size pc_asm_inc_adc, .-pc_asm_inc_adc

/* CF = a < b (unsigned). */
	.globl pc_asm_carry
	.type pc_asm_carry, @function
pc_asm_carry:
	cmp %rsi, %rdi
	jmp pc_asm_inc_adc
	.size pc_asm_carry, .-pc_asm_carry

/*
 * (a << d) + b + CF: a shift by cl writes no flag when cl is 0, and then CF is the caller's
 * (pc_asm_shift): the entry point must keep the flags.
 */
	.type pc_asm_shl_adc, @function
pc_asm_shl_adc:
	mov %rdi, %rax
	shl %cl, %rax
	adc %rsi, %rax
	ret
	.size pc_asm_shl_adc, .-pc_asm_shl_adc

/* CF = a < b (unsigned), d = 0 among the inputs. */
	.globl pc_asm_shift
	.type pc_asm_shift, @function
pc_asm_shift:
	cmp %rsi, %rdi
	jmp pc_asm_shl_adc
	.size pc_asm_shift, .-pc_asm_shift

/* Starts with loop (rel8 only): rcx = d - 1; d - 1 != 0 ? a + d - 1 : a. */
	.globl pc_asm_loop_first
	.type pc_asm_loop_first, @function
pc_asm_loop_first:
	loop 1f
	mov %rdi, %rax
	ret
1:	lea (%rdi,%rcx), %rax
	ret
	.size pc_asm_loop_first, .-pc_asm_loop_first

/* Starts with jrcxz: d == 0 ? b + 100 : a + d. */
	.globl pc_asm_jrcxz_first
	.type pc_asm_jrcxz_first, @function
pc_asm_jrcxz_first:
	jrcxz 1f
	lea (%rdi,%rcx), %rax
	ret
1:	lea 100(%rsi), %rax
	ret
	.size pc_asm_jrcxz_first, .-pc_asm_jrcxz_first

/* Starts with jecxz (67 e3): (int)d == 0 ? a : b. */
	.globl pc_asm_jecxz_first
	.type pc_asm_jecxz_first, @function
pc_asm_jecxz_first:
	jecxz 1f
	mov %rsi, %rax
	ret
1:	mov %rdi, %rax
	ret
	.size pc_asm_jecxz_first, .-pc_asm_jecxz_first

/* Starts with a short jmp over bytes that never run: a + 2b. */
	.globl pc_asm_jmp_first
	.type pc_asm_jmp_first, @function
pc_asm_jmp_first:
	jmp 1f
	ud2
	int3
1:	lea (%rdi,%rsi,2), %rax
	ret
	.size pc_asm_jmp_first, .-pc_asm_jmp_first

/* A RIP-relative load first: a + 1234. */
	.globl pc_asm_rip_first
	.type pc_asm_rip_first, @function
pc_asm_rip_first:
	mov pc_asm_data(%rip), %rax
	add %rdi, %rax
	ret
	.size pc_asm_rip_first, .-pc_asm_rip_first

/* A RIP-relative operand followed by an immediate (the disp32 is not the last field): a + 1. */
	.globl pc_asm_rip_imm
	.type pc_asm_rip_imm, @function
pc_asm_rip_imm:
	cmpq $1234, pc_asm_data(%rip)
	jne 1f
	lea 1(%rdi), %rax
	ret
1:	mov %rsi, %rax
	ret
	.size pc_asm_rip_imm, .-pc_asm_rip_imm

/* Its own return address, as its callers see it. */
	.type pc_asm_ret_addr, @function
pc_asm_ret_addr:
	mov (%rsp), %rax
	ret
	.size pc_asm_ret_addr, .-pc_asm_ret_addr

/* A call first: a + 5 when the callee sees the original return address (start + 5). */
	.globl pc_asm_call_first
	.type pc_asm_call_first, @function
pc_asm_call_first:
.Lcf_start:
	call pc_asm_ret_addr
	lea .Lcf_start(%rip), %rdx
	sub %rdx, %rax
	add %rdi, %rax
	ret
	.size pc_asm_call_first, .-pc_asm_call_first

/* An indirect call first, not the last of the 5 bytes displaced: refused. cb(a) + b */
	.globl pc_asm_icall_first
	.type pc_asm_icall_first, @function
pc_asm_icall_first:
	call *%rdx
	add %rsi, %rax
	ret
	.size pc_asm_icall_first, .-pc_asm_icall_first

/* An indirect call through a register, last of the bytes displaced: cb(a) + b. */
	.globl pc_asm_icall_reg
	.type pc_asm_icall_reg, @function
pc_asm_icall_reg:
	sub $8, %rsp
	call *%rdx
	add $8, %rsp
	add %rsi, %rax
	ret
	.size pc_asm_icall_reg, .-pc_asm_icall_reg

	.type pc_asm_double, @function
pc_asm_double:
	lea (%rdi,%rdi), %rax
	ret
	.size pc_asm_double, .-pc_asm_double

/* An indirect call through RIP-relative memory, displaced: 2a + b. */
	.globl pc_asm_icall_mem
	.type pc_asm_icall_mem, @function
pc_asm_icall_mem:
	sub $8, %rsp
	call *pc_asm_fnptr(%rip)
	add $8, %rsp
	add %rsi, %rax
	ret
	.size pc_asm_icall_mem, .-pc_asm_icall_mem

/* A loop whose head is 2 bytes into the function: the loop is displaced whole (entry points
 * only). a * max(d, 1) */
	.globl pc_asm_branch_into
	.type pc_asm_branch_into, @function
pc_asm_branch_into:
	xor %eax, %eax
1:	add %rdi, %rax
	dec %rcx
	jg 1b
	ret
	.size pc_asm_branch_into, .-pc_asm_branch_into

/* glibc 2.36's sem_trywait shape: a retry loop whose head is at +3, a jcc out of it, the
 * branch back from after the first 5 bytes: displaced whole. a + 2 * max(d, 0) */
	.globl pc_asm_retry_head
	.type pc_asm_retry_head, @function
pc_asm_retry_head:
	mov %rdi, %rax
1:	test %rcx, %rcx
	jle 2f
	add $2, %rax
	dec %rcx
	jne 1b
	nop
2:	ret
	.size pc_asm_retry_head, .-pc_asm_retry_head

/* pthread_rwlock_tryrdlock's shape: the loop's head at +3 and jumps forward inside the loop
 * (their copies must go to the copies of their targets). a + min(max(b, 0), max(d, 1)) */
	.globl pc_asm_retry_fwd
	.type pc_asm_retry_fwd, @function
pc_asm_retry_fwd:
	mov %rdi, %rax
1:	test %rsi, %rsi
	jg 2f
	jmp 3f
2:	inc %rax
	dec %rsi
3:	dec %rcx
	jg 1b
	ret
	.size pc_asm_retry_fwd, .-pc_asm_retry_fwd

/* A loop whose head is the entry itself: refused. */
	.globl pc_asm_loop_entry
	.type pc_asm_loop_entry, @function
pc_asm_loop_entry:
1:	add $3, %rdi
	cmp $100, %rdi
	jl 1b
	mov %rdi, %rax
	ret
	.size pc_asm_loop_entry, .-pc_asm_loop_entry

/* Four bytes: refused. */
	.globl pc_asm_short
	.type pc_asm_short, @function
pc_asm_short:
	mov %rdi, %rax
	ret
	.size pc_asm_short, .-pc_asm_short

/* A jump table (PIC, int32 offsets) with an entry 2 bytes into the function: refused. */
	.globl pc_asm_jtab_into
	.type pc_asm_jtab_into, @function
pc_asm_jtab_into:
	xor %eax, %eax
.Ljt_top:
	add %rsi, %rax
	and $3, %rdi
	cmp $3, %rdi
	ja .Ljt_done
	lea .Ljt_tab(%rip), %rdx
	movslq (%rdx,%rdi,4), %r8
	add %rdx, %r8
	sub $1, %rdi
	jmp *%r8
.Ljt_done:
	ret
	.size pc_asm_jtab_into, .-pc_asm_jtab_into

/* A jump to an address the function computes itself (computed goto): refused. a + b */
	.globl pc_asm_computed
	.type pc_asm_computed, @function
pc_asm_computed:
	xor %eax, %eax
	lea .Lc_label(%rip), %r8
	add %rsi, %rax
	jmp *%r8
.Lc_label:
	add %rdi, %rax
	ret
	.size pc_asm_computed, .-pc_asm_computed

	.section .rodata
	.balign 8
pc_asm_data:
	.quad 1234
	.balign 4
.Ljt_tab:
	.long .Ljt_done - .Ljt_tab
	.long .Ljt_top - .Ljt_tab
	.long .Ljt_top - .Ljt_tab
	.long .Ljt_top - .Ljt_tab

	.section .data.rel.ro, "aw"
	.balign 8
pc_asm_fnptr:
	.quad pc_asm_double

	.section .note.GNU-stack, "", @progbits
