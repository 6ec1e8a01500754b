/*
 * fptable.c - calls through a table of function pointers.
 *
 * main calls dispatch(10), which calls ops[i % 3] for i = 0..9 through
 * the table: op_add 4 times (i = 0, 3, 6, 9), op_mul 3 times, op_neg 3
 * times.  op_mul calls scale() directly each time.  main also calls
 * op_add once directly, a second context of op_add.  The table is
 * writable, so no compiler can resolve the indirect calls.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile int vol_n = 10;

NOINLINE int scale(int x)
{
	sink = x;
	return x * 5;
}

NOINLINE int op_add(int a, int b)
{
	sink = a;
	return a + b;
}

NOINLINE int op_mul(int a, int b)
{
	int r = scale(a) * b;
	sink = r;
	return r;
}

NOINLINE int op_neg(int a, int b)
{
	sink = b;
	return -a;
}

int (*ops[3])(int, int) = {op_add, op_mul, op_neg};

NOINLINE int dispatch(int n)
{
	int acc = 1;
	for (int i = 0; i < n; i++) {
		acc = ops[i % 3](acc, i + 1) & 0xffff;
		sink = acc;
	}
	return acc;
}

int main(void)
{
	printf("dispatch %d\n", dispatch(vol_n));
	printf("op_add %d\n", op_add(vol_n, 2));
	return 0;
}
