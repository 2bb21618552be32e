/*
 * Standard streams pass through: copies stdin to stdout unchanged, calling mix() once per byte,
 * and prints the byte count and a checksum on stderr. mix() calls = number of input bytes.
 */
#include <stdio.h>
#include <unistd.h>

unsigned long mix(unsigned long h, unsigned char c);

unsigned long mix(unsigned long h, unsigned char c)
{
	return (h ^ c) * 1099511628211ul;
}

int main(void)
{
	unsigned char buf[4096];
	unsigned long h = 14695981039346656037ul, total = 0;
	ssize_t n, i;

	while ((n = read(0, buf, sizeof(buf))) > 0) {
		for (i = 0; i < n; i++)
			h = mix(h, buf[i]);
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			return 1;
		total += (unsigned long)n;
	}
	fprintf(stderr, "bytes %lu checksum %016lx\n", total, h);
	return 0;
}
