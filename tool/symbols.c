/*
 * Tool-side address -> symbol resolution. Each ELF file gets its own offline Dwfl reported at
 * base 0, so dwfl addresses are the file's vaddrs (+ bias, 0 for ET_EXEC/ET_DYN). Results are
 * cached per module by vaddr; the cache owns demangled/fallback names, all other strings point
 * into libdwfl data that lives until dwfl_end().
 */
#include "symbols.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

/* One cached resolution; 'owned' is the heap string (if any) that info.func points to. */
struct sym_slot {
	uint64_t vaddr;
	struct sym_info info;
	char *owned;
	int ret;
	bool used;
};

/* An ELF file opened once; mod == NULL remembers that it could not be opened. */
struct module {
	struct module *next;
	char *path;
	const char *base;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	struct sym_slot *slots;
	size_t nr_slots, nr_used;
};

struct symtab {
	struct module *modules;		/* most recently used first */
};

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* Allocate an empty table; modules are opened lazily on first use. */
struct symtab *symtab__new(void)
{
	return calloc(1, sizeof(struct symtab));
}

/* Release a module, its cache and every string the cache owns. */
static void module__delete(struct module *m)
{
	size_t i;

	for (i = 0; i < m->nr_slots; i++)
		free(m->slots[i].owned);
	free(m->slots);
	if (m->dwfl)
		dwfl_end(m->dwfl);
	free(m->path);
	free(m);
}

/* Free all modules; strings handed out by symtab__resolve die here. */
void symtab__delete(struct symtab *st)
{
	struct module *m;

	if (!st)
		return;
	while ((m = st->modules)) {
		st->modules = m->next;
		module__delete(m);
	}
	free(st);
}

/* Open the file in its own Dwfl so that dwfl addresses are simply vaddr + bias. */
static void module__open(struct module *m)
{
	m->dwfl = dwfl_begin(&offline_callbacks);
	if (!m->dwfl)
		return;
	m->mod = dwfl_report_elf(m->dwfl, m->base, m->path, -1, 0, true);
	if (dwfl_report_end(m->dwfl, NULL, NULL) || !m->mod)
		goto out_end;
	if (!dwfl_module_getelf(m->mod, &m->bias))
		goto out_end;
	return;

out_end:
	dwfl_end(m->dwfl);
	m->dwfl = NULL;
	m->mod = NULL;
}

/* Find (or open and remember, even on failure) the module for 'path'; MRU keeps hits cheap. */
static struct module *symtab__module(struct symtab *st, const char *path)
{
	struct module *m, **pp;
	const char *slash;

	for (pp = &st->modules; (m = *pp); pp = &m->next) {
		if (strcmp(m->path, path))
			continue;
		*pp = m->next;
		goto out_front;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->path = strdup(path);
	if (!m->path)
		goto out_free;
	slash = strrchr(m->path, '/');
	m->base = slash ? slash + 1 : m->path;
	if (*path)
		module__open(m);
out_front:
	m->next = st->modules;
	st->modules = m;
	return m;

out_free:
	free(m);
	return NULL;
}

/* Linear probe in a power-of-two table: the slot holding 'vaddr', or the free one it would take. */
static struct sym_slot *slots__find(struct sym_slot *slots, size_t n, uint64_t vaddr)
{
	/* Fibonacci hashing: code addresses are aligned and clustered, so spread the bits */
	size_t i = (size_t)((vaddr * 0x9e3779b97f4a7c15ull) >> 32) & (n - 1);

