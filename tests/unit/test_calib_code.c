/* SPDX-License-Identifier: MIT */
/*
 * The runtime's calibration trampolines (runtime/arch/x86_64/dyn_calib_code.c) are the
 * patcher's: the register save, handler call and restore it writes for a sled whose flags are
 * dead are, byte for byte, what tool/patch/x86_64/tramp.c emits for the same point and
 * handler — so what the runtime measures is what a patched function runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../runtime/dyn/dyn.h"
#include "patch/patch.h"
#include "patch/x86_64/x86.h"

/* Only its address is taken by the code under test. */
void sonde__dyn_entry(uint32_t point, struct sonde_regs *regs, uint64_t *ret_slot)
{
	(void)point;
	(void)regs;
	(void)ret_slot;
}

static void same_bytes(uint32_t point, uint64_t handler)
{
	uint8_t tool[256], rt[256];
	struct emit e = { .buf = tool, .cap = sizeof(tool), .base = 0x7f0000001000ull };
	struct tramp_spec spec = { .entry_handler = handler, .point = point };
	size_t n;

	memset(tool, 0, sizeof(tool));
	memset(rt, 0, sizeof(rt));
	x86_emit_save(&e, &spec, false, false);
	n = dyn_calib_emit_save(rt, point, handler);
	assert_false(e.full);
	assert_int_equal(n, e.len);
	assert_memory_equal(rt, tool, n);
}

static void test_same_as_patcher(void **state)
{
	(void)state;
	same_bytes(DYN_CALIB_POINT, 0x7f1234567890ull);
	same_bytes(DYN_CALIB_POINT + DYN_CALIB_FNS - 1, (uint64_t)(uintptr_t)&sonde__dyn_entry);
	same_bytes(0, 0);
	same_bytes(0xffffffffu, UINT64_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_patcher),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
