/* SPDX-License-Identifier: MIT */
/*
 * The interposed I/O calls of `sonde run --io` (docs/runtime.md, "I/O"). Each wrapper calls
 * the real function (dlsym(RTLD_NEXT), looked up on first use) between two clock reads and
 * returns exactly what it returned, with errno as it left it: a partial read or write, EOF,
 * EINTR and every error reach the program unchanged. Without --io, or inside the runtime, a
 * wrapper is one test and a call.
 *
 * stdio: glibc's fwrite, fprintf... reach write() inside libc, not through the PLT, so the
 * write wrapper never sees them. The stdio calls that move data a buffer at a time are wrapped
 * themselves and counted on their stream's descriptor: their time is that of the call
 * (buffering included, and the write or read it did when the buffer filled), their bytes those
 * the program handed over or received. Per-character calls (putc, getc, ...) and scanf are not
 * wrapped: timing them would cost several times the call.
 */
#include "io.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* The real function: looked up once (a race only looks it up twice). */
#define REAL(fn)                                                                                   \
	({                                                                                         \
		if (unlikely(!real_##fn))                                                          \
			real_##fn = (__typeof__(real_##fn))dlsym(RTLD_NEXT, #fn);                  \
		real_##fn;                                                                         \
	})

/* Run `call` timed; count it on descriptor `fd` as `op` with result `res` (bytes or < 0). */
#define TIMED(fd, op, ret, call, res)                                                              \
	do {                                                                                       \
		uint64_t t0_ = rt_now();                                                           \
		ret = call;                                                                        \
		rt_io_count(fd, op, res, rt_now() - t0_);                                          \
	} while (0)

/*
 * The common shape: type name(int fd, ...), timed and counted on descriptor fd as op with its
 * result (bytes moved, 0, or -1). PARAMS and ARGS are the parenthesised parameter and argument
 * lists. IO_CALL: the ssize_t calls that move data.
 */
#define IO_TYPED(type, name, op, params, args)                                                     \
	static type(*real_##name) params;                                                          \
	RT_EXPORT type name params                                                                 \
	{                                                                                          \
		type r;                                                                            \
                                                                                                   \
		if (io_skip())                                                                     \
			return REAL(name) args;                                                    \
		TIMED(fd, op, r, REAL(name) args, r);                                              \
		return r;                                                                          \
	}

#define IO_CALL(name, op, params, args) IO_TYPED(ssize_t, name, op, params, args)

/* ---- read and write ---- */

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);

IO_CALL(read, IO_READ, (int fd, void *buf, size_t n), (fd, buf, n))
IO_CALL(__read_chk, IO_READ, (int fd, void *buf, size_t n, size_t buflen), (fd, buf, n, buflen))
IO_CALL(write, IO_WRITE, (int fd, const void *buf, size_t n), (fd, buf, n))
IO_CALL(pread, IO_READ, (int fd, void *buf, size_t n, off_t off), (fd, buf, n, off))
IO_CALL(pread64, IO_READ, (int fd, void *buf, size_t n, off64_t off), (fd, buf, n, off))
IO_CALL(pwrite, IO_WRITE, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off))
IO_CALL(pwrite64, IO_WRITE, (int fd, const void *buf, size_t n, off64_t off), (fd, buf, n, off))
IO_CALL(readv, IO_READ, (int fd, const struct iovec *iov, int n), (fd, iov, n))
IO_CALL(writev, IO_WRITE, (int fd, const struct iovec *iov, int n), (fd, iov, n))
IO_CALL(preadv, IO_READ, (int fd, const struct iovec *iov, int n, off_t off), (fd, iov, n, off))
IO_CALL(pwritev, IO_WRITE, (int fd, const struct iovec *iov, int n, off_t off),
	(fd, iov, n, off))
IO_CALL(preadv64, IO_READ, (int fd, const struct iovec *iov, int n, off64_t off),
	(fd, iov, n, off))
IO_CALL(pwritev64, IO_WRITE, (int fd, const struct iovec *iov, int n, off64_t off),
	(fd, iov, n, off))

/* ---- sockets: data moved by send and recv count as writes and reads on the socket ---- */

IO_CALL(send, IO_WRITE, (int fd, const void *buf, size_t n, int flags), (fd, buf, n, flags))
IO_CALL(recv, IO_READ, (int fd, void *buf, size_t n, int flags), (fd, buf, n, flags))
IO_CALL(sendto, IO_WRITE,
	(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to, socklen_t tolen),
	(fd, buf, n, flags, to, tolen))
IO_CALL(recvfrom, IO_READ,
	(int fd, void *buf, size_t n, int flags, struct sockaddr *from, socklen_t *fromlen),
	(fd, buf, n, flags, from, fromlen))
IO_CALL(sendmsg, IO_WRITE, (int fd, const struct msghdr *msg, int flags), (fd, msg, flags))
IO_CALL(recvmsg, IO_READ, (int fd, struct msghdr *msg, int flags), (fd, msg, flags))

/* ---- opening, closing, syncing ---- */

/* Whether open's third argument is there (glibc's __OPEN_NEEDS_MODE). */
#define NEEDS_MODE(flags) (((flags) & O_CREAT) || ((flags) & O_TMPFILE) == O_TMPFILE)

static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_creat)(const char *, mode_t);
static int (*real_creat64)(const char *, mode_t);
static int (*real___open_2)(const char *, int);
static int (*real___open64_2)(const char *, int);
static int (*real___openat_2)(int, const char *, int);
static int (*real___openat64_2)(int, const char *, int);
static int (*real_close)(int);
static int (*real_dup)(int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);

