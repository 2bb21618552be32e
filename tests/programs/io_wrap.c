/*
 * The I/O wrappers behave like the calls they wrap (sonde run --io): each line printed is a
 * call's return value and errno, the same with and without sonde. Reads fd 3 (a file the
 * test opened before the program started) to its end in 5-byte reads, when it is open.
 *   read at EOF -> 0; read of a closed fd -> -1 EBADF; open of a missing file -> -1 ENOENT;
 *   fopen of a missing file -> NULL ENOENT; a successful write keeps errno as it was;
 *   a short read from a pipe (10 of 100); a partial write to a full non-blocking pipe, then
 *   -1 EAGAIN; a read interrupted by a signal (no SA_RESTART) -> -1 EINTR; readv and writev;
 *   pread past the end -> 0; fsync of a pipe -> -1 EINVAL; dup2 onto a file keeps counting.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static void say(const char *what, long r)
{
	printf("%s: %ld errno %d\n", what, r, r < 0 ? errno : 0);
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void pipes(void)
{
	static char big[1 << 20];
	int p[2];
	char buf[100];
	long r;

	if (pipe(p) != 0)
		return;
	say("pipe write 10", write(p[1], "0123456789", 10));
	say("pipe short read", read(p[0], buf, sizeof(buf)));
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	r = write(p[1], big, sizeof(big));
	printf("partial write: %s\n", r > 0 && r < (long)sizeof(big) ? "yes" : "no");
	say("full pipe write", write(p[1], big, 1));
	say("fsync of a pipe", fsync(p[0]));
	close(p[0]);
	close(p[1]);
}

static void interrupted(void)
{
	struct sigaction sa;
	int p[2];
	char c;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	if (pipe(p) != 0)
		return;
	alarm(1);
	say("interrupted read", read(p[0], &c, 1));
	close(p[0]);
	close(p[1]);
}

static void vectors(const char *path)
{
	char a[4], b[6];
	struct iovec w[2] = { { "abcd", 4 }, { "efghij", 6 } }, r[2] = { { a, 4 }, { b, 6 } };
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	say("writev", writev(fd, w, 2));
	say("pread past the end", pread(fd, a, 4, 100));
	lseek(fd, 0, SEEK_SET);
	say("readv", readv(fd, r, 2));
	printf("readv got %.4s%.6s\n", a, b);
	say("read at EOF", read(fd, a, 4));
	say("dup2", dup2(fd, 20));
	say("write on the dup", write(20, "k", 1));
	close(20);
	say("close", close(fd));
}

static void inherited(void)
{
	char buf[5];
	long n, total = 0, calls = 0;

	while ((n = read(3, buf, sizeof(buf))) > 0)
		total += n, calls++;
	printf("fd 3: %ld bytes in %ld reads, last %ld\n", total, calls, n);
}

int main(int argc, char **argv)
{
	char buf[8];
	FILE *fp;

	if (argc < 2)
		return 1;
	say("read of a closed fd", read(42, buf, 1));
	say("open of a missing file", open("/nonexistent/sonde", O_RDONLY));
	errno = 0;
	fp = fopen("/nonexistent/sonde", "r");
	printf("fopen of a missing file: %s errno %d\n", fp ? "FILE" : "NULL", errno);
	errno = 1234;
	if (write(1, "", 0) == 0)
		printf("errno after a good write: %d\n", errno);
	pipes();
	interrupted();
	vectors(argv[1]);
	inherited();
	return 0;
}