	while (slots[i].used && slots[i].vaddr != vaddr)
		i = (i + 1) & (n - 1);
	return &slots[i];
}

/* Double the cache (at least 64 slots) and re-insert the used slots. */
static int module__grow(struct module *m)
{
	size_t n = m->nr_slots ? m->nr_slots * 2 : 64, i;
	struct sym_slot *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -1;
	for (i = 0; i < m->nr_slots; i++)
		if (m->slots[i].used)
			*slots__find(slots, n, m->slots[i].vaddr) = m->slots[i];
	free(m->slots);
	m->slots = slots;
	m->nr_slots = n;
	return 0;
}

/* The cache slot for 'vaddr' (used or free); growing first keeps the load factor <= 1/2. */
static struct sym_slot *module__slot(struct module *m, uint64_t vaddr)
{
	if ((m->nr_used + 1) * 2 > m->nr_slots && module__grow(m))
		return NULL;
	return slots__find(m->slots, m->nr_slots, vaddr);
}

/* The CU's top-level subprogram whose code holds 'pc' (file address); 0 when found. */
static int cu_subprogram(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *out)
{
	if (dwarf_child(cu, out) != 0)
		return -1;
	do {
		if (dwarf_tag(out) == DW_TAG_subprogram && dwarf_haspc(out, pc) == 1)
			return 0;
	} while (dwarf_siblingof(out, out) == 0);
	return -1;
}

/*
 * DW_AT_decl_line of the subprogram at 'entry': stable across -O levels, unlike the line table
 * whose row at the entry is the '{' line at -O0 but often the first statement at -O2.
 * When the entry lies in code inlined from another function, the scopes go from the inlined
 * instance to the inlined function's abstract definition and skip the function at 'entry':
 * that one is then looked up among the CU's subprograms by its code.
 */
static int module__decl_line(struct module *m, Dwarf_Addr entry)
{
	Dwarf_Die *cu, *scopes = NULL, fn;
	int i, n, line = 0, inlined = 0;
	Dwarf_Addr bias;

	cu = dwfl_module_addrdie(m->mod, entry, &bias);
	n = cu ? dwarf_getscopes(cu, entry - bias, &scopes) : 0;
	for (i = 0; i < n; i++) {
		inlined |= dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine;
		if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram || inlined)
			continue;
		if (dwarf_decl_line(&scopes[i], &line))
			line = 0;
		break;
	}
	if (inlined && !line && cu_subprogram(cu, entry - bias, &fn) == 0 &&
	    dwarf_decl_line(&fn, &line))
		line = 0;
	free(scopes);
	return line;
}

/* File and line of the symbol's entry, so every address of a function reports the same place. */
static void module__srcinfo(struct module *m, Dwarf_Addr entry, struct sym_info *info)
{
	Dwfl_Line *line = dwfl_module_getsrc(m->mod, entry);
	const char *src, *slash;
	int lineno = 0;

	src = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
	if (!src || !*src)
		return;
	slash = strrchr(src, '/');
	info->path = src;
	info->file = slash ? slash + 1 : src;
	info->line = module__decl_line(m, entry) ?: lineno;
}

/* "<module>+0x<vaddr>" still tells the user where to look when there is no symbol. */
static void slot__fallback(const struct module *m, struct sym_slot *s)
{
	int n = *m->base ? asprintf(&s->owned, "%s+0x%" PRIx64, m->base, s->vaddr) :
			   asprintf(&s->owned, "0x%" PRIx64, s->vaddr);

	if (n < 0)
		s->owned = NULL;
	else
		s->info.func = s->owned;
}

/* Resolve one address the slow way into a fresh cache slot. */
static void module__resolve(struct module *m, struct sym_slot *s)
{
	Dwarf_Addr addr = s->vaddr + m->bias;
	const char *name = NULL;
	GElf_Off off = 0;
	GElf_Sym sym;

	s->info = (struct sym_info){ .func = "??", .file = m->base, .path = m->path };
	s->ret = -1;
	if (m->mod)
		name = dwfl_module_addrinfo(m->mod, addr, &off, &sym, NULL, NULL, NULL);
	if (!name || !*name) {
		slot__fallback(m, s);
		return;
	}
	s->ret = 0;
	s->owned = demangle(name);
	s->info.func = s->owned ? s->owned : name;
	module__srcinfo(m, addr - off, &s->info);
}

/* Cached lookup: the first call per (module, vaddr) does the work, later ones copy it. */
int symtab__resolve(struct symtab *st, const char *module_path, uint64_t vaddr,
		    struct sym_info *out)
{
	struct module *m = symtab__module(st, module_path ? module_path : "");
	struct sym_slot *s = m ? module__slot(m, vaddr) : NULL;

