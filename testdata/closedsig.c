/*
 * closedsig.c - signals and longjmps inside closed functions.
 *
 * descend() and probe() only call each other and themselves, so a
 * flow-only image makes them closed functions (rewriter decision 57):
 * their calls store no call site and spill no path register, and the
 * runtime finds where an activation stopped from its callee's return
 * address and saved register instead.  round() sits between main and
 * descend(): an ordinary function, whose stop comes from the frame above
 * the closed ones.
 *
 * On some rounds probe() reads through a NULL pointer at the bottom of
 * the recursion.  The SIGSEGV handler runs descend() itself (closed code
 * on top of the interrupted closed frames) and then siglongjmps back to
 * main, abandoning round(), every descend() activation and probe(): the
 * runtime records each as a partial path ending at its call.  Every
 * fault happens at the same place on every run, so the counts are the
 * same under valgrind.  The output depends on every value surviving.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static sigjmp_buf back;
static const long good = 41;
const long *volatile trap = &good;
volatile long sink;
volatile long in_handler;

NOINLINE long probe(long v)
{
	sink = *trap + v; /* faults while trap is NULL */
	if (v & 1)
		return v * 7 + 1;
	return v / 2;
}

NOINLINE long descend(long n, long v)
{
	if (n == 0)
		return probe(v) ^ 3; /* not a tail call */
	/* two ways to the call, so the path value at it says which */
	long w = n & 2 ? v * 3 + n : v + 7 * n;
	long r = descend(n - 1, w);
	if (n & 1)
		r += v;
	else
		r -= v / 3;
	return r;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	trap = &good;
	in_handler += descend(4, 7);
	siglongjmp(back, 1);
}

NOINLINE long round_of(int k)
{
	printf("round %d\n", k);
	return descend(6 + k % 3, k + 10);
}

int main(void)
{
	struct sigaction sa;
	long total = 0;
	int faults = 0;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	for (volatile int k = 0; k < 12; k++) {
		if (sigsetjmp(back, 1)) {
			faults++;
			continue;
		}
		if (k % 4 == 3)
			trap = NULL;
		total += round_of(k);
		trap = &good;
	}
	printf("total %ld, handler %ld, faults %d\n", total, (long)in_handler, faults);
	return 0;
}
