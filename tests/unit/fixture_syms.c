/*
 * Fixture for test_symbols: a few functions at known lines. The test hard-codes the line of each
 * definition (the line holding the function name), so keep the layout stable or update
 * test_symbols.c.
 */
#include <stdio.h>

int fx_beta(int x);
int sonde_fixture_marker(void);

/* volatile so -O2 can neither constant-fold nor clone the callees */
static volatile int fx_seed = 3;

__attribute__((noinline, noclone)) static int fx_static(int x)
{
	return x * 7 + fx_seed;
}

__attribute__((noinline, noclone)) int fx_alpha(int x)
{
	int i, acc = 0;

	for (i = 0; i < x; i++)
		acc += fx_static(i);
	return acc;
}

int main(void)
{
	int r = fx_alpha(fx_seed) + fx_beta(fx_seed) + sonde_fixture_marker();

	printf("%d\n", r);
	return 0;
}
