/*
 * Functions escaped with longjmp. driver() runs dive(5) 10 times: dive recurses 5 frames deep
 * and the deepest one longjmps back to driver, so every dive frame is left without its exit
 * probe. Then driver calls after() 3 times (after -> leaf). The profile must keep exact counts
 * (dive: 50 calls, 10 per level, 5 levels), and after/leaf must attach to driver, not to a dive
 * frame left open. escape() does the same through a signal handler: trap() raises SIGUSR1 and
 * on_usr1() siglongjmps out (2 times), then escape() calls after() once more; quick() returns
 * to main straight after a longjmp from dive2(4) (the first probe that sees it is an exit).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

void dive(int n);
void driver(void);
void after(void);
void leaf(void);
void trap(void);
void on_usr1(int signo);
void escape(void);
void dive2(int n);
void quick(void);

static jmp_buf jb, jb2;
static sigjmp_buf sjb;
static volatile int leaves, jump = 1;

void leaf(void)
{
	leaves++;
}

void after(void)
{
	leaf();
}

void dive(int n)
{
	if (n > 1)
		dive(n - 1);
	else if (jump)
		longjmp(jb, 1);
}

void driver(void)
{
	volatile int i;

	for (i = 0; i < 10; i++)
		if (setjmp(jb) == 0)
			dive(5);
	for (i = 0; i < 3; i++)
		after();
}

void on_usr1(int signo)
{
	(void)signo;
	siglongjmp(sjb, 1);
}

void trap(void)
{
	raise(SIGUSR1);
}

void escape(void)
{
	struct sigaction sa;
	volatile int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	for (i = 0; i < 2; i++)
		if (sigsetjmp(sjb, 1) == 0)
			trap();
	after();
}

void dive2(int n)
{
	if (n > 1)
		dive2(n - 1);
	else if (jump)
		longjmp(jb2, 1);
}

void quick(void)
{
	if (setjmp(jb2) == 0)
		dive2(4);
}

int main(void)
{
	driver();
	escape();
	quick();
	printf("leaves %d\n", leaves);
	return 0;
}
