/* SPDX-License-Identifier: MIT */
/*
 * The real libsonde.so in its two dynamic modes:
 * - attached: opened with dlopen in a running process, as `sonde attach` injects it. It must
 *   change nothing on its own — no signal handler, no environment change, no file written,
 *   even when the environment holds SONDE_* variables inherited from a `sonde run` — until
 *   sonde__attach starts the control server;
 * - preloaded with SONDE_DYNAMIC=1, as `sonde run --dynamic` starts a program: the control
 *   server is up from the start; points set through it count calls of sonde__dyn_entry; with
 *   SONDE_DYNAMIC_HOLD=1 the program waits before main for RESUME, and PROFILE points feed the
 *   profile, written at exit as by sonde run.
 *
 *   test_dyn_attach /path/to/libsonde.so
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "protocol.h"

static char lib[PATH_MAX], self[PATH_MAX], tmp[PATH_MAX];
static uint8_t msg[SPROTO_MAX_MESSAGE];

struct regs {
	uint64_t r[10];
};
typedef void (*entry_fn)(uint32_t point, struct regs *regs, uint64_t *ret_slot);
typedef int (*attach_fn)(const char *dir);

/* tmp + "/" + name, or a failed test when it does not fit. */
static void path_in(char *out, size_t cap, const char *name)
{
	int n = snprintf(out, cap, "%s/%s", tmp, name);

	assert_true(n > 0 && (size_t)n < cap);
}

static void sock_path(char *out, size_t cap, const char *dir, pid_t pid)
{
	int n = snprintf(out, cap, "%.3000s/ctl.%d", dir, (int)pid);

	assert_true(n > 0 && (size_t)n < cap);
}

static int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static int connect_to(const char *path)
{
	struct sockaddr_un a;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	if (fd < 0 || strlen(path) >= sizeof(a.sun_path))
		return -1;
	memcpy(a.sun_path, path, strlen(path));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int short_in; /* the connection's HELLO_REPLY came (hello() starts a connection) */
static struct sproto_sctx sctx; /* what its SAMPLEs refer to (version 9) */

/* The next message (within 5 s); its payload views point into msg. */
static int next_msg(int fd, uint8_t *buf, size_t *len, struct sproto_msg *m)
{
	for (;;) {
		struct sproto_header h;
		struct pollfd p = { fd, POLLIN, 0 };
		char err[200];
		/* version 9: after the HELLO_REPLY the runtime's frames are short; version 10: the
		 * HELLO_REPLY too (a 12-byte frame begins with the magic's 'S', no reply's type) */
		int is_short = short_in || (*len && buf[0] != (SPROTO_MAGIC & 0xff));
		long n = is_short ? sproto_frame_short(buf, *len, &h, err, sizeof(err))
				  : sproto_frame(buf, *len, &h, err, sizeof(err));
		ssize_t r;

		if (n > 0) {
			memcpy(msg, buf, (size_t)n);
			memmove(buf, buf + n, *len - (size_t)n);
			*len -= (size_t)n;
			assert_int_equal(sproto_decode(&h, msg + h.size, m, err, sizeof(err)), 0);
			if (m->h.type == SPROTO_HELLO_REPLY)
				short_in = 1;
			if (sproto_is_sample(m->h.type)) /* its metrics and deltas, as the tool */
				assert_int_equal(sproto_sample_resolve(&m->u.sample, &sctx, err,
								       sizeof(err)), 0);
			return 0;
		}
		if (n < 0 || poll(&p, 1, 5000) != 1)
			return -1;
		r = recv(fd, buf + *len, SPROTO_MAX_MESSAGE - *len, 0);
		if (r <= 0)
			return -1;
		*len += (size_t)r;
	}
}

static uint8_t inbuf[SPROTO_MAX_MESSAGE];
static size_t inlen;

static void request(int fd, size_t n, struct sproto_msg *m)
{
	assert_int_equal(send(fd, msg, n, MSG_NOSIGNAL), (ssize_t)n);
	do
		assert_int_equal(next_msg(fd, inbuf, &inlen, m), 0);
	while (m->h.type == SPROTO_SAMPLE);
}

static void hello(int fd, struct sproto_hello_reply *out)
{
	struct sproto_hello h = { SPROTO_VERSION, SPROTO_VERSION, "test_dyn_attach" };
	struct sproto_msg m;

	inlen = 0;
	short_in = 0;
	memset(&sctx, 0, sizeof(sctx));
	request(fd, sproto_put_hello(msg, sizeof(msg), &h), &m);
	assert_int_equal(m.h.type, SPROTO_HELLO_REPLY);
	*out = m.u.hello_reply;
}

static int has_module(int fd, const char *name)
{
	struct sproto_module mod;
	struct sproto_msg m;
	size_t off = 0;
	int found = 0;

	request(fd, sproto_put_empty(msg, sizeof(msg), SPROTO_LIST), &m);
	assert_int_equal(m.h.type, SPROTO_LIST_REPLY);
	while (sproto_list_module(&m.u.list, &off, &mod) == 0)
		found |= strstr(mod.path, name) != NULL;
	return found;
}

static void expect_ok(int fd, size_t n)
{
	struct sproto_msg m;

	request(fd, n, &m);
	assert_int_equal(m.h.type, SPROTO_OK);
}

/* ---- attached ---- */

static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS,
			    SIGFPE, SIGILL };
