/* SPDX-License-Identifier: MIT */
/* Unit tests of the calibration statistics (runtime/stats.c) and of seed 004's clock rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "clock_error.h"

void rt_trimmed_stats(double *v, int n, double *mean, double *sd);

/* Seed 004's example: dt = 1 ms, 5 % -> 21 ms (the slide's 70 ms adds 0.05 s for dt: a slip). */
static void test_min_interval(void **state)
{
	(void)state;
	assert_float_equal(clock_min_interval(1e-3, 0.05), 0.021, 1e-12);
	assert_float_equal(clock_min_interval(14.0, 0.01), 1414.0, 1e-9);
	assert_float_equal(clock_min_interval(5.0, 0.0), 0.0, 0.0);
}

/* The slowest tenth is dropped whatever the input order; the rest averaged. */
static void test_trimmed_drops_slow_tail(void **state)
{
	double v[10] = { 900, 10, 12, 10, 12, 10, 12, 10, 12, 11 }, mean, sd;

	(void)state;
	rt_trimmed_stats(v, 10, &mean, &sd);
	assert_float_equal(mean, 11.0, 1e-12);
	assert_float_equal(sd, 1.0, 1e-12);
	assert_float_equal(v[0], 10, 0);
	assert_float_equal(v[9], 900, 0); /* sorted in place */
}

/* Fewer than ten values: nothing is dropped. */
static void test_trimmed_small(void **state)
{
	double v[3] = { 3, 1, 2 }, mean, sd;
	double one[1] = { 7 };

	(void)state;
	rt_trimmed_stats(v, 3, &mean, &sd);
	assert_float_equal(mean, 2.0, 1e-12);
	assert_float_equal(sd, 1.0, 1e-12);
	rt_trimmed_stats(one, 1, &mean, &sd);
	assert_float_equal(mean, 7.0, 0);
	assert_float_equal(sd, 0.0, 0);
	rt_trimmed_stats(one, 0, &mean, &sd);
	assert_float_equal(mean, 0.0, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_min_interval),
		cmocka_unit_test(test_trimmed_drops_slow_tail),
		cmocka_unit_test(test_trimmed_small),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
