/* SPDX-License-Identifier: MIT */
/*
 * Modules of the target from /proc/PID/maps (libc, the dynamic loader, libdl) and their
 * symbols from the ELF dynamic symbol table of the mapped file, opened through
 * /proc/PID/root so that a process in another mount namespace sees its own files.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

struct map_line {
	uint64_t start, end, off;
	char perms[8];
	char path[4096];
};

static int parse_map_line(const char *s, struct map_line *m)
{
	int pos = 0;

	m->path[0] = 0;
	if (sscanf(s, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &m->start, &m->end,
		   m->perms, &m->off, &pos) < 4 || !pos)
		return -1;
	snprintf(m->path, sizeof(m->path), "%s", s + pos);
	m->path[strcspn(m->path, "\n")] = 0;
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int matches(const char *path, const char *const *prefixes)
{
	const char *b = base_name(path);

	if (path[0] != '/')
		return 0;
	for (; *prefixes; prefixes++)
		if (!strncmp(b, *prefixes, strlen(*prefixes)))
			return 1;
	return 0;
}

/* Fold one mapping of the module's file into *out. */
static void add_mapping(struct target_module *out, const struct map_line *m, uint64_t *base)
{
	if (m->off == 0 && (!*base || m->start < *base))
		*base = m->start;
	if (m->perms[2] == 'x') {
		if (!out->text_start || m->start < out->text_start)
			out->text_start = m->start;
		if (m->end > out->text_end)
			out->text_end = m->end;
	}
}

/* One pass over the maps: the first module matching each set of prefixes, all its mappings. */
static int scan_maps(struct target *t, const char *const *const *sets, int n,
		     struct target_module *out, uint64_t *base)
{
	char path[80], line[4200];
	struct map_line m;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "%s/maps", t->proc);
	f = fopen(path, "re");
	if (!f && (errno == EACCES || errno == EPERM))
		return tgt_explain_seize(t, EPERM); /* what ptrace would say, and why */
	if (!f)
		return tgt_fail(t, "cannot read %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (parse_map_line(line, &m) != 0)
			continue;
		for (i = 0; i < n; i++) {
			if (!out[i].path[0] && matches(m.path, sets[i]))
				snprintf(out[i].path, sizeof(out[i].path), "%s", m.path);
			if (out[i].path[0] && !strcmp(m.path, out[i].path))
				add_mapping(&out[i], &m, &base[i]);
		}
	}
	fclose(f);
	return 0;
}

/* The load bias from the lowest mapping of file offset 0 and the ELF file's own layout. */
static int set_bias(struct target *t, struct target_module *m, uint64_t base)
{
	uint64_t vaddr = 0;
	char file[4200];

	if (strstr(m->path, " (deleted)"))
		return tgt_fail(t, "%s, mapped in process %d, was deleted (the library was upgraded "
				"since the program started)", m->path, t->pid);
	tgt_module_file(t, m, file, sizeof(file));
	if (!base || !m->text_end || tgt_elf_base_vaddr(file, &vaddr) != 0)
		return tgt_fail(t, "cannot make sense of %s in process %d", m->path, t->pid);
	m->bias = base - vaddr;
	return 0;
}

int tgt_find_modules(struct target *t, const char *const *const *sets, int n,
		     struct target_module *out)
{
	uint64_t base[8] = { 0 };
	int i;

	if (n > 8)
		return tgt_fail(t, "too many modules at once");
	memset(out, 0, (size_t)n * sizeof(*out));
	if (scan_maps(t, sets, n, out, base) != 0)
		return -1;
	for (i = 0; i < n; i++)
		if (out[i].path[0] && set_bias(t, &out[i], base[i]) != 0)
			return -1;
	return 0;
}

int target_find_module(struct target *t, const char *const *prefixes, struct target_module *out)
{
	if (tgt_find_modules(t, &prefixes, 1, out) != 0)
		return -1;
	if (!out->path[0])
		return tgt_fail(t, "process %d has no %s* loaded", t->pid, prefixes[0]);
	return 0;
}

struct range {
	uint64_t start, end;
	int grows;	/* the main stack ([stack]) grows on demand */
};

