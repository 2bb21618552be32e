/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of tool/inject/ (process control): a forked child with three threads is stopped,
 * read, written, made to call functions and system calls, and let go; its own checks (which
 * it reports in its exit status) say whether it noticed anything.
 * The child is a copy of this process, so its functions and globals have our addresses.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "inject/target.h"

static volatile uint64_t magic = 0x1122334455667788ull;
static volatile int usr1_seen, bad;
static volatile uint64_t spins[3];

uint64_t add6(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f);
uint64_t crash(void);
uint64_t forever(void);
double fp_work(int seed);

uint64_t add6(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f)
{
	volatile double x = (double)a * 1.5; /* uses vector registers */

	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + (uint64_t)(x - x);
}

uint64_t crash(void)
{
	volatile uint64_t *volatile p = NULL;

	return p[1];
}

uint64_t forever(void)
{
	for (;;)
		__asm__ volatile("" ::: "memory");
	return 0;
}

double fp_work(int seed)
{
	double x = 1.0 + seed, y = 0.25;
	int i;

	for (i = 0; i < 200000; i++) {
		x = x * 1.0000001 + y / (1.0 + (double)(i & 255));
		y = y * 0.999999 + 1e-7 * x;
	}
	return x + y;
}

/* Each thread checks its floating-point rounds: a disturbed vector state would show. */
static void *child_thread(void *arg)
{
	int k = (int)(intptr_t)arg;
	double first = fp_work(k);

	while (magic != 42) {
		if (fp_work(k) != first)
			bad = 1;
		spins[k]++;
	}
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	usr1_seen++;
}

/* Exit status: 10 * SIGUSR1 seen + 1 when a round differed; magic == 42 ends it. */
static void child(void)
{
	pthread_t th[2];
	int i;

	signal(SIGUSR1, on_usr1);
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, child_thread, (void *)(intptr_t)(i + 1));
	child_thread((void *)(intptr_t)0);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	_exit(10 * usr1_seen + bad);
}

struct fixture {
	pid_t pid;
	struct target t;
};

static int start_child(void **state)
{
	static struct fixture f;
	struct timespec ts = { 0, 50000000 };

	memset(&f, 0, sizeof(f));
	f.pid = fork();
	if (f.pid == 0)
		child();
	nanosleep(&ts, NULL); /* its threads are running */
	*state = &f;
	return f.pid > 0 ? 0 : -1;
}

static int end_child(void **state)
{
	struct fixture *f = *state;

	if (f->t.attached)
		target_detach(&f->t);
	kill(f->pid, SIGKILL);
	waitpid(f->pid, NULL, 0);
	return 0;
}

static void attach(struct fixture *f)
{
	char err[TARGET_ERR];
	int r = target_attach(&f->t, f->pid, err, sizeof(err));

	if (r != 0)
		print_error("attach: %s\n", err);
	assert_int_equal(r, 0);
}

