/*
 * Exit paths, chosen by argv[1]; each goes main -> level1 -> level2 -> level3 (one call each),
 * and level3 writes to stdout and stderr (text and raw bytes) then:
 *   exit   exit(3) from level3          _exit   _exit(4) from level3 (stdio buffers are lost)
 *   ret    returns 5 up to main          abort   abort() (SIGABRT)
 *   segv   writes through a null pointer (SIGSEGV)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int level1(const char *how);
int level2(const char *how);
int level3(const char *how);

static int *volatile nowhere;

int level3(const char *how)
{
	static const char raw[] = { 'r', 'a', 'w', 0, (char)0xff, (char)0x80, '\n' };

	printf("level3 %s\n", how);
	fwrite(raw, 1, sizeof(raw), stdout);
	fprintf(stderr, "to stderr: %s\n", how);
	if (write(1, "unbuffered\n", 11) != 11)
		return 1;
	if (strcmp(how, "exit") == 0)
		exit(3);
	if (strcmp(how, "_exit") == 0)
		_exit(4);
	if (strcmp(how, "abort") == 0) {
		fflush(stdout);
		abort();
	}
	if (strcmp(how, "segv") == 0) {
		fflush(stdout);
		*nowhere = 1;
	}
	return 5;
}

int level2(const char *how)
{
	return level3(how);
}

int level1(const char *how)
{
	return level2(how);
}

int main(int argc, char **argv)
{
	return level1(argc > 1 ? argv[1] : "ret");
}
