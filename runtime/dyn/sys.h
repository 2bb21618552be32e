/* SPDX-License-Identifier: MIT */
/*
 * System calls without libc, for the paths that trampolines reach: a libc function may use
 * vector registers (memcpy, or a store pair the compiler vectorised), and the trampolines save
 * none. The `syscall` instruction clobbers only rcx and r11; the kernel keeps every vector
 * register. Async-signal-safe.
 */
#ifndef SONDE_DYN_SYS_H
#define SONDE_DYN_SYS_H

#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>

static inline long dyn_sys6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

static inline long dyn_sys2(long nr, long a, long b)
{
	return dyn_sys6(nr, a, b, 0, 0, 0, 0);
}

static inline uint64_t dyn_sys_clock_ns(long clock)
{
	struct timespec ts = { 0, 0 };

	dyn_sys2(SYS_clock_gettime, clock, (long)&ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int dyn_sys_gettid(void)
{
	return (int)dyn_sys6(SYS_gettid, 0, 0, 0, 0, 0, 0);
}

/* Zeroed, private, committed only when touched; NULL on failure. */
static inline void *dyn_sys_map(uint64_t bytes)
{
	long p = dyn_sys6(SYS_mmap, 0, (long)bytes, 3 /* PROT_READ | PROT_WRITE */,
			  0x22 | 0x4000 /* MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE */, -1, 0);

	return p < 0 && p > -4096 ? (void *)0 : (void *)p;
}

/* The kernel's clock id for another thread's CPU time (what pthread_getcpuclockid makes). */
static inline clockid_t dyn_thread_cpu_clock(int tid)
{
	return (clockid_t)((~(unsigned int)tid << 3) | 6u);
}

#endif
