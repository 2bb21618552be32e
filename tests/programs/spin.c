/* SPDX-License-Identifier: MIT */
/*
 * Calls a small function until it is killed: for tests that kill a traced program (SIGKILL) and
 * check what the trace kept. Prints its pid first, then "busy" once it has made many calls.
 * It never outlives a test that failed to kill it by more than a minute (SIGALRM).
 */
#include <stdio.h>
#include <unistd.h>

int step(int i);

int step(int i)
{
	return (i * 7) & 15;
}

int main(void)
{
	volatile long sum = 0;
	long i;

	alarm(60);
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	for (i = 0;; i++) {
		sum += step((int)i);
		if (i == 2000000) {
			printf("busy\n");
			fflush(stdout);
		}
	}
	return 0;
}
