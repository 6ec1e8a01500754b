/*
 * qsortcb.c - a callback from uninstrumented code: the C library's qsort
 * calls the comparator cmp_keys, which calls key_of for both operands.
 *
 * sort_all calls qsort once; how many comparisons qsort makes depends on
 * the C library, so the program counts them and prints the count (the
 * output is still the same on every run).  main also calls cmp_keys once
 * directly: a second context of the comparator, reached by a call.
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

#define N 20

volatile int sink;
volatile int vol_n = N;
unsigned long comparisons;

NOINLINE int key_of(const int *p)
{
	sink = *p;
	return (*p * 37) % 101;
}

/* Non-static, so it stays a function of its own at -O2. */
NOINLINE int cmp_keys(const void *pa, const void *pb)
{
	comparisons++;
	int a = key_of(pa), b = key_of(pb);
	return (a > b) - (a < b);
}

NOINLINE void sort_all(int *v, int n)
{
	qsort(v, (size_t)n, sizeof v[0], cmp_keys);
	sink = v[0]; /* not a tail call */
}

int main(void)
{
	int v[N];
	int n = vol_n;

	for (int i = 0; i < n; i++)
		v[i] = (i * 7919 + 13) % 97;
	sort_all(v, n);
	for (int i = 0; i < n; i++)
		printf("%d%c", v[i], i + 1 < n ? ' ' : '\n');
	printf("comparisons %lu\n", comparisons);
	printf("direct %d\n", cmp_keys(&v[0], &v[1]));
	return 0;
}
