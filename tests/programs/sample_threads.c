/*
 * Threads for sampling: two pthreads spin in their own functions, spin_one for N iterations and
 * spin_two for 2N, while main spins N/2 in spin_main and then joins them. Each thread's samples
 * must name its own function only, and each thread's sample count follow its own CPU time.
 * stdout is the same at every run.
 */
#include <pthread.h>
#include <stdio.h>

#define N 150000000ul

__attribute__((noinline)) unsigned long spin_main(unsigned long n);
__attribute__((noinline)) unsigned long spin_one(unsigned long n);
__attribute__((noinline)) unsigned long spin_two(unsigned long n);
void *thread_one(void *arg);
void *thread_two(void *arg);

static inline __attribute__((always_inline)) unsigned long spin(unsigned long n)
{
	unsigned long i, x = n;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

unsigned long spin_main(unsigned long n)
{
	return spin(n);
}

unsigned long spin_one(unsigned long n)
{
	return spin(n);
}

unsigned long spin_two(unsigned long n)
{
	return spin(n);
}

void *thread_one(void *arg)
{
	*(unsigned long *)arg = spin_one(N);
	return NULL;
}

void *thread_two(void *arg)
{
	*(unsigned long *)arg = spin_two(2 * N);
	return NULL;
}

int main(void)
{
	pthread_t a, b;
	unsigned long ra = 0, rb = 0, rm;

	if (pthread_create(&a, NULL, thread_one, &ra) || pthread_create(&b, NULL, thread_two, &rb))
		return 1;
	rm = spin_main(N / 2);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("%lu %lu %lu\n", rm, ra, rb);
	return 0;
}
