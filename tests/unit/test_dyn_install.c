/*
 * The order of tool/dyn/install.c's inserting and removing, against a fake stopped process:
 * the thread states a real process can be caught in (inside a relocated copy, inside the
 * handler call's register restore, inside the bytes a patch replaces), and a check, each time
 * the process is let run, that no thread would execute the middle of a patched site.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dyn/dyn.h"
#include "symbols.h"
#include "util.h"

#define SITE 0x400000ull
#define TRAMP 0x10400000ull

/* push rbp; mov rbp, rsp; mov eax, 1; pop rbp; ret: an entry point displaces the first three */
static const uint8_t code[] = { 0x55, 0x48, 0x89, 0xe5, 0xb8, 0x01, 0, 0, 0, 0x5d, 0xc3 };

/* The fake process: the site's bytes as last written, the threads, what happened. */
static struct {
	uint8_t site[PATCH_SITE_MAX];
	uint32_t len;
	int runs, site_writes;
	int bad_runs;		/* runs with a thread inside a patched site's bytes */
	int busy_forever;	/* the busy thread never leaves the restore */
	uint64_t busy_pc, busy_goes_to;
} fake;

/* ---- the process-control calls install.c makes, on the fake ---- */

const char *target_error(const struct target *t)
{
	return t->err;
}

int target_write(struct target *t, uint64_t addr, const void *buf, size_t len)
{
	(void)t;
	if (addr == SITE) {
		assert_true(len <= sizeof(fake.site));
		memcpy(fake.site, buf, len);
		fake.site_writes++;
	}
	return 0;
}

int target_read(struct target *t, uint64_t addr, void *buf, size_t len)
{
	(void)t, (void)addr, (void)buf, (void)len;
	return -1;
}

int target_set_regs(struct target *t, struct target_thread *th)
{
	(void)t, (void)th;
	return 0;
}

int target_set_pc(struct target *t, struct target_thread *th, uint64_t pc)
{
	(void)t;
	th->regs.rip = pc;
	return 0;
}

static int site_patched(void)
{
	return fake.site[0] == 0xe9;
}

/* Let the process run: check what it would execute, and move the busy thread on. */
int target_run_for(struct target *t, unsigned ms, const sigset_t *wake)
{
	struct timespec one_ms = { 0, 1000000 };
	int i;

	(void)wake, (void)ms;
	fake.runs++;
	for (i = 0; i < t->nthreads; i++) {
		uint64_t pc = t->threads[i].regs.rip;

		if (site_patched() && pc > SITE && pc < SITE + fake.len)
			fake.bad_runs++;
		if (pc == fake.busy_pc && !fake.busy_forever)
			t->threads[i].regs.rip = fake.busy_goes_to;
	}
	nanosleep(&one_ms, NULL);
	return 0;
}

int target_mmap(struct target *t, uint64_t addr, uint64_t len, int prot, int flags,
		uint64_t *out)
{
	(void)t, (void)addr, (void)len, (void)prot, (void)flags, (void)out;
	return -1;
}

int target_munmap(struct target *t, uint64_t addr, uint64_t len)
{
	(void)t, (void)addr, (void)len;
	return -1;
}

uint64_t mono_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct symtab *symtab__new(void)
{
	return NULL;
}

void symtab__delete(struct symtab *st)
{
	(void)st;
}

int symtab__foreach_sized(struct symtab *st, const char *module_path,
			  int (*cb)(const char *name, uint64_t vaddr, uint64_t size, void *arg),
			  void *arg)
{
	(void)st, (void)module_path, (void)cb, (void)arg;
	return -1;
}

/* ---- set-up ---- */

static char func_name[] = "f";
static struct dyn_func func;
static struct dyn_set set;
static struct target_thread threads[2];
static struct target proc;

/* One entry point planned on code at SITE, installed or not; two threads, both at pcs. */
static void setup(int installed, uint64_t pc0, uint64_t pc1)
{
	struct tramp_spec spec = { 0x1122334455667788ull, 0 };
	struct patch_fn fn;
	char why[200];

	memset(&fake, 0, sizeof(fake));
	memset(&func, 0, sizeof(func));
	assert_int_equal(patch_analyze(code, sizeof(code), SITE, &fn, why, sizeof(why)), 0);
	assert_int_equal(patch_plan_entry(&fn, code, TRAMP, &spec, &func.plan, why, sizeof(why)), 0);
	patch_fn_free(&fn);
	func.name = func_name;
	func.state = installed ? DYN_INSTALLED : DYN_PLANNED;
	set = (struct dyn_set){ .f = &func, .n = 1, .cap = 1 };
	fake.len = func.plan.len;
	memcpy(fake.site, installed ? func.plan.bytes : func.plan.orig, func.plan.len);
	memset(threads, 0, sizeof(threads));
	memset(&proc, 0, sizeof(proc));
	threads[0] = (struct target_thread){ .tid = 100, .stopped = 1 };
	threads[1] = (struct target_thread){ .tid = 101, .stopped = 1 };
	threads[0].regs.rip = pc0;
	threads[1].regs.rip = pc1;
	proc.threads = threads;
	proc.nthreads = 2;
	proc.stopped = proc.attached = 1;
}