/*
 * After an open: the new descriptor names the file — by the absolute path the program gave, or
 * for a relative one as /proc/self/fd names it; a failed open is counted on the path as given
 * (made absolute with the working directory).
 */
static void opened(int dirfd, const char *path, int fd, uint64_t ticks)
{
	int saved = errno;
	uint32_t fid;

	rt_io_depth++;
	if (fd < 0 && (!path || saved == EFAULT)) /* a name the kernel could not read: neither can we */
		fid = rt_io_fd_file(-1);
	else
		fid = fd >= 0 && path[0] != '/' ? rt_io_fd_name(fd) : rt_io_path_file(dirfd, path);
	if (fd >= 0)
		rt_io_set_fd(fd, fid);
	rt_io_count_file(fid, IO_OPEN, fd, ticks);
	rt_io_depth--;
	errno = saved;
}

#define OPEN_TIMED(dirfd, path, ret, call)                                                         \
	do {                                                                                       \
		uint64_t t0_;                                                                      \
		if (io_skip())                                                                     \
			return call;                                                               \
		t0_ = rt_now();                                                                    \
		ret = call;                                                                        \
		opened(dirfd, path, ret, rt_now() - t0_);                                          \
		return ret;                                                                        \
	} while (0)

static mode_t mode_arg(int flags, va_list ap)
{
	return NEEDS_MODE(flags) ? va_arg(ap, mode_t) : 0;
}

RT_EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int fd;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	OPEN_TIMED(AT_FDCWD, path, fd, REAL(open)(path, flags, mode));
}

RT_EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int fd;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	OPEN_TIMED(AT_FDCWD, path, fd, REAL(open64)(path, flags, mode));
}

RT_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int fd;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	OPEN_TIMED(dirfd, path, fd, REAL(openat)(dirfd, path, flags, mode));
}

RT_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int fd;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	OPEN_TIMED(dirfd, path, fd, REAL(openat64)(dirfd, path, flags, mode));
}

RT_EXPORT int creat(const char *path, mode_t mode)
{
	int fd;

	OPEN_TIMED(AT_FDCWD, path, fd, REAL(creat)(path, mode));
}

RT_EXPORT int creat64(const char *path, mode_t mode)
{
	int fd;

	OPEN_TIMED(AT_FDCWD, path, fd, REAL(creat64)(path, mode));
}

/* The _FORTIFY_SOURCE entry points of open without a mode. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

RT_EXPORT int __open_2(const char *path, int flags)
{
	int fd;

	OPEN_TIMED(AT_FDCWD, path, fd, REAL(__open_2)(path, flags));
}

RT_EXPORT int __open64_2(const char *path, int flags)
{
	int fd;

	OPEN_TIMED(AT_FDCWD, path, fd, REAL(__open64_2)(path, flags));
}

RT_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	int fd;

	OPEN_TIMED(dirfd, path, fd, REAL(__openat_2)(dirfd, path, flags));
}

RT_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	int fd;

	OPEN_TIMED(dirfd, path, fd, REAL(__openat64_2)(dirfd, path, flags));
}

/*
 * close: counted on the file the descriptor named, which is then forgotten — even inside the
 * runtime or without --io (the table must not outlive the descriptor). On Linux the descriptor
 * is gone after close whatever it returns, except for EBADF.
 */
