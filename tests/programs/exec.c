/*
 * exec: "exec MODE" calls before_exec() once and replaces itself with "exec.c after" through
 * execve (MODE "execve") or execvp (MODE "execvp"); the new image calls after_exec() once and
 * exits with status 7. With --follow-exec there are two profiles of the same pid: the first
 * ends "exec" (before_exec 1), the second ends "exit" (after_exec 1).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern char **environ;
static char after_arg[] = "after";

int before_exec(void);
int after_exec(void);

int before_exec(void)
{
	return 1;
}

int after_exec(void)
{
	return 7;
}

int main(int argc, char **argv)
{
	char *args[] = { argv[0], after_arg, NULL };

	if (argc > 1 && strcmp(argv[1], "after") == 0) {
		printf("after exec\n");
		return after_exec();
	}
	before_exec();
	printf("before exec\n");
	fflush(stdout);
	if (argc > 1 && strcmp(argv[1], "execvp") == 0)
		execvp(argv[0], args);
	else
		execve(argv[0], args, environ);
	perror("exec");
	return 1;
}
