/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the piggyback's type table (runtime/mpi/mpi_pbtypes.c) against fake
 * PMPI_Type_create_struct, _commit and _free defined here (the executable's definitions come
 * before libmpi's, which only lends MPI_INT64_T): every type made is followed, a freed handle is
 * given out again by the next creation (as a library may), and a type used or freed after it was
 * freed fails the test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../runtime/mpi/mpi_pbtypes.h"

#define FAKES 1024

static struct {
	int live[FAKES], committed[FAKES];
	int creates, frees, fail_next;
	int len[2];
	MPI_Aint disp[2];
	MPI_Datatype kinds[2];
} fk;

static MPI_Datatype handle(int i)
{
	return (MPI_Datatype)(uintptr_t)(0x10000 + 16 * i);
}

static int index_of(MPI_Datatype t)
{
	uintptr_t v = (uintptr_t)t;

	if (v < 0x10000 || (v - 0x10000) % 16 || (v - 0x10000) / 16 >= FAKES)
		return -1;
	return (int)((v - 0x10000) / 16);
}

/* A type handle the program made (not the table): another range. */
static MPI_Datatype user(int i)
{
	return (MPI_Datatype)(uintptr_t)(0x900000 + 16 * i);
}

int PMPI_Type_create_struct(int n, const int len[], const MPI_Aint disp[],
			    const MPI_Datatype kinds[], MPI_Datatype *out)
{
	int i;

	assert_int_equal(n, 2);
	if (fk.fail_next) {
		fk.fail_next = 0;
		return MPI_ERR_TYPE;
	}
	for (i = 0; i < FAKES && fk.live[i]; i++)
		;
	assert_true(i < FAKES);
	fk.live[i] = 1;
	fk.committed[i] = 0;
	fk.creates++;
	memcpy(fk.len, len, sizeof(fk.len));
	memcpy(fk.disp, disp, sizeof(fk.disp));
	memcpy(fk.kinds, kinds, sizeof(fk.kinds));
	*out = handle(i); /* the lowest free: a freed handle comes back at once */
	return MPI_SUCCESS;
}

int PMPI_Type_commit(MPI_Datatype *t)
{
	int i = index_of(*t);

	assert_true(i >= 0 && fk.live[i]);
	fk.committed[i] = 1;
	return MPI_SUCCESS;
}

int PMPI_Type_free(MPI_Datatype *t)
{
	int i = index_of(*t);

	assert_true(i >= 0);
	assert_true(fk.live[i]); /* a double free fails here */
	fk.live[i] = 0;
	fk.frees++;
	*t = MPI_DATATYPE_NULL;
	return MPI_SUCCESS;
}

/* A type the table returned is fit to be used now: made, committed, not freed. */
static void usable(MPI_Datatype t)
{
	int i = index_of(t);

	assert_true(i >= 0);
	assert_true(fk.live[i]);
	assert_true(fk.committed[i]);
}

static char buf[4096];
static char *slot = buf + 2048;

static int setup(void **state)
{
	(void)state;
	memset(&fk, 0, sizeof(fk));
	mpi_pb_types_reset(0);
	return 0;
}

static MPI_Datatype get(MPI_Datatype dt, int count, int at)
{
	MPI_Datatype t = mpi_pb_type(buf + at, count, dt, slot);

	usable(t);
	return t;
}

/* The same buffer again: the committed type again, no call into the library. */
static void test_hit(void **state)
{
	MPI_Datatype t = get(user(1), 3, 8);

	(void)state;
	assert_int_equal(fk.creates, 1);
	/* {2 × MPI_INT64_T at the slot, 3 × dt at buf}, relative to buf */
	assert_int_equal(fk.len[0], 2);
	assert_int_equal(fk.len[1], 3);
	assert_int_equal(fk.disp[0], slot - (buf + 8));
	assert_int_equal(fk.disp[1], 0);
	assert_true(fk.kinds[0] == MPI_INT64_T && fk.kinds[1] == user(1));
	assert_true(get(user(1), 3, 8) == t);
	assert_true(get(user(1), 3, 8) == t);
	assert_int_equal(fk.creates, 1);
	assert_int_equal(mpi_pb_type_stats.hits, 2);
	assert_int_equal(mpi_pb_type_stats.built, 1);
}

/* Each part of the key makes another type: type, count, the buffer against the slot. */
static void test_key(void **state)
{
	MPI_Datatype a = get(user(1), 3, 8), b = get(user(2), 3, 8), c = get(user(1), 4, 8),
		     d = get(user(1), 3, 16);

	(void)state;
	assert_int_equal(fk.creates, 4);
	assert_true(a != b && a != c && a != d && b != c && b != d && c != d);
	assert_true(get(user(2), 3, 8) == b);
	assert_true(get(user(1), 4, 8) == c);
	assert_true(get(user(1), 3, 16) == d);
	assert_true(get(user(1), 3, 8) == a);
	assert_int_equal(fk.creates, 4);
}

/* n buffer offsets whose keys (user(1), 1, offset) fall in one set. */
static int same_set(int *at, int n)
{
	uint32_t s = 0;
	int i, k = 0;

	for (i = 0; i < 2000 && k < n; i++) {
		uint32_t si = mpi_pb_type_set(user(1), 1, slot - (buf + i));

		if (k == 0)
			s = si;
		if (si == s)
			at[k++] = i;
	}
	return k;
}

/*
 * A full set: a miss replaces the least recently used entry, not the one looked up just before
 * (MPI_Sendrecv looks up its send type, then its receive type, then uses both).
 */
static void test_lru(void **state)
{
	int at[PB_WAYS + 2], i;
	MPI_Datatype t[PB_WAYS + 2], send, recv;

	(void)state;
	assert_int_equal(same_set(at, PB_WAYS + 2), PB_WAYS + 2);
	for (i = 0; i < PB_WAYS; i++)
		t[i] = get(user(1), 1, at[i]);
	assert_int_equal(fk.creates, PB_WAYS);
	send = get(user(1), 1, at[0]); /* the oldest, now the latest used */
	assert_true(send == t[0]);
	recv = get(user(1), 1, at[PB_WAYS]);
	usable(send); /* still there for the call that uses both */
	assert_int_equal(fk.frees, 1);
	assert_int_equal(mpi_pb_type_stats.evicted, 1);
	assert_int_equal(fk.live[index_of(t[1])], 0); /* the least recently used went */
	assert_true(get(user(1), 1, at[0]) == send);
	assert_true(get(user(1), 1, at[PB_WAYS]) == recv);
	for (i = 2; i < PB_WAYS; i++)
		assert_true(get(user(1), 1, at[i]) == t[i]);
	assert_int_equal(fk.creates, PB_WAYS + 1);
	get(user(1), 1, at[1]); /* made again, replacing at[0] (the least recent now) */
	assert_int_equal(fk.creates, PB_WAYS + 2);
	get(user(1), 1, at[0]);
	assert_int_equal(fk.creates, PB_WAYS + 3);
}

/* The same after 2^31 lookups that left the other ways alone: the one looked up just before is
 * still the newest (a 32-bit clock compared by differences takes it for the oldest). */
static void test_lru_long(void **state)
{
	int at[PB_WAYS + 1], i;
	MPI_Datatype send;

	(void)state;
	assert_int_equal(same_set(at, PB_WAYS + 1), PB_WAYS + 1);
	for (i = 0; i < PB_WAYS; i++)
		get(user(1), 1, at[i]);
	mpi_pb_clock += (1ull << 31) + 10; /* as many lookups elsewhere */
	send = get(user(1), 1, at[0]);
	get(user(1), 1, at[PB_WAYS]);
	usable(send);
	assert_int_equal(fk.frees, 1);
}

/*
 * The program frees its type: the entries built on it go (their types freed), the others stay;
 * a type the program makes next may get the same handle, which must not meet the old entry.
 */
static void test_forget(void **state)
{
	MPI_Datatype a = get(user(1), 2, 8), b = get(user(2), 2, 8), a2 = get(user(1), 5, 24);

	(void)state;
	mpi_pb_type_forget(user(1));
	assert_int_equal(mpi_pb_type_stats.dropped, 2);
	assert_int_equal(fk.live[index_of(a)], 0);
	assert_int_equal(fk.live[index_of(a2)], 0);
	assert_true(get(user(2), 2, 8) == b);
	assert_int_equal(fk.creates, 3);
	get(user(1), 2, 8); /* user(1) is now another type: made anew */
	assert_int_equal(fk.creates, 4);
	assert_true(fk.kinds[1] == user(1));
	mpi_pb_type_forget(user(3)); /* unknown: nothing happens */
	assert_int_equal(fk.frees, 2);
}

/* More keys than the table holds: as many types made as keys, at most the table's size alive,
 * every other one freed exactly once (the fake fails a double free). */
static void test_churn(void **state)
{
	int i, live = 0;

	(void)state;
	for (i = 0; i < 1000; i++)
		get(user(1), 1, i);
	assert_int_equal(fk.creates, 1000);
	for (i = 0; i < FAKES; i++)
		live += fk.live[i];
	assert_true(live <= (int)(PB_SETS * PB_WAYS));
	assert_int_equal(fk.frees, 1000 - live);
	assert_int_equal(mpi_pb_type_stats.evicted, (uint64_t)fk.frees);
	mpi_pb_types_reset(1);
	assert_int_equal(fk.frees, 1000);
	assert_int_equal(mpi_pb_type_stats.built, 0);
}

/* The library refuses: no type, nothing kept, the next lookup tries again. */
static void test_failed(void **state)
{
	(void)state;
	fk.fail_next = 1;
	assert_true(mpi_pb_type(buf, 1, user(1), slot) == MPI_DATATYPE_NULL);
	assert_int_equal(mpi_pb_type_stats.failed, 1);
	get(user(1), 1, 0);
	assert_int_equal(fk.creates, 1);
	assert_int_equal(mpi_pb_type_stats.built, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_hit, setup),
		cmocka_unit_test_setup(test_key, setup),
		cmocka_unit_test_setup(test_lru, setup),
		cmocka_unit_test_setup(test_lru_long, setup),
		cmocka_unit_test_setup(test_forget, setup),
		cmocka_unit_test_setup(test_churn, setup),
		cmocka_unit_test_setup(test_failed, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
