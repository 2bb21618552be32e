/* SPDX-License-Identifier: MIT */
/*
 * Which procedure a call instruction reaches, by name (calls("malloc") in the metric language,
 * docs/mdl.md): a direct call to a function symbol of any loaded module; a call to a PLT stub
 * (`jmp *slot(%rip)`, after an endbr64 or a bnd prefix), or an indirect call through a GOT slot
 * (`call *slot(%rip)`, -fno-plt), named by the slot's JUMP_SLOT or GLOB_DAT relocation. Any
 * other indirect call reaches no name.
 */
#ifndef SONDE_DYN_CALLEES_H
#define SONDE_DYN_CALLEES_H

#include <stddef.h>
#include <stdint.h>

#include "../patch/patch.h"

struct callees;

struct callees *callees_new(void);
void callees_free(struct callees *c);
/* A function symbol (every alias) at its run-time address. */
void callees_add_func(struct callees *c, uint64_t addr, const char *name);
/* A GOT slot (run-time address) that holds the address of name. */
void callees_add_slot(struct callees *c, uint64_t addr, const char *name);
/* The GOT slots of the ELF file mapped with this load bias; -1 when it cannot be read. */
int callees_add_slots(struct callees *c, const char *file, uint64_t bias);
/* Call sorting: after the last add, before the first lookup. */
void callees_seal(struct callees *c);
/*
 * Whether the call instruction in (analysed in fn, whose bytes are code) reaches a procedure
 * named name; read(ctx, ...) reads the target's memory (a PLT stub).
 */
int callees_reach(const struct callees *c, const struct patch_fn *fn, const uint8_t *code,
		  const struct patch_insn *in, patch_read_fn read, void *ctx, const char *name);

#endif
