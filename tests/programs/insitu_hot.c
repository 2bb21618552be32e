/*
 * Hot leaf functions for `sonde run --insitu`: a worker thread calls hot() 2,000,000 times
 * (a leaf: the one its in-situ price is measured on), main calls warm() 1,500,000 times through
 * mid() (a non-leaf, never chosen); cold() runs once. Prints both sums, which must not change
 * with or without --insitu.
 */
#include <pthread.h>
#include <stdio.h>

int hot(const double *v);
int warm(int i);
int mid(int i);
int cold(void);

#define HOT_CALLS 2000000
#define WARM_CALLS 1500000

int hot(const double *v)
{
	int i, n = 0;

	for (i = 0; i < 8; i++)
		n += v[i] * v[i] < 0.5;
	return n;
}

int warm(int i)
{
	return (i * 7) & 15;
}

int mid(int i)
{
	return warm(i) + 1;
}

int cold(void)
{
	return 3;
}

static void *worker(void *arg)
{
	static long sum;
	double v[8];
	unsigned long long s = 88172645463325252ull;
	int i, k;

	(void)arg;
	for (i = 0; i < HOT_CALLS; i++) {
		for (k = 0; k < 8; k++) {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			v[k] = (double)(s >> 11) / 9007199254740992.0;
		}
		sum += hot(v);
	}
	return &sum;
}

int main(void)
{
	pthread_t th;
	void *r;
	long sum = cold();
	int i;

	if (pthread_create(&th, NULL, worker, NULL))
		return 1;
	for (i = 0; i < WARM_CALLS; i++)
		sum += mid(i);
	pthread_join(th, &r);
	printf("main %ld worker %ld\n", sum, *(long *)r);
	return 0;
}
