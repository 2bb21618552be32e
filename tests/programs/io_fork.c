/*
 * --io and --os across fork, and socket calls. In DIR (argv[1]): the parent writes 2 records
 * of 6 bytes to parent.txt, then forks; the child writes 3 records of 5 bytes to child.txt and
 * sends "ping!" (5 bytes) over a socketpair with send; the parent receives it with recv (one
 * call, 5 bytes), waits for the child, and sends "pong" (4 bytes) with sendto, received by
 * nobody (the child is gone: the socket buffer keeps it). Two profiles: the parent's has
 * parent.txt (2 writes) and its socket (1 recv, 1 sendto), not child.txt; the child's has
 * child.txt (3 writes) and its socket (1 send), not parent.txt.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static char path[4096];

static int open_in(const char *dir, const char *name)
{
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
}

int main(int argc, char **argv)
{
	char buf[16];
	int sv[2], fd, i, status;
	pid_t pid;

	if (argc < 2 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		return 1;
	fd = open_in(argv[1], "parent.txt");
	for (i = 0; i < 2; i++)
		if (write(fd, "parent", 6) != 6)
			return 2;
	close(fd);
	pid = fork();
	if (pid == 0) {
		fd = open_in(argv[1], "child.txt");
		for (i = 0; i < 3; i++)
			if (write(fd, "child", 5) != 5)
				_exit(3);
		close(fd);
		if (send(sv[1], "ping!", 5, 0) != 5)
			_exit(4);
		exit(0);
	}
	if (recv(sv[0], buf, 5, MSG_WAITALL) != 5)
		return 5;
	waitpid(pid, &status, 0);
	if (sendto(sv[0], "pong", 4, 0, NULL, 0) != 4)
		return 6;
	printf("child %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}