static uint64_t room_below(const struct range *r, int n, uint64_t sp)
{
	int i;

	for (i = 0; i < n; i++)
		if (sp > r[i].start && sp <= r[i].end)
			return r[i].grows ? UINT64_MAX : sp - r[i].start;
	return 0;
}

static struct range *read_ranges(struct target *t, int *n)
{
	char path[80], line[4200];
	struct range *r = NULL;
	struct map_line m;
	int cap = 0;
	FILE *f;

	*n = 0;
	snprintf(path, sizeof(path), "%s/maps", t->proc);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		if (parse_map_line(line, &m) != 0)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 256;
			r = xrealloc(r, (size_t)cap * sizeof(*r));
		}
		r[(*n)++] = (struct range){ m.start, m.end, !strcmp(m.path, "[stack]") };
	}
	fclose(f);
	return r;
}

int tgt_choose_call_thread(struct target *t, uint64_t min_room,
			   int (*usable)(struct target *, const struct target_thread *, void *),
			   void *arg)
{
	int n, k, r = 1;
	struct range *m = read_ranges(t, &n);

	if (!m)
		return tgt_fail(t, "cannot read %s/maps", t->proc);
	for (k = 0; k < t->nthreads && r > 0; k++) {
		struct target_thread *th = &t->threads[(t->call + k) % t->nthreads];

		if (th->stopped && room_below(m, n, th->regs.rsp - 128) >= min_room &&
		    (!usable || usable(t, th, arg))) {
			t->call = (int)(th - t->threads);
			r = 0;
		}
	}
	free(m);
	return r;
}

void tgt_module_file(const struct target *t, const struct target_module *m, char *out,
		     size_t cap)
{
	snprintf(out, cap, "%s/root%s", t->proc, m->path);
	if (access(out, R_OK) != 0)
		snprintf(out, cap, "%s", m->path);
}

int target_module_symbols(struct target *t, const struct target_module *m,
			  const char *const *names, int n, uint64_t *addrs, uint64_t *sizes)
{
	char file[4200];
	int i;

	tgt_module_file(t, m, file, sizeof(file));
	if (tgt_elf_symbols(file, names, n, addrs, sizes) != 0)
		return tgt_fail(t, "cannot read the symbols of %s", file);
	for (i = 0; i < n; i++)
		if (addrs[i])
			addrs[i] += m->bias;
	return 0;
}

int target_module_symbol(struct target *t, const struct target_module *m, const char *name,
			 uint64_t *addr, uint64_t *size)
{
	uint64_t sz;

	if (target_module_symbols(t, m, &name, 1, addr, &sz) != 0)
		return -1;
	if (!*addr)
		return tgt_fail(t, "%s has no symbol %s", m->path, name);
	if (size)
		*size = sz;
	return 0;
}

static Elf *open_elf(const char *file, int *fd)
{
	Elf *e;

	*fd = open(file, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	e = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (e && elf_kind(e) == ELF_K_ELF)
		return e;
	if (e)
		elf_end(e);
	close(*fd);
	return NULL;
}

int tgt_elf_base_vaddr(const char *file, uint64_t *vaddr)
{
	GElf_Phdr ph;
	size_t i, n;
	int fd, r = -1;
	Elf *e = open_elf(file, &fd);

	if (!e)
		return -1;
	if (!elf_getphdrnum(e, &n))
		for (i = 0; i < n && r; i++)
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
				*vaddr = (ph.p_vaddr - ph.p_offset) & ~(uint64_t)4095;
				r = 0;
			}
	elf_end(e);
	close(fd);
	return r;
}

static Elf_Scn *find_section(Elf *e, Elf64_Word type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, sh) && sh->sh_type == type)
			return scn;
	return NULL;
}

/* A defined function (or object) symbol; a hidden (non-default) version only when nothing
 * better was found: "dlopen@GLIBC_2.2.5" yields to "dlopen@@GLIBC_2.34". */
