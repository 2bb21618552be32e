/* SPDX-License-Identifier: MIT */
/*
 * What the runtime reads of a loaded module (dl_iterate_phdr): its path and its GNU build id.
 * Used for the profile's module table (func.c) and the control protocol's LIST (dyn/list.c).
 */
#include "rt.h"

#include <link.h>
#include <string.h>
#include <unistd.h>

/* GNU build-id of a loaded module, read from its PT_NOTE segments in memory: its length. */
uint8_t rt_module_build_id(const struct dl_phdr_info *info, uint8_t *out, size_t cap)
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
			    desc + nh->n_descsz <= end && nh->n_descsz <= cap) {
				memcpy(out, desc, nh->n_descsz);
				return (uint8_t)nh->n_descsz;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 0;
}

/* A module's path: the loader's name, or the executable's (which the loader leaves empty). */
void rt_module_path(char *out, size_t cap, const char *name)
{
	ssize_t n;

	if (name && name[0]) {
		rt_stpcpy(out, name, out + cap);
		return;
	}
	n = readlink("/proc/self/exe", out, cap - 1);
	out[n > 0 ? n : 0] = 0;
}
