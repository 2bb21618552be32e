/*
 * A program with signals and timers of its own, for sampling (sonde run --sample): it must see
 * exactly what it sees alone. Its own SIGPROF handler driven by setitimer(ITIMER_PROF) gets its
 * ticks; it installs a handler for SIGRTMAX-2 (the signal the sampler uses) and must find the
 * default disposition there first, get exactly the 5 instances it queues to itself (with their
 * values) while it burns CPU (the sampler's timers firing meanwhile must not reach it), read its
 * handler back, ignore the signal through signal(), and with "die" end by that signal's default
 * action. stdout is the same at every run.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t prof_ticks, rt_calls, rt_sum;

static void on_prof(int sig)
{
	(void)sig;
	prof_ticks++;
}

static void on_rt(int sig, siginfo_t *si, void *ctx)
{
	(void)sig, (void)ctx;
	rt_calls++;
	rt_sum += si->si_value.sival_int;
}

__attribute__((noinline)) static unsigned long burn(unsigned long n)
{
	unsigned long i, x = n;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

static void own_profiler(void)
{
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } }, off = { { 0, 0 }, { 0, 0 } };

	signal(SIGPROF, on_prof);
	setitimer(ITIMER_PROF, &it, NULL);
	while (prof_ticks < 50)
		burn(100000);
	setitimer(ITIMER_PROF, &off, NULL);
	printf("SIGPROF ticks: at least 50\n");
}

static void own_rt_signal(void)
{
	int sig = SIGRTMAX - 2, i;
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_rt;
	sa.sa_flags = SA_SIGINFO;
	sigaction(sig, &sa, &old);
	printf("first disposition default: %s\n", old.sa_handler == SIG_DFL ? "yes" : "no");
	for (i = 1; i <= 5; i++) {
		union sigval v = { .sival_int = i * 10 };

		sigqueue(getpid(), sig, v);
		burn(20000000); /* CPU time: the sampler's timer fires meanwhile */
	}
	printf("handler calls %d, values %d\n", (int)rt_calls, (int)rt_sum);
	sigaction(sig, NULL, &old);
	printf("handler read back: %s\n", old.sa_sigaction == on_rt ? "yes" : "no");
	printf("signal() returns it: %s\n", signal(sig, SIG_IGN) == old.sa_handler ? "yes" : "no");
	raise(sig);
	burn(20000000);
	printf("ignored: calls still %d\n", (int)rt_calls);
}

int main(int argc, char **argv)
{
	own_profiler();
	own_rt_signal();
	if (argc > 1 && !strcmp(argv[1], "die")) {
		fflush(stdout);
		signal(SIGRTMAX - 2, SIG_DFL);
		raise(SIGRTMAX - 2);
		burn(20000000);
		printf("still alive\n");
	}
	return 0;
}
