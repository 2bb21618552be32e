/* In-process harness for test_patch.c (patch_live.h). */
#include "patch_live.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define TRAP_FLAG 0x100UL
#define STEP (1UL << 20)	/* trampoline area candidates: 1 MB apart */
#define RANGE (1UL << 31)

/* ---- reading and writing our own code ---- */

/* ctx: the module. Where process_vm_readv is not allowed, reads within the module only. */
int live_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct live_module *m = ctx;
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len)
		return 0;
	if (errno == EFAULT || addr < m->lo || addr + len > m->hi)
		return -1;
	memcpy(buf, (const void *)(uintptr_t)addr, len);
	return 0;
}

void code_write(uint64_t addr, const void *bytes, size_t len)
{
	memcpy((void *)(uintptr_t)addr, bytes, len);
}

/* ---- the module: mapping, symbols, analysis ---- */

struct phdr_query {
	uint64_t base;
	struct live_module *m;
};

/* dl_iterate_phdr callback: the PT_LOAD ranges of the module loaded at q->base. */
static int find_ranges(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct phdr_query *q = arg;
	int i;

	(void)size;
	if (info->dlpi_addr != q->base || !info->dlpi_name[0])
		return 0;
	q->m->lo = UINT64_MAX;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = q->base + ph->p_vaddr, hi = lo + ph->p_memsz;

		if (ph->p_type != PT_LOAD)
			continue;
		q->m->lo = lo < q->m->lo ? lo : q->m->lo;
		q->m->hi = hi > q->m->hi ? hi : q->m->hi;
		if (ph->p_flags & PF_X) {
			q->m->text_lo = lo & ~0xfffUL;
			q->m->text_hi = (hi + 0xfff) & ~0xfffUL;
		}
	}
	return 1;
}

/* Whether name is one of the corpus' functions, or a part of one (f.cold). */
static bool corpus_name(const char *name)
{
	return !strncmp(name, "pc_", 3) && !strstr(name, "localalias");
}

static bool have_addr(const struct live_module *m, uint64_t addr)
{
	size_t i;

	for (i = 0; i < m->nr_fns; i++)
		if (m->fns[i].addr == addr)
			return true;
	return false;
}

/* Add the function symbol sym of the module loaded at base. */
static void add_fn(struct live_module *m, const GElf_Sym *sym, const char *name, uint64_t base)
{
	struct live_fn *f;

	if (GELF_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_shndx == SHN_UNDEF ||
	    !sym->st_size || !corpus_name(name) || have_addr(m, base + sym->st_value))
		return;
	m->fns = realloc(m->fns, (m->nr_fns + 1) * sizeof(*m->fns));
	f = &m->fns[m->nr_fns++];
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->addr = base + sym->st_value;
	f->size = sym->st_size;
	f->exported = GELF_ST_BIND(sym->st_info) == STB_GLOBAL && !strchr(name, '.');
	f->part = strstr(name, ".cold") != NULL;
	f->pristine = malloc(f->size);
	memcpy(f->pristine, (const void *)(uintptr_t)f->addr, f->size);
}

