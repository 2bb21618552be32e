/* SPDX-License-Identifier: MIT */
/*
 * Sync variables from DWARF and data symbols from the ELF symbol tables (sync_vars.h). The file
 * is opened in an offline Dwfl at base 0, so addresses are its vaddrs (separate debug info is
 * found by build id, as sync_names.c does).
 */
#include "sync_vars.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#include "resources.h"
#include "sync_names.h"
#include "util.h"

#define MAX_DEPTH 64 /* DIE nesting walked (functions' scopes hold their statics) */

struct sync_file {
	Dwfl *dwfl;
	Dwfl_Module *mod;
};

struct scan {
	Dwfl_Module *mod;
	struct sync_var *v;
	size_t n, cap;
};

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct sync_file *sync_file_open(const char *path)
{
	struct sync_file *f = xcalloc(1, sizeof(*f));
	const char *slash = strrchr(path, '/');
	GElf_Addr bias;

	f->dwfl = dwfl_begin(&callbacks);
	if (f->dwfl)
		f->mod = dwfl_report_elf(f->dwfl, slash ? slash + 1 : path, path, -1, 0, true);
	if (!f->dwfl || dwfl_report_end(f->dwfl, NULL, NULL) || !f->mod ||
	    !dwfl_module_getelf(f->mod, &bias)) {
		sync_file_close(f);
		return NULL;
	}
	return f;
}

void sync_file_close(struct sync_file *f)
{
	if (!f)
		return;
	if (f->dwfl)
		dwfl_end(f->dwfl);
	free(f);
}

void sync_vars_free(struct sync_var *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

/* ---- DWARF: the type of a variable ---- */

static int type_of(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute a;

	return dwarf_attr_integrate(die, DW_AT_type, &a) && dwarf_formref_die(&a, out) ? 0 : -1;
}

static int kind_of_typedef(const char *name)
{
	static const char *const names[DYN_RES_SYNC_KINDS] = {
		"pthread_mutex_t", "pthread_rwlock_t", "pthread_cond_t", "pthread_barrier_t", "sem_t"
	};
	int k;

	for (k = 0; name && k < DYN_RES_SYNC_KINDS; k++)
		if (!strcmp(name, names[k]))
			return k;
	return -1;
}

/* The member or base class at offset 0 of a struct or class (its first data), or -1. */
static int first_data(Dwarf_Die *type, Dwarf_Die *out)
{
	Dwarf_Attribute a;
	Dwarf_Word at;
	Dwarf_Die c;

	if (dwarf_child(type, &c) != 0)
		return -1;
	do {
		if ((dwarf_tag(&c) != DW_TAG_member && dwarf_tag(&c) != DW_TAG_inheritance) ||
		    dwarf_hasattr(&c, DW_AT_declaration)) /* a static member */
			continue;
		if (dwarf_attr(&c, DW_AT_data_member_location, &a) &&
		    (dwarf_formudata(&a, &at) || at != 0))
			return -1;
		*out = c;
		return 0;
	} while (dwarf_siblingof(&c, &c) == 0);
	return -1;
}

/*
 * The sync kind of a type, through qualifiers and typedefs (typedef pthread_mutex_t lock_t),
 * and through a struct or class that is nothing but its first member or base: C++'s
 * std::mutex, std::condition_variable and std::shared_mutex hold the pthread object alone.
 */
static int sync_kind(Dwarf_Die *type)
{
	Dwarf_Die t = *type, inner;
	Dwarf_Word outer_size, inner_size;
	int i, k;

	for (i = 0; i < 16; i++) {
		switch (dwarf_tag(&t)) {
		case DW_TAG_typedef:
			if ((k = kind_of_typedef(dwarf_diename(&t))) >= 0)
				return k;
			break;
		case DW_TAG_const_type:
		case DW_TAG_volatile_type:
			break;
		case DW_TAG_structure_type:
		case DW_TAG_class_type:
			if (first_data(&t, &inner) || type_of(&inner, &inner) ||
			    dwarf_aggregate_size(&t, &outer_size) ||
			    dwarf_aggregate_size(&inner, &inner_size) || inner_size != outer_size)
				return -1;
			t = inner;
			continue;
		default:
			return -1;
		}
		if (type_of(&t, &t))
			return -1;
	}
	return -1;
}

/* An array's element count: its (single) dimension. 0 when unknown or multidimensional. */
static uint32_t array_count(Dwarf_Die *array)
{
	Dwarf_Die sub;
	Dwarf_Attribute a;
	Dwarf_Word v;
	int subs = 0;
	uint32_t n = 0;

	if (dwarf_child(array, &sub) != 0)
		return 0;
	do {
		if (dwarf_tag(&sub) != DW_TAG_subrange_type)
			continue;
		subs++;
		if (dwarf_attr(&sub, DW_AT_count, &a) && dwarf_formudata(&a, &v) == 0)
			n = (uint32_t)v;
		else if (dwarf_attr(&sub, DW_AT_upper_bound, &a) && dwarf_formudata(&a, &v) == 0)
			n = (uint32_t)v + 1;
	} while (dwarf_siblingof(&sub, &sub) == 0);
	return subs == 1 ? n : 0;
}

/* A variable with a static address (DW_OP_addr), or -1. */
static int static_addr(Dwarf_Die *var, Dwarf_Addr dbias, uint64_t *addr)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t nops;

	if (!dwarf_attr_integrate(var, DW_AT_location, &a) || dwarf_getlocation(&a, &ops, &nops) ||
	    nops != 1 || ops[0].atom != DW_OP_addr)
		return -1;
	*addr = ops[0].number + dbias;
	return 0;
}

