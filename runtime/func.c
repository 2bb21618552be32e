/* SPDX-License-Identifier: MIT */
/*
 * The process-wide table of functions and regions, the snapshot of loaded modules, and the
 * selection list (functions excluded by the user's globs, resolved by the tool beforehand).
 *
 * Reached only when a call path is seen for the first time, possibly from several threads at
 * once and possibly inside a signal handler: lock-free (fetch-add and compare-and-swap), memory
 * from mmap.
 */
#include "rt.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#define FUNC_SLOTS (1u << 20) /* open addressing: power of two, at most half full */
#define MAX_FUNCS (FUNC_SLOTS / 2)
#define MAX_MODULES 512

struct rt_func rt_root_func = { .id = SPROF_ROOT_FUNC };
static struct rt_func *funcs;            /* MAX_FUNCS entries, dense by id */
static _Atomic(struct rt_func *) *slots; /* FUNC_SLOTS entries */
static _Atomic uint32_t nfuncs;

static struct rt_module modules[MAX_MODULES];
static _Atomic uint32_t nmodules;
static _Atomic int refreshing;

static struct {
	char module[256];
	uint64_t *vaddr; /* sorted */
	size_t n;
} select_list;

static uint32_t hash_addr(uintptr_t a)
{
	a ^= a >> 29;
	a *= 0xbf58476d1ce4e5b9ull;
	a ^= a >> 32;
	return (uint32_t)a & (FUNC_SLOTS - 1);
}

static int module_of(uintptr_t addr)
{
	uint32_t i, n = atomic_load(&nmodules);

	for (i = 0; i < n; i++)
		if (addr >= modules[i].lo && addr < modules[i].hi)
			return (int)i;
	return -1;
}

static int excluded(const struct rt_func *f)
{
	size_t lo = 0, hi = select_list.n;

	if (f->module < 0 || !select_list.n ||
	    strcmp(modules[f->module].path, select_list.module) != 0)
		return 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (select_list.vaddr[mid] < f->vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < select_list.n && select_list.vaddr[lo] == f->vaddr;
}

/* Fill a new entry: which module it lives in, and whether the user excluded it. */
static void func_fill(struct rt_func *f, uintptr_t addr, int kind, const char *name)
{
	f->addr = addr;
	f->kind = (uint8_t)kind;
	f->name = name;
	f->module = -1;
	if (kind == SPROF_FUNC) {
		/* a module loaded since start is found when writing (rt_funcs_locate): asking the
		 * loader here could deadlock a probe that fires inside a signal handler */
		f->module = module_of(addr);
		f->vaddr = f->module >= 0 ? addr - modules[f->module].bias : addr;
		if (excluded(f)) {
			f->flags |= SPROF_FN_EXCLUDED;
			atomic_store(&f->off, 1);
		}
	}
}

/* The entry for a code address (or region name), made on first sight. NULL when full. */
struct rt_func *rt_func_get(uintptr_t addr, int kind, const char *name)
{
	uint32_t h = hash_addr(addr), id;
	struct rt_func *f, *seen;

	for (;;) {
		seen = atomic_load(&slots[h]);
		if (!seen)
			break;
		if (seen->addr == addr)
			return seen;
		h = (h + 1) & (FUNC_SLOTS - 1);
	}
	id = atomic_fetch_add(&nfuncs, 1);
	if (id >= MAX_FUNCS)
		return NULL;
	f = &funcs[id];
	f->id = id;
	func_fill(f, addr, kind, name);
	for (;;) {
		seen = NULL;
		if (atomic_compare_exchange_strong(&slots[h], &seen, f))
			return f;
		if (seen->addr == addr) {
			f->kind = 0xff; /* lost the race: a dead entry the writer skips */
			return seen;
		}
		h = (h + 1) & (FUNC_SLOTS - 1);
	}
}

uint32_t rt_func_count(void)
{
	uint32_t n = atomic_load(&nfuncs);

	return n < MAX_FUNCS ? n : MAX_FUNCS;
}

uint32_t rt_func_capacity(void)
{
	return MAX_FUNCS;
}

struct rt_func *rt_func_at(uint32_t id)
{
	return &funcs[id];
}

/* dl_iterate_phdr callback: add modules not yet in the snapshot. */
static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	struct rt_module *m;
	uint32_t n = atomic_load(&nmodules);
	int i;

	(void)size;
	(void)arg;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (!hi || module_of(lo) >= 0 || n == MAX_MODULES)
		return 0;
	m = &modules[n];
	m->bias = info->dlpi_addr;
	m->lo = lo;
	m->hi = hi;
	rt_module_path(m->path, sizeof(m->path), info->dlpi_name);
	m->build_id_len = rt_module_build_id(info, m->build_id, sizeof(m->build_id));
	atomic_store(&nmodules, n + 1);
	return 0;
}

