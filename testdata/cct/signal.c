/*
 * signal.c - an instrumented signal handler.
 *
 * main calls raiser(3), which raises SIGUSR1 three times with raise().
 * The handler on_usr1 is instrumented and calls in_handler() each time;
 * raise() returns only after the handler ran, so the output is fixed.
 * main then calls after_signals() to check that the tree is intact.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile sig_atomic_t handled;
volatile int sink;
volatile int vol_n = 3;

NOINLINE void in_handler(int sig)
{
	sink = sig;
	handled++;
}

NOINLINE void on_usr1(int sig)
{
	in_handler(sig);
	sink = 0; /* not a tail call */
}

NOINLINE int raiser(int n)
{
	for (int i = 0; i < n; i++) {
		if (raise(SIGUSR1) != 0)
			return -1;
		sink = i;
	}
	return n;
}

NOINLINE int after_signals(int x)
{
	sink = x;
	return x * 2;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		return 1;
	int r = raiser(vol_n);
	printf("raised %d handled %d after %d\n", r, (int)handled, after_signals(r));
	return 0;
}
