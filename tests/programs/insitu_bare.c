/*
 * Bare windows of `sonde run --insitu` (runtime/insitu_bare.c): main calls two_exits()
 * 1,500,000 times, an out-of-line leaf with two returns (one call in five takes the early one),
 * which runs bare; two threads call shared() 600,000 times each, a leaf that more than one
 * thread calls and so never runs bare (they meet once after their first call, so both have
 * called it before either can choose it); a fourth thread calls inlined() 400,000 times, a leaf
 * inlined into its caller, whose probe calls lie outside its own body: never bare either.
 * A fifth thread calls two_sites() 300,000 times, written in assembly with two exit probe calls
 * (compilers merge a function's returns into one): one call in 1024 takes the second, never the
 * call whose exit the periodic checks see, so the first bare window meets it as a stray and
 * learns it. Prints the sums, which must not change with or without --insitu.
 */
#include <pthread.h>
#include <stdio.h>

int two_exits(int i);
int shared(int i);
int two_sites(int i);

/* i, or i + 1 when (i & 1023) == 5, with the probes' calls -finstrument-functions would make */
__asm__(".text\n"
	".globl two_sites\n"
	".type two_sites, @function\n"
	"two_sites:\n"
	"	push %rbx\n"
	"	mov %edi, %ebx\n"
	"	lea two_sites(%rip), %rdi\n"
	"	mov 8(%rsp), %rsi\n"
	"	call __cyg_profile_func_enter@PLT\n"
	"	mov %ebx, %eax\n"
	"	and $1023, %eax\n"
	"	cmp $5, %eax\n"
	"	je 1f\n"
	"	lea two_sites(%rip), %rdi\n"
	"	mov 8(%rsp), %rsi\n"
	"	call __cyg_profile_func_exit@PLT\n"
	"	mov %ebx, %eax\n"
	"	pop %rbx\n"
	"	ret\n"
	"1:	lea two_sites(%rip), %rdi\n"
	"	mov 8(%rsp), %rsi\n"
	"	call __cyg_profile_func_exit@PLT\n"
	"	lea 1(%rbx), %eax\n"
	"	pop %rbx\n"
	"	ret\n"
	".size two_sites, .-two_sites\n");

#define MAIN_CALLS 1500000
#define SHARED_CALLS 600000
#define INLINED_CALLS 400000
#define SITES_CALLS 300000

static pthread_barrier_t met;
static volatile int sink;

__attribute__((noinline)) int two_exits(int i)
{
	if (i % 5 == 0) {
		sink = i;
		return i & 3;
	}
	return (i * 7) & 15;
}

__attribute__((noinline)) int shared(int i)
{
	return (i * 13) & 31;
}

static inline __attribute__((always_inline)) int inlined(int i)
{
	return (i * 11) & 7;
}

static void *sites_caller(void *arg)
{
	static long sum;
	int i;

	(void)arg;
	for (i = 0; i < SITES_CALLS; i++)
		sum += two_sites(i);
	return &sum;
}

static void *inliner(void *arg)
{
	static long sum;
	int i;

	(void)arg;
	for (i = 0; i < INLINED_CALLS; i++)
		sum += inlined(i);
	return &sum;
}

static void *caller(void *arg)
{
	static long sums[2];
	long *sum = &sums[arg != NULL];
	int i;

	*sum = shared(1);
	pthread_barrier_wait(&met);
	for (i = 1; i < SHARED_CALLS; i++)
		*sum += shared(i);
	return sum;
}

int main(void)
{
	pthread_t th[4];
	void *r[4];
	long sum = 0;
	int i;

	pthread_barrier_init(&met, NULL, 2);
	if (pthread_create(&th[0], NULL, caller, NULL) ||
	    pthread_create(&th[1], NULL, caller, &sum) ||
	    pthread_create(&th[2], NULL, inliner, NULL) ||
	    pthread_create(&th[3], NULL, sites_caller, NULL))
		return 1;
	for (i = 0; i < MAIN_CALLS; i++)
		sum += two_exits(i);
	pthread_join(th[0], &r[0]);
	pthread_join(th[1], &r[1]);
	pthread_join(th[2], &r[2]);
	pthread_join(th[3], &r[3]);
	printf("main %ld shared %ld %ld inlined %ld sites %ld\n", sum, *(long *)r[0],
	       *(long *)r[1], *(long *)r[2], *(long *)r[3]);
	return 0;
}