RT_EXPORT int close(int fd)
{
	uint64_t t0 = 0;
	uint32_t fid = 0;
	int r, saved, measure = !io_skip();

	if (measure) {
		rt_io_depth++;
		fid = rt_io_fd_file(fd);
		rt_io_depth--;
		t0 = rt_now();
	}
	r = REAL(close)(fd);
	saved = errno;
	if (r == 0 || saved != EBADF)
		rt_io_forget_fd(fd);
	if (measure)
		rt_io_count_file(fid, IO_CLOSE, r, rt_now() - t0);
	errno = saved;
	return r;
}

IO_TYPED(int, fsync, IO_SYNC, (int fd), (fd))
IO_TYPED(int, fdatasync, IO_SYNC, (int fd), (fd))

/* Duplicates name what the original names; not counted as calls. */
RT_EXPORT int dup(int fd)
{
	int r = REAL(dup)(fd);

	if (r >= 0)
		rt_io_dup_fd(fd, r);
	return r;
}

RT_EXPORT int dup2(int fd, int fd2)
{
	int r = REAL(dup2)(fd, fd2);

	if (r >= 0 && fd != fd2)
		rt_io_dup_fd(fd, fd2);
	return r;
}

RT_EXPORT int dup3(int fd, int fd2, int flags)
{
	int r = REAL(dup3)(fd, fd2, flags);

	if (r >= 0)
		rt_io_dup_fd(fd, fd2);
	return r;
}

/* ---- stdio ---- */

static FILE *(*real_fopen)(const char *, const char *);
static FILE *(*real_fopen64)(const char *, const char *);
static int (*real_fclose)(FILE *);
static size_t (*real_fread)(void *, size_t, size_t, FILE *);
static size_t (*real_fwrite)(const void *, size_t, size_t, FILE *);
static char *(*real_fgets)(char *, int, FILE *);
static int (*real_fputs)(const char *, FILE *);
static int (*real_puts)(const char *);
static int (*real_vfprintf)(FILE *, const char *, va_list);
static int (*real___vfprintf_chk)(FILE *, int, const char *, va_list);
static int (*real_fflush)(FILE *);

/* A stream's descriptor, or -1 (a memory stream, fmemopen: fileno sets errno then). */
static int stream_fd(FILE *fp)
{
	int saved = errno, fd = fp ? fileno(fp) : -1;

	errno = saved;
	return fd;
}

/* A stdio call on fp: counted as if on its descriptor; not counted again inside. */
#define STDIO_TIMED(fp, op, ret, call, res)                                                        \
	do {                                                                                       \
		uint64_t t0_;                                                                      \
		int fd_ = stream_fd(fp);                                                           \
		if (fd_ < 0)                                                                       \
			return call;                                                               \
		rt_io_depth++;                                                                     \
		t0_ = rt_now();                                                                    \
		ret = call;                                                                        \
		rt_io_depth--;                                                                     \
		rt_io_count(fd_, op, res, rt_now() - t0_);                                         \
	} while (0)

static FILE *stdio_open(FILE *(*real)(const char *, const char *), const char *path,
			const char *mode)
{
	uint64_t t0;
	FILE *fp;

	if (io_skip())
		return real(path, mode);
	rt_io_depth++;
	t0 = rt_now();
	fp = real(path, mode);
	rt_io_depth--;
	opened(AT_FDCWD, path, stream_fd(fp), rt_now() - t0);
	return fp;
}

RT_EXPORT FILE *fopen(const char *path, const char *mode)
{
	return stdio_open(REAL(fopen), path, mode);
}

RT_EXPORT FILE *fopen64(const char *path, const char *mode)
{
	return stdio_open(REAL(fopen64), path, mode);
}

RT_EXPORT int fclose(FILE *fp)
{
	uint64_t t0 = 0;
	uint32_t fid = 0;
	int fd = stream_fd(fp), r, saved, measure = !io_skip() && fd >= 0;

	if (measure) {
		rt_io_depth++;
		fid = rt_io_fd_file(fd);
		t0 = rt_now();
	}
	r = REAL(fclose)(fp);
	saved = errno;
	if (fd >= 0)
		rt_io_forget_fd(fd);
	if (measure) {
		rt_io_count_file(fid, IO_CLOSE, r, rt_now() - t0);
		rt_io_depth--;
	}
	errno = saved;
	return r;
}

