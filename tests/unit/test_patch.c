/*
 * Unit tests for the binary patcher (tool/patch/).
 *
 * Usage: test_patch [-v] [--no-clang] CORPUS.so...
 *
 * First, hand-made byte sequences: relocations, refusals, the trampoline's listing (with and
 * without the flags), PC maps, the flags-liveness walk.
 * Then each corpus variant (patch_corpus.c + patch_corpus_asm.S, one shared object per compiler,
 * level and flavour) is loaded in this process and every function's entry and call sites are
 * planned. A reference run counts, with breakpoints, how often each patch site runs; the plans
 * are applied (entries, call sites, both), every exported function is called again and must
 * give the same results while the trampolines' handler counts exactly the reference's numbers;
 * removal must restore every byte and stop the counts. Then PC mapping is tried live: a thread
 * stopped (by a breakpoint) inside the displaced bytes is moved into the trampoline while the
 * patch goes in, and one stopped at each instruction of a trampoline is moved out as it goes.
 * -v lists every refusal with its reason, and every entry whose trampoline keeps the flags.
 */
#include <Zydis/Zydis.h>
#include <libgen.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "patch_live.h"

#define MAX_POINTS 4096
#define NR_INPUTS 6
#define ADDR 0x10000000UL		/* synthetic code */
#define TRAMP 0x10100000UL		/* and its trampoline */

/* docs/dynamic.md's struct sonde_regs: what the trampoline pushed, from rsp up */
struct sonde_regs {
	uint64_t rdi, rsi, rdx, rcx, r8, r9, rax, r10, r11, rflags;
};

static bool verbose;
static uint64_t hits[MAX_POINTS];
static uint8_t point_kind[MAX_POINTS];	/* 1 + enum patch_kind */
static unsigned misaligned[MAX_POINTS], bad_slot;
static volatile uint32_t watch_point = UINT32_MAX;
static volatile bool watch_seen;
static volatile uint64_t watch_args[4], watch_ret;
static volatile int map_errors;

/* ---- the handler the trampolines call, and what the corpus calls back ---- */

/* rsp at a call inside the handler: 0 mod 16 exactly when the handler was entered aligned */
uint64_t rsp_at_call(void);
__asm__(".text\n\t.type rsp_at_call, @function\nrsp_at_call:\n\tlea 8(%rsp), %rax\n\tret\n"
	"\t.size rsp_at_call, .-rsp_at_call\n");

/* Clobber what a handler may clobber, so that a trampoline that fails to save it shows. */
static inline void clobber_scratch(void)
{
	__asm__ volatile("mov $-1, %%r8\n\tmov $-1, %%r9\n\tmov $-1, %%r10\n\tmov $-1, %%r11\n\t"
			 "mov $-1, %%rcx\n\tmov $-1, %%rdx\n\tcmp %%rcx, %%rdx\n\tstd\n\tcld"
			 ::: "r8", "r9", "r10", "r11", "rcx", "rdx", "cc");
}

/* A stand-in for sonde__dyn_entry: counts per point, checks the stack, records one call's regs. */
void test_handler(uint32_t point, struct sonde_regs *regs, uint64_t *ret_slot);
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((target("general-regs-only")))
#endif
void test_handler(uint32_t point, struct sonde_regs *regs, uint64_t *ret_slot)
{
	if (point < MAX_POINTS) {
		hits[point]++;
		if ((point_kind[point] == 1 + PATCH_CALLSITE) != (ret_slot == NULL))
			bad_slot++;
	}
	if ((rsp_at_call() & 15) && point < MAX_POINTS)
		misaligned[point]++;
	if (point == watch_point && !watch_seen) {
		watch_seen = true;
		watch_args[0] = regs->rdi;
		watch_args[1] = regs->rsi;
		watch_args[2] = regs->rdx;
		watch_args[3] = regs->rcx;
		watch_ret = ret_slot ? *ret_slot : 0;
	}
	clobber_scratch();
}

/* The corpus' callback (pc_asm_icall_first calls it with rsp misaligned). */
__attribute__((force_align_arg_pointer)) static long test_cb(long x)
{
	return x * 2 + 1;
}

static const long inputs[NR_INPUTS][4] = {
	{ 0, 1, 0, 1 }, { 1, 2, 0, 2 }, { 5, 3, 0, 3 }, { 7, -4, 0, 0 }, { 12, 9, 0, 5 },
	{ -3, 6, 0, 4 },
};

/*
 * call_corpus(f, a, b, c, d) calls f(a, b, c, d) from a known place: call_corpus_ret is the
 * return address an entry point's ret_slot must hold.
 */
long call_corpus(uint64_t f, long a, long b, long c, long d);
extern const char call_corpus_ret[];
__asm__(".text\n\t.type call_corpus, @function\ncall_corpus:\n\tpush %rbx\n"
	"\tmov %rdi, %rax\n\tmov %rsi, %rdi\n\tmov %rdx, %rsi\n\tmov %rcx, %rdx\n"
	"\tmov %r8, %rcx\n\tcall *%rax\ncall_corpus_ret:\n\tpop %rbx\n\tret\n"
	"\t.size call_corpus, .-call_corpus\n");

static long call_fn(uint64_t f, int k)
{
	return call_corpus(f, inputs[k][0], inputs[k][1], (long)(uintptr_t)test_cb, inputs[k][3]);
}

/* ---- synthetic code ---- */

/* Analyse code (at ADDR) and plan its entry with the trampoline at tramp. */
static int plan_code(const uint8_t *code, size_t len, uint64_t addr, uint64_t tramp,
		     struct patch_plan *p, char *why)
{
	struct patch_fn fn;
	struct tramp_spec spec = { .entry_handler = 0x1122334455667788UL, .point = 7 };
	int ret;

	if (patch_analyze(code, len, addr, &fn, why, 200))
		return -1;
	ret = patch_plan_entry(&fn, code, tramp, &spec, p, why, 200);
	patch_fn_free(&fn);
	return ret;
}

