/*
 * Fork: the parent calls before_fork() once, forks, waits for the child, then calls
 * parent_work() 5 times; the child calls child_work() 3 times and exits. Two profiles: the
 * parent's has before_fork 1, parent_work 5, no child_work; the child's has child_work 3 and
 * neither before_fork (made before the fork) nor parent_work.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int before_fork(void);
int child_work(int i);
int parent_work(int i);

int before_fork(void)
{
	return 42;
}

int child_work(int i)
{
	return i * 3;
}

int parent_work(int i)
{
	return i * 5;
}

int main(void)
{
	int s = before_fork(), i, status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		for (i = 0; i < 3; i++)
			s += child_work(i);
		printf("child: %d\n", s);
		exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	for (i = 0; i < 5; i++)
		s += parent_work(i);
	printf("parent: %d, child exit %d\n", s, WEXITSTATUS(status));
	return 0;
}
