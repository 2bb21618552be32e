/*
 * A forked child, for sampling: the child spins in spin_child (2N iterations), the parent in
 * spin_parent (N), then waits. Each process writes its own profile; the child's samples start
 * empty at the fork and name spin_child only, the parent's spin_parent only. stdout is the same
 * at every run.
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 100000000ul

__attribute__((noinline)) unsigned long spin_parent(unsigned long n);
__attribute__((noinline)) unsigned long spin_child(unsigned long n);

unsigned long spin_parent(unsigned long n)
{
	unsigned long i, x = n;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1;
	return x;
}

unsigned long spin_child(unsigned long n)
{
	unsigned long i, x = n;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 3;
	return x;
}

int main(void)
{
	unsigned long r;
	pid_t p;

	fflush(stdout);
	p = fork();
	if (p < 0)
		return 1;
	if (p == 0) {
		printf("child %lu\n", spin_child(2 * N));
		return 0;
	}
	r = spin_parent(N);
	waitpid(p, NULL, 0);
	printf("parent %lu\n", r);
	return 0;
}
