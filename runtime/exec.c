/* SPDX-License-Identifier: MIT */
/*
 * The exec family, interposed: an exec ends the process image without running destructors, so
 * the image's profile is written first. When the exec fails the program goes on, and so does the
 * measurement (rt_unwrite_profile takes the file back). execl* are rebuilt into an argv on the
 * stack, at most EXECL_MAX arguments (beyond that: E2BIG, as the kernel would for a huge list).
 */
#include "rt.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#define EXECL_MAX 1024

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

int execvpe(const char *file, char *const argv[], char *const envp[]);

static void *real(const char *name)
{
	return rt_next_symbol(name);
}

static void before_exec(void)
{
	if (atomic_load(&rt_ready) && getpid() == rt_pid)
		rt_write_profile(SPROF_END_EXEC, 0);
}

/* The exec returned: it failed. Keep its errno. */
static int after_failed_exec(int ret)
{
	int saved = errno;

	if (atomic_load(&rt_ready) && getpid() == rt_pid)
		rt_unwrite_profile();
	errno = saved;
	return ret;
}

RT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	execve_fn fn = (execve_fn)real("execve");

	before_exec();
	return after_failed_exec(fn(path, argv, envp));
}

RT_EXPORT int execv(const char *path, char *const argv[])
{
	execv_fn fn = (execv_fn)real("execv");

	before_exec();
	return after_failed_exec(fn(path, argv));
}

RT_EXPORT int execvp(const char *file, char *const argv[])
{
	execv_fn fn = (execv_fn)real("execvp");

	before_exec();
	return after_failed_exec(fn(file, argv));
}

RT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	execve_fn fn = (execve_fn)real("execvpe");

	before_exec();
	return after_failed_exec(fn(file, argv, envp));
}

RT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	fexecve_fn fn = (fexecve_fn)real("fexecve");

	before_exec();
	return after_failed_exec(fn(fd, argv, envp));
}

/* Collect execl-style arguments (after arg0, up to the NULL) into argv; -1 when too many. */
static int gather(char **argv, const char *arg0, va_list ap)
{
	int n = 0;

	argv[n++] = (char *)(uintptr_t)arg0;
	while (arg0 && n < EXECL_MAX) {
		argv[n] = va_arg(ap, char *);
		if (!argv[n++])
			return 0;
	}
	errno = E2BIG;
	return arg0 ? -1 : 0;
}

RT_EXPORT int execl(const char *path, const char *arg0, ...)
{
	char *argv[EXECL_MAX];
	va_list ap;
	int bad;

	va_start(ap, arg0);
	bad = gather(argv, arg0, ap);
	va_end(ap);
	return bad ? -1 : execv(path, argv);
}

RT_EXPORT int execlp(const char *file, const char *arg0, ...)
{
	char *argv[EXECL_MAX];
	va_list ap;
	int bad;

	va_start(ap, arg0);
	bad = gather(argv, arg0, ap);
	va_end(ap);
	return bad ? -1 : execvp(file, argv);
}

RT_EXPORT int execle(const char *path, const char *arg0, ...)
{
	char *argv[EXECL_MAX], *const *envp;
	va_list ap;
	int bad;

	va_start(ap, arg0);
	bad = gather(argv, arg0, ap);
	envp = bad ? NULL : va_arg(ap, char *const *);
	va_end(ap);
	return bad ? -1 : execve(path, argv, envp);
}
