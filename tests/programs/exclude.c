/*
 * Exclusion: main calls helper_a() 2 times (1 leaf each), helper_b() 3 times (2 leaf each),
 * keep() once (1 leaf); the helpers live in exclude_helpers.c. With --exclude 'helper*' (or
 * --exclude-file '*helpers.c') the helpers are not measured and their 8 leaf calls attach to
 * main: main/leaf 8, main/keep/leaf 1, leaf 9 in all.
 */
#include <stdio.h>

int leaf(int i);
int keep(void);
int helper_a(int i);
int helper_b(int i);

int leaf(int i)
{
	return i + 1;
}

int keep(void)
{
	return leaf(100);
}

int main(void)
{
	int s = 0, i;

	for (i = 0; i < 2; i++)
		s += helper_a(i);
	for (i = 0; i < 3; i++)
		s += helper_b(i);
	s += keep();
	printf("s = %d\n", s);
	return 0;
}
