/*
 * Recursion: fib(15) makes exactly 1973 calls to fib (C(n) = 1 + C(n-1) + C(n-2), C(0) = C(1) = 1)
 * in a chain of at most 15 fib frames below main; is_even(10) makes 6 calls to is_even and 5 to
 * is_odd, alternating in one chain 11 frames deep (is_even, is_odd, is_even, ...).
 */
#include <stdio.h>

int fib(int n);
int is_even(int n);
int is_odd(int n);

int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int is_even(int n)
{
	return n == 0 ? 1 : is_odd(n - 1);
}

int is_odd(int n)
{
	return n == 0 ? 0 : is_even(n - 1);
}

int main(void)
{
	printf("fib(15) = %d\n", fib(15));
	printf("is_even(10) = %d\n", is_even(10));
	return 0;
}
