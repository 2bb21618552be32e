/* SPDX-License-Identifier: MIT */
/*
 * ideal_probe.so — the floor for a timing probe on this machine, for bench/overhead.sh.
 *
 * Preloaded (LD_PRELOAD) into a -finstrument-functions build, it replaces glibc's empty
 * __cyg_profile_func_enter/exit with the least a probe that timestamps every enter and exit
 * can do: one rdtsc and one 16-byte store of {fn, tsc} into a thread-local ring that wraps
 * (initial-exec TLS: %fs-relative addressing, no __tls_get_addr). No call path, no lookup, no
 * bookkeeping, nothing kept: everything a real profiler does on top of this is its own cost.
 */
#include <stdint.h>

#define RING 4096 /* records per thread, a power of two: 64 KiB, stays in L2 */
#define TLS __attribute__((tls_model("initial-exec"))) __thread
#define EXPORT __attribute__((visibility("default")))

struct rec {
	uintptr_t fn; /* low bit set on exit */
	uint64_t tsc;
};

/* Not static: stores to a ring nobody in this file reads must not be optimised away. */
TLS struct rec ideal_ring[RING];
TLS unsigned ideal_pos;

static inline __attribute__((always_inline)) void record(uintptr_t fn)
{
	uint32_t lo, hi;
	unsigned i = ideal_pos;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	ideal_ring[i].fn = fn;
	ideal_ring[i].tsc = ((uint64_t)hi << 32) | lo;
	ideal_pos = (i + 1) & (RING - 1);
}

EXPORT void __cyg_profile_func_enter(void *fn, void *site);
EXPORT void __cyg_profile_func_exit(void *fn, void *site);

void __cyg_profile_func_enter(void *fn, void *site)
{
	(void)site;
	record((uintptr_t)fn);
}

void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)site;
	record((uintptr_t)fn | 1);
}
