/*
 * Instrumented signal handlers: sender() raises SIGUSR1 3 times; the handler on_usr1() calls
 * in_handler(), so the call-path is main -> sender -> on_usr1 -> in_handler, 3 calls each. Then
 * the program installs its own SIGTERM handler and raises SIGTERM: the program's handler runs
 * (on_term, 1 call under main) and the process exits normally with status 0.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

void in_handler(void);
void on_usr1(int signo);
void on_term(int signo);
void sender(void);

static volatile sig_atomic_t hits, terms;

void in_handler(void)
{
	hits++;
}

void on_usr1(int signo)
{
	(void)signo;
	in_handler();
}

void on_term(int signo)
{
	(void)signo;
	terms++;
}

void sender(void)
{
	raise(SIGUSR1);
}

static void install(int signo, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sigaction(signo, &sa, NULL);
}

int main(void)
{
	int i;

	install(SIGUSR1, on_usr1);
	for (i = 0; i < 3; i++)
		sender();
	install(SIGTERM, on_term);
	raise(SIGTERM);
	printf("hits %d terms %d\n", (int)hits, (int)terms);
	return 0;
}