static int32_t rel_at(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* The plan's relocated copy starts after the save part; its jmp back is last. */
static const uint8_t *copy_of(const struct patch_plan *p)
{
	return p->code + p->save_len;
}

static void check_jmp(const uint8_t *at, uint64_t from, uint64_t to)
{
	assert_int_equal(at[0], 0xe9);
	assert_int_equal(from + 5 + (uint64_t)(int64_t)rel_at(at + 1), to);
}

static void test_sled_gcc(void **state)
{
	static const uint8_t code[] = { 0x90, 0x90, 0x90, 0x90, 0x90, 0x48, 0x89, 0xf8, 0xc3 };
	struct patch_plan p;
	char why[200];

	(void)state;
	assert_int_equal(plan_code(code, sizeof(code), ADDR, TRAMP, &p, why), 0);
	assert_true(p.on_sled);
	assert_int_equal(p.len, 5);
	assert_int_equal(p.nr_map, 0);
	check_jmp(p.bytes, ADDR, TRAMP);
	assert_int_equal(p.tramp_len, p.save_len + 5);
	check_jmp(copy_of(&p), TRAMP + p.save_len, ADDR + 5);
	assert_int_equal(patch_map_pc_into(&p, ADDR), ADDR);
	assert_int_equal(patch_map_pc_into(&p, ADDR + 3), ADDR + 5);
	assert_int_equal(patch_map_pc_into(&p, ADDR + 5), ADDR + 5);
}

static void test_sled_clang(void **state)
{
	static const uint8_t code[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x0f, 0x1f, 0x44, 0x00, 0x08,
					0x48, 0x89, 0xf8, 0xc3 };
	struct patch_plan p;
	char why[200];

	(void)state;
	assert_int_equal(plan_code(code, sizeof(code), ADDR, TRAMP, &p, why), 0);
	assert_true(p.on_sled);
	assert_int_equal(p.site, ADDR + 4);	/* the endbr64 stays */
	assert_int_equal(p.len, 5);
	check_jmp(copy_of(&p), TRAMP + p.save_len, ADDR + 9);
}

/* Displaced: endbr64 kept, push rbp; mov rbp, rsp; mov [rbp-4], edi. */
static void test_endbr_prologue(void **state)
{
	static const uint8_t code[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x89,
					0x7d, 0xfc, 0x5d, 0xc3 };
	struct patch_plan p;
	char why[200];

	(void)state;
	assert_int_equal(plan_code(code, sizeof(code), ADDR, TRAMP, &p, why), 0);
	assert_false(p.on_sled);
	assert_int_equal(p.site, ADDR + 4);
	assert_int_equal(p.len, 7);
	assert_int_equal(p.nr_map, 3);
	assert_memory_equal(copy_of(&p), code + 4, 7);
	check_jmp(copy_of(&p) + 7, TRAMP + p.save_len + 7, ADDR + 11);
	check_jmp(p.bytes, ADDR + 4, TRAMP);
	assert_int_equal(p.bytes[5], 0xcc);
	assert_int_equal(p.bytes[6], 0xcc);
	assert_memory_equal(p.orig, code + 4, 7);
}

/* je +0x10 first: widened to 0f 84 rel32, same target. */
static void test_jcc_widened(void **state)
{
	static const uint8_t code[] = { 0x74, 0x10, 0x48, 0x89, 0xf8, 0xc3, [0x12] = 0xc3 };
	struct patch_plan p;
	const uint8_t *c;
	char why[200];

	(void)state;
	assert_int_equal(plan_code(code, sizeof(code), ADDR, TRAMP, &p, why), 0);
	c = copy_of(&p);
	assert_int_equal(c[0], 0x0f);
	assert_int_equal(c[1], 0x84);
	assert_int_equal(TRAMP + p.save_len + 6 + (uint64_t)(int64_t)rel_at(c + 2), ADDR + 0x12);
	assert_memory_equal(c + 6, code + 2, 3);
	assert_int_equal(p.map[0].tramp_len, 6);
}

/* loop +8 first: "loop 1f; jmp 2f; 1: jmp L; 2:". */
static void test_loop_rewritten(void **state)
{
	static const uint8_t code[] = { 0xe2, 0x08, 0x48, 0x89, 0xf8, 0xc3, [0x0a] = 0xc3 };
	struct patch_plan p;
	const uint8_t *c;
	char why[200];
	uint64_t copy = TRAMP;

	(void)state;
	assert_int_equal(plan_code(code, sizeof(code), ADDR, TRAMP, &p, why), 0);
	c = copy_of(&p);
	copy += p.save_len;
	assert_memory_equal(c, ((const uint8_t[]){ 0xe2, 0x02, 0xeb, 0x05 }), 4);
	check_jmp(c + 4, copy + 4, ADDR + 0x0a);
	assert_int_equal(p.map[0].how, PM_LOOP);
	/* out of the copy: not taken goes after the loop, taken goes to its target */
	assert_int_equal(patch_map_pc_out(&p, copy, NULL), ADDR);
	assert_int_equal(patch_map_pc_out(&p, copy + 2, NULL), ADDR + 2);
	assert_int_equal(patch_map_pc_out(&p, copy + 4, NULL), ADDR + 0x0a);
	assert_int_equal(patch_map_pc_out(&p, copy + 1, NULL), 0);
}

/* call first: the ORIGINAL return address is pushed, then a jmp to the callee. */
static void test_call_original_return(void **state)
{
	static const uint8_t code[] = { 0xe8, 0x00, 0x10, 0x00, 0x00, 0xc3 };
	static const uint8_t push[] = { 0x48, 0x8d, 0x64, 0x24, 0xf8, 0xc7, 0x04, 0x24 };
	struct patch_plan p;
	const uint8_t *c;
	char why[200];
	uint64_t copy, ret = ADDR + 5;
	int64_t sp;

	(void)state;
	assert_int_equal(plan_code(code, sizeof(code), ADDR, TRAMP, &p, why), 0);
	c = copy_of(&p);
	copy = TRAMP + p.save_len;
	assert_memory_equal(c, push, sizeof(push));
	assert_int_equal((uint32_t)rel_at(c + 8), (uint32_t)ret);
	assert_memory_equal(c + 12, ((const uint8_t[]){ 0xc7, 0x44, 0x24, 0x04 }), 4);
	assert_int_equal((uint32_t)rel_at(c + 16), (uint32_t)(ret >> 32));
	check_jmp(c + 20, copy + 20, ADDR + 5 + 0x1000);
	/* halfway through the push, moving out pops it */
	assert_int_equal(patch_map_pc_out(&p, copy + 12, &sp), ADDR);
	assert_int_equal(sp, 8);
	assert_int_equal(patch_map_pc_out(&p, copy + 12, NULL), 0);
}

static void expect_refusal(const uint8_t *code, size_t len, uint64_t addr, uint64_t tramp,
			   const char *reason)
{
	struct patch_plan p;
	char why[200] = "";

	assert_int_equal(plan_code(code, len, addr, tramp, &p, why), -1);
	if (!strstr(why, reason))
		fail_msg("refusal \"%s\" does not say \"%s\"", why, reason);
}

static void test_refusals(void **state)
{
	static const uint8_t shorty[] = { 0x48, 0x89, 0xf8, 0xc3 };
	static const uint8_t icall[] = { 0xff, 0xd2, 0x48, 0x01, 0xf0, 0xc3 };
	/* the loop of pc_asm_branch_into with a call in it: its region cannot grow over it */
	static const uint8_t into[] = { 0x31, 0xc0, 0x48, 0x01, 0xf8, 0xe8, 0x00, 0x01, 0x00, 0x00,
					0x48, 0xff, 0xc9, 0x7f, 0xf3, 0xc3 };
	static const uint8_t to_entry[] = { 0x48, 0x83, 0xc7, 0x03, 0x48, 0x83, 0xff, 0x64,
					    0x7c, 0xf6, 0xc3 };
	static const uint8_t xbegin[] = { 0xc7, 0xf8, 0x00, 0x00, 0x00, 0x00, 0xc3 };
	static const uint8_t junk[] = { 0x0f, 0x0b, 0x0f, 0xff };
	static const uint8_t riprel[] = { 0x48, 0x8b, 0x05, 0x00, 0xf0, 0xff, 0x7f, 0xc3 };
	static const uint8_t plain[] = { 0x48, 0x89, 0xf8, 0x48, 0x01, 0xf0, 0xc3 };

	(void)state;
	expect_refusal(shorty, sizeof(shorty), ADDR, TRAMP, "shorter than 5 bytes");
	expect_refusal(icall, sizeof(icall), ADDR, TRAMP, "would return into the patched bytes");
	expect_refusal(into, sizeof(into), ADDR, TRAMP, "would return into the patched bytes");
	expect_refusal(to_entry, sizeof(to_entry), ADDR, TRAMP, "back to the entry");
	expect_refusal(xbegin, sizeof(xbegin), ADDR, TRAMP, "xbegin");
	expect_refusal(junk, sizeof(junk), ADDR, TRAMP, "do not decode");
	/* data 2 GB after the code, trampoline 256 MB before it */
	expect_refusal(riprel, sizeof(riprel), 0x7f0000000000UL, 0x7f0000000000UL - (1UL << 28),
		       "beyond ±2 GB of the trampoline");
	expect_refusal(plain, sizeof(plain), ADDR, ADDR + (3UL << 30), "beyond ±2 GB of");
}

/*
 * glibc 2.36's sem_trywait (its bytes): a compare-and-swap retry loop branches back to +3. The
 * region grows over the loop (18 bytes, 6 instructions); in the copy, the loop's jne goes to
 * the copy of +3, the je out of it to the original +0x18, and the copy ends with a jmp to +18.
 */
static void test_retry_loop_displaced(void **state)
{
	static const uint8_t code[] = { 0x48, 0x8b, 0x07, 0x85, 0xc0, 0x74, 0x11, 0x48, 0x8d, 0x50,
					0xff, 0xf0, 0x48, 0x0f, 0xb1, 0x17, 0x75, 0xf1, 0x31, 0xc0,
					0xc3, 0x0f, 0x1f, 0x00, 0x48, 0x8b, 0x05, 0xc1, 0x1f, 0x14,
					0x00, 0x64, 0xc7, 0x00, 0x0b, 0x00, 0x00, 0x00, 0xb8, 0xff,
					0xff, 0xff, 0xff, 0xc3 };
	struct patch_plan p;
	const uint8_t *c;
	uint64_t copy;
	char why[200];
	uint32_t i;

	(void)state;
	assert_int_equal(plan_code(code, sizeof(code), ADDR, TRAMP, &p, why), 0);
	c = copy_of(&p);
	copy = TRAMP + p.save_len;
	assert_int_equal(p.len, 18);
	assert_int_equal(p.nr_map, 6);
	check_jmp(p.bytes, ADDR, TRAMP);
	for (i = 5; i < 18; i++)
		assert_int_equal(p.bytes[i], 0xcc);
	assert_memory_equal(c, code, 5);			/* mov, test */
	assert_memory_equal(c + 5, ((const uint8_t[]){ 0x0f, 0x84 }), 2); /* je: out */
	assert_int_equal(copy + 11 + (uint64_t)(int64_t)rel_at(c + 7), ADDR + 0x18);
	assert_memory_equal(c + 11, code + 7, 9);		/* lea, lock cmpxchg */
	assert_memory_equal(c + 20, ((const uint8_t[]){ 0x0f, 0x85 }), 2); /* jne: the copy */
	assert_int_equal(copy + 26 + (uint64_t)(int64_t)rel_at(c + 22), copy + 3);
	check_jmp(c + 26, copy + 26, ADDR + 18);
	/* a thread stopped in the loop moves to the copy and back */
	assert_int_equal(patch_map_pc_into(&p, ADDR + 16), copy + 20);
	assert_int_equal(patch_map_pc_out(&p, copy + 20, NULL), ADDR + 16);
	assert_int_equal(patch_map_pc_out(&p, copy + 3, NULL), ADDR + 3);
}

/*
 * glibc 2.36's pthread_rwlock_tryrdlock: the branch back to +2 is at +0x32, and jumps forward
 * inside the loop (to +0x15, +0x20, +0x2a) must reach their copies: 52 bytes displaced.
 */
static void test_retry_loop_forward(void **state)
{
	static const uint8_t code[] = {
		0x8b, 0x07, 0x89, 0xc2, 0x83, 0xe2, 0x02, 0xa8, 0x01, 0x75, 0x15, 0x85, 0xd2, 0x74,
		0x06, 0x83, 0x7f, 0x30, 0x02, 0x74, 0x7b, 0x8d, 0x50, 0x08, 0xeb, 0x10, 0x66, 0x0f,
		0x1f, 0x44, 0x00, 0x00, 0x85, 0xd2, 0x75, 0x6c, 0x8d, 0x50, 0x08, 0x83, 0xf2, 0x01,
		0x85, 0xd2, 0x78, 0x72, 0xf0, 0x0f, 0xb1, 0x17, 0x75, 0xce, 0xa8, 0x01, 0x75, 0x08,
		0x31, 0xc0, 0xc3, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3,
		[0x90] = 0xb8, 0x10, 0x00, 0x00, 0x00, 0xc3, [0xa0] = 0xb8, 0x0b, 0x00, 0x00, 0x00,
		0xc3 };
	static const uint32_t targets[][2] = { { 0x09, 0x20 }, { 0x0d, 0x15 }, { 0x18, 0x2a },
					       { 0x32, 0x02 } };
	struct patch_plan p;
	const uint8_t *c;
	char why[200];
	size_t i, j, k;

	(void)state;
	assert_int_equal(plan_code(code, sizeof(code), ADDR, TRAMP, &p, why), 0);
	c = copy_of(&p);
	assert_int_equal(p.len, 0x34);
	/* each internal branch's copy (jcc or jmp rel32) goes to its target's copy */
	for (i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		for (j = 0; j < p.nr_map && p.map[j].orig_off != targets[i][0]; j++)
			;
		for (k = 0; k < p.nr_map && p.map[k].orig_off != targets[i][1]; k++)
			;
		assert_true(j < p.nr_map && k < p.nr_map);
		assert_int_equal(p.map[j].tramp_off + p.map[j].tramp_len +
					 rel_at(c + p.map[j].tramp_off - p.save_len +
						p.map[j].tramp_len - 4),
				 p.map[k].tramp_off);
	}
}

/* mov rax, [rip+d] first: the disp32 is rewritten so that it still reaches the same data. */
static void test_riprel_rewritten(void **state)
{
	static const uint8_t code[] = { 0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00,
					0x48, 0x01, 0xf8, 0xc3 };
	struct patch_plan p;
	const uint8_t *c;
	char why[200];

	(void)state;
	assert_int_equal(plan_code(code, sizeof(code), ADDR, TRAMP, &p, why), 0);
	c = copy_of(&p);
	assert_memory_equal(c, code, 3);
	assert_int_equal(TRAMP + p.save_len + 7 + (uint64_t)(int64_t)rel_at(c + 3),
			 ADDR + 7 + 0x100);
}

/* A fake memory for the jump table test: the table at TABLE. */
#define TABLE 0x10200000UL
static int32_t fake_table[4];

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < TABLE || addr + len > TABLE + sizeof(fake_table))
		return -1;
	memcpy(buf, (const uint8_t *)fake_table + (addr - TABLE), len);
	return 0;
}

