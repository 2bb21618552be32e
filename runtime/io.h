/* SPDX-License-Identifier: MIT */
/*
 * I/O measurement (`sonde run --io`): the wrappers (io_wrap.c) time each call and hand it to
 * io.c, which keeps the fd -> file table, the file table, and per-thread statistics per
 * (file, phase). docs/runtime.md, "I/O"; the FILE record: docs/format-profile.md.
 */
#ifndef SONDE_RT_IO_H
#define SONDE_RT_IO_H

#include "rt.h"

enum io_op { IO_READ, IO_WRITE, IO_OPEN, IO_CLOSE, IO_SYNC, IO_OPS };

extern int rt_io_on;
extern RT_TLS int rt_io_depth; /* inside a stdio wrapper: what it calls is not counted again */

/* Whether a wrapper passes the call straight through, unmeasured. */
static inline int io_skip(void)
{
	return !rt_io_on || rt_busy || rt_io_depth;
}

/* A call on fd took `ticks` and returned `ret` (bytes, or < 0 for an error). */
void rt_io_count(int fd, enum io_op op, int64_t ret, uint64_t ticks);
/* The same for a file already known by its id. */
void rt_io_count_file(uint32_t fid, enum io_op op, int64_t ret, uint64_t ticks);
/* The file id of a path as the program named it, relative to dirfd (AT_FDCWD: the cwd). */
uint32_t rt_io_path_file(int dirfd, const char *path);
/* An open succeeded: fd now names the file `fid`. */
void rt_io_set_fd(int fd, uint32_t fid);
/* fd was closed (or replaced by dup2): forget what it named. */
void rt_io_forget_fd(int fd);
/* newfd is a duplicate of oldfd. */
void rt_io_dup_fd(int oldfd, int newfd);
/* The file a descriptor names, as /proc/self/fd says (not from the table). */
uint32_t rt_io_fd_name(int fd);
/* The file a descriptor names: from the table, else from /proc/self/fd. */
uint32_t rt_io_fd_file(int fd);

#endif
