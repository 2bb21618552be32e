/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of local overhead compensation (tool/analysis/compensate.h, docs MODELS.md §2.2-2.3)
 * with values computed by hand:
 *   incl_c = incl - calls*o_in - desc_calls*o_full - desc_skipped*o_skip
 *   excl_c = excl - calls*o_in - child_calls*(o_full - o_in) - skipped*o_skip
 * both clamped at 0; a thread's overhead = desc_calls(root)*o_full + desc_skipped(root)*o_skip;
 * T_a = T_m - main overhead - the largest overhead among the other threads (fork-join).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "compensate.h"

#define EPS 1e-9

static const struct comp_costs costs = { .o_in = 10, .o_full = 25, .o_skip = 5 };

static void expect_node(const struct comp_node *n, uint64_t child_calls, uint64_t desc_calls,
			uint64_t desc_skipped, double incl_c, double excl_c)
{
	assert_int_equal(n->child_calls, child_calls);
	assert_int_equal(n->desc_calls, desc_calls);
	assert_int_equal(n->desc_skipped, desc_skipped);
	assert_float_equal(n->incl_c, incl_c, EPS);
	assert_float_equal(n->excl_c, excl_c, EPS);
}

/*
 * root -> main -> { a -> b, c }; main also made 2 unmeasured calls (skipped).
 *   node  calls  incl  excl  skipped
 *   root      0  1100   100        0
 *   main      1  1000   300        2
 *   a         2   500   200        0
 *   b         4   300   300        0
 *   c         1   200   200        0
 */
static void tree(struct comp_node *n)
{
	static const struct comp_node init[5] = {
		{ .parent = 0, .calls = 0, .incl = 1100, .excl = 100 },
		{ .parent = 0, .calls = 1, .incl = 1000, .excl = 300, .skipped = 2 },
		{ .parent = 1, .calls = 2, .incl = 500, .excl = 200 },
		{ .parent = 2, .calls = 4, .incl = 300, .excl = 300 },
		{ .parent = 1, .calls = 1, .incl = 200, .excl = 200 },
	};
	int i;

	for (i = 0; i < 5; i++)
		n[i] = init[i];
}

static void test_tree(void **state)
{
	struct comp_node n[5];

	(void)state;
	tree(n);
	comp_tree(n, 5, &costs);
	/* b: 300 - 4*10 */
	expect_node(&n[3], 0, 0, 0, 260, 260);
	/* a: incl 500 - 2*10 - 4*25 = 380; excl 200 - 2*10 - 4*(25-10) = 120 */
	expect_node(&n[2], 4, 4, 0, 380, 120);
	/* c: 200 - 10 */
	expect_node(&n[4], 0, 0, 0, 190, 190);
	/* main: incl 1000 - 10 - 7*25 - 2*5 = 805; excl 300 - 10 - 3*15 - 2*5 = 235 */
	expect_node(&n[1], 3, 7, 2, 805, 235);
	/* root: incl 1100 - 8*25 - 2*5 = 890; excl 100 - 1*15 = 85 */
	expect_node(&n[0], 1, 8, 2, 890, 85);
	/* the inputs are left alone */
	assert_int_equal(n[1].calls, 1);
	assert_int_equal(n[1].skipped, 2);
	assert_float_equal(n[1].incl, 1000, EPS);
	assert_float_equal(n[1].excl, 300, EPS);
}

/* Children stored anywhere after their parent: the same tree in another order. */
static void test_tree_order(void **state)
{
	struct comp_node n[5] = {
		{ .parent = 0, .calls = 0, .incl = 1100, .excl = 100 },
		{ .parent = 0, .calls = 1, .incl = 1000, .excl = 300, .skipped = 2 },
		{ .parent = 1, .calls = 1, .incl = 200, .excl = 200 }, /* c */
		{ .parent = 1, .calls = 2, .incl = 500, .excl = 200 }, /* a */
		{ .parent = 3, .calls = 4, .incl = 300, .excl = 300 }, /* b */
	};

	(void)state;
	comp_tree(n, 5, &costs);
	expect_node(&n[0], 1, 8, 2, 890, 85);
	expect_node(&n[1], 3, 7, 2, 805, 235);
	expect_node(&n[2], 0, 0, 0, 190, 190);
	expect_node(&n[3], 4, 4, 0, 380, 120);
	expect_node(&n[4], 0, 0, 0, 260, 260);
}

