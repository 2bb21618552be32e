/* SPDX-License-Identifier: MIT */
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void (*before_message)(void);

int error(const char *fmt, ...)
{
	va_list ap;

	if (before_message)
		before_message();
	fputs("sonde: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

void warning(const char *fmt, ...)
{
	va_list ap;

	if (before_message)
		before_message();
	fputs("sonde: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void *check(void *p)
{
	if (!p) {
		error("out of memory");
		exit(1);
	}
	return p;
}

void *xmalloc(size_t n) { return check(malloc(n ? n : 1)); }
void *xcalloc(size_t n, size_t size) { return check(calloc(n ? n : 1, size ? size : 1)); }
void *xrealloc(void *p, size_t n) { return check(realloc(p, n ? n : 1)); }
char *xstrdup(const char *s) { return check(strdup(s)); }

const char *self_dir(void)
{
	static char dir[PATH_MAX];
	ssize_t n;
	char *slash;

	if (dir[0])
		return dir;
	n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0)
		return strcpy(dir, ".");
	dir[n] = 0;
	slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	return dir;
}

static int existing(const char *path)
{
	return access(path, R_OK) == 0;
}

int runtime_path(char *out, size_t cap)
{
	const char *env = getenv("SONDE_RUNTIME");

	if (env && *env) {
		snprintf(out, cap, "%s", env);
		return existing(out) ? 0 : -1;
	}
	snprintf(out, cap, "%s/../lib/libsonde.so", self_dir());
	return existing(out) ? 0 : -1;
}

int include_dir(char *out, size_t cap)
{
	snprintf(out, cap, "%s/../include", self_dir());
	if (strlen(out) + 8 < cap) {
		char probe[PATH_MAX];

		snprintf(probe, sizeof(probe), "%s/sonde.h", out);
		if (existing(probe))
			return 0;
	}
	/* in the build tree, build/bin/sonde sits two levels below include/ */
	snprintf(out, cap, "%s/../../include", self_dir());
	return 0;
}

static int is_exec_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int find_program(const char *name, char *out, size_t cap)
{
	const char *path = getenv("PATH");
	struct stat st;

	if (strchr(name, '/')) {
		snprintf(out, cap, "%s", name);
		if (stat(name, &st) != 0)
			return -1;
		if (!S_ISREG(st.st_mode) || access(name, X_OK) != 0) {
			errno = EACCES;
			return -1;
		}
		return 0;
	}
	for (; path && *path; path += strcspn(path, ":"), path += *path == ':') {
		size_t len = strcspn(path, ":");

		snprintf(out, cap, "%.*s/%s", (int)len, len ? path : ".", name);
		if (is_exec_file(out))
			return 0;
	}
	errno = ENOENT;
	return -1;
}

int parse_u64(const char *s, unsigned long long *out)
{
	char *end;

	errno = 0;
	if (!s || !*s || *s == '-')
		return -1;
	*out = strtoull(s, &end, 10);
	return errno || *end ? -1 : 0;
}

int parse_time_span(const char *s, double *seconds)
{
	char *end;
	double x = strtod(s, &end), mul = 1;

	if (!strcmp(end, "ms"))
		mul = 1e-3;
	else if (!strcmp(end, "m") || !strcmp(end, "min"))
		mul = 60;
	else if (!strcmp(end, "h"))
		mul = 3600;
	else if (*end && strcmp(end, "s"))
		return -1;
	*seconds = x * mul;
	return end == s || !(*seconds > 0) || *seconds > 86400.0 * 365 ? -1 : 0;
}

/* A size in bytes with an optional K, M or G suffix (powers of 1024). */
int parse_size(const char *s, unsigned long long *out)
{
	char *end;
	int shift = 0;

	errno = 0;
	if (!s || !*s || *s == '-')
		return -1;
	*out = strtoull(s, &end, 10);
	if (end == s || errno)
		return -1;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (*end || *out > (~0ull >> shift))
		return -1;
	*out <<= shift;
	return 0;
}

int opt_value(int argc, char **argv, int *i, const char *name, const char **value)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n) != 0)
		return 0;
	if (a[n] == '=') {
		*value = a + n + 1;
		return 1;
	}
	if (a[n] != 0)
		return 0;
	if (*i + 1 >= argc) {
		error("option %s needs a value", name);
		return -1;
	}
	*value = argv[++*i];
	return 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **trace_files(const char *dir, uint32_t pid, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **paths = NULL, want[32];

	*n = 0;
	if (!d)
		return NULL;
	snprintf(want, sizeof(want), "trace.%u.strc", pid);
	while ((e = readdir(d)))
		if (pid ? !strcmp(e->d_name, want) : !fnmatch("trace.*.strc", e->d_name, 0)) {
			size_t len = strlen(dir) + strlen(e->d_name) + 2;

			paths = xrealloc(paths, (*n + 1) * sizeof(*paths));
			paths[*n] = xmalloc(len);
			snprintf(paths[(*n)++], len, "%s/%s", dir, e->d_name);
		}
	closedir(d);
	if (*n)
		qsort(paths, *n, sizeof(*paths), cmp_str);
	return paths;
}

uint64_t mono_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double elapsed_ms(uint64_t t0_ns)
{
	return (double)(mono_now_ns() - t0_ns) / 1e6;
}

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 when it is not one. */
int utf8_seq_len(const unsigned char *s)
{
	int n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
		: (s[0] & 0xf8) == 0xf0 ? 4 : 0, i;

	if (n == 2 && s[0] < 0xc2)
		return 0; /* overlong */
	for (i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

void catch_stop_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}
