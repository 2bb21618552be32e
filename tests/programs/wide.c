/* SPDX-License-Identifier: MIT */
/*
 * Names longer than a narrow terminal leaves for them (tests/integration/t_views.py fits every
 * table to COLUMNS): a function, a lock, a counter and a phase with long names, and a file whose
 * path is argv[1]. 1000 calls of the long-named function, each taking the lock once.
 */
#include <pthread.h>
#include <stdio.h>

#include "sonde.h"

static pthread_mutex_t a_lock_with_a_rather_long_name_to_be_elided_on_narrow_terminals =
	PTHREAD_MUTEX_INITIALIZER;
static volatile long sink;

__attribute__((noinline)) static void
a_function_whose_name_is_much_longer_than_what_a_narrow_terminal_leaves(int i)
{
	pthread_mutex_lock(&a_lock_with_a_rather_long_name_to_be_elided_on_narrow_terminals);
	sink += i;
	pthread_mutex_unlock(&a_lock_with_a_rather_long_name_to_be_elided_on_narrow_terminals);
}

int main(int argc, char **argv)
{
	FILE *f;
	int i;

	SONDE_PHASE("a_phase_whose_name_is_long_enough_to_be_elided_too");
	for (i = 0; i < 1000; i++) {
		a_function_whose_name_is_much_longer_than_what_a_narrow_terminal_leaves(i);
		SONDE_COUNTER("a_counter_with_a_long_name_that_does_not_fit_either", 1);
	}
	if (argc > 1 && (f = fopen(argv[1], "w"))) {
		fputs("wide\n", f);
		fclose(f);
	}
	return 0;
}