/* Take in modules loaded since the last look; one thread at a time, others do without. */
void rt_modules_refresh(void)
{
	int expected = 0;

	if (!atomic_compare_exchange_strong(&refreshing, &expected, 1))
		return;
	dl_iterate_phdr(add_module, NULL);
	atomic_store(&refreshing, 0);
}

/* Place the functions first seen in modules loaded after the snapshot (before writing). */
void rt_funcs_locate(void)
{
	uint32_t i, n = rt_func_count();

	for (i = 0; i < n; i++) {
		struct rt_func *f = &funcs[i];

		if (f->kind != SPROF_FUNC || f->module >= 0)
			continue;
		f->module = module_of(f->addr);
		if (f->module >= 0)
			f->vaddr = f->addr - modules[f->module].bias;
	}
}

uint32_t rt_module_count(void)
{
	return atomic_load(&nmodules);
}

const struct rt_module *rt_module_at(uint32_t i)
{
	return &modules[i];
}

int rt_func_table_init(void)
{
	funcs = rt_map(MAX_FUNCS * sizeof(*funcs));
	slots = rt_map(FUNC_SLOTS * sizeof(*slots));
	return funcs && slots ? 0 : -1;
}

static uint64_t parse_hex(const char **p, const char *end)
{
	uint64_t v = 0;

	for (; *p < end; (*p)++) {
		char c = **p;
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (d < 0)
			break;
		v = v * 16 + (uint64_t)d;
	}
	return v;
}

/*
 * The selection file written by `sonde run` (docs/runtime.md): a line "sonde-select 1", a line
 * "module PATH", then one excluded function address (hex, as the ELF file sees it) per line, in
 * increasing order.
 */
static int select_parse(const char *text, size_t len)
{
	const char *p = text, *end = text + len, *nl;
	size_t max = len / 2 + 1;

	if (len < 15 || memcmp(p, "sonde-select 1\n", 15) != 0)
		return -1;
	p += 15;
	if (end - p < 8 || memcmp(p, "module ", 7) != 0)
		return -1;
	p += 7;
	nl = memchr(p, '\n', (size_t)(end - p));
	if (!nl || (size_t)(nl - p) >= sizeof(select_list.module))
		return -1;
	memcpy(select_list.module, p, (size_t)(nl - p));
	select_list.vaddr = rt_map(max * sizeof(uint64_t));
	if (!select_list.vaddr)
		return -1;
	for (p = nl + 1; p < end; p++) {
		uint64_t v = parse_hex(&p, end);

		if (p < end && *p != '\n')
			return -1;
		if (select_list.n && v <= select_list.vaddr[select_list.n - 1])
			return -1;
		select_list.vaddr[select_list.n++] = v;
	}
	return 0;
}

int rt_select_load(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	off_t size;
	char *text;
	int ret = -1;

	if (fd < 0)
		return -1;
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size > (1 << 28))
		goto out_close;
	text = rt_map((size_t)size);
	if (text && pread(fd, text, (size_t)size, 0) == size)
		ret = select_parse(text, (size_t)size);
	if (text)
		rt_unmap(text, (size_t)size);
out_close:
	close(fd);
	return ret;
}
