/*
 * Killed from outside: calls tick() 3 times and ready() once, which prints "pid N"; then calls
 * tick() every millisecond until a SIGINT arrives (the test sends it). Gives up with status 1
 * after 20 s. So: ready 1 call, tick at least 3.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

void ready(void);
void tick(int i);

static volatile int ticks;

void ready(void)
{
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
}

void tick(int i)
{
	ticks += i & 1;
}

int main(void)
{
	struct timespec ms = { 0, 1000000 };
	int i;

	for (i = 0; i < 3; i++)
		tick(i);
	ready();
	for (i = 0; i < 20000; i++) {
		tick(i);
		nanosleep(&ms, NULL);
	}
	return 1;
}
