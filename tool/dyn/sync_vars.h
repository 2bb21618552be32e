/* SPDX-License-Identifier: MIT */
/*
 * Sync objects defined as data in one ELF file (resources.c): global and static variables
 * whose DWARF type is one of the pthread or semaphore types (or a class holding one alone:
 * std::mutex), named by their data symbols as profiles name them; data symbols by name.
 * Addresses are the file's (ELF vaddrs): add the module's load bias.
 */
#ifndef SONDE_DYN_SYNC_VARS_H
#define SONDE_DYN_SYNC_VARS_H

#include <stddef.h>
#include <stdint.h>

struct sync_var {
	char *name;
	int kind;       /* enum dyn_res_kind */
	uint64_t vaddr;
	uint64_t elem;  /* the object's size */
	uint32_t count; /* an array's elements; 0: not an array */
};

struct sync_file;

/* NULL when the file cannot be read as ELF. */
struct sync_file *sync_file_open(const char *path);
void sync_file_close(struct sync_file *f);
/* The variables of a sync type its DWARF describes (none without DWARF); *out malloc'd. */
size_t sync_file_vars(struct sync_file *f, struct sync_var **out);
void sync_vars_free(struct sync_var *v, size_t n);
/* A data symbol shown as name (sync_symbol_name: "lock.N" as "lock", C++ names demangled): 0
 * and its vaddr and size, or -1. */
int sync_file_symbol(struct sync_file *f, const char *name, uint64_t *vaddr, uint64_t *size);

#endif