/* Let go, end the child through its magic, and read its verdict. */
static int finish(struct fixture *f)
{
	uint64_t v = 42;
	int status;

	assert_int_equal(target_write(&f->t, (uint64_t)(uintptr_t)&magic, &v, sizeof(v)), 0);
	assert_int_equal(target_detach(&f->t), 0);
	assert_int_equal(waitpid(f->pid, &status, 0), f->pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_stop_read_write(void **state)
{
	struct fixture *f = *state;
	uint64_t v = 0, before[3];
	int i;

	attach(f);
	assert_int_equal(f->t.nthreads, 3);
	assert_true(f->t.stopped);
	assert_int_equal(f->t.threads[f->t.call].tid, f->pid);
	for (i = 0; i < f->t.nthreads; i++)
		assert_true(f->t.threads[i].regs.rip != 0);
	assert_int_equal(target_read(&f->t, (uint64_t)(uintptr_t)&magic, &v, sizeof(v)), 0);
	assert_true(v == 0x1122334455667788ull);
	/* stopped means stopped: no spin advances */
	assert_int_equal(target_read(&f->t, (uint64_t)(uintptr_t)spins, before, sizeof(before)), 0);
	usleep(20000);
	assert_int_equal(target_read(&f->t, (uint64_t)(uintptr_t)spins, &v, sizeof(v)), 0);
	assert_true(v == before[0]);
	/* the text of a function is read-only to the process, writable for the tracer */
	assert_int_equal(target_read(&f->t, (uint64_t)(uintptr_t)forever, &v, 1), 0);
	assert_int_equal(target_write(&f->t, (uint64_t)(uintptr_t)forever, &v, 1), 0);
	assert_int_equal(target_set_pc(&f->t, &f->t.threads[0], f->t.threads[0].regs.rip), 0);
	assert_int_not_equal(target_read(&f->t, 8, &v, sizeof(v)), 0);
	assert_non_null(strstr(target_error(&f->t), "cannot read"));
	assert_int_equal(finish(f), 0);
}

static void test_call(void **state)
{
	struct fixture *f = *state;
	uint64_t a[6] = { 1, 2, 3, 4, 5, 6 }, r = 0;
	struct user_regs_struct before;

	attach(f);
	before = f->t.threads[f->t.call].regs;
	assert_int_equal(target_call(&f->t, (uint64_t)(uintptr_t)add6, a, 6, &r), 0);
	assert_int_equal(r, 1 + 4 + 9 + 16 + 25 + 36);
	assert_int_equal(target_call(&f->t, (uint64_t)(uintptr_t)add6, a, 6, &r), 0);
	assert_memory_equal(&before, &f->t.threads[f->t.call].regs, sizeof(before));
	assert_int_equal(target_call(&f->t, (uint64_t)(uintptr_t)add6, a, 7, &r), -1);
	/* a crash in the called code is reported, the thread goes on as before */
	assert_int_equal(target_call(&f->t, (uint64_t)(uintptr_t)crash, NULL, 0, &r), -1);
	assert_non_null(strstr(target_error(&f->t), "crashed"));
	/* so is a call that never returns */
	f->t.call_timeout_ms = 100;
	assert_int_equal(target_call(&f->t, (uint64_t)(uintptr_t)forever, NULL, 0, &r), -1);
	assert_non_null(strstr(target_error(&f->t), "did not return"));
	f->t.call_timeout_ms = 10000;
	assert_int_equal(target_call(&f->t, (uint64_t)(uintptr_t)add6, a, 6, &r), 0);
	assert_int_equal(r, 91);
	assert_int_equal(finish(f), 0);
}

static int mapped(pid_t pid, uint64_t addr, const char *perms)
{
	char path[64], line[512];
	unsigned long long lo, hi;
	char p[8];
	FILE *fp;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fp = fopen(path, "r");
	while (fp && fgets(line, sizeof(line), fp))
		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, p) == 3 && addr >= lo && addr < hi)
			found = !strcmp(p, perms);
	if (fp)
		fclose(fp);
	return found;
}

static void test_syscalls(void **state)
{
	struct fixture *f = *state;
	uint64_t addr = 0, v = 0x5a5a5a5a, back = 0, a[1] = { 0 }, r = 0;

	attach(f);
	assert_int_equal(target_mmap(&f->t, 0, 8192, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS, &addr), 0);
	assert_true(addr != 0 && (addr & 4095) == 0);
	assert_true(mapped(f->pid, addr, "rw-p"));
	assert_int_equal(target_write(&f->t, addr + 100, &v, sizeof(v)), 0);
	assert_int_equal(target_read(&f->t, addr + 100, &back, sizeof(back)), 0);
	assert_true(back == v);
	assert_int_equal(target_mprotect(&f->t, addr, 4096, PROT_READ | PROT_EXEC), 0);
	assert_true(mapped(f->pid, addr, "r-xp"));
	assert_int_equal(target_munmap(&f->t, addr, 8192), 0);
	assert_false(mapped(f->pid, addr, "r-xp") || mapped(f->pid, addr, "rw-p"));
	assert_int_equal(target_syscall(&f->t, SYS_getpid, a, 0, &r), 0);
	assert_int_equal(r, f->pid);
	assert_int_equal(target_munmap(&f->t, 4097, 1), -1); /* EINVAL, reported */
	assert_non_null(strstr(target_error(&f->t), "munmap"));
	assert_int_equal(finish(f), 0);
}

