/* SPDX-License-Identifier: MIT */
/*
 * Whether a measured process has ended (tool/dyn/proc_state.c): a child that exited is seen
 * ended and is still there for waitpid (never reaped by the look); a running child is not; a
 * child whose main thread ended before its other thread looks like a zombie to /proc but has
 * not ended; a process that is not a child is judged by /proc alone.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dyn/proc_state.h"

/* Poll f(pid) for up to 5 s: its last value. */
static int within_5s(int (*f)(pid_t), pid_t pid)
{
	struct timespec ms10 = { 0, 10000000 };
	int i, v = 0;

	for (i = 0; i < 500 && !(v = f(pid)); i++)
		nanosleep(&ms10, NULL);
	return v;
}

/* A child blocked reading fd until its parent writes, then exiting with status 3. */
static pid_t child_reading(int fd)
{
	pid_t pid = fork();
	char c;

	if (pid == 0) {
		if (read(fd, &c, 1) < 0)
			_exit(1);
		_exit(3);
	}
	return pid;
}

static void test_child_exits(void **state)
{
	int fds[2], status = 0;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	pid = child_reading(fds[0]);
	assert_true(pid > 0);
	assert_int_equal(dyn_program_ended(pid), 0);
	assert_int_equal(dyn_process_gone(pid), 0);
	assert_int_equal(write(fds[1], "x", 1), 1);
	assert_int_equal(within_5s(dyn_program_ended, pid), 1);
	assert_int_equal(dyn_process_gone(pid), 1); /* a zombie */
	assert_int_equal(waitpid(pid, &status, 0), pid); /* not reaped by the look */
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 3);
	/* reaped now, and no child of ours any more: /proc decides */
	assert_int_equal(dyn_program_ended(pid), 1);
	close(fds[0]);
	close(fds[1]);
}

static int pipe_in;

static void *reader(void *arg)
{
	char c;

	(void)arg;
	if (read(pipe_in, &c, 1) < 0)
		_exit(1);
	_exit(4);
}

static void test_leader_ends_first(void **state)
{
	int fds[2], status = 0;
	pthread_t t;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	if (pid == 0) {
		pipe_in = fds[0];
		if (pthread_create(&t, NULL, reader, NULL) != 0)
			_exit(1);
		pthread_exit(NULL); /* the leader ends; the reader thread runs on */
	}
	assert_true(pid > 0);
	assert_int_equal(within_5s(dyn_process_gone, pid), 1); /* the leader is a zombie */
	assert_int_equal(dyn_program_ended(pid), 0);            /* but the program lives */
	assert_int_equal(write(fds[1], "x", 1), 1);
	assert_int_equal(within_5s(dyn_program_ended, pid), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 4);
	close(fds[0]);
	close(fds[1]);
}

static void test_not_a_child(void **state)
{
	(void)state;
	assert_int_equal(dyn_program_ended(1), 0); /* init: alive, not ours */
	assert_int_equal(dyn_process_gone(1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_child_exits),
		cmocka_unit_test(test_leader_ends_first),
		cmocka_unit_test(test_not_a_child),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
