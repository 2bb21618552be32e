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

static void note_build_id(struct sproto_module *m, const struct dl_phdr_info *info)
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;

		if (ph->p_type != PT_NOTE)
			continue;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
			const uint8_t *desc = p + sizeof(*nh) + ((nh->n_namesz + 3) & ~3u);

			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    desc + nh->n_descsz <= end && nh->n_descsz <= SPROTO_MAX_BUILD_ID) {
				memcpy(m->build_id, desc, nh->n_descsz);
				m->build_id_len = (uint8_t)nh->n_descsz;
				return;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
}

static void module_path(struct sproto_module *m, const char *name)
{
	ssize_t n;

	if (name && name[0]) {
		rt_stpcpy(m->path, name, m->path + sizeof(m->path));
		return;
	}
	n = readlink("/proc/self/exe", m->path, sizeof(m->path) - 1);
	m->path[n > 0 ? n : 0] = 0;
}

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
	module_path(&m, info->dlpi_name);
	if (!m.path[0] || strncmp(m.path, "linux-vdso", 10) == 0)
		return 0;
	note_build_id(&m, info);
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
