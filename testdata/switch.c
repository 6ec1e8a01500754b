/*
 * switch.c - a dense switch that compilers lower to a jump table and a
 * sparse one they lower to a tree of compares.
 *
 * dense(): case values 0..11 except 5, plus default.  The table covers
 * 0..11, so its 12 slots hold 11 case bodies and the default (slot 5): 12
 * distinct targets.  Every case calls a different out-of-line function, so
 * no two case bodies can merge, and none can be turned into a lookup of
 * constants (the switch-to-table-of-values optimisation both compilers do
 * when cases only pick a value).  Out-of-range values take the range check
 * to the default before the table is consulted.
 *
 * sparse(): 7 widely spaced case values plus default; no table, binary
 * search by compares.
 *
 * Neither function has a loop.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile int vol_n = 14;

NOINLINE int op0(int x) { sink = x; return x + 100; }
NOINLINE int op1(int x) { sink = x; return x * 3; }
NOINLINE int op2(int x) { sink = x; return x - 7; }
NOINLINE int op3(int x) { sink = x; return x ^ 0x55; }
NOINLINE int op4(int x) { sink = x; return x << 2; }
NOINLINE int op6(int x) { sink = x; return x / 2 + 1; }
NOINLINE int op7(int x) { sink = x; return 1000 - x; }
NOINLINE int op8(int x) { sink = x; return x * x; }
NOINLINE int op9(int x) { sink = x; return x | 0x100; }
NOINLINE int op10(int x) { sink = x; return x % 5 + 40; }
NOINLINE int op11(int x) { sink = x; return ~x; }
NOINLINE int opdef(int x) { sink = x; return -1; }

/* loops: 0; one jump table with 12 distinct targets (11 cases + default) at
 * -O0, -O2 and -O3 in gcc and clang. */
NOINLINE int dense(int x)
{
	int r;
	switch (x) {
	case 0: r = op0(x); break;
	case 1: r = op1(x); break;
	case 2: r = op2(x); break;
	case 3: r = op3(x); break;
	case 4: r = op4(x); break;
	case 6: r = op6(x); break;
	case 7: r = op7(x); break;
	case 8: r = op8(x); break;
	case 9: r = op9(x); break;
	case 10: r = op10(x); break;
	case 11: r = op11(x); break;
	default: r = opdef(x); break;
	}
	sink = r;
	return r + 1;
}

/* loops: 0; no indirect jump: the case values are too far apart for a
 * table. */
NOINLINE int sparse(int x)
{
	int r;
	switch (x) {
	case 3: r = op0(x); break;
	case 17: r = op1(x); break;
	case 120: r = op2(x); break;
	case 999: r = op3(x); break;
	case 4096: r = op4(x); break;
	case 65535: r = op6(x); break;
	case 1 << 20: r = op7(x); break;
	default: r = opdef(x); break;
	}
	sink = r;
	return r - 1;
}

int main(int argc, char **argv)
{
	(void)argv;
	int n = vol_n + argc - 1; /* 14 when run without arguments */
	static const int sparse_in[] = {3, 17, 120, 999, 4096, 65535, 1 << 20, 5, -3};
	long sum = 0;

	for (int i = -1; i < n; i++) {
		int r = dense(i);
		printf("dense(%d) = %d\n", i, r);
		sum += r;
	}
	for (unsigned i = 0; i < sizeof sparse_in / sizeof sparse_in[0]; i++) {
		int r = sparse(sparse_in[i]);
		printf("sparse(%d) = %d\n", sparse_in[i], r);
		sum += r;
	}
	printf("sum %ld\n", sum);
	return 0;
}
