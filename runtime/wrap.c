/* SPDX-License-Identifier: MIT */
/*
 * Interposed libc functions (called through the program's PLT). Each calls the real one through
 * a pointer found with dlsym(RTLD_NEXT), after telling the runtime what is about to happen.
 *
 * longjmp and friends skip the exit probes of the frames they unwind; the runtime is told, and
 * the next probe pops those frames (probe.c: unwind_sp). _exit and execve end the process image
 * without running destructors: the profile is written first.
 */
#include "rt.h"

#include <dlfcn.h>
#include <unistd.h>

typedef void (*jump_fn)(void *env, int val) __attribute__((noreturn));
typedef void (*exit_fn)(int) __attribute__((noreturn));
typedef int (*execve_fn)(const char *, char *const[], char *const[]);

/* Declared here, not from <setjmp.h>: the wrappers only pass the jump buffer through. */
void longjmp(void *env, int val) __attribute__((noreturn));
void _longjmp(void *env, int val) __attribute__((noreturn));
void siglongjmp(void *env, int val) __attribute__((noreturn));
void __longjmp_chk(void *env, int val) __attribute__((noreturn));

static void note_jump(void)
{
	struct rt_thread *t = rt_self;

	if (t)
		atomic_fetch_or(&t->slow, RT_SLOW_JUMPED);
}

/* One wrapper per name; `name` is looked up once, on first use. */
#define JUMP_WRAPPER(fn)                                                                           \
	RT_EXPORT void fn(void *env, int val)                                                      \
	{                                                                                          \
		static jump_fn real;                                                               \
		if (!real)                                                                         \
			real = (jump_fn)dlsym(RTLD_NEXT, #fn);                                     \
		note_jump();                                                                       \
		real(env, val);                                                                    \
	}

JUMP_WRAPPER(longjmp)
JUMP_WRAPPER(_longjmp)
JUMP_WRAPPER(siglongjmp)

RT_EXPORT void __longjmp_chk(void *env, int val)
{
	static jump_fn real;

	if (!real)
		real = (jump_fn)dlsym(RTLD_NEXT, "__longjmp_chk");
	note_jump();
	real(env, val);
}

/* Called before the image goes away; skipped in a vfork child, which shares our memory. */
static void before_image_ends(int reason)
{
	if (atomic_load(&rt_ready) && getpid() == rt_pid)
		rt_write_profile(reason, 0);
}

RT_EXPORT void _exit(int status)
{
	exit_fn real = (exit_fn)dlsym(RTLD_NEXT, "_exit");

	before_image_ends(SPROF_END_EXIT);
	real(status);
}

RT_EXPORT void _Exit(int status)
{
	_exit(status);
}

RT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	execve_fn real = (execve_fn)dlsym(RTLD_NEXT, "execve");

	if (rt_cfg.follow_exec)
		before_image_ends(SPROF_END_EXEC);
	return real(path, argv, envp);
}