RT_EXPORT size_t fread(void *p, size_t size, size_t n, FILE *fp)
{
	size_t r;

	if (io_skip())
		return REAL(fread)(p, size, n, fp);
	STDIO_TIMED(fp, IO_READ, r, REAL(fread)(p, size, n, fp),
		    ferror(fp) && r == 0 ? -1 : (int64_t)(r * size));
	return r;
}

RT_EXPORT size_t fwrite(const void *p, size_t size, size_t n, FILE *fp)
{
	size_t r;

	if (io_skip())
		return REAL(fwrite)(p, size, n, fp);
	STDIO_TIMED(fp, IO_WRITE, r, REAL(fwrite)(p, size, n, fp),
		    r < n && ferror(fp) ? -1 : (int64_t)(r * size));
	return r;
}

RT_EXPORT char *fgets(char *s, int n, FILE *fp)
{
	char *r;

	if (io_skip())
		return REAL(fgets)(s, n, fp);
	STDIO_TIMED(fp, IO_READ, r, REAL(fgets)(s, n, fp),
		    r ? (int64_t)strlen(r) : ferror(fp) ? -1 : 0);
	return r;
}

RT_EXPORT int fputs(const char *s, FILE *fp)
{
	int r;

	if (io_skip())
		return REAL(fputs)(s, fp);
	STDIO_TIMED(fp, IO_WRITE, r, REAL(fputs)(s, fp), r < 0 ? -1 : (int64_t)strlen(s));
	return r;
}

RT_EXPORT int puts(const char *s)
{
	int r;

	if (io_skip())
		return REAL(puts)(s);
	STDIO_TIMED(stdout, IO_WRITE, r, REAL(puts)(s), r < 0 ? -1 : (int64_t)strlen(s) + 1);
	return r;
}

RT_EXPORT int vfprintf(FILE *fp, const char *fmt, va_list ap)
{
	int r;

	if (io_skip())
		return REAL(vfprintf)(fp, fmt, ap);
	STDIO_TIMED(fp, IO_WRITE, r, REAL(vfprintf)(fp, fmt, ap), r);
	return r;
}

RT_EXPORT int fprintf(FILE *fp, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vfprintf(fp, fmt, ap);
	va_end(ap);
	return r;
}

RT_EXPORT int vprintf(const char *fmt, va_list ap)
{
	return vfprintf(stdout, fmt, ap);
}

RT_EXPORT int printf(const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vfprintf(stdout, fmt, ap);
	va_end(ap);
	return r;
}

/* _FORTIFY_SOURCE's printf family (flag > 0 adds its checks). */
int __vfprintf_chk(FILE *fp, int flag, const char *fmt, va_list ap);
int __fprintf_chk(FILE *fp, int flag, const char *fmt, ...);
int __printf_chk(int flag, const char *fmt, ...);
int __vprintf_chk(int flag, const char *fmt, va_list ap);

RT_EXPORT int __vfprintf_chk(FILE *fp, int flag, const char *fmt, va_list ap)
{
	int r;

	if (io_skip())
		return REAL(__vfprintf_chk)(fp, flag, fmt, ap);
	STDIO_TIMED(fp, IO_WRITE, r, REAL(__vfprintf_chk)(fp, flag, fmt, ap), r);
	return r;
}

RT_EXPORT int __fprintf_chk(FILE *fp, int flag, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = __vfprintf_chk(fp, flag, fmt, ap);
	va_end(ap);
	return r;
}

RT_EXPORT int __printf_chk(int flag, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = __vfprintf_chk(stdout, flag, fmt, ap);
	va_end(ap);
	return r;
}

RT_EXPORT int __vprintf_chk(int flag, const char *fmt, va_list ap)
{
	return __vfprintf_chk(stdout, flag, fmt, ap);
}

/* fflush(NULL) flushes every stream: passed through uncounted. */
RT_EXPORT int fflush(FILE *fp)
{
	int r;

	if (io_skip() || !fp)
		return REAL(fflush)(fp);
	STDIO_TIMED(fp, IO_SYNC, r, REAL(fflush)(fp), r);
	return r;
}