/*
 *  0: cmp rdi, 3; 4: ja +0x10; 6: lea rdx, [rip+TABLE]; d: movsxd rax, [rdx+rdi*4];
 * 11: add rax, rdx; 14: jmp rax; 16: ret
 */
static void test_jump_table(void **state)
{
	uint8_t code[] = { 0x48, 0x83, 0xff, 0x03, 0x77, 0x10, 0x48, 0x8d, 0x15, 0, 0, 0, 0,
			   0x48, 0x63, 0x04, 0xba, 0x48, 0x01, 0xd0, 0xff, 0xe0, 0xc3 };
	int32_t disp = (int32_t)(TABLE - (ADDR + 0x0d));
	struct tramp_spec spec = { .entry_handler = 1, .point = 1 };
	struct patch_fn fn;
	struct patch_plan p;
	char why[200];
	int i;

	(void)state;
	memcpy(code + 9, &disp, 4);
	for (i = 0; i < 4; i++)
		fake_table[i] = (int32_t)(ADDR + 0x16 - TABLE);
	assert_int_equal(patch_analyze(code, sizeof(code), ADDR, &fn, why, sizeof(why)), 0);
	assert_int_equal(fn.nr_tables, 1);
	assert_int_equal(fn.tables[0].base, TABLE);
	assert_int_equal(fn.tables[0].nr, 4);
	assert_int_equal(fn.tables[0].entry_size, 4);
	assert_int_equal(fn.unknown_ijmp, -1);
	assert_int_equal(patch_plan_entry(&fn, code, TRAMP, &spec, &p, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "not read"));
	assert_int_equal(patch_read_tables(&fn, fake_read, NULL, why, sizeof(why)), 0);
	assert_int_equal(patch_plan_entry(&fn, code, TRAMP, &spec, &p, why, sizeof(why)), 0);
	patch_fn_free(&fn);

	fake_table[2] = (int32_t)(ADDR + 4 - TABLE);	/* the ja: inside the 6 bytes displaced */
	assert_int_equal(patch_analyze(code, sizeof(code), ADDR, &fn, why, sizeof(why)), 0);
	assert_int_equal(patch_read_tables(&fn, fake_read, NULL, why, sizeof(why)), 0);
	assert_int_equal(patch_plan_entry(&fn, code, TRAMP, &spec, &p, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "part) targets +0x4, in the bytes"));
	patch_fn_free(&fn);

	/* no bounds check (two mov rax, rdi instead): read until the fake memory ends */
	memcpy(code, ((const uint8_t[]){ 0x48, 0x89, 0xf8, 0x48, 0x89, 0xf8 }), 6);
	fake_table[2] = (int32_t)(ADDR + 3 - TABLE);
	assert_int_equal(patch_analyze(code, sizeof(code), ADDR, &fn, why, sizeof(why)), 0);
	assert_int_equal(fn.nr_tables, 1);
	assert_int_equal(fn.tables[0].nr, 0);
	assert_int_equal(patch_read_tables(&fn, fake_read, NULL, why, sizeof(why)), 0);
	assert_int_equal(fn.nr_targets, 4);
	assert_int_equal(patch_plan_entry(&fn, code, TRAMP, &spec, &p, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "part) targets +0x3, in the bytes"));
	patch_fn_free(&fn);
}

