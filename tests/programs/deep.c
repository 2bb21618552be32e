/*
 * A deep call chain: down(5000) recurses 5000 frames deep (5000 calls, one per level below
 * main). With --depth 10, only the first 10 frames (main and 9 down) are recorded.
 */
#include <stdio.h>
#include <stdlib.h>

int down(int n);

int down(int n)
{
	return n > 1 ? down(n - 1) + 1 : 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5000;

	printf("depth %d\n", down(n));
	return 0;
}
