/*
 * selfjmp.c - longjmp back into the activation that called setjmp.
 *
 * bash's test builtin (test_command) works this way: it calls setjmp,
 * does its work, and leaves by calling longjmp to its own jmp_buf, so
 * the call to longjmp (a call that does not return) ends in the same
 * activation, at the setjmp's second return.  The activation's path
 * must restart there, its frame must stay, and its return must match it.
 */
#include <setjmp.h>
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile int vol_n = 7;
static jmp_buf env;
static int result;

NOINLINE int work(int x)
{
	sink = x;
	return x * 3 + 1;
}

/* Leaves through longjmp to its own setjmp every time. */
NOINLINE int self_jump(int x)
{
	if (setjmp(env))
		return result;
	int r = work(x);
	if (r % 2)
		r += work(r);
	result = r;
	longjmp(env, 1);
}

/* Leaves through longjmp to its own setjmp on some calls only, from a
 * loop, so the second return lands inside a path that looped. */
NOINLINE int sometimes(int n)
{
	volatile int acc = 0;
	volatile int i = 0;
	if (setjmp(env) != 0) {
		acc += 1000;
		i++;
	}
	for (; i < n; i++) {
		acc += work(i);
		if (i % 3 == 2)
			longjmp(env, 1);
	}
	return acc;
}

int main(int argc, char **argv)
{
	(void)argv;
	int n = vol_n + argc - 1;
	long sum = 0;
	for (int i = 0; i < n; i++)
		sum += self_jump(i);
	printf("self %ld\n", sum);
	printf("sometimes %d\n", sometimes(n));
	return 0;
}
