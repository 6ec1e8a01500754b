/*
 * recursion.c - direct and mutual recursion, for the calling context tree
 * (recursive calls fold onto the ancestor record) and for shadow-stack
 * depth.
 *
 * Loop counts here depend on the optimisation level: from -O2 on, gcc and
 * clang turn self tail calls into a jump back to the top, which is a loop
 * (fib's second call, ackermann's outer call, all of gcd's recursion), and
 * is_even/is_odd's calls into tail jumps to each other (no loop: the cycle
 * is between functions).  depth_sum stays recursive and loop-free
 * everywhere.  internal/testsupport/fixture/expect.go says what holds where.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int vol_n = 15;

NOINLINE int fib(int n)
{
	if (n < 2)
		return n;
	return fib(n - 1) + fib(n - 2);
}

NOINLINE int ackermann(int m, int n)
{
	if (m == 0)
		return n + 1;
	if (n == 0)
		return ackermann(m - 1, 1);
	return ackermann(m - 1, ackermann(m, n - 1));
}

/* Self tail recursion only. */
NOINLINE unsigned gcd(unsigned a, unsigned b)
{
	if (b == 0)
		return a;
	return gcd(b, a % b);
}

int is_odd(unsigned n);

NOINLINE int is_even(unsigned n)
{
	if (n == 0)
		return 1;
	return is_odd(n - 1);
}

NOINLINE int is_odd(unsigned n)
{
	if (n == 0)
		return 0;
	return is_even(n - 1);
}

/* Recursion that is not a tail call in any form: the call's result is
 * needed after it returns, in a non-associative way. */
NOINLINE int depth_sum(int n)
{
	if (n <= 0)
		return 1;
	int r = depth_sum(n - 1);
	return r * 3 % 1009 + n;
}

int main(int argc, char **argv)
{
	(void)argv;
	int n = vol_n + argc - 1; /* 15 when run without arguments */

	printf("fib %d\n", fib(n));
	printf("ackermann %d\n", ackermann(2, n / 5));
	printf("gcd %u\n", gcd((unsigned)n * 1071, (unsigned)n * 462));
	printf("is_even %d %d\n", is_even((unsigned)n), is_even((unsigned)n + 1));
	printf("is_odd %d\n", is_odd((unsigned)n * 3));
	printf("depth_sum %d\n", depth_sum(n * 4));
	return 0;
}
