/*
 * The manual API of include/sonde.h. Phases "setup", "compute", "report" in that order; counter
 * "items" gets 1..10 (count 10, sum 55, min 1, max 10); region "solve" is entered 3 times and
 * calls step() 4 times each, and holds region "inner" (1 entry each) that calls step() once.
 * So: solve 3 calls, inner 3, step 15; paths main/solve/step 12, main/solve/inner/step 3.
 * The same binary run without sonde prints the same (the API does nothing then).
 */
#include <stdio.h>

#include "sonde.h"

int step(int i);

int step(int i)
{
	return i * i;
}

int main(void)
{
	int i, r, s = 0;

	SONDE_PHASE("setup");
	for (i = 1; i <= 10; i++)
		SONDE_COUNTER("items", i);
	SONDE_PHASE("compute");
	for (r = 0; r < 3; r++) {
		SONDE_REGION_BEGIN("solve");
		for (i = 0; i < 4; i++)
			s += step(i);
		SONDE_REGION_BEGIN("inner");
		s += step(10);
		SONDE_REGION_END("inner");
		SONDE_REGION_END("solve");
	}
	SONDE_PHASE("report");
	printf("s = %d, api %d\n", s, SONDE_API_VERSION);
	return 0;
}