/* Outputs are recomputed, not accumulated: a second pass gives the same. */
static void test_tree_twice(void **state)
{
	struct comp_node n[5];

	(void)state;
	tree(n);
	comp_tree(n, 5, &costs);
	comp_tree(n, 5, &costs);
	expect_node(&n[1], 3, 7, 2, 805, 235);
	expect_node(&n[0], 1, 8, 2, 890, 85);
}

/* Unmeasured calls deep in the tree count in every ancestor's inclusive time. */
static void test_skipped_deep(void **state)
{
	struct comp_node n[3] = {
		{ .parent = 0, .incl = 1000, .excl = 0 },
		{ .parent = 0, .calls = 1, .incl = 1000, .excl = 400 },
		{ .parent = 1, .calls = 3, .incl = 600, .excl = 600, .skipped = 10 },
	};

	(void)state;
	comp_tree(n, 3, &costs);
	/* leaf: incl 600 - 30 - 10*5 = 520; excl 600 - 30 - 10*5 = 520 */
	expect_node(&n[2], 0, 0, 10, 520, 520);
	/* mid: incl 1000 - 10 - 3*25 - 10*5 = 865; excl 400 - 10 - 3*15 = 345 */
	expect_node(&n[1], 3, 3, 10, 865, 345);
	/* root: incl 1000 - 4*25 - 50 = 850; excl 0 - 15 -> 0 */
	expect_node(&n[0], 1, 4, 10, 850, 0);
	assert_float_equal(comp_thread_overhead(&n[0], &costs), 4 * 25 + 10 * 5, EPS);
}

/* Compensation never goes below 0. */
static void test_clamp(void **state)
{
	struct comp_node n[3] = {
		{ .parent = 0, .incl = 100, .excl = 10 },
		{ .parent = 0, .calls = 1, .incl = 90, .excl = 2 },
		{ .parent = 1, .calls = 20, .incl = 88, .excl = 88 },
	};

	(void)state;
	comp_tree(n, 3, &costs);
	expect_node(&n[2], 0, 0, 0, 0, 0); /* 88 - 200 */
	expect_node(&n[1], 20, 20, 0, 0, 0);
	expect_node(&n[0], 1, 21, 0, 0, 0);
}

/* A thread with nothing measured: only its root. */
static void test_root_only(void **state)
{
	struct comp_node n[1] = { { .parent = 0, .incl = 500, .excl = 500, .skipped = 3 } };

	(void)state;
	comp_tree(n, 1, &costs);
	expect_node(&n[0], 0, 0, 3, 485, 485);
	assert_float_equal(comp_thread_overhead(&n[0], &costs), 15, EPS);
}

static void test_thread_overhead(void **state)
{
	struct comp_node n[5];

	(void)state;
	tree(n);
	comp_tree(n, 5, &costs);
	/* 8 measured pairs and 2 unmeasured ones */
	assert_float_equal(comp_thread_overhead(&n[0], &costs), 8 * 25 + 2 * 5, EPS);
	/* a subtree: a's 4 descendants */
	assert_float_equal(comp_thread_overhead(&n[2], &costs), 4 * 25, EPS);
}

static void test_total(void **state)
{
	const double others[3] = { 50, 120, 80 };
	const double one[1] = { 300 };

	(void)state;
	/* sequential: T_m - main overhead */
	assert_float_equal(comp_total(10000, 210, NULL, 0), 9790, EPS);
	/* fork-join: only the largest of the other threads' overheads */
	assert_float_equal(comp_total(10000, 210, others, 3), 10000 - 210 - 120, EPS);
	assert_float_equal(comp_total(10000, 210, others, 1), 10000 - 210 - 50, EPS);
	assert_float_equal(comp_total(10000, 0, one, 1), 9700, EPS);
	/* clamped at 0 */
	assert_float_equal(comp_total(100, 210, NULL, 0), 0, EPS);
	assert_float_equal(comp_total(300, 100, one, 1), 0, EPS);
}