static void take_symbol(const GElf_Sym *s, int hidden, uint64_t *val, uint64_t *size)
{
	int type = GELF_ST_TYPE(s->st_info);

	if (s->st_shndx == SHN_UNDEF || !s->st_value)
		return;
	if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT && type != STT_NOTYPE)
		return;
	if (hidden && *val)
		return;
	*val = s->st_value;
	*size = s->st_size;
}

struct wanted {
	const char *name;
	int k;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct wanted *)a)->name, ((const struct wanted *)b)->name);
}

/* libc has thousands of dynamic symbols: each is looked up among the wanted names, sorted. */
static void scan_dynsym(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, const struct wanted *w,
			int n, uint64_t *vals, uint64_t *sizes)
{
	GElf_Shdr vsh;
	Elf_Scn *vscn = find_section(e, SHT_GNU_versym, &vsh);
	Elf_Data *d = elf_getdata(scn, NULL), *vd = vscn ? elf_getdata(vscn, NULL) : NULL;
	size_t i, count = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	GElf_Versym ver;
	GElf_Sym s;

	for (i = 1; d && i < count; i++) {
		struct wanted key, *hit;
		int hidden;

		if (!gelf_getsym(d, (int)i, &s) || !s.st_name || s.st_shndx == SHN_UNDEF)
			continue;
		key.name = elf_strptr(e, sh->sh_link, s.st_name);
		hit = key.name ? bsearch(&key, w, (size_t)n, sizeof(*w), by_name) : NULL;
		if (!hit)
			continue;
		hidden = vd && gelf_getversym(vd, (int)i, &ver) && (ver & 0x8000);
		take_symbol(&s, hidden, &vals[hit->k], &sizes[hit->k]);
	}
}

int tgt_elf_symbols(const char *file, const char *const *names, int n, uint64_t *vals,
		    uint64_t *sizes)
{
	struct wanted *w;
	GElf_Shdr sh;
	Elf_Scn *scn;
	int fd, k;
	Elf *e = open_elf(file, &fd);

	if (!e)
		return -1;
	w = xcalloc((size_t)n, sizeof(*w));
	for (k = 0; k < n; k++) {
		vals[k] = sizes[k] = 0;
		w[k] = (struct wanted){ names[k], k };
	}
	qsort(w, (size_t)n, sizeof(*w), by_name);
	scn = find_section(e, SHT_DYNSYM, &sh);
	if (scn)
		scan_dynsym(e, scn, &sh, w, n, vals, sizes);
	free(w);
	elf_end(e);
	close(fd);
	return 0;
}

/* Every ELF file with an executable mapping, in the order of the maps. */
int target_list_modules(pid_t pid, struct target_module **out, int *n, char *err, size_t errlen)
{
	struct target t = { .pid = pid };
	struct target_module *mods = NULL;
	uint64_t *base = NULL;
	char path[80], line[4200];
	struct map_line m;
	int k = 0, i, r = 0;
	FILE *f;

	snprintf(t.proc, sizeof(t.proc), "/proc/%d", (int)pid);
	snprintf(path, sizeof(path), "%s/maps", t.proc);
	f = fopen(path, "re");
	if (!f)
		return snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno)), -1;
	while (fgets(line, sizeof(line), f)) {
		if (parse_map_line(line, &m) != 0 || m.path[0] != '/')
			continue;
		for (i = 0; i < k && strcmp(mods[i].path, m.path); i++)
			;
		if (i == k) {
			mods = xrealloc(mods, (size_t)(k + 1) * sizeof(*mods));
			base = xrealloc(base, (size_t)(k + 1) * sizeof(*base));
			memset(&mods[k], 0, sizeof(*mods));
			base[k] = 0;
			snprintf(mods[k++].path, sizeof(mods->path), "%s", m.path);
		}
		add_mapping(&mods[i], &m, &base[i]);
	}
	fclose(f);
	for (i = 0, *n = 0; i < k; i++) {
		if (!mods[i].text_end || strstr(mods[i].path, " (deleted)"))
			continue; /* data files, deleted libraries: nothing to patch */
		if (set_bias(&t, &mods[i], base[i]) != 0)
			continue; /* not an ELF file (a mapped blob) */
		mods[(*n)++] = mods[i];
	}
	free(base);
	*out = mods;
	return r;
}
