/* SPDX-License-Identifier: MIT */
/*
 * The code that dynamic instrumentation's in-process calibration runs (runtime/calib_dyn.c):
 * an empty function on a 5-byte NOP sled, as `sonde cc --patchable` leaves it, and copies of
 * it whose sled is patched the way the tool patches one — `jmp` to an entry trampoline of
 * docs/dynamic.md's ABI, byte for byte what tool/patch/x86_64/tramp.c emits for a sled whose
 * flags are dead (tests/unit/test_calib_code.c compares the two), then `jmp` back past the
 * sled. Returns hooked by the points' exit actions go through the runtime's own return
 * trampoline (dyn_ret.S), as every patched function's do.
 *
 * The runtime cannot link the tool's patcher (Zydis, malloc): the handful of bytes of a sled
 * trampoline, which displaces no instruction, are written here instead. Everything goes into
 * one page mapped for it, written, then made read-only and executable.
 */
#include "../../dyn/dyn.h"

#include <string.h>
#include <sys/mman.h>

#define PLAIN_OFF 0
#define FN_OFF(i) (16 + 16 * (i))
#define CALLER_OFF(j) (64 + 48 * (j)) /* j = 0: the plain function's; then fn[j - 1]'s */
#define TRAMP_OFF(i) (256 + 128 * (i))

/* push rax (the rflags slot where the flags are dead), then r11, r10, rax, r9, r8, rcx,
 * rdx, rsi, rdi: struct sonde_regs */
static const uint8_t save_regs[] = { 0x50, 0x41, 0x53, 0x41, 0x52, 0x50, 0x41, 0x51, 0x41, 0x50,
				     0x51, 0x52, 0x56, 0x57 };
static const uint8_t restore_regs[] = { 0x5f, 0x5e, 0x5a, 0x59, 0x41, 0x58, 0x41, 0x59, 0x58,
					0x41, 0x5a, 0x41, 0x5b,
					0x48, 0x8d, 0x64, 0x24, 0x08 }; /* lea rsp,[rsp+8] */
static const uint8_t args[] = { 0x48, 0x89, 0xe6,		/* mov rsi, rsp */
				0x48, 0x8d, 0x54, 0x24, 0x50 };	/* lea rdx, [rsp+80] */
/* push rbx; mov rbx, rsp; and rsp, -16 */
static const uint8_t align[] = { 0x53, 0x48, 0x89, 0xe3, 0x48, 0x83, 0xe4, 0xf0 };
static const uint8_t unalign[] = { 0x48, 0x89, 0xdc, 0x5b };	/* mov rsp, rbx; pop rbx */
static const uint8_t nop5[] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

static uint8_t *put(uint8_t *p, const void *b, size_t n)
{
	memcpy(p, b, n);
	return p + n;
}

static uint8_t *put_le(uint8_t *p, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		*p++ = (uint8_t)(v >> (8 * i));
	return p;
}

/* jmp rel32 from p (at run-time address at) to target. */
static uint8_t *put_jmp(uint8_t *p, uint64_t at, uint64_t target)
{
	*p++ = 0xe9;
	return put_le(p, target - (at + 5), 4);
}

size_t dyn_calib_emit_save(uint8_t *buf, uint32_t point, uint64_t handler)
{
	uint8_t *p = buf;

	p = put(p, save_regs, sizeof(save_regs));
	p = put(p, args, sizeof(args));
	*p++ = 0xbf;						/* mov edi, POINT */
	p = put_le(p, point, 4);
	p = put(p, align, sizeof(align));
	*p++ = 0x48;						/* movabs rax, handler */
	*p++ = 0xb8;
	p = put_le(p, handler, 8);
	*p++ = 0xff;						/* call rax */
	*p++ = 0xd0;
	p = put(p, unalign, sizeof(unalign));
	p = put(p, restore_regs, sizeof(restore_regs));
	return (size_t)(p - buf);
}

/* An empty function at off: its sled (or the jmp that replaced it), then ret. */
static void put_fn(uint8_t *page, uint32_t off, int patched, uint32_t tramp_off)
{
	uint8_t *p = page + off;
	uint64_t base = (uint64_t)(uintptr_t)page;

	p = patched ? put_jmp(p, base + off, base + tramp_off) : put(p, nop5, sizeof(nop5));
	*p = 0xc3;							/* ret */
}

/* A function that calls the one at target DYN_CALIB_SITES times, each from its own site. */
static void put_caller(uint8_t *page, uint32_t off, uint32_t target)
{
	uint64_t base = (uint64_t)(uintptr_t)page;
	uint8_t *p = page + off;
	int i;

	for (i = 0; i < DYN_CALIB_SITES; i++) {
		*p = 0xe8;						/* call rel32 */
		put_le(p + 1, base + target - (base + (uint64_t)(p - page) + 5), 4);
		p += 5;
	}
	*p = 0xc3;
}

static void put_tramp(uint8_t *page, uint32_t i, uint32_t point)
{
	uint64_t base = (uint64_t)(uintptr_t)page;
	uint8_t *p = page + TRAMP_OFF(i);

	p += dyn_calib_emit_save(p, point, (uint64_t)(uintptr_t)&sonde__dyn_entry);
	put_jmp(p, base + (uint64_t)(p - page), base + FN_OFF(i) + sizeof(nop5));
}

static uint8_t *make_page(void)
{
	uint8_t *p = dyn_sys_map(4096);
	uint32_t i;

	if (!p)
		return NULL;
	memset(p, 0xcc, 4096); /* int3 between the pieces */
	put_fn(p, PLAIN_OFF, 0, 0);
	put_caller(p, CALLER_OFF(0), PLAIN_OFF);
	for (i = 0; i < DYN_CALIB_FNS; i++) {
		put_fn(p, FN_OFF(i), 1, TRAMP_OFF(i));
		put_tramp(p, i, DYN_CALIB_POINT + i);
		put_caller(p, CALLER_OFF(i + 1), FN_OFF(i));
	}
	if (dyn_sys6(SYS_mprotect, (long)p, 4096, PROT_READ | PROT_EXEC, 0, 0, 0) != 0) {
		dyn_sys6(SYS_munmap, (long)p, 4096, 0, 0, 0, 0);
		return NULL;
	}
	return p;
}

/* The page is made once; two threads asking at once keep the first one published. */
int dyn_calib_code(struct dyn_calib_fns *out)
{
	static _Atomic(uint8_t *) shared;
	uint8_t *page = atomic_load(&shared), *none = NULL;
	uint32_t i;

	if (!page) {
		page = make_page();
		if (!page)
			return -1;
		if (!atomic_compare_exchange_strong(&shared, &none, page)) {
			dyn_sys6(SYS_munmap, (long)page, 4096, 0, 0, 0, 0);
			page = none;
		}
	}
	out->plain = (void (*)(void))(uintptr_t)(page + PLAIN_OFF);
	out->plain_sites = (void (*)(void))(uintptr_t)(page + CALLER_OFF(0));
	for (i = 0; i < DYN_CALIB_FNS; i++) {
		out->fn[i] = (void (*)(void))(uintptr_t)(page + FN_OFF(i));
		out->sites[i] = (void (*)(void))(uintptr_t)(page + CALLER_OFF(i + 1));
	}
	return 0;
}
