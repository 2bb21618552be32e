/*
 * The bundled example profiled by `make demo`: counts word frequencies in generated text with a
 * hash table, sorts the words, and multiplies two small matrices. Each step has a different
 * shape (many tiny calls, few long ones, recursion), which is what a profile should show.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sonde.h"

#define NWORDS 200000
#define TABLE 4096
#define N 120

struct entry {
	char word[8];
	int count;
	struct entry *next;
};

static struct entry *table[TABLE];
static unsigned seed = 12345;

static unsigned next_random(void)
{
	seed = seed * 1103515245u + 12345u;
	return (seed >> 16) & 0x7fff;
}

static void make_word(char *w)
{
	int len = 2 + (int)(next_random() % 3), i;

	for (i = 0; i < len; i++)
		w[i] = (char)('a' + next_random() % 6);
	w[len] = 0;
}

static unsigned hash(const char *w)
{
	unsigned h = 5381;

	while (*w)
		h = h * 33 + (unsigned char)*w++;
	return h % TABLE;
}

static void count_word(const char *w)
{
	unsigned h = hash(w);
	struct entry *e;

	for (e = table[h]; e; e = e->next)
		if (!strcmp(e->word, w)) {
			e->count++;
			return;
		}
	e = calloc(1, sizeof(*e));
	strcpy(e->word, w);
	e->count = 1;
	e->next = table[h];
	table[h] = e;
}

static int by_count(const void *a, const void *b)
{
	const struct entry *x = *(const struct entry *const *)a, *y = *(const struct entry *const *)b;

	return y->count != x->count ? y->count - x->count : strcmp(x->word, y->word);
}

static int sort_words(struct entry **all)
{
	int n = 0, i;
	struct entry *e;

	for (i = 0; i < TABLE; i++)
		for (e = table[i]; e; e = e->next)
			all[n++] = e;
	qsort(all, (size_t)n, sizeof(*all), by_count);
	return n;
}

static double dot(const double *a, const double *b, int stride)
{
	double s = 0;
	int k;

	for (k = 0; k < N; k++)
		s += a[k] * b[k * stride];
	return s;
}

static void matmul(const double *a, const double *b, double *c)
{
	int i, j;

	for (i = 0; i < N; i++)
		for (j = 0; j < N; j++)
			c[i * N + j] = dot(a + i * N, b + j, N);
}

static long fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(void)
{
	static double a[N * N], b[N * N], c[N * N];
	static struct entry *all[TABLE * 64];
	char w[8];
	int i, n;

	SONDE_PHASE("words");
	for (i = 0; i < NWORDS; i++) {
		make_word(w);
		count_word(w);
	}
	n = sort_words(all);
	printf("%d distinct words; most frequent '%s' (%d times)\n", n, all[0]->word, all[0]->count);

	SONDE_PHASE("matrix");
	for (i = 0; i < N * N; i++) {
		a[i] = (double)(i % 7);
		b[i] = (double)(i % 5);
	}
	SONDE_REGION_BEGIN("matmul x3");
	for (i = 0; i < 3; i++)
		matmul(a, b, c);
	SONDE_REGION_END("matmul x3");
	printf("c[17] = %.1f\n", c[17]);

	SONDE_PHASE("recursion");
	printf("fib(24) = %ld\n", fib(24));
	SONDE_COUNTER("distinct words", n);
	return 0;
}
