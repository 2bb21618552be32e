/*
 * Quick ELF checks on a target binary: what kind of executable it is, whether it carries debug
 * info, instrumentation hooks or sonde API references, and its build-id.
 */
#include "elfinfo.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Record the interesting symbol names of one .symtab/.dynsym section. */
static void elfinfo__scan_syms(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct elf_info *info)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, n;
	const char *name;
	GElf_Sym sym;

	if (!data || !sh->sh_entsize)
		return;
	n = sh->sh_size / sh->sh_entsize;
	for (i = 1; i < n; i++) {
		if (!gelf_getsym(data, (int)i, &sym))
			break;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name)
			continue;
		if (!strcmp(name, "__cyg_profile_func_enter"))
			info->has_instrument_hooks = 1;
		else if (!strncmp(name, "sonde_", 6))
			info->has_sonde_api = 1;
		else if (!strcmp(name, "MPI_Init") || !strcmp(name, "MPI_Init_thread"))
			info->has_mpi = 1;
	}
}

/* Walk the section headers: debug info, patchable entries and the symbol tables. */
static void elfinfo__scan_sections(Elf *elf, struct elf_info *info)
{
	Elf_Scn *scn = NULL;
	const char *name;
	GElf_Shdr sh;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM)
			elfinfo__scan_syms(elf, scn, &sh, info);
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info"))
			info->has_debug_info = 1;
		else if (!strcmp(name, "__patchable_function_entries"))
			info->has_patchable_entry = 1;
	}
}

/* Classify static/PIE from the program headers. */
static void elfinfo__scan_phdrs(Elf *elf, const GElf_Ehdr *eh, struct elf_info *info)
{
	bool interp = false, dynamic = false;
	size_t i, n;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &n))
		n = 0;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			continue;
		interp |= ph.p_type == PT_INTERP;
		dynamic |= ph.p_type == PT_DYNAMIC;
	}
	info->is_static = !interp && !dynamic;
	info->is_pie = eh->e_type == ET_DYN && interp;
}

/* Fill *info from an ELF handle already known to be ELF_K_ELF. */
static int elfinfo__fill(Elf *elf, struct elf_info *info)
{
	const void *id;
	ssize_t len;
	GElf_Ehdr eh;

	if (!gelf_getehdr(elf, &eh)) {
		errno = ENOEXEC;
		return ELFK_ERROR;
	}
	info->is_elf64_x86_64 = eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_machine == EM_X86_64;
	elfinfo__scan_phdrs(elf, &eh, info);
	elfinfo__scan_sections(elf, info);
	len = dwelf_elf_gnu_build_id(elf, &id);
	if (len > 0 && (size_t)len <= sizeof(info->build_id)) {
		memcpy(info->build_id, id, (size_t)len);
		info->build_id_len = (int)len;
	}
	return 0;
}

int elfinfo__read(const char *path, struct elf_info *info)
{
	int fd, ret = ELFK_ERROR, err;
	struct stat stbuf;
	Elf *elf;

	memset(info, 0, sizeof(*info));
	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOSYS;
		return ELFK_ERROR;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return ELFK_ERROR;
	if (fstat(fd, &stbuf))
		goto out_close;
	if (!S_ISREG(stbuf.st_mode)) {
		errno = S_ISDIR(stbuf.st_mode) ? EISDIR : EINVAL;
		goto out_close;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		errno = EIO;
		goto out_close;
	}
	ret = elf_kind(elf) == ELF_K_ELF ? elfinfo__fill(elf, info) : ELFK_NOT_ELF;
	elf_end(elf);
out_close:
	err = errno;
	close(fd);
	errno = err;
	return ret;
}
