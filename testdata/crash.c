/*
 * crash.c - a program that dies the way argv[1] says, after some work.
 *
 *   crash segv     writes through a NULL pointer (SIGSEGV)
 *   crash abort    calls abort() (SIGABRT)
 *   crash exit     calls exit(3)
 *   crash deep     writes through a NULL pointer at the bottom of a
 *                  recursion (dive: 7 activations deep, then poke)
 *   crash          returns 0 from main
 *
 * Before dying it runs work() (a loop calling an out-of-line helper) and
 * prints its result, flushing stdout and stderr, so the output up to the
 * death is the same whatever stdout is. The deaths happen two calls deep
 * (main -> die_by -> segv/abort_now), so the activations live at the
 * signal are main, die_by and the dying function. dive and poke call
 * nothing else, so a flow-only image makes them closed functions
 * (rewriter decision 57): each dive activation's stop then comes from its
 * callee's frame, not from a stored call site.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile int vol_n = 400;
int *volatile null_ptr;

NOINLINE int helper(int x)
{
	sink = x;
	if (x % 3 == 0)
		return x / 3;
	return x * 2 + 1;
}

NOINLINE long work(int n)
{
	long acc = 0;
	for (int i = 0; i < n; i++)
		acc += helper(i) & 0xff;
	return acc;
}

NOINLINE void segv(int v)
{
	*null_ptr = v;
}

NOINLINE long poke(long v)
{
	if (v & 1)
		*null_ptr = (int)v;
	else
		*null_ptr = (int)(v / 2);
	return v + sink;
}

NOINLINE long dive(int n, long v)
{
	if (n == 0)
		return poke(v) ^ 5; /* not a tail call */
	/* two ways to the call, so the path value at it says which */
	long w = n & 2 ? v * 3 + n : v + 7 * n;
	long r = dive(n - 1, w);
	return n & 1 ? r + v : r - v;
}

NOINLINE void abort_now(void)
{
	abort();
}

NOINLINE void die_by(const char *how, long v)
{
	if (strcmp(how, "segv") == 0)
		segv((int)v);
	else if (strcmp(how, "abort") == 0)
		abort_now();
	else if (strcmp(how, "exit") == 0)
		exit(3);
	else if (strcmp(how, "deep") == 0)
		sink = (int)dive(6, v);
	fprintf(stderr, "crash: unknown mode %s\n", how);
}

int main(int argc, char **argv)
{
	long v = work(vol_n);
	printf("work: %ld\n", v);
	fprintf(stderr, "about to die by %s\n", argc > 1 ? argv[1] : "return");
	fflush(stdout);
	fflush(stderr);
	if (argc > 1)
		die_by(argv[1], v);
	printf("survived\n");
	return 0;
}
