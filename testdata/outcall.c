/*
 * outcall.c - closed functions that call out of closed code.
 *
 * In a flow-only image every function here but main (which calls
 * sigsetjmp) is a closed function (rewriter decisions 57 and 64): each
 * returns, jumps to another function or calls one that does not return,
 * and calls nothing that returns twice. Their calls come in four kinds:
 *
 *   inside   to a closed function that returns by ret (chain -> chain)
 *   leaf     to a one-path function that calls nothing (weigh -> key)
 *   outside  to the C library (strlen, memcpy, qsort, printf), through a
 *            pointer (apply), to a closed function that ends in a tail
 *            jump (chain -> drop, which jumps to free)
 *   no return (fail -> abort, never taken here)
 *
 * qsort calls back into order(), a closed function entered from outside
 * closed code. On some rounds scan() hands strlen a NULL pointer: the
 * SIGSEGV arrives inside the C library, under chain's recursion. The
 * handler runs closed code that calls out itself (weigh) and siglongjmps
 * back to main, abandoning round_of, every chain activation and scan;
 * each must be recorded as stopped at its call. The output depends on
 * every value surviving.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static sigjmp_buf back;
static const char word[] = "outcall";
const char *volatile text = word;
volatile long sink;

NOINLINE long key(long v) { return v * 2654435761u >> 7; }

NOINLINE void fail(const char *why)
{
	if (why[0] == '!')
		abort();
	sink += (long)strlen(why);
}

/* weigh: a loop of leaf calls, and an outside call */
NOINLINE long weigh(const long *v, int n)
{
	long s = 0;
	for (int i = 0; i < n; i++) {
		if (v[i] & 1)
			s += key(v[i]);
		else
			s -= key(v[i] + 3);
	}
	fail(s & 1 ? "odd" : "even");
	return s;
}

NOINLINE int order(const void *a, const void *b)
{
	long x = key(*(const long *)a), y = key(*(const long *)b);
	if (x < y)
		return -1;
	return x > y;
}

NOINLINE long twice(long v) { return v % 3 ? v * 2 : v + 1; }

NOINLINE long apply(long (*f)(long), long v)
{
	long r = f(v);
	if (r & 4)
		r = f(r);
	return r;
}

/* scan faults inside strlen while text is NULL */
NOINLINE long scan(long v)
{
	long n = (long)strlen(text);
	return v & 1 ? n + v : n - v;
}

NOINLINE void drop(long *p, long v)
{
	sink += p[0] + v;
	free(p); /* a tail jump */
}

NOINLINE long chain(int n, long v)
{
	long buf[8], tmp[8];
	if (n == 0)
		return scan(v) ^ 3; /* not a tail call */
	long *p = malloc(sizeof *p);
	p[0] = v;
	for (int i = 0; i < 8; i++)
		buf[i] = v * 31 + i * (n + 1);
	qsort(buf, 8, sizeof buf[0], order);
	memcpy(tmp, buf, sizeof tmp);
	long w = n & 2 ? apply(twice, v) : weigh(tmp, 8);
	drop(p, w);
	long r = chain(n - 1, w ^ tmp[n & 7]);
	return n & 1 ? r + v : r - (v & 0xff);
}

NOINLINE long round_of(int k)
{
	long r = chain(5 + k % 3, k + 10);
	printf("round %d: %ld\n", k, r);
	return r;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	long v[4] = {1, 2, 3, 4};
	(void)sig;
	(void)si;
	(void)uc;
	text = word;
	sink += weigh(v, 4);
	siglongjmp(back, 1);
}

static void catch_segv(void)
{
	struct sigaction sa = {.sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, 0);
}

int main(void)
{
	volatile long total = 0;
	volatile int faults = 0, k = 0;
	catch_segv();
	/* rounds 3, 7 and 11 fault inside strlen and come back here */
	if (sigsetjmp(back, 1))
		faults++, k++;
	while (k < 12) {
		text = k % 4 == 3 ? NULL : word;
		total += round_of(k);
		k++;
	}
	printf("total %ld faults %d sink %ld\n", total, faults, sink);
	return 0;
}
