/* SPDX-License-Identifier: MIT */
/* Names of synchronization objects from ELF symbols and DWARF lines; see sync_names.h. */
#include "sync_names.h"

#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

/* One ELF file, opened once in its own offline Dwfl (addresses are the file's vaddrs). */
struct sn_module {
	struct sn_module *next;
	char *path;
	Dwfl *dwfl;
	Dwfl_Module *mod; /* NULL: could not be opened */
	Dwarf_Addr bias;
};

struct sync_names {
	struct sn_module *modules;
};

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct sync_names *sync_names_new(void)
{
	return calloc(1, sizeof(struct sync_names));
}

void sync_names_free(struct sync_names *sn)
{
	struct sn_module *m;

	while (sn && (m = sn->modules)) {
		sn->modules = m->next;
		if (m->dwfl)
			dwfl_end(m->dwfl);
		free(m->path);
		free(m);
	}
	free(sn);
}

static struct sn_module *module(struct sync_names *sn, const char *path)
{
	struct sn_module *m;
	const char *slash = strrchr(path, '/');

	for (m = sn->modules; m; m = m->next)
		if (!strcmp(m->path, path))
			return m;
	m = calloc(1, sizeof(*m));
	if (!m || !(m->path = strdup(path))) {
		free(m);
		return NULL;
	}
	m->next = sn->modules;
	sn->modules = m;
	m->dwfl = *path ? dwfl_begin(&callbacks) : NULL;
	if (!m->dwfl)
		return m;
	m->mod = dwfl_report_elf(m->dwfl, slash ? slash + 1 : path, path, -1, 0, true);
	if (dwfl_report_end(m->dwfl, NULL, NULL) || !m->mod || !dwfl_module_getelf(m->mod, &m->bias))
		m->mod = NULL;
	return m;
}

/* A static variable inside a function is "name.N" in the symbol table: show "name". */
static void strip_suffix(char *s)
{
	char *dot = strrchr(s, '.');
	char *p;

	if (!dot || !dot[1])
		return;
	for (p = dot + 1; *p >= '0' && *p <= '9'; p++)
		;
	if (!*p)
		*dot = 0;
}

void sync_symbol_name(const char *sym, char *out, size_t cap)
{
	char *d;

	snprintf(out, cap, "%s", sym);
	strip_suffix(out); /* first: a mangled name has no dot of its own */
	if ((d = demangle(out)))
		snprintf(out, cap, "%s", d);
	free(d);
}

int sync_names_data(struct sync_names *sn, const char *path, uint64_t vaddr, uint64_t elem,
		    char *out, size_t cap)
{
	struct sn_module *m = module(sn, path);
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name;
	char base[512];

	if (!m || !m->mod)
		return -1;
	name = dwfl_module_addrinfo(m->mod, vaddr + m->bias, &off, &sym, NULL, NULL, NULL);
	if (!name || (GELF_ST_TYPE(sym.st_info) != STT_OBJECT && GELF_ST_TYPE(sym.st_info) != STT_TLS))
		return -1;
	if (off >= (sym.st_size ? sym.st_size : 1))
		return -1;
	sync_symbol_name(name, base, sizeof(base));
	if (off == 0 && sym.st_size <= elem)
		snprintf(out, cap, "%s", base);
	else if (elem && off % elem == 0 && sym.st_size % elem == 0)
		snprintf(out, cap, "%s[%llu]", base, (unsigned long long)(off / elem));
	else
		snprintf(out, cap, "%s+%llu", base, (unsigned long long)off);
	return 0;
}

int sync_names_site(struct sync_names *sn, const char *path, uint64_t vaddr, char *out,
		    size_t cap)
{
	struct sn_module *m = module(sn, path);
	Dwarf_Addr at;
	Dwfl_Line *line;
	const char *fn, *src = NULL, *slash;
	char *name;
	int lineno = 0;

	if (!m || !m->mod || !vaddr)
		return -1;
	at = vaddr - 1 + m->bias; /* a return address: the call is the instruction before it */
	fn = dwfl_module_addrname(m->mod, at);
	line = dwfl_module_getsrc(m->mod, at);
	if (line)
		src = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
	if (!fn)
		return -1;
	slash = src ? strrchr(src, '/') : NULL;
	name = demangle(fn);
	if (src && lineno)
		snprintf(out, cap, "%s (%s:%d)", name ? name : fn, slash ? slash + 1 : src, lineno);
	else
		snprintf(out, cap, "%s", name ? name : fn);
	free(name);
	return 0;
}
