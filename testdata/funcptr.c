/*
 * funcptr.c - indirect calls: a table of function pointers, an indirect tail
 * call, and qsort calling back into a comparator from libc (uninstrumented
 * code calling instrumented code).
 *
 * apply_all() has 1 loop (depth 1) holding an indirect call.  apply_tail()
 * has no loop; from -O2 both compilers emit its call as an indirect jump
 * (`jmp *`) - an indirect tail call, not a jump table.
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile int vol_n = 12;

typedef int (*binop)(int, int);

NOINLINE int op_add(int a, int b) { sink = a; return a + b; }
NOINLINE int op_sub(int a, int b) { sink = a; return a - b; }
NOINLINE int op_mul(int a, int b) { sink = a; return a * b; }
NOINLINE int op_xor(int a, int b) { sink = a; return a ^ b; }

/* Writable, so the compiler cannot resolve the calls through it. */
binop ops[4] = {op_add, op_sub, op_mul, op_xor};

/* loops: 1, depths: [1]. */
NOINLINE int apply_all(int n, int seed)
{
	int acc = seed;
	for (int i = 0; i < n; i++)
		acc = ops[i & 3](acc, i + 1) & 0xffff;
	return acc;
}

/* loops: 0.  An indirect tail call from -O2 on. */
NOINLINE int apply_tail(int op, int a, int b)
{
	return ops[op & 3](a, b);
}

/* The qsort comparator: called only from libc. */
NOINLINE int cmp_int(const void *pa, const void *pb)
{
	int a = *(const int *)pa, b = *(const int *)pb;
	return (a > b) - (a < b);
}

/* A callback passed in by the caller. */
NOINLINE long fold(const int *v, int n, binop f)
{
	long acc = 0;
	for (int i = 0; i < n; i++)
		acc = f((int)acc, v[i]);
	return acc;
}

int main(int argc, char **argv)
{
	(void)argv;
	int n = vol_n + argc - 1; /* 12 when run without arguments */
	int v[32];

	for (int i = 0; i < n; i++)
		v[i] = (i * 7919 + 13) % 101;
	qsort(v, (size_t)n, sizeof v[0], cmp_int);
	for (int i = 0; i < n; i++)
		printf("%d%c", v[i], i + 1 < n ? ' ' : '\n');

	printf("apply_all %d\n", apply_all(n, 5));
	printf("apply_tail %d %d %d %d\n", apply_tail(0, 6, 7), apply_tail(1, 6, 7),
	       apply_tail(2, 6, 7), apply_tail(3, 6, 7));
	printf("fold %ld %ld\n", fold(v, n, op_add), fold(v, n, op_xor));
	return 0;
}