#define NSIGS (sizeof(sigs) / sizeof(sigs[0]))

static void handlers(void (*out[NSIGS])(int))
{
	size_t i;

	for (i = 0; i < NSIGS; i++) {
		struct sigaction sa;

		out[i] = sigaction(sigs[i], NULL, &sa) == 0 ? sa.sa_handler : NULL;
	}
}

/* The dispositions are as they were (cmocka has handlers of its own). */
static int handlers_same(void (*was[NSIGS])(int))
{
	void (*now[NSIGS])(int);

	handlers(now);
	return memcmp(was, now, sizeof(now)) == 0;
}

/* In a child: dlopen, check nothing changed, attach, talk, detach, exit. */
static int attached_child(const char *dir)
{
	struct sproto_hello_reply r;
	struct sproto_msg m;
	const char *preload = getenv("LD_PRELOAD");
	char sock[PATH_MAX];
	void *h;
	attach_fn attach;
	int fd;

	void (*was[NSIGS])(int);

	handlers(was);
	h = dlopen(lib, RTLD_NOW);
	if (!h)
		return 11;
	if (!handlers_same(was))
		return 12; /* no handler of its own */
	if (getenv("LD_PRELOAD") != preload || !getenv("SONDE_DIR"))
		return 13; /* the environment as it was */
	attach = (attach_fn)dlsym(h, "sonde__attach");
	if (!attach || attach(dir) != 0)
		return 14;
	sock_path(sock, sizeof(sock), dir, getpid());
	fd = connect_to(sock);
	if (fd < 0)
		return 15;
	hello(fd, &r);
	if (r.pid != (uint32_t)getpid() || (r.flags & (SPROTO_F_AT_START | SPROTO_F_PROFILE)))
		return 16;
	if (r.entry_addr != (uint64_t)(uintptr_t)dlsym(h, "sonde__dyn_entry") ||
	    r.ret_tramp_addr != (uint64_t)(uintptr_t)dlsym(h, "sonde__dyn_ret_tramp"))
		return 17;
	if (!has_module(fd, "libsonde.so"))
		return 18;
	request(fd, sproto_put_empty(msg, sizeof(msg), SPROTO_DETACH), &m);
	if (m.h.type != SPROTO_OK || next_msg(fd, inbuf, &inlen, &m) != -1)
		return 19;
	close(fd);
	return handlers_same(was) ? 0 : 20;
}

static void test_attached(void **state)
{
	char dir[PATH_MAX], out[PATH_MAX], sock[PATH_MAX];
	pid_t pid;
	int status;

	(void)state;
	path_in(dir, sizeof(dir), "ctl");
	path_in(out, sizeof(out), "out");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* a process started by `sonde run` without the runtime: SONDE_* inherited */
		setenv("SONDE_DIR", out, 1);
		setenv("SONDE_TRACE", "1", 1);
		unsetenv("LD_PRELOAD");
		if (chdir(tmp) != 0)
			_exit(9);
		_exit(attached_child(dir));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_false(exists(out));                    /* no profile, no trace, no log */
	path_in(out, sizeof(out), "sonde-out"); /* nor the default run directory */
	assert_false(exists(out));
	sock_path(sock, sizeof(sock), dir, pid);
	assert_false(exists(sock));                   /* the socket went with DETACH */
}

/* ---- preloaded with SONDE_DYNAMIC=1 ---- */

