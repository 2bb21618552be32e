/* Quick ELF checks on a target binary (libelf). */
#ifndef SONDE_ELFINFO_H
#define SONDE_ELFINFO_H

enum elf_kind { ELFK_NOT_ELF = -1, ELFK_ERROR = -2 };

struct elf_info {
	int is_elf64_x86_64;
	int is_static;			/* no PT_INTERP and no PT_DYNAMIC */
	int is_pie;			/* ET_DYN with PT_INTERP */
	int has_instrument_hooks;	/* references __cyg_profile_func_enter (.dynsym/.symtab) */
	int has_sonde_api;		/* references any symbol whose name starts with "sonde_" */
	int has_debug_info;		/* has a .debug_info section */
	int has_patchable_entry;	/* has a __patchable_function_entries section */
	int has_mpi;			/* references MPI_Init or MPI_Init_thread: an MPI program */
	unsigned char build_id[64];
	int build_id_len;		/* NT_GNU_BUILD_ID length, 0 if none */
};

/*
 * Inspect the file at 'path'. Returns 0 and fills *info for an ELF file, ELFK_NOT_ELF for a
 * non-ELF file (e.g. a shell script), ELFK_ERROR when unreadable (errno set).
 */
int elfinfo__read(const char *path, struct elf_info *info);

#endif /* SONDE_ELFINFO_H */
