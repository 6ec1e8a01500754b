/*
 * mutual.c - mutual recursion (is_even/is_odd), for the calling context
 * tree: a call to a function that already has a record on the current
 * chain folds onto that ancestor record.
 *
 * main calls is_even(25): is_even runs for 25, 23, ..., 1 (13 times) and
 * is_odd for 24, ..., 0 (13 times).  The tree is main/is_even/is_odd; the
 * 12 calls from is_odd back to is_even fold onto main/is_even.  main then
 * calls is_odd(7): is_odd for 7, 5, 3, 1 (4), is_even for 6, 4, 2, 0 (4);
 * main/is_odd/is_even, with 3 folded calls back to main/is_odd.
 *
 * The store after each call keeps the calls from becoming tail jumps at
 * -O2, so the tree is the same at every optimisation level.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile unsigned vol_a = 25, vol_b = 7;

int is_odd(unsigned n);

NOINLINE int is_even(unsigned n)
{
	if (n == 0)
		return 1;
	int r = is_odd(n - 1);
	sink = r; /* not a tail call */
	return r;
}

NOINLINE int is_odd(unsigned n)
{
	if (n == 0)
		return 0;
	int r = is_even(n - 1);
	sink = r;
	return r;
}

int main(void)
{
	printf("is_even(%u) %d\n", vol_a, is_even(vol_a));
	printf("is_odd(%u) %d\n", vol_b, is_odd(vol_b));
	return 0;
}
