/*
 * A million calls to a tiny function: tiny() is called exactly 1000000 times from main. With
 * --throttle off all are counted; with the default throttle (100000 calls at < 10 us each) it
 * stops being measured soon after its 100000th call.
 */
#include <stdio.h>

int tiny(int i);

int tiny(int i)
{
	return i & 3;
}

int main(void)
{
	long sum = 0;
	int i;

	for (i = 0; i < 1000000; i++)
		sum += tiny(i);
	printf("sum %ld\n", sum);
	return 0;
}
