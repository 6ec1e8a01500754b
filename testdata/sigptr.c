/*
 * sigptr.c - signal actions set and read through function pointers and,
 * built with -fno-plt, through the GOT (issue 29, decision 101). The
 * program takes &sigaction and &signal at run time (a GOT load in PIE and
 * -fno-plt code, the PLT stub's address in a non-PIE executable), reads
 * the actions of the signals blpp keeps, which must be SIG_DFL, sets its
 * own through the pointers and reads them back, then crashes into its
 * SIGSEGV handler, which reports and exits with status 5.
 *
 *   sigptr          as above
 *   sigptr direct   the same with direct calls (PLT calls, or GOT calls
 *                   under -fno-plt)
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef void (*handler_fn)(int);
typedef handler_fn (*signal_fn)(int, handler_fn);

sigaction_fn volatile sa_fn;
signal_fn volatile sg_fn;
volatile int sink;
static int direct;

static void on_segv(int sig)
{
	static const char msg[] = "handler: SIGSEGV\n";
	(void)sig;
	write(1, msg, sizeof msg - 1);
	_exit(5);
}

static void on_int(int sig) { (void)sig; }

NOINLINE static const char *name(handler_fn h)
{
	if (h == SIG_DFL)
		return "SIG_DFL";
	if (h == SIG_IGN)
		return "SIG_IGN";
	if (h == on_segv)
		return "on_segv";
	if (h == on_int)
		return "on_int";
	return "another handler";
}

NOINLINE static void show(const char *when, int sig)
{
	struct sigaction o;
	memset(&o, 0, sizeof o);
	if ((direct ? sigaction(sig, 0, &o) : sa_fn(sig, 0, &o)) != 0)
		perror("sigaction");
	printf("%s: %s: %s\n", when, strsignal(sig), name(o.sa_handler));
}

NOINLINE int work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i % 7 == 0 ? i : 1;
	return s;
}

int main(int argc, char **argv)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGUSR2};
	struct sigaction a;
	handler_fn old;
	direct = argc > 1 && strcmp(argv[1], "direct") == 0;
	sa_fn = sigaction;
	sg_fn = signal;
	for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		show("start", sigs[i]);
	memset(&a, 0, sizeof a);
	a.sa_handler = on_segv;
	if ((direct ? sigaction(SIGSEGV, &a, 0) : sa_fn(SIGSEGV, &a, 0)) != 0)
		perror("sigaction");
	old = direct ? signal(SIGINT, on_int) : sg_fn(SIGINT, on_int);
	printf("signal(SIGINT): was %s\n", name(old));
	old = direct ? signal(SIGTERM, SIG_IGN) : sg_fn(SIGTERM, SIG_IGN);
	printf("signal(SIGTERM): was %s\n", name(old));
	show("set", SIGSEGV);
	show("set", SIGINT);
	show("set", SIGTERM);
	printf("work: %d\n", work(500));
	fflush(stdout);
	sink = *(volatile int *)(long)sink; /* sink is 0: a SIGSEGV */
	return 0;
}
