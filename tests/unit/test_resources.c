/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of tool/dyn/resources.c and sync_vars.c on this very process: its sync variables
 * found in its DWARF (a global, an array's elements, a function's static, a typedef'd mutex, an
 * rwlock, a semaphore, a barrier, a condition variable) at their real addresses; focus names
 * resolved (name, name[i], an address) and refused (another kind, out of range, a whole array,
 * unknown); files open now with their descriptors, a second descriptor, a closed one; the same
 * lookups in the ELF file alone (link-time addresses); the refinement children of a path.
 */
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dyn/resources.h"

typedef pthread_mutex_t t_lock_t;

pthread_mutex_t t_hot = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t t_locks[3] = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
			       PTHREAD_MUTEX_INITIALIZER };
const volatile t_lock_t t_typed = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t t_rw = PTHREAD_RWLOCK_INITIALIZER;
pthread_cond_t t_cond = PTHREAD_COND_INITIALIZER;
static sem_t t_sem;
static pthread_barrier_t t_barrier;
static pthread_mutex_t *t_static_addr;

static pthread_mutex_t *static_one(void)
{
	static pthread_mutex_t t_static = PTHREAD_MUTEX_INITIALIZER;

	return &t_static;
}

static pid_t self;

static const struct dyn_resource *find(const struct dyn_resources *r, const char *path)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (!strcmp(r->v[i].path, path))
			return &r->v[i];
	return NULL;
}

static void expect_listed(const struct dyn_resources *r, const char *path, int kind,
			  const volatile void *addr)
{
	const struct dyn_resource *x = find(r, path);

	if (!x) {
		fail_msg("%s is not listed", path);
		return;
	}
	assert_int_equal(x->kind, kind);
	assert_int_equal(x->value, (int64_t)(uintptr_t)addr);
	assert_non_null(strstr(x->module, "test_resources"));
}

static int has(const char **v, size_t n, const char *path)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(v[i], path))
			return 1;
	return 0;
}

/* Refinements: the kinds below /SyncObject (once each), a kind's objects, nothing deeper. */
static void expect_below(const struct dyn_resources *r)
{
	const char *v[4096];
	size_t n = dyn_resources_below(r, "/SyncObject", v, 4096), i;

	assert_true(n >= 5 && n <= 5); /* this program has every kind */
	assert_true(has(v, n, "/SyncObject/mutex") && has(v, n, "/SyncObject/barrier"));
	n = dyn_resources_below(r, "/SyncObject/mutex", v, 4096);
	assert_true(has(v, n, "/SyncObject/mutex/t_hot") && has(v, n, "/SyncObject/mutex/t_locks[2]"));
	for (i = 0; i < n; i++)
		assert_int_equal(strncmp(v[i], "/SyncObject/mutex/", 18), 0);
	assert_int_equal(dyn_resources_below(r, "/SyncObject/mutex/t_hot", v, 4096), 0);
	assert_int_equal(dyn_resources_below(r, "/SyncObject/mutex", v, 1), 1);
}

static void test_list_sync(void **state)
{
	struct dyn_resources r;
	char err[256];

	(void)state;
	assert_int_equal(dyn_resources_list(self, DYN_RES_WANT_SYNC, &r, err, sizeof(err)), 0);
	expect_listed(&r, "/SyncObject/mutex/t_hot", DYN_RES_MUTEX, &t_hot);
	expect_listed(&r, "/SyncObject/mutex/t_locks[0]", DYN_RES_MUTEX, &t_locks[0]);
	expect_listed(&r, "/SyncObject/mutex/t_locks[2]", DYN_RES_MUTEX, &t_locks[2]);
	assert_null(find(&r, "/SyncObject/mutex/t_locks[3]"));
	assert_null(find(&r, "/SyncObject/mutex/t_locks"));
	expect_listed(&r, "/SyncObject/mutex/t_typed", DYN_RES_MUTEX, &t_typed);
	expect_listed(&r, "/SyncObject/mutex/t_static", DYN_RES_MUTEX, t_static_addr);
	expect_listed(&r, "/SyncObject/rwlock/t_rw", DYN_RES_RWLOCK, &t_rw);
	expect_listed(&r, "/SyncObject/cond/t_cond", DYN_RES_COND, &t_cond);
	expect_listed(&r, "/SyncObject/sem/t_sem", DYN_RES_SEM, &t_sem);
	expect_listed(&r, "/SyncObject/barrier/t_barrier", DYN_RES_BARRIER, &t_barrier);
	assert_null(find(&r, "/SyncObject/mutex/t_static_addr")); /* a pointer is not a mutex */
	expect_below(&r);
	dyn_resources_free(&r);
}

static int64_t value_of(const char *path, char *err, size_t n)
{
	int64_t v[4] = { 0 };
	uint32_t k = 9;

	if (dyn_resource_values(&self, path, v, 4, &k, err, n) != 0)
		return -1;
	assert_int_equal(k, 1);
	return v[0];
}