/* The whole pipeline on the tree: its thread overhead feeds T_a. */
static void test_total_from_tree(void **state)
{
	struct comp_node main_t[5], worker[3] = {
		{ .parent = 0, .incl = 700, .excl = 0 },
		{ .parent = 0, .calls = 1, .incl = 700, .excl = 100 },
		{ .parent = 1, .calls = 30, .incl = 600, .excl = 600 },
	};
	double other;

	(void)state;
	tree(main_t);
	comp_tree(main_t, 5, &costs);
	comp_tree(worker, 3, &costs);
	other = comp_thread_overhead(&worker[0], &costs);
	assert_float_equal(other, 31 * 25, EPS);
	assert_float_equal(comp_total(5000, comp_thread_overhead(&main_t[0], &costs), &other, 1),
			   5000 - 210 - 775, EPS);
}
/*
 * The uncertainty of an in-situ price: o_skip for every measured pair and every unmeasured
 * call (their own cost in situ is not observable), plus twice the standard error per measured
 * pair; the standard error shrinks with the pairs as a median's.
 */
static void test_insitu_err(void **state)
{
	double se16 = 1.2533 * 2.0 / 4.0; /* spread 2 ns over sqrt(16) pairs */

	(void)state;
	assert_float_equal(comp_insitu_err(1000, 0, 3.0, 3.0, 0, 16), 3000, EPS);
	assert_float_equal(comp_insitu_err(1000, 50, 3.0, 3.0, 0, 16), 3150, EPS);
	assert_float_equal(comp_insitu_err(1000, 50, 3.0, 3.0, 2.0, 16), (3150 + 2000 * se16), EPS);
	assert_float_equal(comp_insitu_err(1000, 50, 3.0, 3.0, 2.0, 64), (3150 + 1000 * se16), EPS);
	assert_float_equal(comp_insitu_err(0, 0, 3.0, 3.0, 2.0, 0), 0, EPS);
	assert_float_equal(comp_insitu_err(10, 0, 0, 0, 2.0, 0), (10 * 2 * 1.2533 * 2.0), EPS);
	/* bare windows: what a measured pair's price cannot see is the stub, not o_skip; the
	 * unmeasured calls (skip path) stay at o_skip */
	assert_float_equal(comp_insitu_err(1000, 50, 0.5, 3.0, 0, 16), 500 + 150, EPS);
	assert_float_equal(comp_insitu_unseen(16, 16, 0.5, 3.0), 0.5, EPS);
	assert_float_equal(comp_insitu_unseen(16, 0, 0.5, 3.0), 3.0, EPS);
	assert_float_equal(comp_insitu_unseen(16, 4, 0.5, 3.0), (4 * 0.5 + 12 * 3.0) / 16, EPS);
	assert_float_equal(comp_insitu_unseen(0, 0, 0.5, 3.0), 3.0, EPS);
	/* the other functions' pairs, charged the hot leaf's price: up to that price each */
	assert_float_equal(comp_insitu_others_err(1000, 900, 4.0), 400, EPS);
	assert_float_equal(comp_insitu_others_err(900, 900, 4.0), 0, EPS);
	assert_float_equal(comp_insitu_others_err(800, 900, 4.0), 0, EPS);
}

/*
 * Priced by calibration: the share of each pair that work like the program's can hide (o_full
 * 20 against 5 next to a chain: three quarters), of the measured pairs' and the unmeasured
 * ones' prices; never less than the floor given; the floor alone when nothing hides or the
 * overlap was not measured.
 */
static void test_calib_err(void **state)
{
	(void)state;
	assert_float_equal(comp_calib_err(1000, 0, 20, 4, 5, 0), 15000, EPS);
	assert_float_equal(comp_calib_err(1000, 100, 20, 4, 5, 0), (15000 + 0.75 * 400), EPS);
	assert_float_equal(comp_calib_err(1000, 100, 20, 4, 5, 20000), 20000, EPS);
	assert_float_equal(comp_calib_err(1000, 100, 20, 4, 20, 2000), 2000, EPS);
	assert_float_equal(comp_calib_err(1000, 100, 20, 4, 25, 2000), 2000, EPS);
	assert_float_equal(comp_calib_err(1000, 100, 20, 4, -1, 2000), 2000, EPS);
	assert_float_equal(comp_calib_err(1000, 100, 20, 4, 0, 0), (20000 + 400), EPS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_tree_order),
		cmocka_unit_test(test_tree_twice),
		cmocka_unit_test(test_skipped_deep),
		cmocka_unit_test(test_clamp),
		cmocka_unit_test(test_root_only),
		cmocka_unit_test(test_thread_overhead),
		cmocka_unit_test(test_total),
		cmocka_unit_test(test_total_from_tree),
		cmocka_unit_test(test_insitu_err),
		cmocka_unit_test(test_calib_err),
	};

	return cmocka_run_group_tests_name("compensate", tests, NULL, NULL);
}
