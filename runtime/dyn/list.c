/* SPDX-License-Identifier: MIT */
/*
 * The LIST reply: the modules loaded now (path, load bias, span of executable segments, build
 * id) and the threads alive now. The tool reads the procedures from the ELF files itself.
 * Control thread only; no allocation (the thread list is read with getdents64).
 */
#include "dyn.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

struct list_ctx {
	struct sproto_buf *b;
};

/* dl_iterate_phdr callback: every module with executable code and a name. */
static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct list_ctx *c = arg;
	struct sproto_module m;
	int i;

	(void)size;
	memset(&m, 0, sizeof(m));
	m.lo = UINT64_MAX;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (info->dlpi_addr + ph->p_vaddr < m.lo)
			m.lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > m.hi)
			m.hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (!m.hi)
		return 0;
	m.bias = info->dlpi_addr;
	rt_module_path(m.path, sizeof(m.path), info->dlpi_name);
	if (!m.path[0] || strncmp(m.path, "linux-vdso", 10) == 0)
		return 0;
	m.build_id_len = rt_module_build_id(info, m.build_id, sizeof(m.build_id));
	sproto_list_add_module(c->b, &m);
	return 0;
}

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static uint32_t parse_tid(const char *s)
{
	uint32_t v = 0;

	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (uint32_t)(*s - '0');
	return *s ? 0 : v;
}

static void add_threads(struct sproto_buf *b)
{
	char buf[4096];
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long n;

	if (fd < 0)
		return;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		long off = 0;

		while (off < n) {
			const struct linux_dirent64 *d = (const void *)(buf + off);
			uint32_t tid = parse_tid(d->d_name);

			if (tid)
				sproto_list_add_tid(b, tid);
			off += d->d_reclen;
		}
	}
	close(fd);
}

size_t dyn_list_reply(void *buf, size_t cap)
{
	struct sproto_buf b;
	struct list_ctx c = { &b };

	sproto_list_begin(&b, buf, cap);
	dl_iterate_phdr(add_module, &c);
	add_threads(&b);
	return sproto_end(&b);
}
