/*
 * nofde.c - procedures that only their code reveals. Built static, stripped
 * and with -fno-asynchronous-unwind-tables, the program's own functions have
 * neither a symbol nor an FDE (only the static C library's do), as in
 * Debian's busybox. Each is found by a different kind of evidence:
 *
 *   square        direct calls
 *   twice, negate pointers in a const table (.rodata: absolute words)
 *   cmp_int       an immediate (the comparator handed to qsort)
 *   on_exit_msg   an immediate (atexit)
 *   tailed        only a tail jump from jumper
 *   fail          a call that never returns; checked's code runs into the
 *                 next function after it
 *   classify      a switch whose table labels must not become functions
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile int vol_n = 40;

NOINLINE static int square(int x) { sink = x; return x * x; }
NOINLINE static int twice(int x) { sink = x; return 2 * x + 1; }
NOINLINE static int negate(int x) { sink = x; return -x + 7; }

/* const: in a position-dependent executable it lands in .rodata. */
static int (*const ops[3])(int) = {twice, negate, square};

NOINLINE static __attribute__((noreturn)) void fail(const char *msg)
{
	fputs(msg, stderr);
	exit(3);
}

NOINLINE static int checked(int x)
{
	if (x < 0)
		fail("negative\n");
	return x + 1;
}

/* A switch dense enough for a jump table. */
NOINLINE static int classify(int x)
{
	switch (x % 9) {
	case 0: return square(x) + 1;
	case 1: return x + 11;
	case 2: return twice(x) - 5;
	case 3: return x ^ 0x55;
	case 4: return negate(x) * 3;
	case 5: return x * 3 + sink;
	case 6: return x - 100;
	case 7: return (x << 2) | 1;
	default: return 42;
	}
}

NOINLINE static int tailed(int x, int y)
{
	int s = sink;
	sink = y;
	for (int i = 0; i < y; i++)
		s += (x ^ i) & 7;
	sink = s;
	return s;
}

/* A sibling call: jump, not call. */
NOINLINE static int jumper(int x) { return tailed(x + 1, x & 15); }

NOINLINE static int cmp_int(const void *pa, const void *pb)
{
	int a = *(const int *)pa, b = *(const int *)pb;
	return (a > b) - (a < b);
}

static void on_exit_msg(void) { fputs("bye\n", stdout); }

int main(void)
{
	int v[64];
	int n = vol_n, acc = 0;
	atexit(on_exit_msg);
	for (int i = 0; i < n; i++) {
		v[i] = classify(i * 7 + 3) + ops[i % 3](i);
		acc += checked(v[i] & 0xff) + jumper(i);
	}
	qsort(v, n, sizeof v[0], cmp_int);
	printf("acc %d min %d max %d\n", acc, v[0], v[n - 1]);
	return 0;
}
