/*
 * manypaths.c - functions with more acyclic paths than a dense counter
 * array takes (rewriter.DenseMax, 4096), so the runtime counts their
 * paths in hash tables, and the inline code counts a path found at its
 * first probe in a record's first table [decision 48].
 *
 * classify() has 2^13 paths. It runs 60000 times over 300 inputs (hot
 * paths, most at their first probe), then over 4000 distinct ones (more
 * paths than a first table takes: the runtime's successor tables). The
 * loop body of scan() has 2^13 paths too, so its backedges end hashed
 * paths. Each branch has a volatile store on one side only, so no
 * compiler can make it branch-free. guarded() has 2^13 paths too and
 * calls bounce(), a small function with slot counters in flow-only
 * images, which now and then longjmps back: the hashed function's record
 * must stay the running one across the small one's entry and exit, both
 * inline and through the runtime's unwinding [decision 51]. classify()
 * calls bounce() first, so a stale record in its shadow frame would be
 * classify's, and guarded's counts would show it.
 *
 * usage: manypaths   (prints checksums)
 */
#include <setjmp.h>
#include <stdio.h>

/* Not inlined, and at -O2 not cloned either (gcc would make
 * scan.constprop.0 for the one array): the tests look the names up. */
#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static volatile unsigned hits[13];

#define B(i)                     \
	if (x & (1u << (i)))     \
		hits[i]++;
#define B13 B(0) B(1) B(2) B(3) B(4) B(5) B(6) B(7) B(8) B(9) B(10) B(11) B(12)

static unsigned bounce(unsigned x);

NOINLINE static unsigned classify(unsigned x)
{
	B13
	return bounce(x | 1) * 2654435761u; /* odd: never jumps */
}

NOINLINE static unsigned scan(const unsigned *a, int n)
{
	unsigned s = 0;
	for (int k = 0; k < n; k++) {
		unsigned x = a[k];
		B13
		s += x;
	}
	return s;
}

static jmp_buf env;

NOINLINE static unsigned bounce(unsigned x)
{
	if ((x & 7) == 0)
		longjmp(env, 1);
	return x ^ (x >> 5);
}

NOINLINE static unsigned guarded(unsigned x)
{
	volatile unsigned r = 0;
	if (setjmp(env) == 0)
		r = bounce(x);
	B13
	return r + x;
}

int main(void)
{
	static unsigned a[4000];
	unsigned seed = 1, sum = 0;
	for (int k = 0; k < 4000; k++) {
		seed = seed * 1103515245u + 12345u;
		a[k] = seed >> 8;
	}
	for (int k = 0; k < 60000; k++)
		sum += classify(a[k % 300]);
	for (int k = 0; k < 4000; k++)
		sum += classify(a[k]);
	for (int r = 0; r < 20; r++)
		sum += scan(a, 300);
	sum += scan(a, 4000);
	for (int k = 0; k < 2000; k++)
		sum += guarded(a[k % 40]);
	printf("%u", sum);
	for (int i = 0; i < 13; i++)
		printf(" %u", hits[i]);
	printf("\n");
	return 0;
}