/* Every function of the module's .symtab. */
static int read_symbols(struct live_module *m, uint64_t base, char *why, size_t n)
{
	int fd = open(m->path, O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Sym sym;
	Elf_Data *data;
	size_t i;

	elf_version(EV_CURRENT);
	elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		snprintf(why, n, "cannot read %s", m->path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB &&
		    (data = elf_getdata(scn, NULL)))
			for (i = 0; i < sh.sh_size / sh.sh_entsize; i++)
				if (gelf_getsym(data, (int)i, &sym))
					add_fn(m, &sym, elf_strptr(elf, sh.sh_link, sym.st_name),
					       base);
	elf_end(elf);
	close(fd);
	return 0;
}

/* The function that part (f.cold) belongs to: a branch from it may land anywhere in f. */
static void add_part_targets(struct live_module *m, const struct live_fn *part)
{
	size_t i, len = strcspn(part->name, ".");

	for (i = 0; i < m->nr_fns; i++)
		if (!m->fns[i].part && m->fns[i].analyzed && !strncmp(m->fns[i].name, part->name, len)
		    && m->fns[i].name[len] == '\0')
			patch_add_targets_from(&m->fns[i].pf, &part->pf);
}

/* Analyse every function and read its jump tables; parts' branches become their function's. */
static void analyze_all(struct live_module *m)
{
	size_t i;

	for (i = 0; i < m->nr_fns; i++) {
		struct live_fn *f = &m->fns[i];
		const uint8_t *code = (const uint8_t *)(uintptr_t)f->addr;

		f->analyzed = !patch_analyze(code, f->size, f->addr, &f->pf, f->why,
					     sizeof(f->why)) &&
			      !patch_read_tables(&f->pf, live_read, m, f->why, sizeof(f->why));
	}
	for (i = 0; i < m->nr_fns; i++)
		if (m->fns[i].part && m->fns[i].analyzed)
			add_part_targets(m, &m->fns[i]);
}

int live_open(struct live_module *m, const char *path, char *why, size_t n)
{
	struct link_map *lm;
	struct phdr_query q = { .m = m };

	memset(m, 0, sizeof(*m));
	m->path = path;
	m->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!m->dl || dlinfo(m->dl, RTLD_DI_LINKMAP, &lm)) {
		snprintf(why, n, "dlopen %s: %s", path, dlerror());
		return -1;
	}
	q.base = lm->l_addr;
	dl_iterate_phdr(find_ranges, &q);
	if (!m->text_hi || read_symbols(m, lm->l_addr, why, n))
		return -1;
	if (mprotect((void *)(uintptr_t)m->text_lo, m->text_hi - m->text_lo,
		     PROT_READ | PROT_WRITE | PROT_EXEC)) {
		snprintf(why, n, "mprotect: %m");
		return -1;
	}
	analyze_all(m);
	return 0;
}

void live_close(struct live_module *m)
{
	size_t i;

	for (i = 0; i < m->nr_fns; i++) {
		patch_fn_free(&m->fns[i].pf);
		free(m->fns[i].pristine);
	}
	free(m->fns);
	free(m->pts);
	if (m->tramps)
		munmap(m->tramps, m->tramps_size);
	if (m->text_hi)
		mprotect((void *)(uintptr_t)m->text_lo, m->text_hi - m->text_lo,
			 PROT_READ | PROT_EXEC);
	if (m->dl)
		dlclose(m->dl);
	memset(m, 0, sizeof(*m));
}

