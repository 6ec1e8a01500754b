/*
 * longjmp.c - longjmp out of three instrumented frames.
 *
 * run() loops 6 times; each time it calls setjmp and then level1 ->
 * level2 -> level3.  level3 gets i + 2 and calls longjmp back to run()
 * when that is a multiple of 3 (i = 1 and i = 4), abandoning three
 * frames; otherwise the chain returns normally.  Each level runs 6 times.
 * After the loop run() calls after() and main calls finish(): their
 * records must sit under run and main, not under an abandoned frame.
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
		longjmp(env, x);
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

NOINLINE int after(int x)
{
	sink = x;
	return x + 1;
}

NOINLINE int finish(int x)
{
	sink = x;
	return x - 1;
}

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
	return after(acc);
}

int main(void)
{
	int r = run(vol_n);
	printf("run %d finish %d\n", r, finish(r));
	return 0;
}
