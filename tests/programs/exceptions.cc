/*
 * C++ exceptions and forced unwinding through instrumented functions (docs/dynamic.md,
 * "Exceptions and unwinding"). Each round runs, with counts known from the source:
 *   basic     outer -> middle -> leaf(3) throws int 3, caught in main        ("caught 3")
 *   rethrow   relay catches it and rethrows with `throw;`, main catches it
 *   nested    nested() catches it, throws std::runtime_error from its handler, main catches that
 *   guards    outer_guarded -> middle_guarded -> leaf: destructors of both frames run
 *   catcher   top -> catcher catches from outer, then calls after() and returns normally: the
 *             calls between still return (and exit) as they should
 *   deep      recurse(20) throws at the bottom, caught in main
 *   tail      tailer(n) tail-calls thrower(n) (a jmp at -O2), which throws
 *   threads   2 threads each run basic and catcher on their own stacks
 *   exit      a thread calls pthread_exit from inside middle_exit: the destructors of the frames
 *             beyond (in guarded_thread) run, the thread ends, main joins it
 * Calls per round: leaf 11, middle and outer 9, recurse 21, top, catcher and after 3,
 * basic_thread 2, the others 1 (tests/integration/t_unwind.py); main's first throw, in the
 * default mode, adds one call of outer, middle and leaf; main prints how many were caught and
 * how many destructors ran. Arguments:
 *   (none) ROUNDS=5 rounds, then the totals on stdout, exit 0
 *   N      N rounds
 *   serve  one round per line of stdin, acknowledged on stderr ("ready", "done N"); at EOF the
 *          totals on stdout
 *   uncaught  leaf's exception through outer and middle with nothing to catch it: terminate
 */
#include <pthread.h>
#include <stdexcept>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int caught, destroyed, afters, thread_destroyed;

struct Guard {
	int *counter;
	explicit Guard(int *c) : counter(c) {}
	~Guard() { ++*counter; }
};

extern "C" {
int leaf(int n);
int middle(int n);
int outer(int n);
int relay(int n);
int nested(int n);
int middle_guarded(int n);
int outer_guarded(int n);
int after(int n);
int catcher(int n);
int top(int n);
int recurse(int n);
int thrower(int n);
int tailer(int n);
int middle_exit(int n);
void *guarded_thread(void *arg);
void *basic_thread(void *arg);
}

static volatile int opaque = 1; /* keeps the compiler from seeing that leaf always throws */

extern "C" __attribute__((noinline, noclone)) int leaf(int n)
{
	if (opaque)
		throw n;
	return n + 1;
}

extern "C" __attribute__((noinline, noclone)) int middle(int n)
{
	return leaf(n) * opaque + 1; /* not a tail call: middle has a frame of its own */
}

extern "C" __attribute__((noinline, noclone)) int outer(int n)
{
	return middle(n) * opaque + 2;
}

extern "C" __attribute__((noinline, noclone)) int relay(int n)
{
	try {
		return outer(n) + 1;
	} catch (int) {
		throw;
	}
}

extern "C" __attribute__((noinline, noclone)) int nested(int n)
{
	try {
		return outer(n) + 1;
	} catch (int e) {
		try {
			return outer(e + 1) + 2;
		} catch (int) {
			throw std::runtime_error("nested");
		}
	}
}

extern "C" __attribute__((noinline, noclone)) int middle_guarded(int n)
{
	Guard g(&destroyed);

	return leaf(n) * opaque + 1;
}

extern "C" __attribute__((noinline, noclone)) int outer_guarded(int n)
{
	Guard g(&destroyed);

	return middle_guarded(n) * opaque + 2;
}

extern "C" __attribute__((noinline, noclone)) int after(int n)
{
	__atomic_add_fetch(&afters, 1, __ATOMIC_RELAXED);
	return n * 2;
}

/* Catches what outer throws, then goes on: calls after() and returns normally. */
extern "C" __attribute__((noinline, noclone)) int catcher(int n)
{
	int r = 0;

	try {
		r = outer(n);
	} catch (int e) {
		r = e;
	}
	return after(r) * opaque + 1;
}

extern "C" __attribute__((noinline, noclone)) int top(int n)
{
	return catcher(n) * opaque + 1;
}

extern "C" __attribute__((noinline, noclone)) int recurse(int n)
{
	if (n == 0)
		return leaf(7) * opaque;
	return recurse(n - 1) * opaque + 1;
}

extern "C" __attribute__((noinline, noclone)) int thrower(int n)
{
	if (opaque)
		throw n;
	return n;
}

/* A tail call at -O2 (jmp thrower): thrower returns through tailer's hooked return. */
extern "C" __attribute__((noinline, noclone)) int tailer(int n)
{
	return thrower(n + 1);
}

extern "C" __attribute__((noinline, noclone)) int middle_exit(int n)
{
	if (opaque)
		pthread_exit(NULL);
	return n;
}

extern "C" __attribute__((noinline, noclone)) void *guarded_thread(void *arg)
{
	Guard g(&thread_destroyed);

	middle_exit(*(int *)arg);
	return NULL;
}

extern "C" __attribute__((noinline, noclone)) void *basic_thread(void *arg)
{
	int *got = (int *)arg;

	try {
		outer(5);
	} catch (int e) {
		got[0] = e;
	}
	got[1] = top(6);
	return NULL;
}

static void one_round(void)
{
	pthread_t th[2], ex;
	int got[2][2] = { { 0, 0 }, { 0, 0 } }, arg = 1, i;

	try {
		outer(3);
	} catch (int e) {
		caught += e == 3;
	}
	try {
		relay(3);
	} catch (int e) {
		caught += e == 3;
	}
	try {
		nested(3);
	} catch (const std::runtime_error &e) {
		caught += strcmp(e.what(), "nested") == 0;
	}
	try {
		outer_guarded(3);
	} catch (int e) {
		caught += e == 3;
	}
	caught += top(3) == 8;
	try {
		recurse(20);
	} catch (int e) {
		caught += e == 7;
	}
	try {
		tailer(3);
	} catch (int e) {
		caught += e == 4;
	}
	for (i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, basic_thread, got[i]) != 0)
			exit(3);
	for (i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		caught += (got[i][0] == 5) + (got[i][1] == 14);
	}
	if (pthread_create(&ex, NULL, guarded_thread, &arg) != 0)
		exit(3);
	pthread_join(ex, NULL);
}

static void totals(int rounds)
{
	printf("rounds %d\n", rounds);
	printf("caught %d (of %d)\n", caught, rounds * 11);
	printf("destroyed %d, after %d, thread guards %d\n", destroyed, afters, thread_destroyed);
}

int main(int argc, char **argv)
{
	int rounds = 5, i;
	char line[256];

	if (argc > 1 && strcmp(argv[1], "uncaught") == 0) {
		printf("throwing\n");
		fflush(stdout);
		return outer(3);
	}
	if (argc > 1 && strcmp(argv[1], "serve") == 0) {
		fprintf(stderr, "ready\n");
		for (rounds = 0; fgets(line, sizeof(line), stdin);) {
			one_round();
			fprintf(stderr, "done %d\n", ++rounds);
		}
		totals(rounds);
		return 0;
	}
	if (argc > 1)
		rounds = atoi(argv[1]);
	try {
		outer(3);
	} catch (int e) {
		printf("caught %d\n", e);
	}
	caught = 0;
	for (i = 0; i < rounds; i++)
		one_round();
	totals(rounds);
	return 0;
}
