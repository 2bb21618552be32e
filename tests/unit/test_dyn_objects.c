/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the RECORD primitive's object table (runtime/dyn/objects.c): counts exact under
 * threads recording the same objects and under signal handlers recording on top of an
 * interrupted recording; kinds kept apart; a session's figures from its start; address 0
 * ignored and addresses too high dropped; through a real entry trampoline, the call's site;
 * and, last (it fills the table for good), a full table: what is kept is exact, what is not is
 * counted, nothing else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>

#include <cmocka.h>

#include "dyn_test.h"

static uint8_t reply[SPROTO_MAX_MESSAGE];

/* The table's figures now, read back through the protocol's reader. */
static void read_table(uint32_t kinds, struct sproto_msg *m)
{
	size_t n = dyn_objects_reply(reply, sizeof(reply), kinds);
	struct sproto_header h;
	char err[256];

	assert_true(n > 0);
	assert_int_equal(sproto_frame(reply, n, &h, err, sizeof(err)), (long)n);
	assert_int_equal(sproto_decode(&h, reply + SPROTO_HEADER_SIZE, m, err, sizeof(err)), 0);
}

/* The entry of (kind, addr), or one with addr 0. */
static struct sproto_object find(const struct sproto_msg *m, unsigned kind, uint64_t addr)
{
	struct sproto_object o;
	uint32_t i;

	for (i = 0; i < m->u.objects.n; i++) {
		sproto_object(&m->u.objects, i, &o);
		if (o.kind == kind && o.addr == addr)
			return o;
	}
	memset(&o, 0, sizeof(o));
	return o;
}

static int setup(void **state)
{
	(void)state;
	dyn_test_reset();
	dyn_objects_reset();
	return 0;
}

static void test_basic(void **state)
{
	struct sproto_msg m;
	struct sproto_object o;
	int i;

	(void)state;
	read_table(0x1f, &m);
	assert_int_equal(m.u.objects.n, 0);
	dyn_record(SPROTO_OBJ_MUTEX, 0x5000, 1, 0x401234);
	for (i = 0; i < 10; i++)
		dyn_record(SPROTO_OBJ_MUTEX, 0x5000, 0, 0);
	dyn_record(SPROTO_OBJ_SEM, 0x5000, 0, 0); /* the same address as another kind */
	dyn_record(SPROTO_OBJ_MUTEX, 0x4000, 0, 0);
	dyn_record(SPROTO_OBJ_COND, 0, 0, 0);     /* ignored */
	read_table(0x1f, &m);
	assert_int_equal(m.u.objects.slots, SPROTO_MAX_OBJECTS);
	assert_int_equal(m.u.objects.n, 3);
	sproto_object(&m.u.objects, 0, &o); /* by kind, then address */
	assert_int_equal(o.addr, 0x4000);
	o = find(&m, SPROTO_OBJ_MUTEX, 0x5000);
	assert_int_equal(o.uses, 10);
	assert_int_equal(o.inits, 1);
	assert_int_equal(o.site, 0x401234);
	o = find(&m, SPROTO_OBJ_SEM, 0x5000);
	assert_int_equal(o.uses, 1);
	assert_int_equal(o.site, 0);
	read_table(1u << SPROTO_OBJ_SEM, &m); /* one kind */
	assert_int_equal(m.u.objects.n, 1);
	/* a new session: nothing seen since; the site is kept */
	dyn_objects_reset();
	read_table(0x1f, &m);
	assert_int_equal(m.u.objects.n, 0);
	dyn_record(SPROTO_OBJ_MUTEX, 0x5000, 0, 0);
	read_table(0x1f, &m);
	assert_int_equal(m.u.objects.n, 1);
	o = find(&m, SPROTO_OBJ_MUTEX, 0x5000);
	assert_int_equal(o.uses, 1);
	assert_int_equal(o.inits, 0);
	assert_int_equal(o.site, 0x401234);
	/* an address no user-space object has: dropped, counted */
	dyn_record(SPROTO_OBJ_RWLOCK, SPROTO_OBJ_ADDR_LIMIT + 8, 0, 0);
	read_table(0x1f, &m);
	assert_int_equal(m.u.objects.dropped[SPROTO_OBJ_RWLOCK], 1);
	assert_int_equal(m.u.objects.n, 1);
}

/* ---- threads ---- */

#define THREADS 4
#define ROUNDS 100000
#define SHARED 16

static void *recorder(void *arg)
{
	long k = (long)arg;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		dyn_record(SPROTO_OBJ_MUTEX, 0x10000 + 64 * (uint64_t)(i % SHARED), 0, 0);
		dyn_record(SPROTO_OBJ_BARRIER, 0x20000 + 64 * (uint64_t)k, i == 0, 0x1000 + k);
	}
	return NULL;
}

static void test_threads(void **state)
{
	pthread_t t[THREADS];
	struct sproto_msg m;
	struct sproto_object o;
	long k;
	int i;

	(void)state;
	for (k = 0; k < THREADS; k++)
		assert_int_equal(pthread_create(&t[k], NULL, recorder, (void *)k), 0);
	for (k = 0; k < THREADS; k++)
		pthread_join(t[k], NULL);
	read_table(0x1f, &m);
	assert_int_equal(m.u.objects.n, SHARED + THREADS);
	for (i = 0; i < SHARED; i++) {
		o = find(&m, SPROTO_OBJ_MUTEX, 0x10000 + 64 * (uint64_t)i);
		assert_int_equal(o.uses, THREADS * ROUNDS / SHARED);
	}
	for (k = 0; k < THREADS; k++) {
		o = find(&m, SPROTO_OBJ_BARRIER, 0x20000 + 64 * (uint64_t)k);
		assert_int_equal(o.uses, ROUNDS - 1);
		assert_int_equal(o.inits, 1);
		assert_int_equal(o.site, 0x1000 + (uint64_t)k);
	}
}

