/*
 * arenagrow.c - a calling context tree large enough that the runtime's
 * small objects' arena fills several chunks (runtime decision 145):
 * c0..c14 each call the next from two call sites, so c15 has 32,768
 * contexts.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static volatile long v;

NOINLINE long c15(long x)
{
	v += x;
	return x;
}

#define C(n, m) \
	NOINLINE long c##n(long x) { return c##m(x + 1) + c##m(x + 2); }
C(14, 15) C(13, 14) C(12, 13) C(11, 12) C(10, 11) C(9, 10) C(8, 9) C(7, 8)
C(6, 7) C(5, 6) C(4, 5) C(3, 4) C(2, 3) C(1, 2) C(0, 1)

int main(void)
{
	printf("sum %ld\n", c0(0));
	return 0;
}