static uint64_t fake_table64[4];

static int fake_read64(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < TABLE || addr + len > TABLE + sizeof(fake_table64))
		return -1;
	memcpy(buf, (const uint8_t *)fake_table64 + (addr - TABLE), len);
	return 0;
}

/* Non-PIC: cmp rdi, 3; ja +7; jmp [rdi*8 + TABLE]; ret — absolute entries. */
static void test_jump_table_abs(void **state)
{
	uint8_t code[] = { 0x48, 0x83, 0xff, 0x03, 0x77, 0x07, 0xff, 0x24, 0xfd, 0, 0, 0, 0, 0xc3 };
	uint32_t table = (uint32_t)TABLE;
	struct tramp_spec spec = { .entry_handler = 1, .point = 1 };
	struct patch_fn fn;
	struct patch_plan p;
	char why[200];
	int i;

	(void)state;
	memcpy(code + 9, &table, 4);
	for (i = 0; i < 4; i++)
		fake_table64[i] = ADDR + 0x0d;
	fake_table64[3] = ADDR + 4;
	assert_int_equal(patch_analyze(code, sizeof(code), ADDR, &fn, why, sizeof(why)), 0);
	assert_int_equal(fn.nr_tables, 1);
	assert_int_equal(fn.tables[0].base, TABLE);
	assert_int_equal(fn.tables[0].nr, 4);
	assert_int_equal(fn.tables[0].entry_size, 8);
	assert_int_equal(patch_read_tables(&fn, fake_read64, NULL, why, sizeof(why)), 0);
	assert_int_equal(patch_plan_entry(&fn, code, TRAMP, &spec, &p, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "part) targets +0x4, in the bytes"));
	patch_fn_free(&fn);
}

/* Each instruction of the trampoline, as Zydis prints it. */
static size_t listing(const uint8_t *code, size_t len, uint64_t addr, char out[][64], size_t max)
{
	ZydisDecoder dec;
	ZydisFormatter fmt;
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	size_t off = 0, n = 0;

	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	ZydisFormatterInit(&fmt, ZYDIS_FORMATTER_STYLE_INTEL);
	while (off < len && n < max &&
	       ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code + off, len - off, &in, ops))) {
		ZydisFormatterFormatInstruction(&fmt, &in, ops, in.operand_count_visible, out[n++],
						64, addr + off, NULL);
		off += in.length;
	}
	return n;
}

/* The trampoline of code (at ADDR) is want[0..n), as Zydis prints it. */
static void check_listing(const uint8_t *code, size_t len, const char *const *want, size_t nw)
{
	char got[64][64];
	struct patch_plan p;
	char why[200];
	size_t i, n;

	assert_int_equal(plan_code(code, len, ADDR, TRAMP, &p, why), 0);
	n = listing(p.code, p.tramp_len, TRAMP, got, 64);
	for (i = 0; i < n && i < nw; i++)
		if (strcmp(got[i], want[i]))
			fail_msg("trampoline instruction %zu: \"%s\", expected \"%s\"", i, got[i],
				 want[i]);
	assert_int_equal(n, nw);
	assert_int_equal(p.handler_ret, TRAMP + 47);
}

/*
 * The entry trampoline is exactly docs/dynamic.md's: without the flags for a compiled function
 * (push rbp; mov rbp, rsp; sub rsp, 16; ...), with them for pc_asm_jcc_sel (jl first).
 */
static void test_trampoline_listing(void **state)
{
	static const uint8_t frame[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0x89,
					 0x7d, 0xfc, 0xc9, 0xc3 };
	static const uint8_t jcc_sel[] = { 0x7c, 0x04, 0x48, 0x89, 0xf8, 0xc3, 0x48, 0x89, 0xf0,
					   0xc3 };
	static const char *const want_frame[] = {
		"push rax", "push r11", "push r10", "push rax", "push r9", "push r8", "push rcx",
		"push rdx", "push rsi", "push rdi", "mov rsi, rsp", "lea rdx, [rsp+0x50]",
		"mov edi, 0x07", "push rbx", "mov rbx, rsp", "and rsp, 0xFFFFFFFFFFFFFFF0",
		"mov rax, 0x1122334455667788", "call rax", "mov rsp, rbx", "pop rbx", "pop rdi",
		"pop rsi", "pop rdx", "pop rcx", "pop r8", "pop r9", "pop rax", "pop r10",
		"pop r11", "lea rsp, [rsp+0x08]", "push rbp", "mov rbp, rsp", "sub rsp, 0x10",
		"jmp 0x0000000010000008",
	};
	static const char *const want_jcc_sel[] = {
		"pushfq", "push r11", "push r10", "push rax", "push r9", "push r8", "push rcx",
		"push rdx", "push rsi", "push rdi", "mov rsi, rsp", "lea rdx, [rsp+0x50]",
		"mov edi, 0x07", "push rbx", "mov rbx, rsp", "and rsp, 0xFFFFFFFFFFFFFFF0",
		"mov rax, 0x1122334455667788", "call rax", "mov rsp, rbx", "pop rbx", "pop rdi",
		"pop rsi", "pop rdx", "pop rcx", "pop r8", "pop r9", "pop rax", "pop r10",
		"pop r11", "popfq", "jl 0x0000000010000006", "mov rax, rdi",
		"jmp 0x0000000010000005",
	};

	(void)state;
	check_listing(frame, sizeof(frame), want_frame, sizeof(want_frame) / sizeof(want_frame[0]));
	check_listing(jcc_sel, sizeof(jcc_sel), want_jcc_sel,
		      sizeof(want_jcc_sel) / sizeof(want_jcc_sel[0]));
}

/*
 * Out of the save part: rolled back while only pushes ran, busy after; the same offsets with
 * pushfq or push rax, whose restore ends with popfq or lea rsp, [rsp+8] (4 bytes longer).
 */
static void check_save_map(const uint8_t *code, size_t len, bool flags)
{
	static const uint8_t push_at[] = { 0, 1, 3, 5, 6, 8, 10, 11, 12, 13, 14 };
	struct patch_plan p;
	char why[200];
	int64_t sp;
	size_t i;

	assert_int_equal(plan_code(code, len, ADDR, TRAMP, &p, why), 0);
	assert_int_equal(p.saves_flags, flags);
	assert_int_equal(p.code[0], flags ? 0x9c : 0x50);
	assert_int_equal(p.save_len, flags ? 65 : 69);
	for (i = 0; i < sizeof(push_at); i++) {
		assert_int_equal(patch_map_pc_out(&p, TRAMP + push_at[i], &sp), ADDR);
		assert_int_equal(sp, 8 * (int64_t)i);
	}
	assert_int_equal(patch_map_pc_out(&p, TRAMP + 17, &sp), 0);	/* lea rdx */
	assert_int_equal(patch_map_pc_out(&p, p.handler_ret, &sp), 0);
	/* popfq, or lea rsp, [rsp+8]: still busy */
	assert_int_equal(patch_map_pc_out(&p, TRAMP + p.save_len - (flags ? 1 : 5), &sp), 0);
	assert_int_equal(patch_map_pc_out(&p, TRAMP + p.save_len, &sp), ADDR);
	assert_int_equal(patch_map_pc_out(&p, TRAMP + p.save_len + 1, &sp), ADDR + 1);
	assert_int_equal(patch_map_pc_out(&p, TRAMP + p.save_len + 4, &sp), ADDR + 4);
	assert_int_equal(patch_map_pc_out(&p, TRAMP + p.tramp_len - 5, &sp), ADDR + 7);
	assert_int_equal(patch_map_pc_out(&p, ADDR + 3, &sp), ADDR + 3);
	assert_int_equal(patch_map_pc_into(&p, ADDR + 1), TRAMP + p.save_len + 1);
	assert_int_equal(patch_map_pc_into(&p, ADDR + 4), TRAMP + p.save_len + 4);
	assert_int_equal(patch_map_pc_into(&p, ADDR + 2), 0);
	assert_int_equal(patch_map_pc_into(&p, ADDR + 7), ADDR + 7);
}