/* ---- signals: a handler records on top of a recording it interrupted ---- */

static volatile sig_atomic_t handled;
static volatile int stop_kicking;

static void on_signal(int sig)
{
	(void)sig;
	dyn_record(SPROTO_OBJ_SEM, 0x30000, 0, 0); /* the object being recorded, */
	dyn_record(SPROTO_OBJ_SEM, 0x30040, 0, 0); /* another one, */
	dyn_record(SPROTO_OBJ_SEM, 0x30000 + 64 * (uint64_t)(handled % 32) + 4096, 0, 0); /* new ones */
	handled++;
}

static void *kicker(void *arg)
{
	pthread_t victim = *(pthread_t *)arg;

	while (!stop_kicking)
		pthread_kill(victim, SIGUSR1);
	return NULL;
}

static void test_signals(void **state)
{
	struct sigaction sa, old;
	pthread_t self = pthread_self(), k;
	struct sproto_msg m;
	uint64_t extra = 0;
	int i;

	(void)state;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, &old);
	handled = 0;
	stop_kicking = 0;
	assert_int_equal(pthread_create(&k, NULL, kicker, &self), 0);
	for (i = 0; i < 2 * ROUNDS || handled < 100; i++)
		dyn_record(SPROTO_OBJ_SEM, 0x30000, 0, 0);
	stop_kicking = 1;
	pthread_join(k, NULL);
	sigaction(SIGUSR1, &old, NULL);
	read_table(1u << SPROTO_OBJ_SEM, &m);
	assert_int_equal(find(&m, SPROTO_OBJ_SEM, 0x30000).uses, (uint64_t)i + (uint64_t)handled);
	assert_int_equal(find(&m, SPROTO_OBJ_SEM, 0x30040).uses, (uint64_t)handled);
	for (i = 0; i < 32; i++)
		extra += find(&m, SPROTO_OBJ_SEM, 0x30000 + 64 * (uint64_t)i + 4096).uses;
	assert_int_equal(extra, (uint64_t)handled);
	assert_int_equal(m.u.objects.dropped[SPROTO_OBJ_SEM], 0);
}

/* ---- through an entry trampoline ---- */

/* RECORD at the entry of tr_add: its first argument, and where the call returns. */
static void test_trampoline(void **state)
{
	struct sproto_action a = { SPROTO_AT_ENTRY, SPROTO_RECORD, SPROTO_PRED_NONE, 0,
				   SPROTO_OBJ_COND, 0, SPROTO_RECORD_INIT, 0 };
	struct sproto_msg m;
	struct sproto_object o;
	const uint8_t *site;

	(void)state;
	assert_int_equal(set_point(P_ADD, 1, &a), 0);
	assert_int_equal(tr_add(0x77000, 1), 0x77001);
	a.value = SPROTO_RECORD_USE;
	assert_int_equal(set_point(P_ADD, 1, &a), 0);
	assert_int_equal(tr_add(0x77000, 2), 0x77002);
	assert_int_equal(tr_add(0x77000, 3), 0x77003);
	dyn_points_clear(P_ADD, 1);
	assert_int_equal(tr_add(0x77000, 4), 0x77004); /* not recorded */
	read_table(1u << SPROTO_OBJ_COND, &m);
	o = find(&m, SPROTO_OBJ_COND, 0x77000);
	assert_int_equal(o.inits, 1);
	assert_int_equal(o.uses, 2);
	site = (const uint8_t *)(uintptr_t)o.site;
	assert_non_null(site);
	assert_int_equal(site[-5], 0xe8); /* the return address of a call rel32 */
	assert_null(dyn_self); /* RECORD needs no thread state */
}

/* ---- last: a full table ---- */

static void test_full(void **state)
{
	const uint32_t many = SPROTO_MAX_OBJECTS + 500;
	struct sproto_msg m;
	struct sproto_object o;
	uint64_t kept = 0, lost;
	uint32_t i;

	(void)state;
	for (i = 0; i < many; i++) {
		dyn_record(SPROTO_OBJ_RWLOCK, 0x100000 + 64 * (uint64_t)i, 0, 0);
		dyn_record(SPROTO_OBJ_RWLOCK, 0x100000 + 64 * (uint64_t)i, 0, 0);
	}
	read_table(0x1f, &m);
	assert_true(m.u.objects.n <= SPROTO_MAX_OBJECTS);
	for (i = 0; i < m.u.objects.n; i++) {
		sproto_object(&m.u.objects, i, &o);
		if (o.kind != SPROTO_OBJ_RWLOCK || o.addr < 0x100000)
			continue;
		assert_int_equal(o.uses, 2); /* a kept object is exact */
		kept++;
	}
	lost = m.u.objects.dropped[SPROTO_OBJ_RWLOCK];
	assert_true(lost > 0 && lost % 2 == 0); /* both recordings of a dropped object */
	assert_int_equal(kept + lost / 2, many);
	/* most of the table is used before objects are dropped (64 slots probed) */
	assert_true(kept >= SPROTO_MAX_OBJECTS * 8 / 10);
	printf("# full table: %llu of %u objects kept, %llu recordings dropped\n",
	       (unsigned long long)kept, many, (unsigned long long)lost);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_basic, setup),
		cmocka_unit_test_setup(test_threads, setup),
		cmocka_unit_test_setup(test_signals, setup),
		cmocka_unit_test_setup(test_trampoline, setup),
		cmocka_unit_test_setup(test_full, setup),
	};

	dyn_test_init();
	return cmocka_run_group_tests_name("dyn_objects", tests, NULL, NULL);
}
