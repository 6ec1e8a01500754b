/*
 * sigsee.c - a program that looks at its signal actions, then crashes
 * into a SIGSEGV handler of its own (decision 94: the runtime keeps the
 * fatal signals' actions without the program seeing it).
 *
 * At start it prints the action of every signal blpp keeps (SIGSEGV,
 * SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, and SIGUSR2, the dump
 * signal) as sigaction(sig, NULL, &old) reads it, and signal()'s return
 * when it sets SIGINT to SIG_IGN and back. Then it installs its SIGSEGV
 * handler the way argv[1] says, reads it back, does some work and writes
 * through NULL. The handler prints what it got (the signal, whether
 * SIGUSR1 of its sa_mask is blocked, the fault address) and then:
 *
 *   sigsee dfl        sets SIG_DFL with signal() and returns: the fault
 *                     comes again and kills the process
 *   sigsee resethand  was installed with SA_RESETHAND and returns
 *   sigsee exit       calls _exit(5)
 *   sigsee abort      calls abort(), SIGABRT left at SIG_DFL
 *   sigsee ignore     as dfl, after SIGTERM was set to SIG_IGN; then
 *                     raises SIGTERM, which is ignored, before returning
 *
 * Everything it prints goes out with write(2), so the output up to the
 * death is the same whatever stdout is.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static const char *how = "dfl";
volatile int sink;
int *volatile null_ptr;

static void say(const char *s) { write(1, s, strlen(s)); }

static void sayf(const char *fmt, long a, long b, long c)
{
	char buf[256];
	int n = snprintf(buf, sizeof buf, fmt, a, b, c);
	write(1, buf, n);
}

/* kind names an action as the program sees it. */
static const char *kind(void (*h)(int))
{
	if (h == SIG_DFL)
		return "default";
	if (h == SIG_IGN)
		return "ignore";
	return "handler";
}

NOINLINE void show(int sig)
{
	struct sigaction old;
	char buf[256];
	int n;
	memset(&old, 0x5a, sizeof old);
	if (sigaction(sig, NULL, &old) != 0) {
		say("sigaction failed\n");
		return;
	}
	n = snprintf(buf, sizeof buf, "signal %d: %s, flags %#x, mask %#lx\n", sig, kind(old.sa_handler),
		     (unsigned)old.sa_flags, *(unsigned long *)&old.sa_mask);
	write(1, buf, n);
}

NOINLINE void on_segv(int sig, siginfo_t *si, void *uc)
{
	sigset_t cur;
	(void)uc;
	sigprocmask(SIG_BLOCK, NULL, &cur);
	sayf("handler: signal %ld, SIGUSR1 blocked %ld, SIGSEGV blocked %ld\n", sig, sigismember(&cur, SIGUSR1), sigismember(&cur, SIGSEGV));
	sayf("handler: fault at %#lx\n", (long)si->si_addr, 0, 0);
	if (strcmp(how, "exit") == 0)
		_exit(5);
	if (strcmp(how, "abort") == 0)
		abort();
	if (strcmp(how, "ignore") == 0)
		raise(SIGTERM);
	if (strcmp(how, "resethand") != 0)
		signal(SIGSEGV, SIG_DFL);
	show(SIGSEGV);
}

NOINLINE int work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i % 5 == 0 ? i : 2;
	sink = s;
	return s;
}

int main(int argc, char **argv)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGUSR2};
	struct sigaction sa;
	void (*prev)(int);
	if (argc > 1)
		how = argv[1];
	for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		show(sigs[i]);
	prev = signal(SIGINT, SIG_IGN);
	say("signal(SIGINT, SIG_IGN) replaced ");
	say(kind(prev));
	prev = signal(SIGINT, prev);
	say(", then ");
	say(kind(prev));
	say("\n");
	if (strcmp(how, "ignore") == 0)
		signal(SIGTERM, SIG_IGN);
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | (strcmp(how, "resethand") == 0 ? SA_RESETHAND : 0);
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR1);
	if (sigaction(SIGSEGV, &sa, NULL) != 0)
		say("cannot install the handler\n");
	show(SIGSEGV);
	show(SIGTERM);
	sayf("work %ld\n", work(300), 0, 0);
	*null_ptr = 1;
	say("survived\n");
	return 0;
}