/* push rbp; mov rbp, rsp; mov [rbp-4], edi; pop rbp; ret, and with cmovl eax, edi before ret */
static void test_pc_map_save(void **state)
{
	static const uint8_t code[] = { 0x55, 0x48, 0x89, 0xe5, 0x89, 0x7d, 0xfc, 0x5d, 0xc3 };
	static const uint8_t cmov[] = { 0x55, 0x48, 0x89, 0xe5, 0x89, 0x7d, 0xfc, 0x5d, 0x0f,
					0x4c, 0xc7, 0xc3 };

	(void)state;
	check_save_map(code, sizeof(code), false);
	check_save_map(cmov, sizeof(cmov), true);
}

/* mov rdi, rbx; call rax: both displaced, the red zone step, call rax as push + jmp rax. */
static void test_callsite(void **state)
{
	static const uint8_t code[] = { 0x53, 0x48, 0x89, 0xdf, 0xff, 0xd0, 0x5b, 0xc3 };
	struct tramp_spec spec = { .entry_handler = 1, .point = 3 };
	struct patch_fn fn;
	struct patch_plan p, e;
	char why[200];
	int64_t sp;
	const uint8_t *c;

	(void)state;
	assert_int_equal(patch_analyze(code, sizeof(code), ADDR, &fn, why, sizeof(why)), 0);
	assert_int_equal(fn.nr_calls, 1);
	assert_int_equal(patch_plan_callsite(&fn, code, ADDR + 4, TRAMP, &spec, &p, why,
					     sizeof(why)), 0);
	assert_int_equal(p.site, ADDR + 1);
	assert_int_equal(p.len, 5);
	assert_memory_equal(p.code, code + 1, 3);
	assert_int_equal(p.save_off, 3);
	assert_memory_equal(p.code + 3, ((const uint8_t[]){ 0x48, 0x8d, 0x64, 0x24, 0x80 }), 5);
	/* before a call the flags are dead: push rax ... lea rsp, [rsp+8], never pushfq */
	assert_false(p.saves_flags);
	assert_int_equal(p.code[8], 0x50);
	assert_memory_equal(p.code + 3 + p.save_len - 13,
			    ((const uint8_t[]){ 0x48, 0x8d, 0x64, 0x24, 0x08 }), 5);
	assert_int_equal(patch_map_pc_out(&p, TRAMP + 3 + p.save_len - 13, &sp), 0);
	c = p.code + p.save_off + p.save_len;
	assert_int_equal((uint32_t)rel_at(c + 8), (uint32_t)(ADDR + 6));
	assert_memory_equal(c + 20, ((const uint8_t[]){ 0xff, 0xe0 }), 2);
	assert_int_equal(p.tramp_len, p.save_off + p.save_len + 22);
	assert_int_equal(patch_map_pc_into(&p, ADDR + 4), TRAMP + 3);
	assert_int_equal(patch_map_pc_out(&p, TRAMP + 3, &sp), ADDR + 4);
	assert_int_equal(patch_map_pc_out(&p, TRAMP + 8, &sp), ADDR + 4);
	assert_int_equal(sp, 128);
	assert_int_equal(patch_map_pc_out(&p, TRAMP + 3 + p.save_len - 8, &sp), ADDR + 4);
	assert_int_equal(sp, 128);
	assert_int_equal(patch_map_pc_out(&p, (uint64_t)(c - p.code) + TRAMP + 5, &sp), ADDR + 4);
	assert_int_equal(sp, 8);
	/* the entry plan displaces push rbx; mov rdi, rbx too */
	assert_int_equal(patch_plan_entry(&fn, code, TRAMP + 256, &spec, &e, why, sizeof(why)), 0);
	assert_true(patch_plans_overlap(&p, &e));
	/* a call site must be a call */
	assert_int_equal(patch_plan_callsite(&fn, code, ADDR + 1, TRAMP, &spec, &p, why,
					     sizeof(why)), -1);
	patch_fn_free(&fn);
}

/* The entry's flags-liveness walk (tool/patch/x86_64/flags.c) on one function. */
struct flags_case {
	const char *what;
	uint8_t code[24];
	uint8_t len;
	bool live;
};

static const struct flags_case flags_cases[] = {
	{ "push rbp; mov rbp, rsp; sub rsp, 16: all written",
	  { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xc9, 0xc3 }, 10, false },
	{ "jl first (pc_asm_jcc_sel)", { 0x7c, 0x01, 0xc3, 0xc3 }, 4, true },
	{ "cmp; jl: written before the branch", { 0x48, 0x39, 0xfe, 0x7c, 0x01, 0xc3, 0xc3 }, 7,
	  false },
	{ "mov; ret", { 0x48, 0x89, 0xf8, 0xc3 }, 4, false },
	{ "mov; jmp", { 0x48, 0x89, 0xf8, 0xe9, 0, 0, 0, 0 }, 8, true },
	{ "mov; jmp rax", { 0x48, 0x89, 0xf8, 0xff, 0xe0 }, 5, true },
	{ "push rbx; call", { 0x53, 0xe8, 0, 0, 0, 0, 0x5b, 0xc3 }, 8, false },
	{ "push rbx; call rax", { 0x53, 0xff, 0xd0, 0x5b, 0xc3 }, 5, false },
	{ "inc; adc: CF read before written", { 0x48, 0xff, 0xc0, 0x48, 0x11, 0xf0, 0xc3 }, 7,
	  true },
	{ "inc; cmovz; sub; jl: ZF read after written",
	  { 0x48, 0xff, 0xc0, 0x48, 0x0f, 0x44, 0xc6, 0x48, 0x83, 0xe8, 0x01, 0x7c, 0x01, 0xc3,
	    0xc3 }, 15, false },
	{ "shl rax, cl; setc: the count may be 0",
	  { 0x48, 0xd3, 0xe0, 0x0f, 0x92, 0xc0, 0xc3 }, 7, true },
	{ "shl rax, 0; setc", { 0x48, 0xc1, 0xe0, 0x00, 0x0f, 0x92, 0xc0, 0xc3 }, 8, true },
	{ "shl eax, 32 (masked to 0); setc", { 0xc1, 0xe0, 0x20, 0x0f, 0x92, 0xc0, 0xc3 }, 7,
	  true },
	{ "shl rax, 1; setc", { 0x48, 0xd1, 0xe0, 0x0f, 0x92, 0xc0, 0xc3 }, 7, false },
	{ "shl rax, 3; setc", { 0x48, 0xc1, 0xe0, 0x03, 0x0f, 0x92, 0xc0, 0xc3 }, 8, false },
	{ "mov eax, 60; syscall", { 0xb8, 0x3c, 0, 0, 0, 0x0f, 0x05, 0xc3 }, 8, true },
	{ "ud2", { 0x48, 0x89, 0xf8, 0x0f, 0x0b }, 5, true },
	{ "pushfq", { 0x9c, 0x58, 0xc3 }, 3, true },
	{ "jrcxz", { 0xe3, 0x01, 0xc3, 0xc3 }, 4, true },
	{ "falls off the end", { 0x48, 0x89, 0xf8, 0x48, 0x89, 0xf8 }, 6, true },
	{ "endbr64, nopl sled, jl",
	  { 0xf3, 0x0f, 0x1e, 0xfa, 0x0f, 0x1f, 0x44, 0x00, 0x08, 0x7c, 0x01, 0xc3, 0xc3 }, 13,
	  true },
	{ "endbr64, nopl sled, sub rsp, 8",
	  { 0xf3, 0x0f, 0x1e, 0xfa, 0x0f, 0x1f, 0x44, 0x00, 0x08, 0x48, 0x83, 0xec, 0x08, 0xc3 },
	  14, false },
};

