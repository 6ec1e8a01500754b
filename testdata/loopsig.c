/*
 * loopsig.c - signals that land inside loops, deterministically.
 *
 * sum() walks an array whose second page is unreadable: its loop faults
 * there, the SIGSEGV handler makes the page readable again and runs sum()
 * itself (the same loop, nested in the interrupted one) before the
 * faulting load is retried. Every fault happens at the same element of
 * the same round, so the counts are the same on every run and under
 * valgrind. spread() keeps a value live across a loop that does not
 * touch it, so a register that holds a program value has to survive the
 * loop and the handler. The output depends on every value surviving.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static long *guarded; /* two pages of longs; the second one faults */
static long pagelongs;
static long pagesize;
static long small[64];
volatile long sink;
volatile long at;
volatile int faults;

NOINLINE long sum(const long *a, long n, long salt)
{
	long s = salt;
	for (long i = 0; i < n; i++) {
		/* The store comes first so that the load that faults is not
		 * the first instruction of its block: callgrind counts a
		 * faulting instruction when it starts and again when it is
		 * retried, blpp counts the block once. */
		at = i;
		long v = a[i];
		if (v & 1)
			s += v * 3;
		else
			s ^= v + i;
	}
	return s;
}

NOINLINE long spread(long *a, long n, long k)
{
	long keep = k * 7 + 1;
	for (long i = 0; i < n; i++)
		a[i] = a[i] * 5 + (a[i] >> 3);
	return keep + a[n - 1];
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	char *page = (char *)guarded + pagesize;
	if ((char *)si->si_addr < page || (char *)si->si_addr >= page + pagesize)
		_exit(3);
	mprotect(page, pagesize, PROT_READ | PROT_WRITE);
	faults++;
	sink = sum(small, 64, faults);
}

int main(void)
{
	struct sigaction sa;
	long total = 0;
	pagesize = sysconf(_SC_PAGESIZE);
	pagelongs = pagesize / (long)sizeof(long);
	guarded = mmap(NULL, 2 * pagesize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guarded == MAP_FAILED)
		return 1;
	for (long i = 0; i < 2 * pagelongs; i++)
		guarded[i] = i * 2654435761u % 1000;
	for (int i = 0; i < 64; i++)
		small[i] = i * i;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL) != 0)
		return 1;
	for (int round = 0; round < 5; round++) {
		mprotect((char *)guarded + pagesize, pagesize, PROT_NONE);
		total += sum(guarded, 2 * pagelongs, round);
		total += spread(small, 64, round);
	}
	printf("total %ld faults %d sink %ld\n", total, (int)faults, (long)sink);
	return 0;
}