/* The program: calls sonde__dyn_entry at point 7 every 100 µs, as a patched function would. */
static int dynamic_child(void)
{
	entry_fn entry = (entry_fn)dlsym(RTLD_DEFAULT, "sonde__dyn_entry");
	struct timespec ts = { 0, 100000 };
	struct regs r;

	if (!entry)
		return 3;
	memset(&r, 0, sizeof(r));
	for (;;) {
		entry(7, &r, NULL);
		nanosleep(&ts, NULL);
	}
}

static pid_t child = -1; /* killed by the teardown if a test fails while it runs */

static int kill_child(void **state)
{
	(void)state;
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	child = -1;
	return 0;
}

static pid_t start_dynamic(const char *dir, const char *out, const char *mode)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("LD_PRELOAD", lib, 1);
		setenv("SONDE_DYNAMIC", "1", 1);
		setenv("SONDE_CTL_DIR", dir, 1);
		setenv("SONDE_DIR", out, 1);
		if (strcmp(mode, "--profile-child") == 0)
			setenv("SONDE_DYNAMIC_HOLD", "1", 1);
		execl(self, self, mode, tmp, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/*
 * The program of the held run: says it reached main (a file), then makes 1000 calls of a
 * "patched function" — entry at point 8, the return through sonde__dyn_exit — and exits.
 */
static int profile_child(const char *dir)
{
	entry_fn entry = (entry_fn)dlsym(RTLD_DEFAULT, "sonde__dyn_entry");
	uint64_t (*leave)(void *) = (uint64_t (*)(void *))dlsym(RTLD_DEFAULT, "sonde__dyn_exit");
	char path[PATH_MAX];
	struct regs r;
	uint64_t slot[2], rr[8];
	int i, fd;

	snprintf(path, sizeof(path), "%s/main-reached", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	if (!entry || !leave || fd < 0)
		return 3;
	close(fd);
	memset(&r, 0, sizeof(r));
	for (i = 0; i < 1000; i++) {
		slot[0] = 0x1000 + (uint64_t)i;
		entry(8, &r, slot);
		if (slot[0] == 0x1000 + (uint64_t)i)
			return 4; /* the return was not hooked */
		memset(rr, 0, sizeof(rr));
		rr[2] = (uint64_t)(uintptr_t)&slot[1]; /* sonde_retregs.sp */
		if (leave(rr) != 0x1000 + (uint64_t)i)
			return 5;
	}
	return 0;
}

static int wait_connect(const char *sock)
{
	int fd = -1, i;

	for (i = 0; i < 500 && fd < 0; i++) {
		fd = connect_to(sock);
		if (fd < 0)
			usleep(10000);
	}
	return fd;
}

static void test_dynamic(void **state)
{
	struct sproto_point_set ps = { .point = 7, .n = 1 };
	struct sproto_metric mt = { .id = 2, .n = 1, .term = { { SPROTO_TERM_COUNTER, 3, 0 } } };
	struct sproto_hello_reply r;
	struct sproto_msg m;
	char dir[PATH_MAX], out[PATH_MAX], sock[PATH_MAX];
	int64_t value = 0;
	int fd, status, i;
	pid_t pid;

	(void)state;
	path_in(dir, sizeof(dir), "dynctl");
	path_in(out, sizeof(out), "dynout");
	child = pid = start_dynamic(dir, out, "--child");
	sock_path(sock, sizeof(sock), dir, pid);
	fd = wait_connect(sock);
	assert_true(fd >= 0);
	hello(fd, &r);
	assert_int_equal(r.pid, pid);
	assert_true(r.flags & SPROTO_F_AT_START);
	assert_true(r.flags & SPROTO_F_PROFILE);
	assert_true(has_module(fd, "libsonde.so"));
	ps.act[0].prim = SPROTO_ADD;
	ps.act[0].target = 3;
	ps.act[0].value = 1;
	expect_ok(fd, sproto_put_point_set(msg, sizeof(msg), &ps));
	expect_ok(fd, sproto_put_sampling(msg, sizeof(msg), 10000000));
	expect_ok(fd, sproto_put_metric_enable(msg, sizeof(msg), &mt));
	for (i = 0; i < 200 && value < 20; i++) {
		struct sproto_sample_entry e;

		assert_int_equal(next_msg(fd, inbuf, &inlen, &m), 0);
		assert_int_equal(m.h.type, SPROTO_SAMPLE);
		assert_int_equal(m.u.sample.n, 1);
		sproto_sample_entry(&m.u.sample, 0, &e);
		assert_int_equal(e.metric, 2);
		/* the value in the first entry (the delta counts from the enable), then deltas */
		assert_int_equal(!!(e.flags & SPROTO_S_VALUE), !!(e.flags & SPROTO_S_FIRST));
		if (!(e.flags & SPROTO_S_VALUE))
			e.value = value + e.delta;
		assert_true(e.value >= value && e.delta >= 0);
		value = e.value;
	}
	assert_true(value >= 20);
	close(fd);
	/* SIGTERM ends it as it would without sonde; no probe ran: no profile */
	assert_int_equal(kill(pid, SIGTERM), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	child = -1;
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	assert_false(exists(out));
}

/* sonde run --dynamic's flow: held before main until RESUME; PROFILE points make a profile. */
static void test_dynamic_profile(void **state)
{
	struct sproto_point_set ps = { .point = 8, .n = 2 };
	struct sproto_hello_reply r;
	char dir[PATH_MAX], out[PATH_MAX], sock[PATH_MAX], reached[PATH_MAX], prof[PATH_MAX];
	int fd, status;
	pid_t pid;

	(void)state;
	path_in(dir, sizeof(dir), "profctl");
	path_in(out, sizeof(out), "profout");
	path_in(reached, sizeof(reached), "main-reached");
	child = pid = start_dynamic(dir, out, "--profile-child");
	sock_path(sock, sizeof(sock), dir, pid);
	fd = wait_connect(sock);
	assert_true(fd >= 0);
	hello(fd, &r);
	assert_true((r.flags & SPROTO_F_AT_START) && (r.flags & SPROTO_F_PROFILE));
	ps.act[0] = (struct sproto_action){ .when = SPROTO_AT_ENTRY, .prim = SPROTO_PROFILE,
					    .value = 0x5151 };
	ps.act[1] = ps.act[0];
	ps.act[1].when = SPROTO_AT_EXIT;
	expect_ok(fd, sproto_put_point_set(msg, sizeof(msg), &ps));
	usleep(100000);
	assert_false(exists(reached)); /* still held before main */
	expect_ok(fd, sproto_put_empty(msg, sizeof(msg), SPROTO_RESUME));
	close(fd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	child = -1;
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(exists(reached));
	assert_true(snprintf(prof, sizeof(prof), "%.3000s/profile.%d.sprof", out, (int)pid) > 0);
	assert_true(exists(prof)); /* written at exit, as by sonde run */
}

/* At exit, the control socket's name goes with the process. */
static void test_dynamic_exit_cleans(void **state)
{
	char dir[PATH_MAX], out[PATH_MAX], sock[PATH_MAX];
	pid_t pid = fork();
	int status;

	(void)state;
	path_in(dir, sizeof(dir), "exitctl");
	path_in(out, sizeof(out), "exitout");
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("LD_PRELOAD", lib, 1);
		setenv("SONDE_DYNAMIC", "1", 1);
		setenv("SONDE_CTL_DIR", dir, 1);
		setenv("SONDE_DIR", out, 1);
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	sock_path(sock, sizeof(sock), dir, pid);
	assert_true(exists(dir));
	assert_false(exists(sock));
	assert_false(exists(out));
}

static void rm_rf(const char *path)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", path);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attached),
		cmocka_unit_test_teardown(test_dynamic, kill_child),
		cmocka_unit_test_teardown(test_dynamic_profile, kill_child),
		cmocka_unit_test(test_dynamic_exit_cleans),
	};
	char tmpl[] = "/tmp/sonde-attach-test-XXXXXX";
	int rc;

	if (argc == 3 && strcmp(argv[1], "--child") == 0)
		return dynamic_child();
	if (argc == 3 && strcmp(argv[1], "--profile-child") == 0)
		return profile_child(argv[2]);
	if (argc != 2 || !realpath(argv[1], lib) || !realpath("/proc/self/exe", self)) {
		fprintf(stderr, "usage: test_dyn_attach /path/to/libsonde.so\n");
		return 2;
	}
	if (!mkdtemp(tmpl))
		return 2;
	snprintf(tmp, sizeof(tmp), "%s", tmpl);
	rc = cmocka_run_group_tests_name("dyn_attach", tests, NULL, NULL);
	rm_rf(tmp);
	return rc;
}
