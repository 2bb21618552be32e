/* SPDX-License-Identifier: MIT */
/*
 * Small async-signal-safe helpers: the runtime formats its own numbers and paths because stdio
 * and malloc are off limits inside the measured program.
 */
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

size_t rt_strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

/* Copy src to dst, never past end - 1; always terminated. Returns the new end of dst. */
char *rt_stpcpy(char *dst, const char *src, const char *end)
{
	while (*src && dst < end - 1)
		*dst++ = *src++;
	*dst = 0;
	return dst;
}

char *rt_utoa(char *dst, uint64_t v, const char *end)
{
	char tmp[24];
	int n = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < 24);
	while (n && dst < end - 1)
		*dst++ = tmp[--n];
	*dst = 0;
	return dst;
}

/* Zeroed memory straight from the kernel: pages are committed only when touched. */
void *rt_map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void rt_unmap(void *p, size_t bytes)
{
	munmap(p, bytes);
}

/* All n bytes to fd (through interruptions and short writes): 0, or -1. */
int rt_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	ssize_t k;

	while (n) {
		k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The runtime never prints into the program's output: problems go to RUNDIR/runtime.log. */
void rt_log(const char *msg)
{
	char path[600], line[512], *e;
	int fd, saved = errno;

	e = rt_stpcpy(path, rt_cfg.dir, path + sizeof(path));
	rt_stpcpy(e, "/runtime.log", path + sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0) {
		e = rt_stpcpy(line, "pid ", line + sizeof(line));
		e = rt_utoa(e, (uint64_t)getpid(), line + sizeof(line));
		e = rt_stpcpy(e, ": ", line + sizeof(line));
		e = rt_stpcpy(e, msg, line + sizeof(line) - 1);
		*e++ = '\n';
		if (write(fd, line, (size_t)(e - line)) < 0)
			(void)0;
		close(fd);
	}
	errno = saved;
}
