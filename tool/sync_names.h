/* SPDX-License-Identifier: MIT */
/*
 * Names of synchronization objects (tool side): a global or static variable from the ELF symbol
 * table of the module holding the address ("hot_lock", "locks[3]", "lock.0" shown as "lock",
 * C++ names demangled),
 * else the call site of the object's initialisation or first use (function, file:line from
 * DWARF), else the address.
 */
#ifndef SONDE_SYNC_NAMES_H
#define SONDE_SYNC_NAMES_H

#include <stddef.h>
#include <stdint.h>

struct sync_names;

/* A data symbol's name as the source spells it, into out: demangled ("_ZL3hot": "hot",
 * "_ZN3app4lockE": "app::lock", "_ZZ1fiE4lock": "f(int)::lock"), a C function's static
 * "lock.N" as "lock". The watch resources (tool/dyn/sync_vars.c) name variables so too. */
void sync_symbol_name(const char *sym, char *out, size_t cap);

struct sync_names *sync_names_new(void);
void sync_names_free(struct sync_names *sn);

/* The variable holding vaddr in the module at path, as "name", "name[i]" or "name+off"
 * (elem: the object's size, for indexing arrays of it); 0, or -1 when there is none. */
int sync_names_data(struct sync_names *sn, const char *path, uint64_t vaddr, uint64_t elem,
		    char *out, size_t cap);
/* "function (file:line)" of the call whose return address is vaddr; 0, or -1. */
int sync_names_site(struct sync_names *sn, const char *path, uint64_t vaddr, char *out,
		    size_t cap);

#endif