	if (!s) {
		*out = (struct sym_info){ .func = "??", .file = "??", .path = "??" };
		return -1;
	}
	if (!s->used) {
		s->used = true;
		s->vaddr = vaddr;
		m->nr_used++;
		module__resolve(m, s);
	}
	*out = s->info;
	return s->ret;
}

/* Linear symbol-table scan: only meant for tests and one-off lookups, not hot paths. */
/* Call cb for every defined function symbol of a module; stops when cb returns non-zero. */
int symtab__foreach_func(struct symtab *st, const char *module_path,
			 int (*cb)(const char *name, uint64_t vaddr, uint64_t size, int ifunc,
				   void *arg),
			 void *arg)
{
	struct module *m;
	const char *name;
	GElf_Addr addr;
	GElf_Sym sym;
	int i, n, type, ret;

	if (!module_path)
		return -1;
	m = symtab__module(st, module_path);
	if (!m || !m->mod)
		return -1;
	n = dwfl_module_getsymtab(m->mod);
	for (i = 1; i < n; i++) {
		name = dwfl_module_getsym_info(m->mod, i, &sym, &addr, NULL, NULL, NULL);
		if (!name || sym.st_shndx == SHN_UNDEF)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		ret = cb(name, addr - m->bias, sym.st_size, type == STT_GNU_IFUNC, arg);
		if (ret)
			return ret;
	}
	return 0;
}

struct sized {
	int (*cb)(const char *name, uint64_t vaddr, uint64_t size, void *arg);
	void *arg;
};

static int drop_type(const char *name, uint64_t vaddr, uint64_t size, int ifunc, void *arg)
{
	const struct sized *u = arg;

	(void)ifunc;
	return u->cb(name, vaddr, size, u->arg);
}

int symtab__foreach_sized(struct symtab *st, const char *module_path,
			  int (*cb)(const char *name, uint64_t vaddr, uint64_t size, void *arg),
			  void *arg)
{
	struct sized u = { cb, arg };

	return symtab__foreach_func(st, module_path, drop_type, &u);
}

struct unsized {
	int (*cb)(const char *name, uint64_t vaddr, void *arg);
	void *arg;
};

static int drop_size(const char *name, uint64_t vaddr, uint64_t size, void *arg)
{
	const struct unsized *u = arg;

	(void)size;
	return u->cb(name, vaddr, u->arg);
}

int symtab__foreach(struct symtab *st, const char *module_path,
		    int (*cb)(const char *name, uint64_t vaddr, void *arg), void *arg)
{
	struct unsized u = { cb, arg };

	return symtab__foreach_sized(st, module_path, drop_size, &u);
}

struct lookup {
	const char *name;
	uint64_t vaddr;
};

static int lookup_cb(const char *name, uint64_t vaddr, void *arg)
{
	struct lookup *l = arg;

	if (strcmp(name, l->name) != 0)
		return 0;
	l->vaddr = vaddr;
	return 1;
}

uint64_t symtab__lookup(struct symtab *st, const char *module_path, const char *func_name)
{
	struct lookup l = { func_name, 0 };

	if (!func_name)
		return 0;
	symtab__foreach(st, module_path, lookup_cb, &l);
	return l.vaddr;
}

int symtab__srcline(struct symtab *st, const char *module_path, uint64_t vaddr,
		    const char **file, int *line)
{
	struct module *m = module_path ? symtab__module(st, module_path) : NULL;
	Dwfl_Line *l = m && m->mod ? dwfl_module_getsrc(m->mod, vaddr + m->bias) : NULL;
	const char *src = l ? dwfl_lineinfo(l, NULL, line, NULL, NULL, NULL) : NULL;
	const char *slash;

	if (!src || !*src || *line <= 0)
		return -1;
	slash = strrchr(src, '/');
	*file = slash ? slash + 1 : src;
	return 0;
}
