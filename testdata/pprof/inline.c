/*
 * inline.c - a static function inlined twice into one caller, for the
 * pprof export's inline frames (DW_TAG_inlined_subroutine) and its
 * per-line counts: the loop's copy of scale runs n times, the second copy
 * once, and both copies share scale's source lines.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile int vol_n = 10;

static inline __attribute__((always_inline)) int scale(int x)
{
	if (x & 1)
		return x * 3 + 1;
	return x / 2;
}

NOINLINE int run(int n)
{
	int acc = 0;
	for (int i = 0; i < n; i++) {
		acc += scale(i + acc);
		sink = acc;
	}
	acc += scale(acc);
	return acc;
}

int main(void)
{
	printf("run %d\n", run(vol_n));
	return 0;
}
