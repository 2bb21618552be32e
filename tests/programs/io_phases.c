/*
 * An I/O-heavy phase among computing ones (sonde run --io). In DIR (argv[1]):
 *   phase "compute1": arithmetic, and 3 writes of 10 bytes to light.dat (opened once, closed);
 *   phase "io":       heavy.dat: 2000 writes of 4096 bytes, one fsync, close; opened again
 *                     (by its name relative to DIR, after chdir),
 *                     2000 preads of 4096 bytes, one read at the end (EOF, 0 bytes), close;
 *   phase "compute2": arithmetic, and log.txt through stdio: fopen, 5 fprintf of 7 bytes
 *                     ("line %d\n", 0..4), one fwrite of 3 bytes, fclose.
 * So heavy.dat: 2 opens, 2000 writes (8192000 bytes), 1 sync, 2001 reads (8192000 bytes),
 * 2 closes; light.dat: 1 open, 3 writes (30 bytes), 1 close; log.txt: 1 open, 6 writes
 * (38 bytes), 1 close. Prints a checksum of the computing, the same with and without sonde.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sonde.h"

#define BLOCKS 2000
#define BLOCK 4096

static char path_buf[4096];

static const char *in_dir(const char *dir, const char *name)
{
	snprintf(path_buf, sizeof(path_buf), "%s/%s", dir, name);
	return path_buf;
}

static unsigned long compute(unsigned long seed, int rounds)
{
	int i;

	for (i = 0; i < rounds; i++)
		seed = seed * 6364136223846793005ul + 1442695040888963407ul;
	return seed;
}

static void light(const char *dir)
{
	int fd = open(in_dir(dir, "light.dat"), O_WRONLY | O_CREAT | O_TRUNC, 0644), i;

	for (i = 0; i < 3; i++)
		if (write(fd, "0123456789", 10) != 10)
			exit(2);
	close(fd);
}

static void heavy(const char *dir)
{
	static char block[BLOCK];
	int fd = open(in_dir(dir, "heavy.dat"), O_WRONLY | O_CREAT | O_TRUNC, 0644), i;

	memset(block, 'x', sizeof(block));
	for (i = 0; i < BLOCKS; i++)
		if (write(fd, block, BLOCK) != BLOCK)
			exit(3);
	fsync(fd);
	close(fd);
	if (chdir(dir) != 0) /* opened again by a relative name: the same file in the report */
		exit(6);
	fd = open("heavy.dat", O_RDONLY);
	for (i = 0; i < BLOCKS; i++)
		if (pread(fd, block, BLOCK, (off_t)i * BLOCK) != BLOCK)
			exit(4);
	lseek(fd, 0, SEEK_END);
	if (read(fd, block, BLOCK) != 0) /* end of file */
		exit(5);
	close(fd);
}

static void logged(const char *dir)
{
	FILE *fp = fopen(in_dir(dir, "log.txt"), "w");
	int i;

	for (i = 0; i < 5; i++)
		fprintf(fp, "line %d\n", i);
	fwrite("end", 1, 3, fp);
	fclose(fp);
}

int main(int argc, char **argv)
{
	unsigned long s;

	if (argc < 2)
		return 1;
	SONDE_PHASE("compute1");
	s = compute(1, 20000000);
	light(argv[1]);
	SONDE_PHASE("io");
	heavy(argv[1]);
	SONDE_PHASE("compute2");
	s = compute(s, 20000000);
	logged(argv[1]);
	SONDE_PHASE(NULL);
	printf("checksum %lu\n", s);
	return 0;
}
