/* SPDX-License-Identifier: MIT */
/*
 * Which procedure a call instruction reaches, by name (tool/dyn/callees.c): direct calls to a
 * symbol (any alias), calls to PLT stubs (plain, after endbr64, with bnd), indirect calls
 * through a GOT slot (with and without notrack), and calls that reach no name.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <setjmp.h>

#include <cmocka.h>

#include "dyn/callees.h"

#define FN 0x401000ull    /* the calling function */
#define FOO 0x402000ull   /* a function: foo, alias __foo */
#define STUB 0x403000ull  /* PLT stubs: 16 bytes each */
#define SLOT 0x405000ull  /* GOT slot of bar */

/* The target's memory at the stubs. */
static uint8_t stubs[4][16];

static int read_stub(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < STUB || addr + len > STUB + sizeof(stubs))
		return -1;
	memcpy(buf, (uint8_t *)stubs + (addr - STUB), len);
	return 0;
}

/* A stub at STUB + 16 * i: prefix bytes, then jmp *disp(%rip) to SLOT. */
static void make_stub(int i, const uint8_t *pre, size_t npre)
{
	uint64_t at = STUB + 16u * (unsigned)i;
	int32_t disp = (int32_t)(SLOT - (at + npre + 6));

	memset(stubs[i], 0xcc, sizeof(stubs[i]));
	memcpy(stubs[i], pre, npre);
	stubs[i][npre] = 0xff;
	stubs[i][npre + 1] = 0x25;
	memcpy(&stubs[i][npre + 2], &disp, 4);
}

static struct callees *table(void)
{
	struct callees *c = callees_new();

	callees_add_func(c, FOO, "foo");
	callees_add_func(c, FOO, "__foo");
	callees_add_slot(c, SLOT, "bar");
	callees_seal(c);
	return c;
}

static int reach(struct callees *c, const struct patch_insn *in, const uint8_t *code,
		 const char *name)
{
	struct patch_fn fn;

	memset(&fn, 0, sizeof(fn));
	fn.addr = FN;
	return callees_reach(c, &fn, code, in, read_stub, NULL, name);
}

static void test_direct(void **state)
{
	struct callees *c = table();
	struct patch_insn in = { 0, 5, PI_CALL, false, FOO };
	uint8_t code[5] = { 0xe8 };

	(void)state;
	assert_true(reach(c, &in, code, "foo"));
	assert_true(reach(c, &in, code, "__foo"));
	assert_false(reach(c, &in, code, "bar"));
	in.target = FOO + 1; /* not a symbol, not a stub */
	assert_false(reach(c, &in, code, "foo"));
	callees_free(c);
}

static void test_plt(void **state)
{
	static const uint8_t endbr[] = { 0xf3, 0x0f, 0x1e, 0xfa }, endbr_bnd[] = { 0xf3, 0x0f, 0x1e,
										  0xfa, 0xf2 };
	struct callees *c = table();
	struct patch_insn in = { 0, 5, PI_CALL, false, 0 };
	uint8_t code[5] = { 0xe8 };
	int i;

	(void)state;
	make_stub(0, NULL, 0);
	make_stub(1, endbr, sizeof(endbr));
	make_stub(2, endbr_bnd, sizeof(endbr_bnd));
	memset(stubs[3], 0x90, sizeof(stubs[3])); /* not a stub */
	for (i = 0; i < 3; i++) {
		in.target = STUB + 16u * (unsigned)i;
		assert_true(reach(c, &in, code, "bar"));
		assert_false(reach(c, &in, code, "foo"));
	}
	in.target = STUB + 48;
	assert_false(reach(c, &in, code, "bar"));
	in.target = 0x999000; /* unreadable */
	assert_false(reach(c, &in, code, "bar"));
	callees_free(c);
}

static void test_got(void **state)
{
	struct callees *c = table();
	uint8_t code[16] = { 0 };
	struct patch_insn in = { 4, 6, PI_CALL_IND, true, 0 };
	int32_t disp = (int32_t)(SLOT - (FN + 4 + 6));

	(void)state;
	code[4] = 0xff; /* call *disp(%rip) at FN + 4 */
	code[5] = 0x15;
	memcpy(&code[6], &disp, 4);
	assert_true(reach(c, &in, code, "bar"));
	assert_false(reach(c, &in, code, "foo"));
	code[3] = 0x3e; /* notrack call *disp(%rip) at FN + 3 */
	in.off = 3;
	in.len = 7;
	assert_true(reach(c, &in, code, "bar"));
	code[0] = 0xff; /* call *%rax */
	code[1] = 0xd0;
	in = (struct patch_insn){ 0, 2, PI_CALL_IND, false, 0 };
	assert_false(reach(c, &in, code, "bar"));
	in.kind = PI_JMP; /* not a call */
	assert_false(reach(c, &in, code, "bar"));
	callees_free(c);
}

static void test_files(void **state)
{
	struct callees *c = callees_new();

	(void)state;
	assert_int_equal(callees_add_slots(c, "/proc/self/exe", 0), 0);
	assert_int_equal(callees_add_slots(c, "/proc/self/status", 0), -1);
	assert_int_equal(callees_add_slots(c, "/nonexistent", 0), -1);
	callees_seal(c);
	callees_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_direct),
		cmocka_unit_test(test_plt),
		cmocka_unit_test(test_got),
		cmocka_unit_test(test_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
