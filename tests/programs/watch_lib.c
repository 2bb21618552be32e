/*
 * A shared library for `sonde watch` on library functions (built by the tests as
 * libwatch_lib.so, linked into watch_libs): wlib_step() is a small function worth patching;
 * wlib_tiny() is one the patcher refuses (one byte: `ret`). Nothing else.
 */
#include <stdint.h>

__asm__(".text\n.globl wlib_tiny\n.type wlib_tiny, @function\nwlib_tiny:\n\tret\n"
	".size wlib_tiny, .-wlib_tiny\n");

__attribute__((noinline)) uint64_t wlib_step(uint64_t x, uint64_t i)
{
	uint64_t h = x ^ (i * 0x9e3779b97f4a7c15ull);

	h ^= h >> 31;
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 29);
}
