/*
 * setjmp.c - longjmp out of three nested frames.
 *
 * run() calls setjmp and then level1 -> level2 -> level3; level3 calls
 * longjmp back to run() when its argument says so, so level1..level3 never
 * reach their returns on that path.  A path profiler sees three activations
 * end without a path end and must record them as partial paths (DESIGN
 * decision 6) and pop their shadow frames by comparing rsp (decision 7).
 * On the other path the chain returns normally.  run() also loops, so the
 * longjmp lands in the middle of a loop iteration.
 */
#include <setjmp.h>
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile int vol_n = 6;

static jmp_buf env;

NOINLINE int level3(int x)
{
	sink = x;
	if (x % 3 == 0)
		longjmp(env, x + 1);
	return x * 2;
}

NOINLINE int level2(int x)
{
	int r = level3(x + 1);
	sink = r;
	return r + 1;
}

NOINLINE int level1(int x)
{
	int r = level2(x + 1);
	sink = r;
	return r + 1;
}

/* loops: 1, depths: [1].  The longjmp returns to the setjmp inside the
 * loop body.  i and acc are volatile: they change between setjmp and
 * longjmp, and only volatile locals keep such values [C11 7.13.2.1]. */
NOINLINE int run(int n)
{
	volatile int acc = 0;
	for (volatile int i = 0; i < n; i++) {
		int v = setjmp(env);
		if (v != 0) {
			printf("jumped %d\n", v);
			acc += v * 100;
			continue;
		}
		int r = level1(i);
		printf("returned %d\n", r);
		acc += r;
	}
	return acc;
}

int main(int argc, char **argv)
{
	(void)argv;
	int n = vol_n + argc - 1; /* 6 when run without arguments */

	printf("run %d\n", run(n));
	return 0;
}