/* The relocated copy of the displaced instruction k (an entry's copies are plain copies). */
static uint64_t copy_of(uint32_t k)
{
	assert_true(k < func.plan.nr_map);
	assert_int_equal(func.plan.map[k].how, PM_COPY);
	return func.plan.tramp + func.plan.map[k].tramp_off;
}

/* A thread in the handler call's register restore (its last byte: popfq or its stand-in). */
static uint64_t in_restore(void)
{
	return func.plan.tramp + func.plan.save_off + func.plan.save_len - 1u;
}

/* ---- tests ---- */

/* The plan displaces three instructions, as the other tests assume. */
static void test_plan_shape(void **state)
{
	(void)state;
	setup(0, 0, 0);
	assert_int_equal(func.plan.len, 9);
	assert_int_equal(func.plan.nr_map, 3);
	assert_int_equal(func.plan.map[1].orig_off, 1);
	assert_int_equal(func.plan.map[2].orig_off, 4);
	assert_int_equal(patch_map_pc_out(&func.plan, in_restore(), NULL), 0);
}

/*
 * One thread in the restore (busy), one in the copy of mov rbp, rsp: the process must run with
 * the second still in the trampoline (moved out, it would sit at SITE + 1, the middle of the
 * patch's jmp), and both leave in one stop with the original bytes.
 */
static void test_remove_runs_nothing_moved(void **state)
{
	char err[256] = "";

	(void)state;
	setup(1, 0, 0);
	threads[0].regs.rip = fake.busy_pc = in_restore();
	fake.busy_goes_to = copy_of(2);
	threads[1].regs.rip = copy_of(1);
	assert_int_equal(dyn_remove(&proc, &set, err, sizeof(err)), 0);
	assert_true(fake.runs >= 1);
	assert_int_equal(fake.bad_runs, 0);
	assert_int_equal(threads[0].regs.rip, SITE + 4);
	assert_int_equal(threads[1].regs.rip, SITE + 1);
	assert_memory_equal(fake.site, code, func.plan.len);
	assert_int_equal(func.state, DYN_PLANNED);
}

/* A thread that never leaves the restore: the removal gives up, nothing moved or written. */
static void test_remove_gives_up_untouched(void **state)
{
	char err[256] = "";

	(void)state;
	setup(1, 0, 0);
	threads[0].regs.rip = fake.busy_pc = in_restore();
	fake.busy_forever = 1;
	threads[1].regs.rip = copy_of(2);
	assert_int_equal(dyn_remove(&proc, &set, err, sizeof(err)), -1);
	assert_string_equal(err, "a thread stays inside a trampoline; not removing");
	assert_int_equal(fake.bad_runs, 0);
	assert_int_equal(threads[1].regs.rip, copy_of(2));
	assert_int_equal(fake.site_writes, 0);
	assert_int_equal(func.state, DYN_INSTALLED);
}

/* Inserting: a thread at an instruction inside the replaced bytes goes to its copy. */
static void test_install_moves_in(void **state)
{
	char err[256] = "";

	(void)state;
	setup(0, SITE + 4, SITE);
	func.state = DYN_PLANNED;
	assert_int_equal(dyn_install(&proc, &set, err, sizeof(err)), 0);
	assert_int_equal(threads[0].regs.rip, copy_of(2));
	assert_int_equal(threads[1].regs.rip, SITE); /* at the jmp: it will run the point */
	assert_memory_equal(fake.site, func.plan.bytes, func.plan.len);
	assert_int_equal(func.state, DYN_INSTALLED);
}

/* A PC inside the replaced bytes at no instruction of them: refused, nothing written. */
static void test_install_refuses_unmovable(void **state)
{
	char err[256] = "";

	(void)state;
	setup(0, SITE + 4, SITE + 2);
	assert_int_equal(dyn_install(&proc, &set, err, sizeof(err)), -1);
	assert_string_equal(err, "patching f: a thread stopped inside its first bytes cannot be "
			    "moved");
	assert_int_equal(threads[0].regs.rip, SITE + 4);
	assert_int_equal(threads[1].regs.rip, SITE + 2);
	assert_memory_equal(fake.site, code, func.plan.len);
	assert_int_equal(func.state, DYN_PLANNED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_shape),
		cmocka_unit_test(test_remove_runs_nothing_moved),
		cmocka_unit_test(test_remove_gives_up_untouched),
		cmocka_unit_test(test_install_moves_in),
		cmocka_unit_test(test_install_refuses_unmovable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
