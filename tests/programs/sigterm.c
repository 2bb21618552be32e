/*
 * Death by signal: calls work() 7 times, then die() raises SIGTERM on the process. The run ends
 * by SIGTERM (a shell sees 143) with the profile written: end "signal", signal 15, work 7 calls,
 * and the frames open at that moment (main, die) closed with one call each.
 */
#include <signal.h>
#include <stdio.h>

int work(int i);
void die(void);

int work(int i)
{
	return i + 1;
}

void die(void)
{
	fflush(stdout);
	raise(SIGTERM);
	printf("not reached\n");
}

int main(void)
{
	int s = 0, i;

	for (i = 0; i < 7; i++)
		s += work(i);
	printf("sum %d\n", s);
	die();
	return 0;
}