/* Live flags give pushfq / popfq, dead ones push rax / lea rsp, [rsp+8]. */
static void test_flags_live(void **state)
{
	struct tramp_spec spec = { .entry_handler = 1, .point = 1 };
	struct patch_fn fn;
	struct patch_plan p;
	char why[200];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(flags_cases) / sizeof(flags_cases[0]); i++) {
		const struct flags_case *c = &flags_cases[i];

		assert_int_equal(patch_analyze(c->code, c->len, ADDR, &fn, why, sizeof(why)), 0);
		if (fn.entry_flags_live != c->live)
			fail_msg("%s: flags %s at the entry, expected %s", c->what,
				 fn.entry_flags_live ? "live" : "dead", c->live ? "live" : "dead");
		if (!patch_plan_entry(&fn, c->code, TRAMP, &spec, &p, why, sizeof(why))) {
			assert_int_equal(p.saves_flags, c->live);
			assert_int_equal(p.code[0], c->live ? 0x9c : 0x50);
		}
		patch_fn_free(&fn);
	}
}

/* ---- the corpus, live ---- */

enum phase { PHASE_ENTRY, PHASE_CALLSITE, PHASE_BOTH };
static const char *const phase_name[] = { "entries", "call sites", "entries and call sites" };

struct variant {
	const char *path;
	char name[64];
	struct live_module m;
	long *results;			/* [fn * NR_INPUTS + input], unpatched */
	bool *on;			/* points applied in the current phase */
	unsigned into_checked, out_checked, out_busy, fired;
	double plan_us;			/* analysis, tables and entry plan of one function */
};

static void add_point(struct live_module *m, enum patch_kind kind, size_t fn, uint64_t addr)
{
	struct live_point *pt;

	m->pts = realloc(m->pts, (m->nr_pts + 1) * sizeof(*m->pts));
	pt = &m->pts[m->nr_pts++];
	memset(pt, 0, sizeof(*pt));
	pt->kind = kind;
	pt->fn = fn;
	pt->addr = addr;
	pt->reach_fn = -1;
}

/* One entry point per function, one call-site point per call. */
static void make_points(struct live_module *m)
{
	size_t i, j;

	for (i = 0; i < m->nr_fns; i++) {
		const struct patch_fn *pf = &m->fns[i].pf;

		if (m->fns[i].part)
			continue;
		add_point(m, PATCH_ENTRY, i, m->fns[i].addr + pf->entry_off);
		for (j = 0; m->fns[i].analyzed && j < pf->nr_insns; j++)
			if (pf->insns[j].kind == PI_CALL || pf->insns[j].kind == PI_CALL_IND)
				add_point(m, PATCH_CALLSITE, i, m->fns[i].addr + pf->insns[j].off);
	}
	assert_true(m->nr_pts < MAX_POINTS);
}

static void plan_points(struct live_module *m)
{
	size_t i;

	for (i = 0; i < m->nr_pts; i++) {
		struct live_point *pt = &m->pts[i];
		struct live_fn *f = &m->fns[pt->fn];
		uint64_t tramp = (uint64_t)(uintptr_t)m->tramps + i * PATCH_TRAMP_MAX;
		struct tramp_spec spec = { (uint64_t)(uintptr_t)test_handler, (uint32_t)i };

		point_kind[i] = (uint8_t)(1 + pt->kind);
		if (!f->analyzed)
			snprintf(pt->why, sizeof(pt->why), "%s", f->why);
		else if (pt->kind == PATCH_ENTRY)
			pt->planned = !patch_plan_entry(&f->pf, f->pristine, tramp, &spec,
							&pt->plan, pt->why, sizeof(pt->why));
		else
			pt->planned = !patch_plan_callsite(&f->pf, f->pristine, pt->addr, tramp,
							   &spec, &pt->plan, pt->why,
							   sizeof(pt->why));
	}
}

/* Call every exported function with every input; results into out (or checked against v's). */
static void run_all(struct variant *v, long *out)
{
	size_t i;
	int k;

	for (i = 0; i < v->m.nr_fns; i++)
		for (k = 0; k < NR_INPUTS && v->m.fns[i].exported; k++) {
			long r;

			bp_set_reach((long)i, k);
			r = call_fn(v->m.fns[i].addr, k);
			if (out)
				out[i * NR_INPUTS + k] = r;
			else if (r != v->results[i * NR_INPUTS + k])
				fail_msg("%s: %s(input %d) = %ld, unpatched %ld", v->name,
					 v->m.fns[i].name, k, r, v->results[i * NR_INPUTS + k]);
		}
}

/* Unpatched results, then the same with a counting breakpoint on every planned point. */
static void reference_run(struct variant *v)
{
	struct live_module *m = &v->m;
	uint64_t *addrs = calloc(m->nr_pts, sizeof(*addrs));
	size_t i, n = 0;

	v->results = calloc(m->nr_fns * NR_INPUTS, sizeof(long));
	run_all(v, v->results);
	for (i = 0; i < m->nr_pts; i++)
		if (m->pts[i].planned)
			addrs[n++] = m->pts[i].addr;
	bp_count(addrs, n);
	run_all(v, NULL);
	for (i = 0; i < m->nr_pts; i++) {
		m->pts[i].ref = bp_hits(m->pts[i].addr);
		bp_reach(m->pts[i].addr, &m->pts[i].reach_fn, &m->pts[i].reach_input);
	}
	bp_clear();
	free(addrs);
}

static void apply(const struct patch_plan *p)
{
	code_write(p->tramp, p->code, p->tramp_len);
	code_write(p->site, p->bytes, p->len);
}

static void unapply(const struct patch_plan *p)
{
	code_write(p->site, p->orig, p->len);
}

/* Which points a phase applies: at most one plan per byte (entries first). */
static void select_points(struct variant *v, enum phase ph)
{
	struct live_module *m = &v->m;
	size_t i, j;

	for (i = 0; i < m->nr_pts; i++) {
		const struct live_point *pt = &m->pts[i];

		v->on[i] = pt->planned && (ph == PHASE_BOTH ||
					   (ph == PHASE_ENTRY) == (pt->kind == PATCH_ENTRY));
		for (j = 0; v->on[i] && j < i; j++)
			if (v->on[j] && patch_plans_overlap(&m->pts[j].plan, &pt->plan))
				v->on[i] = false;
	}
}

/* The entry point of exported function fn, if applied. */
static uint32_t entry_point_of(const struct variant *v, size_t fn)
{
	size_t i;

	for (i = 0; i < v->m.nr_pts; i++)
		if (v->m.pts[i].fn == fn && v->m.pts[i].kind == PATCH_ENTRY && v->on[i])
			return (uint32_t)i;
	return UINT32_MAX;
}

/* Patched run: same results, and the handler saw the arguments and the caller's return slot. */
static void run_watched(struct variant *v)
{
	size_t i;
	int k;

	for (i = 0; i < v->m.nr_fns; i++)
		for (k = 0; k < NR_INPUTS && v->m.fns[i].exported; k++) {
			long r;

			watch_point = entry_point_of(v, i);
			watch_seen = false;
			r = call_fn(v->m.fns[i].addr, k);
			if (r != v->results[i * NR_INPUTS + k])
				fail_msg("%s: patched %s(input %d) = %ld, unpatched %ld", v->name,
					 v->m.fns[i].name, k, r, v->results[i * NR_INPUTS + k]);
			if (watch_point == UINT32_MAX)
				continue;
			assert_true(watch_seen);
			assert_int_equal(watch_args[0], inputs[k][0]);
			assert_int_equal(watch_args[1], inputs[k][1]);
			assert_int_equal(watch_args[2], (uint64_t)(uintptr_t)test_cb);
			assert_int_equal(watch_args[3], inputs[k][3]);
			assert_int_equal(watch_ret, (uint64_t)(uintptr_t)call_corpus_ret);
		}
	watch_point = UINT32_MAX;
}