/*
 * A variable's name: its data symbol's, as sync_names.c shows it in profiles ("app::lock",
 * "f(int)::lock", C's "lock.0" as "lock"), else its DWARF name (a definition outside its
 * namespace's DIE has its name through DW_AT_specification).
 */
static char *var_name(Dwfl_Module *mod, Dwarf_Die *var, uint64_t addr)
{
	GElf_Off off = 1;
	GElf_Sym sym;
	Dwarf_Attribute a;
	const char *s = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
	char buf[512];

	if (s && off == 0 && GELF_ST_TYPE(sym.st_info) == STT_OBJECT) {
		sync_symbol_name(s, buf, sizeof(buf));
		return xstrdup(buf);
	}
	s = dwarf_attr_integrate(var, DW_AT_name, &a) ? dwarf_formstring(&a) : NULL;
	return s ? xstrdup(s) : NULL;
}

static void take_var(struct scan *s, Dwarf_Die *var, Dwarf_Addr dbias)
{
	Dwarf_Die type, elem;
	Dwarf_Word size;
	char *name;
	uint64_t addr;
	uint32_t count = 0;
	int kind;

	if (static_addr(var, dbias, &addr) || type_of(var, &type))
		return;
	while (dwarf_tag(&type) == DW_TAG_const_type || dwarf_tag(&type) == DW_TAG_volatile_type)
		if (type_of(&type, &type))
			return;
	if (dwarf_tag(&type) == DW_TAG_array_type) {
		count = array_count(&type);
		if (!count || type_of(&type, &elem))
			return;
		type = elem;
	}
	if ((kind = sync_kind(&type)) < 0 || dwarf_aggregate_size(&type, &size) || !size ||
	    !(name = var_name(s->mod, var, addr)))
		return;
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n++] = (struct sync_var){ name, kind, addr, size, count };
}

/* Variables anywhere in a unit: at its top, in functions (statics), in namespaces. */
static void walk(struct scan *s, Dwarf_Die *die, Dwarf_Addr dbias, int depth)
{
	Dwarf_Die child;

	if (depth > MAX_DEPTH || dwarf_child(die, &child) != 0)
		return;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_variable:
			take_var(s, &child, dbias);
			break;
		case DW_TAG_subprogram:
		case DW_TAG_lexical_block:
		case DW_TAG_namespace:
		case DW_TAG_inlined_subroutine:
			walk(s, &child, dbias, depth + 1);
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

size_t sync_file_vars(struct sync_file *f, struct sync_var **out)
{
	struct scan s = { f->mod, NULL, 0, 0 };
	Dwarf_Die *cu = NULL;
	Dwarf_Addr dbias;

	while ((cu = dwfl_module_nextcu(f->mod, cu, &dbias)))
		walk(&s, cu, dbias, 0);
	*out = s.v;
	return s.n;
}

/* ---- ELF: data symbols ---- */

int sync_file_symbol(struct sync_file *f, const char *name, uint64_t *vaddr, uint64_t *size)
{
	int i, n = dwfl_module_getsymtab(f->mod);
	GElf_Sym sym;
	GElf_Addr addr;
	const char *s;
	char shown[512];

	for (i = 1; i < n; i++) {
		s = dwfl_module_getsym_info(f->mod, i, &sym, &addr, NULL, NULL, NULL);
		if (!s || GELF_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_shndx == SHN_UNDEF)
			continue;
		sync_symbol_name(s, shown, sizeof(shown));
		if (strcmp(shown, name))
			continue;
		*vaddr = addr;
		*size = sym.st_size;
		return 0;
	}
	return -1;
}
