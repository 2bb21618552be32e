/* SPDX-License-Identifier: MIT */
/*
 * Phase markers of an attached process (docs/consult.md, "When"). A program built with sonde.h
 * refers to sonde__phase weakly; started without sonde, the reference resolved to nothing (its
 * GOT slot holds 0) and each SONDE_PHASE tests the slot and skips the call. Once the runtime is
 * in the process, the slot is pointed at the runtime's sonde__phase — its address is
 * sonde__dyn_entry's (HELLO_REPLY) plus the distance between the two in the runtime's file
 * (the tool's own build, the one it injected) —
 * written through /proc/PID/mem (the kernel writes past RELRO's protection for a tracer), so
 * the markers reach the runtime from then on, as in a program sonde started.
 *
 * The slot stays so after the search: put back to 0 while the program runs, a marker between
 * its test of the slot and its call through it would call address 0. The runtime stays loaded
 * in an attached process; a marker then only notes the phase in the runtime's counters.
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "live_int.h"
#include "util.h"

#define PHASE_SYM "sonde__phase"

/* The value of a symbol an ELF file defines in its dynamic symbol table; 0 when missing
 * (an undefined one, an import, does not count: its value may be a PLT entry's). */
uint64_t lv_dynsym_value(Elf *e, const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d = elf_getdata(scn, NULL);
		GElf_Sym sym;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !d || !sh.sh_entsize)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n && gelf_getsym(d, (int)i, &sym); i++) {
			const char *s = elf_strptr(e, sh.sh_link, sym.st_name);

			if (s && sym.st_shndx != SHN_UNDEF && sym.st_value && !strcmp(s, name))
				return sym.st_value;
		}
	}
	return 0;
}

/* The GOT slots (file addresses) through which the executable reaches sonde__phase. */
static uint32_t phase_slots(Elf *e, uint64_t *slot, uint32_t max)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh, symsh;
	uint32_t k = 0;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d = elf_getdata(scn, NULL), *syms;
		Elf_Scn *symscn;
		GElf_Rela r;
		GElf_Sym sym;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !d || !sh.sh_entsize ||
		    !(symscn = elf_getscn(e, sh.sh_link)) || !gelf_getshdr(symscn, &symsh) ||
		    !(syms = elf_getdata(symscn, NULL)))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n && k < max && gelf_getrela(d, (int)i, &r); i++) {
			unsigned type = (unsigned)GELF_R_TYPE(r.r_info);
			const char *s;

			if ((type != R_X86_64_GLOB_DAT && type != R_X86_64_JUMP_SLOT &&
			     type != R_X86_64_64) ||
			    !gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym))
				continue;
			s = elf_strptr(e, symsh.sh_link, sym.st_name);
			if (s && !strcmp(s, PHASE_SYM))
				slot[k++] = r.r_offset;
		}
	}
	return k;
}

/* Open path's ELF and call fn on it (live_int.h). */
int lv_with_elf(const char *path, void (*fn)(Elf *e, void *arg), void *arg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;

	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && elf_kind(e) == ELF_K_ELF)
		fn(e, arg);
	if (e)
		elf_end(e);
	close(fd);
	return e ? 0 : -1;
}

struct exe_slots {
	uint64_t slot[LV_PHASE_SLOTS];
	uint32_t n;
};

static void exe_fn(Elf *e, void *arg)
{
	struct exe_slots *x = arg;

	x->n = phase_slots(e, x->slot, LV_PHASE_SLOTS);
}

struct rt_syms {
	uint64_t phase, entry;
};

static void rt_fn(Elf *e, void *arg)
{
	struct rt_syms *r = arg;

	r->phase = lv_dynsym_value(e, PHASE_SYM);
	r->entry = lv_dynsym_value(e, "sonde__dyn_entry");
}

/* The executable's load bias: its module's, as /proc/PID/maps named it. */
static uint64_t exe_bias(const struct dyn_session *s)
{
	int i;

	for (i = 0; i < s->nmods; i++)
		if (!strcmp(s->mods[i].path, s->exe))
			return s->mods[i].bias;
	return s->nmods ? s->mods[0].bias : 0;
}

uint32_t lv_phase_link(struct lsrc *ls)
{
	const struct dyn_session *s = ls->s;
	struct exe_slots x = { { 0 }, 0 };
	struct rt_syms rt = { 0, 0 };
	uint64_t bias = exe_bias(s), to, now;
	char path[64], found[PATH_MAX], rtpath[PATH_MAX];
	uint32_t i;
	int fd;

	if (runtime_path(found, sizeof(found)) != 0 || !realpath(found, rtpath) ||
	    !s->c.hello.entry_addr || lv_with_elf(s->exe, exe_fn, &x) != 0 || !x.n ||
	    lv_with_elf(rtpath, rt_fn, &rt) != 0 || !rt.phase || !rt.entry)
		return 0;
	to = s->c.hello.entry_addr - rt.entry + rt.phase;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)s->pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	for (i = 0; i < x.n; i++) {
		uint64_t at = x.slot[i] + bias;

		/* 0: unresolved; anything else: resolved at start (sonde started it) */
		if (pread(fd, &now, sizeof(now), (off_t)at) == (ssize_t)sizeof(now) && !now &&
		    pwrite(fd, &to, sizeof(to), (off_t)at) == (ssize_t)sizeof(to))
			ls->phase_linked++;
	}
	close(fd);
	return ls->phase_linked;
}