/* Counts must be the reference's for applied points, 0 for the others. */
static void check_counts(const struct variant *v, const uint64_t *want_off)
{
	size_t i;

	for (i = 0; i < v->m.nr_pts; i++) {
		const struct live_point *pt = &v->m.pts[i];
		uint64_t want = want_off ? want_off[i] : v->on[i] ? pt->ref : 0;

		if (hits[i] != want)
			fail_msg("%s: %s point at %s+0x%lx: %lu calls, expected %lu", v->name,
				 pt->kind == PATCH_ENTRY ? "entry" : "call-site",
				 v->m.fns[pt->fn].name,
				 (unsigned long)(pt->addr - v->m.fns[pt->fn].addr),
				 (unsigned long)hits[i], (unsigned long)want);
	}
}

/* Every function's bytes as loaded. */
static void check_untouched(const struct variant *v)
{
	size_t i;

	for (i = 0; i < v->m.nr_fns; i++)
		if (memcmp((const void *)(uintptr_t)v->m.fns[i].addr, v->m.fns[i].pristine,
			   v->m.fns[i].size))
			fail_msg("%s: %s not restored byte for byte", v->name, v->m.fns[i].name);
}

/* The handler runs with rsp 16-byte aligned, even where callers do not align it. */
static void check_aligned(const struct variant *v, enum phase ph)
{
	size_t i;

	for (i = 0; i < v->m.nr_pts; i++)
		if (misaligned[i])
			fail_msg("%s, %s: handler of %s+0x%lx entered with rsp misaligned %u times",
				 v->name, phase_name[ph], v->m.fns[v->m.pts[i].fn].name,
				 (unsigned long)(v->m.pts[i].addr - v->m.fns[v->m.pts[i].fn].addr),
				 misaligned[i]);
	if (bad_slot)
		fail_msg("%s, %s: ret_slot given to a call site or missing at an entry %u times",
			 v->name, phase_name[ph], bad_slot);
}

static void run_phase(struct variant *v, enum phase ph)
{
	size_t i, n = v->m.nr_pts;
	uint64_t *before = calloc(n, sizeof(*before));

	select_points(v, ph);
	memset(hits, 0, sizeof(hits));
	memset(misaligned, 0, sizeof(misaligned));
	bad_slot = 0;
	for (i = 0; i < n; i++)
		if (v->on[i])
			apply(&v->m.pts[i].plan);
	run_watched(v);
	check_counts(v, NULL);
	check_aligned(v, ph);
	for (i = 0; i < n; i++)
		if (v->on[i])
			unapply(&v->m.pts[i].plan);
	check_untouched(v);
	memcpy(before, hits, n * sizeof(*before));
	run_all(v, NULL);
	check_counts(v, before);
	free(before);
}

/* ---- PC mapping, live ---- */

/* Breakpoint action: the patch goes in with this thread stopped inside the displaced bytes. */
static void move_into(ucontext_t *uc, uint64_t pc, void *arg)
{
	const struct patch_plan *p = arg;
	uint64_t to = patch_map_pc_into(p, pc);

	apply(p);
	if (!to)
		map_errors++;
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(to ? to : pc);
}

/* Breakpoint action: the patch goes out with this thread stopped in the trampoline. */
static void move_out(ucontext_t *uc, uint64_t pc, void *arg)
{
	const struct patch_plan *p = arg;
	int64_t sp;
	uint64_t to = patch_map_pc_out(p, pc, &sp);

	unapply(p);
	if (!to) {
		map_errors++;
		return;
	}
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)to;
	uc->uc_mcontext.gregs[REG_RSP] += (greg_t)sp;
	/* the trampoline is gone: anything still running it traps as a stray */
	memset((void *)(uintptr_t)p->tramp, 0xcc, p->tramp_len);
}

/* Call the function that reaches point pt, with a breakpoint acting at addr. */
static void call_with(struct variant *v, const struct live_point *pt, uint64_t addr,
		      bp_action_fn action)
{
	long r;

	bp_once(addr, action, (void *)(uintptr_t)&pt->plan);
	r = call_fn(v->m.fns[pt->reach_fn].addr, pt->reach_input);
	v->fired += bp_fired();
	bp_clear();
	if (r != v->results[pt->reach_fn * NR_INPUTS + pt->reach_input])
		fail_msg("%s: %s(input %d) = %ld with a thread moved at 0x%lx (%s+0x%lx), "
			 "expected %ld", v->name, v->m.fns[pt->reach_fn].name, pt->reach_input, r,
			 (unsigned long)addr, v->m.fns[pt->fn].name,
			 (unsigned long)(pt->plan.site - v->m.fns[pt->fn].addr),
			 v->results[pt->reach_fn * NR_INPUTS + pt->reach_input]);
	if (map_errors)
		fail_msg("%s: no PC mapping for 0x%lx", v->name, (unsigned long)addr);
}

/* Stopped at each instruction boundary inside the displaced bytes while the patch goes in. */
static void map_into(struct variant *v, const struct live_point *pt)
{
	const struct patch_fn *pf = &v->m.fns[pt->fn].pf;
	size_t i;

	for (i = 0; i < pf->nr_insns; i++) {
		uint64_t a = pf->addr + pf->insns[i].off;

		if (a <= pt->plan.site || a >= pt->plan.site + pt->plan.len)
			continue;
		call_with(v, pt, a, move_into);
		unapply(&pt->plan);
		v->into_checked++;
	}
}

/* Stopped at each instruction of the trampoline while the patch goes out. */
static void map_out(struct variant *v, const struct live_point *pt)
{
	const struct patch_plan *p = &pt->plan;
	uint64_t t = 0;
	int64_t sp;
	ZydisDecoder dec;
	ZydisDecodedInstruction in;

	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	while (t < p->tramp_len &&
	       ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, p->code + t,
							  p->tramp_len - t, &in))) {
		if (!patch_map_pc_out(p, p->tramp + t, &sp)) {
			v->out_busy++;
		} else {
			apply(p);
			call_with(v, pt, p->tramp + t, move_out);
			unapply(p);
			v->out_checked++;
		}
		t += in.length;
	}
}