static void expect_refused(const char *path, const char *msg)
{
	char err[512] = "";

	assert_int_equal(value_of(path, err, sizeof(err)), -1);
	if (!strstr(err, msg))
		fail_msg("%s: got '%s', expected '%s'", path, err, msg);
}

static void test_resolve_sync(void **state)
{
	char err[512], path[64];

	(void)state;
	assert_int_equal(value_of("/SyncObject/mutex/t_hot", err, sizeof(err)),
			 (int64_t)(uintptr_t)&t_hot);
	assert_int_equal(value_of("/SyncObject/mutex/t_locks[1]", err, sizeof(err)),
			 (int64_t)(uintptr_t)&t_locks[1]);
	assert_int_equal(value_of("/SyncObject/mutex/t_static", err, sizeof(err)),
			 (int64_t)(uintptr_t)t_static_addr);
	assert_int_equal(value_of("/SyncObject/sem/t_sem", err, sizeof(err)),
			 (int64_t)(uintptr_t)&t_sem);
	snprintf(path, sizeof(path), "/SyncObject/mutex/%p", (void *)t_static_addr);
	assert_int_equal(value_of(path, err, sizeof(err)), (int64_t)(uintptr_t)t_static_addr);
	expect_refused("/SyncObject/rwlock/t_hot", "t_hot is a mutex, not a rwlock");
	expect_refused("/SyncObject/mutex/t_locks[3]", "t_locks has 3 elements");
	expect_refused("/SyncObject/mutex/t_locks", "t_locks is an array: name one element");
	expect_refused("/SyncObject/mutex/t_locks[x]", "an element is name[INDEX]");
	expect_refused("/SyncObject/mutex/no_such", "no mutex 'no_such' among the data of process");
	expect_refused("/SyncObject/mutex/0xzz", "a bad address");
	expect_refused("/SyncObject/spin/t_hot", "no sync object kind 'spin'");
}

static void test_files(void **state)
{
	char path[] = "/tmp/sonde-test-resources-XXXXXX", focus[64], err[256];
	struct dyn_resources r;
	int64_t fds[4];
	uint32_t n = 0;
	int fd = mkstemp(path), fd2;
	size_t i, seen = 0;

	(void)state;
	assert_true(fd >= 0);
	fd2 = open(path, O_RDONLY);
	assert_true(fd2 > fd);
	assert_int_equal(dyn_file_fds(self, path, fds, 4), 2);
	assert_int_equal(fds[0], fd);
	assert_int_equal(fds[1], fd2);
	assert_int_equal(dyn_resources_list(self, DYN_RES_WANT_FILES, &r, err, sizeof(err)), 0);
	snprintf(focus, sizeof(focus), "/Files%s", path);
	for (i = 0; i < r.n; i++) {
		assert_int_equal(r.v[i].kind, DYN_RES_FILE);
		seen += !strcmp(r.v[i].path, focus);
	}
	assert_int_equal(seen, 2);
	{
		const char *v[256];
		size_t k = dyn_resources_below(&r, "/Files", v, 256), once = 0;

		for (i = 0; i < k; i++)
			once += !strcmp(v[i], focus);
		assert_int_equal(once, 1); /* open twice, one file */
	}
	dyn_resources_free(&r);
	assert_int_equal(dyn_resource_values(&self, focus, fds, 4, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	close(fd);
	assert_int_equal(dyn_resource_values(&self, focus, fds, 4, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	assert_int_equal(fds[0], fd2);
	close(fd2);
	unlink(path);
	assert_int_equal(dyn_resource_values(&self, focus, fds, 4, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 0); /* not open: not an error */
}

/* The ELF file alone: link-time addresses, the same names. */
static void test_elf_file(void **state)
{
	char exe[4096], err[512];
	int64_t v[2], two;
	uint32_t n;
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	(void)state;
	assert_true(k > 0);
	exe[k] = 0;
	assert_int_equal(dyn_resource_values_elf(exe, "/SyncObject/mutex/t_locks[2]", v, 2, &n,
						 err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	two = v[0];
	assert_int_equal(dyn_resource_values_elf(exe, "/SyncObject/mutex/t_locks[1]", v, 2, &n, err,
						 sizeof(err)), 0);
	assert_int_equal(two - v[0], sizeof(pthread_mutex_t));
	/* this test is a PIE: the link-time address is the run-time one less the load bias */
	assert_int_equal(((int64_t)(uintptr_t)&t_locks[1] - v[0]) % 4096, 0);
	assert_int_equal(dyn_resource_values_elf(exe, "/SyncObject/cond/t_hot", v, 2, &n, err,
						 sizeof(err)), -1);
	assert_non_null(strstr(err, "t_hot is a mutex, not a cond"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_sync),
		cmocka_unit_test(test_resolve_sync),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_elf_file),
	};

	self = getpid();
	t_static_addr = static_one();
	sem_init(&t_sem, 0, 1);
	pthread_barrier_init(&t_barrier, NULL, 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
