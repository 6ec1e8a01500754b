/*
 * deeprec.c - deep direct recursion, for the calling context tree: the
 * recursive calls fold onto the ancestor record, so the tree stays small
 * however deep the recursion goes.
 *
 * main calls depth(999) once: 1000 activations of depth, 999 of them
 * recursive (folded), and the innermost one calls bottom() once.  The
 * recursion is not a tail call in any form (the result is needed, in a
 * non-associative way, after the call returns), so it stays a call at
 * every optimisation level.  main then calls depth(3) from a second call
 * site: 4 more activations, 3 folded, a second bottom().
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile int vol_deep = 999;
volatile int vol_shallow = 3;

NOINLINE int bottom(int n)
{
	sink = n;
	return 7;
}

NOINLINE int depth(int n)
{
	if (n <= 0) {
		int b = bottom(n);
		sink = b; /* not a tail call */
		return b;
	}
	int r = depth(n - 1);
	return r * 3 % 1009 + n;
}

int main(void)
{
	printf("depth %d\n", depth(vol_deep));
	printf("depth %d\n", depth(vol_shallow));
	return 0;
}