static void map_tests(struct variant *v)
{
	size_t i;

	map_errors = 0;
	for (i = 0; i < v->m.nr_pts; i++) {
		const struct live_point *pt = &v->m.pts[i];

		if (!pt->planned || pt->reach_fn < 0)
			continue;
		map_into(v, pt);
		map_out(v, pt);
	}
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The time docs/dynamic.md budgets (< 1 ms per function): analysis, tables, entry plan. */
static void time_planning(struct variant *v)
{
	struct tramp_spec spec = { (uint64_t)(uintptr_t)test_handler, 0 };
	struct patch_plan plan;
	struct patch_fn pf;
	char why[200];
	double t0 = now_us();
	size_t i, n = 0;

	for (i = 0; i < v->m.nr_fns; i++) {
		const struct live_fn *f = &v->m.fns[i];

		if (f->part || patch_analyze(f->pristine, f->size, f->addr, &pf, why, sizeof(why)))
			continue;
		if (!patch_read_tables(&pf, live_read, &v->m, why, sizeof(why)))
			patch_plan_entry(&pf, f->pristine, (uint64_t)(uintptr_t)v->m.tramps, &spec,
					 &plan, why, sizeof(why));
		patch_fn_free(&pf);
		n++;
	}
	v->plan_us = n ? (now_us() - t0) / (double)n : 0;
}

/* With -v: the jump tables found, and indirect jumps that could go anywhere. */
static void print_tables(const struct variant *v)
{
	size_t i, j;

	for (i = 0; i < v->m.nr_fns && verbose; i++) {
		const struct patch_fn *pf = &v->m.fns[i].pf;

		for (j = 0; j < pf->nr_tables; j++)
			printf("#     %-12s %s: jump table at +0x%x, %u entries of %u bytes\n",
			       v->name, v->m.fns[i].name, pf->tables[j].jmp_off, pf->tables[j].nr,
			       pf->tables[j].entry_size);
		if (pf->unknown_ijmp >= 0)
			printf("#     %-12s %s: indirect jump of unknown targets at +0x%lx\n",
			       v->name, v->m.fns[i].name, (long)pf->unknown_ijmp);
	}
}

/* One line per variant; the refusals and the entries that keep the flags with -v. */
static void print_summary(const struct variant *v)
{
	unsigned ok[2] = { 0, 0 }, no[2] = { 0, 0 }, flags = 0;
	size_t i;

	for (i = 0; i < v->m.nr_pts; i++) {
		const struct live_point *pt = &v->m.pts[i];

		if (pt->planned)
			ok[pt->kind]++;
		else
			no[pt->kind]++;
		flags += pt->planned && pt->plan.saves_flags;
		if ((!pt->planned || pt->plan.saves_flags) && verbose)
			printf("#     %-12s %s %s+0x%lx: %s\n", v->name,
			       pt->kind == PATCH_ENTRY ? "entry" : "call ",
			       v->m.fns[pt->fn].name,
			       (unsigned long)(pt->addr - v->m.fns[pt->fn].addr),
			       pt->planned ? "keeps the flags (pushfq)" : pt->why);
	}
	printf("# %-14s %3u functions: entries %3u patched (%2u keep the flags) %3u refused; "
	       "call sites %3u patched %3u refused; threads moved %u times (%u in, %u out tried, "
	       "%u busy); %.1f us to plan an entry\n",
	       v->name, ok[PATCH_ENTRY] + no[PATCH_ENTRY], ok[PATCH_ENTRY], flags, no[PATCH_ENTRY],
	       ok[PATCH_CALLSITE], no[PATCH_CALLSITE], v->fired, v->into_checked, v->out_checked,
	       v->out_busy, v->plan_us);
	fflush(stdout);
}

/* The functions the corpus must refuse, whatever the compiler. */
static void check_refused(const struct variant *v)
{
	static const char *const must[] = { "pc_asm_icall_first", "pc_asm_loop_entry",
					    "pc_asm_short", "pc_asm_jtab_into", "pc_asm_computed" };
	/* retry loops whose head is in the first bytes: displaced whole, then run patched */
	static const char *const loops[] = { "pc_asm_branch_into", "pc_asm_retry_head",
					     "pc_asm_retry_fwd" };
	size_t i, j;

	for (i = 0; i < v->m.nr_pts; i++) {
		const char *name = v->m.fns[v->m.pts[i].fn].name;

		if (v->m.pts[i].kind != PATCH_ENTRY)
			continue;
		for (j = 0; j < sizeof(must) / sizeof(must[0]); j++)
			if (!strcmp(name, must[j]) && v->m.pts[i].planned)
				fail_msg("%s: %s was not refused", v->name, must[j]);
		for (j = 0; j < sizeof(loops) / sizeof(loops[0]); j++)
			if (!strcmp(name, loops[j]) && !v->m.pts[i].planned)
				fail_msg("%s: the entry of %s was refused: %s", v->name, name,
					 v->m.pts[i].why);
	}
}

static bool name_in(const char *name, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(name, list[i]))
			return true;
	return false;
}

/*
 * Entries of hand-written code that reads its caller's flags keep them (pushfq); compiled
 * functions' entries and every call site do not. (Their results, checked by the phases, show
 * that the flags were right wherever read: the handler clobbers them.)
 */
static void check_flags(const struct variant *v)
{
	static const char *const keep[] = { "pc_asm_jcc_sel", "pc_asm_jcc_first",
					    "pc_asm_inc_adc", "pc_asm_shl_adc" };
	static const char *const drop[] = { "pc_fib", "pc_gcd", "pc_switch", "pc_calls", "pc_add",
					    "pc_asm_max", "pc_asm_carry", "pc_asm_shift" };
	size_t i;

	for (i = 0; i < v->m.nr_pts; i++) {
		const struct live_point *pt = &v->m.pts[i];
		const char *name = v->m.fns[pt->fn].name;
		bool entry = pt->kind == PATCH_ENTRY;

		if (entry && name_in(name, keep, sizeof(keep) / sizeof(keep[0])) &&
		    !(pt->planned && pt->plan.saves_flags))
			fail_msg("%s: the entry of %s does not keep the flags", v->name, name);
		if ((!entry || name_in(name, drop, sizeof(drop) / sizeof(drop[0]))) &&
		    pt->planned && pt->plan.saves_flags)
			fail_msg("%s: %s point of %s keeps the flags", v->name,
				 entry ? "entry" : "call-site", name);
	}
}

static void test_variant(void **state)
{
	struct variant *v = *state;
	char why[256];

	if (live_open(&v->m, v->path, why, sizeof(why)))
		fail_msg("%s", why);
	make_points(&v->m);
	if (live_tramp_area(&v->m, v->m.nr_pts * PATCH_TRAMP_MAX))
		fail_msg("%s: no trampoline area within ±2 GB", v->name);
	plan_points(&v->m);
	check_refused(v);
	check_flags(v);
	v->on = calloc(v->m.nr_pts, sizeof(*v->on));
	reference_run(v);
	run_phase(v, PHASE_ENTRY);
	run_phase(v, PHASE_CALLSITE);
	run_phase(v, PHASE_BOTH);
	map_tests(v);
	check_untouched(v);
	time_planning(v);
	print_tables(v);
	print_summary(v);
	free(v->on);
	free(v->results);
	live_close(&v->m);
}

/* "build/tests/patch_corpus_gcc_O2_plain.so" -> "gcc_O2_plain" */
static void variant_name(struct variant *v)
{
	char *copy = strdup(v->path), *base = basename(copy), *dot;

	if (!strncmp(base, "patch_corpus_", 13))
		base += 13;
	if ((dot = strstr(base, ".so")))
		*dot = '\0';
	snprintf(v->name, sizeof(v->name), "%s", base);
	free(copy);
}

int main(int argc, char **argv)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_sled_gcc),
		cmocka_unit_test(test_sled_clang),
		cmocka_unit_test(test_endbr_prologue),
		cmocka_unit_test(test_jcc_widened),
		cmocka_unit_test(test_loop_rewritten),
		cmocka_unit_test(test_call_original_return),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_retry_loop_displaced),
		cmocka_unit_test(test_retry_loop_forward),
		cmocka_unit_test(test_riprel_rewritten),
		cmocka_unit_test(test_jump_table),
		cmocka_unit_test(test_jump_table_abs),
		cmocka_unit_test(test_trampoline_listing),
		cmocka_unit_test(test_pc_map_save),
		cmocka_unit_test(test_flags_live),
		cmocka_unit_test(test_callsite),
	};
	size_t nf = sizeof(fixed) / sizeof(fixed[0]), n = nf;
	struct CMUnitTest *tests = calloc(nf + (size_t)argc, sizeof(*tests));
	struct variant *vs = calloc((size_t)argc, sizeof(*vs));
	int i, ret;

	memcpy(tests, fixed, sizeof(fixed));
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v")) {
			verbose = true;
		} else if (!strcmp(argv[i], "--no-clang")) {
			printf("# clang not installed: the clang variants of the corpus are skipped\n");
		} else {
			struct variant *v = &vs[i];

			v->path = argv[i];
			variant_name(v);
			tests[n] = (struct CMUnitTest){ .name = v->name, .test_func = test_variant,
							.initial_state = v };
			n++;
		}
	}
	bp_install_handler();
	ret = _cmocka_run_group_tests("patch", tests, n, NULL, NULL);
	free(tests);
	free(vs);
	return ret;
}
