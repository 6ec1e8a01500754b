/*
 * bsetjmp.c - GCC's built-in setjmp, as Ruby's VM uses it for every tag it
 * pushes: __builtin_setjmp is inline code that stores the frame pointer,
 * the address of a label (the receiver) and %rsp, and __builtin_longjmp,
 * in another function, jumps back to the receiver's address.  No
 * instruction of guarded reaches the receiver; only the label's address
 * names it (decision 169).  The longjmps come from one and two calls
 * down, through instrumented activations that they abandon.
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static void *jb[5];
volatile int vol_n = 40;

NOINLINE void thrower(int i)
{
	if (i % 3 == 0)
		__builtin_longjmp(jb, 1);
	if (i % 7 == 0)
		printf("  %d passes\n", i);
}

NOINLINE long middle(int i)
{
	long s = 0;
	for (int k = 0; k < i % 5; k++) {
		thrower(i + k);
		s += k;
	}
	return s;
}

NOINLINE long guarded(int i)
{
	void *saved[5];
	for (int k = 0; k < 5; k++)
		saved[k] = jb[k];
	long r;
	if (__builtin_setjmp(jb)) {
		r = -i;
	} else {
		r = middle(i);
		if (i % 2)
			r += i;
	}
	for (int k = 0; k < 5; k++)
		jb[k] = saved[k];
	return r;
}

int main(void)
{
	long total = 0;
	int caught = 0;
	for (int i = 0; i < vol_n; i++) {
		long r = guarded(i);
		if (r < 0)
			caught++;
		total += r;
	}
	printf("total %ld, caught %d\n", total, caught);
	return 0;
}