/* Map bytes at exactly addr, or fail (MAP_FIXED_NOREPLACE, checked for older kernels). */
static void *map_at(uint64_t addr, size_t bytes)
{
	void *p = mmap((void *)(uintptr_t)addr, bytes, PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if ((uint64_t)(uintptr_t)p != addr) {
		munmap(p, bytes);
		return NULL;
	}
	return p;
}

/* Below the module first (as the tool does), then above it; all of it within ±2 GB. */
int live_tramp_area(struct live_module *m, size_t bytes)
{
	uint64_t a;

	bytes = (bytes + 0xfff) & ~0xfffUL;
	for (a = (m->lo - bytes) & ~(STEP - 1); m->hi - a < RANGE - bytes && a > STEP; a -= STEP)
		if ((m->tramps = map_at(a, bytes)))
			break;
	for (a = (m->hi + STEP) & ~(STEP - 1); !m->tramps && a + bytes - m->lo < RANGE; a += STEP)
		m->tramps = map_at(a, bytes);
	m->tramps_size = bytes;
	return m->tramps ? 0 : -1;
}

/* ---- breakpoints ---- */

struct bp {
	uint64_t addr;
	uint8_t orig;
	bool armed;
	uint64_t hits;
	long reach_fn;
	int reach_input;
};

static struct bp *bps;
static size_t nr_bps;
static long rearm = -1;		/* counting breakpoint to put back after the single step */
static bp_action_fn once_action;
static void *once_arg;
static bool once_fired;
static long cur_fn = -1;
static int cur_input;

static long find_bp(uint64_t addr)
{
	size_t i;

	for (i = 0; i < nr_bps; i++)
		if (bps[i].addr == addr)
			return (long)i;
	return -1;
}

static void arm(struct bp *b)
{
	static const uint8_t int3 = 0xcc;

	b->orig = *(const uint8_t *)(uintptr_t)b->addr;
	code_write(b->addr, &int3, 1);
	b->armed = true;
}

static void disarm(struct bp *b)
{
	if (b->armed)
		code_write(b->addr, &b->orig, 1);
	b->armed = false;
}

/* A trap nobody set: the code ran into something it must not (a removed trampoline). */
static void stray(uint64_t pc)
{
	char msg[96];
	int len = snprintf(msg, sizeof(msg), "test_patch: stray trap at 0x%lx\n",
			   (unsigned long)pc);

	if (write(2, msg, (size_t)len) < 0)
		_exit(98);
	_exit(99);
}

/* SIGTRAP: an int3 of ours (count and single-step over it, or act once), or the step's end. */
static void on_trap(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	greg_t *g = uc->uc_mcontext.gregs;
	uint64_t pc = (uint64_t)g[REG_RIP] - 1;
	long i;

	(void)sig;
	(void)si;
	if (rearm >= 0) {
		arm(&bps[rearm]);
		rearm = -1;
		g[REG_EFL] &= ~(greg_t)TRAP_FLAG;
		return;
	}
	i = find_bp(pc);
	if (i < 0 || !bps[i].armed)
		stray(pc);
	disarm(&bps[i]);
	g[REG_RIP] = (greg_t)pc;
	bps[i].hits++;
	if (bps[i].reach_fn < 0) {
		bps[i].reach_fn = cur_fn;
		bps[i].reach_input = cur_input;
	}
	if (once_action) {
		once_fired = true;
		once_action(uc, pc, once_arg);
		return;
	}
	rearm = i;
	g[REG_EFL] |= (greg_t)TRAP_FLAG;
}

void bp_install_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGTRAP, &sa, NULL);
}

static void bp_add(uint64_t addr)
{
	struct bp *b;

	if (find_bp(addr) >= 0)
		return;
	bps = realloc(bps, (nr_bps + 1) * sizeof(*bps));
	b = &bps[nr_bps++];
	memset(b, 0, sizeof(*b));
	b->addr = addr;
	b->reach_fn = -1;
	arm(b);
}

void bp_count(const uint64_t *addrs, size_t n)
{
	size_t i;

	bp_clear();
	for (i = 0; i < n; i++)
		bp_add(addrs[i]);
}

uint64_t bp_hits(uint64_t addr)
{
	long i = find_bp(addr);

	return i < 0 ? 0 : bps[i].hits;
}

void bp_set_reach(long fn, int input)
{
	cur_fn = fn;
	cur_input = input;
}

bool bp_reach(uint64_t addr, long *fn, int *input)
{
	long i = find_bp(addr);

	if (i < 0 || bps[i].reach_fn < 0)
		return false;
	*fn = bps[i].reach_fn;
	*input = bps[i].reach_input;
	return true;
}

void bp_once(uint64_t addr, bp_action_fn action, void *arg)
{
	bp_clear();
	once_action = action;
	once_arg = arg;
	once_fired = false;
	bp_add(addr);
}

bool bp_fired(void)
{
	return once_fired;
}

void bp_clear(void)
{
	size_t i;

	for (i = 0; i < nr_bps; i++)
		disarm(&bps[i]);
	free(bps);
	bps = NULL;
	nr_bps = 0;
	once_action = NULL;
}
