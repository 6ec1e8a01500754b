/*
 * noreturn.c - calls that do not return: exit, abort, a user function
 * declared noreturn, __builtin_unreachable, and an assert that holds.
 *
 * The compiler places nothing after a no-return call, so the next bytes may
 * belong to another block or function; a CFG builder that falls through
 * there invents edges.  All no-return calls here sit on paths the normal run
 * does not take (guarded by a volatile flag that is 0), so the program exits
 * with status 0 and prints the same thing every run.
 *
 * die() is the only function here that never returns.  None has a loop
 * except checked_sum (1 loop, depth 1).  gcc -O2/-O3 moves maybe_abort's
 * abort call into a maybe_abort.cold fragment; clang -O0 alone lowers
 * unreachable_default's switch to a 4-entry jump table (the others compute
 * the value without a branch table).
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile int vol_n = 8;
volatile int fail; /* always 0: the failure paths are never taken */

/* Never returns: prints to stderr and exits with a status of 3. */
NOINLINE __attribute__((noreturn)) void die(const char *msg, int code)
{
	fprintf(stderr, "die: %s (%d)\n", msg, code);
	exit(3);
}

/* Calls exit on a path that is not taken. */
NOINLINE int maybe_exit(int x)
{
	if (fail)
		exit(2);
	return x + 1;
}

/* Calls abort on a path that is not taken. */
NOINLINE int maybe_abort(int x)
{
	if (x < 0 || fail)
		abort();
	return x * 2;
}

/* Calls die (a user noreturn function) on a path that is not taken. */
NOINLINE int maybe_die(int x)
{
	if (fail)
		die("maybe_die", x);
	sink = x;
	return x - 1;
}

/* __builtin_unreachable on the impossible arm of a switch: the compiler may
 * drop the range check. */
NOINLINE int unreachable_default(int x)
{
	switch (x & 3) {
	case 0: sink = 10; return 10;
	case 1: sink = 11; return 11;
	case 2: sink = 12; return 12;
	case 3: sink = 13; return 13;
	}
	__builtin_unreachable();
}

/* An assert that holds, inside a loop: the failure call
 * (__assert_fail) is never reached. */
NOINLINE int checked_sum(int n)
{
	int acc = 0;
	for (int i = 0; i < n; i++) {
		int v = maybe_exit(i);
		assert(v > i);
		acc += v;
	}
	return acc;
}

int main(int argc, char **argv)
{
	(void)argv;
	int n = vol_n + argc - 1; /* 8 when run without arguments */

	printf("maybe_exit %d\n", maybe_exit(n));
	printf("maybe_abort %d\n", maybe_abort(n));
	printf("maybe_die %d\n", maybe_die(n));
	printf("unreachable_default %d %d\n", unreachable_default(n), unreachable_default(n + 1));
	printf("checked_sum %d\n", checked_sum(n));
	if (fail)
		die("main", 1);
	return 0;
}
