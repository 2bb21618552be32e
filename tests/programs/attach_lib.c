/*
 * A stand-in for libsonde.so in the tests of `sonde attach` (build with -shared -fPIC):
 * sonde__attach(dir) appends "attach N" to DIR/attach.PID, N counting its calls in this
 * process, and returns 0 — or 7 when DIR's name ends in "-fail". When it ends in "-signal" it
 * first sends its own process a SIGUSR1, which arrives while sonde holds the threads stopped.
 * Its constructor notes that it ran, once per process however often the library is loaded.
 * Built with -DATTACH_DEP it needs libattach_gone_dep.so (the test then deletes that).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int sonde__attach(const char *dir);
#ifdef ATTACH_DEP
int attach_gone_dep(void);
#endif

static int loaded, calls;

__attribute__((constructor)) static void attach_lib_init(void)
{
	loaded++;
}

int sonde__attach(const char *dir)
{
	char path[4096], line[64];
	size_t n = strlen(dir);
	int fd, len;

#ifdef ATTACH_DEP
	if (attach_gone_dep())
		return 1;
#endif
	if (n >= 5 && !strcmp(dir + n - 5, "-fail"))
		return 7;
	if (n >= 7 && !strcmp(dir + n - 7, "-signal"))
		kill(getpid(), SIGUSR1);
	snprintf(path, sizeof(path), "%s/attach.%d", dir, (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return 1;
	len = snprintf(line, sizeof(line), "attach %d loaded %d\n", ++calls, loaded);
	if (write(fd, line, (size_t)len) != len) {
		close(fd);
		return 1;
	}
	close(fd);
	return 0;
}
