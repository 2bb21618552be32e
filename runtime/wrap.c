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

/* Declared here, not from <setjmp.h>: the wrappers only pass the jump buffer through. */
void longjmp(void *env, int val) __attribute__((noreturn));
void _longjmp(void *env, int val) __attribute__((noreturn));
void siglongjmp(void *env, int val) __attribute__((noreturn));
void __longjmp_chk(void *env, int val) __attribute__((noreturn));

static const char *const setjmp_names[] = { "setjmp", "_setjmp", "__sigsetjmp" };
static void *real_setjmp[3];

void *rt_next_symbol(const char *name)
{
	void *p;

	rt_busy++;
	p = dlsym(RTLD_NEXT, name);
	rt_busy--;
	return p;
}

void rt_wrap_init(void)
{
	int i;

	for (i = 0; i < 3; i++)
		real_setjmp[i] = dlsym(RTLD_NEXT, setjmp_names[i]);
}

/* From the setjmp trampolines: remember how deep the probe stack was for this buffer. */
void *rt_note_setjmp(const void *env, int which)
{
	struct rt_thread *t = rt_self;
	uint32_t i;

	if (t) {
		for (i = 0; i < RT_JMPS && t->jmps[i].env != env; i++)
			;
		if (i == RT_JMPS)
			i = t->jmp_next++ % RT_JMPS;
		t->jmps[i].env = env;
		t->jmps[i].depth = rt_trace_on ? t->tr.depth : (uint32_t)(t->top - t->frames);
		t->jmps[i].overflow = t->overflow;
	}
	if (!real_setjmp[which]) /* called before our constructor ran */
		real_setjmp[which] = rt_next_symbol(setjmp_names[which]);
	return real_setjmp[which];
}

/*
 * Before a longjmp: close the frames opened since the matching setjmp. A buffer we did not see
 * being set leaves the work to the next probe, which compares stack addresses (probe.c).
 */
static void note_jump(const void *env)
{
	struct rt_thread *t = rt_self;
	uint32_t i;

	if (!t || atomic_load(&t->exited))
		return;
	for (i = 0; i < RT_JMPS; i++) {
		struct rt_frame *keep = t->frames + t->jmps[i].depth;

		if (t->jmps[i].env != env)
			continue;
		if (rt_trace_on) {
			rt_trace_unwind(t, t->jmps[i].depth);
			return;
		}
		if (keep <= t->top) {
			rt_unwind_to(t, keep, rt_now());
			t->overflow = t->jmps[i].overflow;
			if (!t->overflow)
				atomic_fetch_and(&t->slow, ~RT_SLOW_OVERFLOW);
		}
		return;
	}
	atomic_fetch_or(&t->slow, RT_SLOW_JUMPED);
}

/* One wrapper per name; the real function is looked up once, on first use. */
#define JUMP_WRAPPER(fn)                                                                           \
	RT_EXPORT void fn(void *env, int val)                                                      \
	{                                                                                          \
		static jump_fn real;                                                               \
		if (!real)                                                                         \
			real = (jump_fn)rt_next_symbol(#fn);                                       \
		note_jump(env);                                                                    \
		real(env, val);                                                                    \
	}

JUMP_WRAPPER(longjmp)
JUMP_WRAPPER(_longjmp)
JUMP_WRAPPER(siglongjmp)
JUMP_WRAPPER(__longjmp_chk)

/* Called before the image goes away; skipped in a vfork child, which shares our memory. */
static void before_image_ends(int reason)
{
	if (atomic_load(&rt_ready) && getpid() == rt_pid)
		rt_write_profile(reason, 0);
}

RT_EXPORT void _exit(int status)
{
	exit_fn real = (exit_fn)rt_next_symbol("_exit");

	if (getpid() == rt_pid) /* not a vfork child's: our memory, but not our process */
		dyn_server_final();
	before_image_ends(SPROF_END_EXIT);
	real(status);
}

RT_EXPORT void _Exit(int status)
{
	_exit(status);
}
