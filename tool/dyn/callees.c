/* SPDX-License-Identifier: MIT */
/* Names of what call instructions reach (callees.h): symbols and GOT slots, sorted by address. */
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "callees.h"
#include "util.h"

struct named {
	uint64_t addr;
	char *name;
};

struct table {
	struct named *v;
	size_t n, cap;
};

struct callees {
	struct table funcs, slots;
};

static void put(struct table *t, uint64_t addr, const char *name)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 1024;
		t->v = xrealloc(t->v, t->cap * sizeof(*t->v));
	}
	t->v[t->n++] = (struct named){ addr, xstrdup(name) };
}

static int by_addr(const void *a, const void *b)
{
	const struct named *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Whether some entry at addr is called name. */
static int has(const struct table *t, uint64_t addr, const char *name)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < t->n && t->v[lo].addr == addr; lo++)
		if (!strcmp(t->v[lo].name, name))
			return 1;
	return 0;
}

struct callees *callees_new(void)
{
	return xcalloc(1, sizeof(struct callees));
}

static void table_free(struct table *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->v[i].name);
	free(t->v);
}

void callees_free(struct callees *c)
{
	if (!c)
		return;
	table_free(&c->funcs);
	table_free(&c->slots);
	free(c);
}

void callees_add_func(struct callees *c, uint64_t addr, const char *name)
{
	put(&c->funcs, addr, name);
}

void callees_add_slot(struct callees *c, uint64_t addr, const char *name)
{
	put(&c->slots, addr, name);
}

static void add_relocs(struct callees *c, Elf *e, Elf_Scn *scn, const GElf_Shdr *sh,
		       uint64_t bias)
{
	Elf_Scn *symscn = elf_getscn(e, sh->sh_link);
	Elf_Data *d = elf_getdata(scn, NULL), *syms;
	GElf_Shdr symsh;
	GElf_Rela r;
	GElf_Sym sym;
	size_t i, n;

	if (!d || !symscn || !gelf_getshdr(symscn, &symsh) || !(syms = elf_getdata(symscn, NULL)))
		return;
	n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	for (i = 0; i < n && gelf_getrela(d, (int)i, &r); i++) {
		unsigned type = (unsigned)GELF_R_TYPE(r.r_info);
		const char *name;

		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
		    !gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym))
			continue;
		name = elf_strptr(e, symsh.sh_link, sym.st_name);
		if (name && *name)
			put(&c->slots, r.r_offset + bias, name);
	}
}

int callees_add_slots(struct callees *c, const char *file, uint64_t bias)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	Elf *e;

	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(fd);
		return -1;
	}
	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA)
			add_relocs(c, e, scn, &sh, bias);
	elf_end(e);
	close(fd);
	return 0;
}

void callees_seal(struct callees *c)
{
	qsort(c->funcs.v, c->funcs.n, sizeof(*c->funcs.v), by_addr);
	qsort(c->slots.v, c->slots.n, sizeof(*c->slots.v), by_addr);
}

/* `ff 15/25 disp32` after optional endbr64, bnd (f2) and notrack (3e) prefixes: the slot. */
static int slot_of(const uint8_t *b, size_t len, uint64_t addr, uint8_t modrm, uint64_t *slot)
{
	size_t k = 0;
	int32_t disp;

	if (len >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
		k = 4;
	while (k < len && (b[k] == 0xf2 || b[k] == 0x3e))
		k++;
	if (k + 6 > len || b[k] != 0xff || b[k + 1] != modrm)
		return 0;
	memcpy(&disp, b + k + 2, 4);
	*slot = addr + k + 6 + (uint64_t)(int64_t)disp;
	return 1;
}

int callees_reach(const struct callees *c, const struct patch_fn *fn, const uint8_t *code,
		  const struct patch_insn *in, patch_read_fn read, void *ctx, const char *name)
{
	uint64_t slot;
	uint8_t stub[16];

	if (in->kind == PI_CALL_IND)
		return slot_of(code + in->off, in->len, fn->addr + in->off, 0x15, &slot) &&
		       has(&c->slots, slot, name);
	if (in->kind != PI_CALL)
		return 0;
	if (has(&c->funcs, in->target, name))
		return 1;
	return read(ctx, in->target, stub, sizeof(stub)) == 0 &&
	       slot_of(stub, sizeof(stub), in->target, 0x25, &slot) && has(&c->slots, slot, name);
}
