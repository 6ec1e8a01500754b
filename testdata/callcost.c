/*
 * callcost.c - a program made of calls, for the per-call budget of
 * TestCallCost (rewriter decision 100): direct calls to a function that
 * calls on (more than one path, and recursion), to a leaf of several
 * paths, to a leaf of one path, and calls through a table of function
 * pointers. It prints how many calls it made, which the test divides the
 * instrumentation's instructions by.
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static long calls;

NOINLINE long one(long x) { return 3 * x + 1; }

NOINLINE long leaf(long x)
{
	if (x & 1)
		return x / 3;
	return x * 2 + 1;
}

NOINLINE long add(long x) { return x + 7; }
NOINLINE long sub(long x) { return x > 9 ? x - 9 : x; }
static long (*const ops[])(long) = {add, sub, leaf, one};

NOINLINE long walk(long n, long x)
{
	if (n <= 0)
		return x;
	calls += 3;
	x = leaf(x) + one(n);
	if (x & 2)
		x = walk(n - 1, x ^ 5);
	else
		x = walk(n - 2, x + 1);
	calls++;
	return ops[x & 3](x) & 0xffff;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000, acc = 0;
	for (long i = 0; i < n; i++) {
		calls++;
		acc += walk(40, i);
	}
	printf("%ld %ld\n", calls, acc);
	return 0;
}