static void test_signals_kept(void **state)
{
	struct fixture *f = *state;
	sigset_t wake;
	uint64_t a[6] = { 0 }, r;
	int i;

	attach(f);
	/* sent while held: kept pending by the kernel, or taken by the tracer and given back */
	kill(f->pid, SIGUSR1);
	assert_int_equal(target_call(&f->t, (uint64_t)(uintptr_t)add6, a, 6, &r), 0);
	assert_int_equal(target_resume(&f->t), 0);
	usleep(20000);
	assert_int_equal(target_stop(&f->t), 0);
	assert_int_equal(f->t.nthreads, 3);
	sigemptyset(&wake);
	for (i = 0; i < 2; i++) {
		kill(f->pid, SIGUSR1);
		assert_int_equal(target_run_for(&f->t, 30, &wake), 0);
	}
	assert_true(f->t.stopped);
	assert_true(f->t.paused_ns > 0);
	assert_int_equal(finish(f), 30);
}

static const char *lib; /* argv[1]: the stand-in runtime (tests/programs/attach_lib.c) */

static void inject_once(struct fixture *f, int hold_world, const char *dir, int want)
{
	struct target_inject_opts o = { NULL, lib, "sonde__attach", dir, 10, hold_world, 0 };
	int ret = -1, r = target_inject(&f->t, &o, &ret);

	if (r != 0)
		print_error("inject: %s\n", target_error(&f->t));
	assert_int_equal(r, 0);
	assert_int_equal(ret, want);
	assert_true(f->t.stopped); /* the world is stopped again */
	assert_int_equal(f->t.nthreads, 3);
}

static void test_inject(void **state)
{
	struct fixture *f = *state;
	char dir[] = "/tmp/sonde-test-inject-XXXXXX", path[128], fail[160], line[64];
	FILE *fp;

	if (!lib)
		skip();
	assert_non_null(mkdtemp(dir));
	attach(f);
	inject_once(f, 0, dir, 0);
	inject_once(f, 1, dir, 0);
	snprintf(fail, sizeof(fail), "%s-fail", dir);
	inject_once(f, 0, fail, 7);
	assert_int_equal(finish(f), 0);
	snprintf(path, sizeof(path), "%s/attach.%d", dir, f->pid);
	fp = fopen(path, "r");
	assert_non_null(fp);
	assert_non_null(fgets(line, sizeof(line), fp));
	assert_string_equal(line, "attach 1 loaded 1\n");
	assert_non_null(fgets(line, sizeof(line), fp));
	assert_string_equal(line, "attach 2 loaded 1\n");
	fclose(fp);
	unlink(path);
	rmdir(dir);
}

static void test_errors(void **state)
{
	struct target t;
	char err[TARGET_ERR];

	(void)state;
	assert_int_equal(target_attach(&t, 0x3fffffff, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no such process"));
	assert_int_equal(target_attach(&t, getpid(), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "sonde itself"));
	assert_int_equal(target_attach(&t, 1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "process 1"));
	assert_int_equal(target_attach(&t, -5, err, sizeof(err)), -1);
	assert_int_equal(target_read(&t, 0, err, 1), -1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stop_read_write, start_child, end_child),
		cmocka_unit_test_setup_teardown(test_call, start_child, end_child),
		cmocka_unit_test_setup_teardown(test_syscalls, start_child, end_child),
		cmocka_unit_test_setup_teardown(test_signals_kept, start_child, end_child),
		cmocka_unit_test_setup_teardown(test_inject, start_child, end_child),
		cmocka_unit_test(test_errors),
	};

	lib = argc > 1 ? argv[1] : NULL;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
