/*
 * coldtwin.c - many calling contexts of a function with 4096 paths
 * (rewriter.DenseMax: a dense counter array of 32 KiB), each running
 * it 100 times over three paths, for TestTwinWaits (runtime decision
 * 136). l0..l10 call on from two call sites each, so leaf() has 2,048
 * contexts and wide() a record under each. A context-mode record of
 * wide() starts cold; a hot twin, with the whole dense array, pays for
 * its memory only when the record runs long enough, and 100 path ends
 * are not that long: the runtime counts them in the cold record.
 *
 * usage: coldtwin   (prints a checksum)
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static volatile long va, vb;

/* Twelve branches, each with a volatile store on one side only, so that
 * no compiler merges them: 4096 paths. */
#define BR(k) \
	if (x & (1 << k)) \
		va = s + k; \
	else \
		vb = s - k; \
	s += va;

NOINLINE long wide(long x)
{
	long s = x;
	BR(0) BR(1) BR(2) BR(3) BR(4) BR(5) BR(6) BR(7) BR(8) BR(9) BR(10) BR(11)
	return s;
}

NOINLINE long leaf(long x)
{
	long s = 0;
	for (long i = 0; i < 100; i++)
		s += wide((x + i) % 3);
	return s;
}

#define LV(n, m) \
	NOINLINE long l##n(long x) \
	{ \
		long s = l##m(x + 1); \
		return s + l##m(x + 2); \
	}
#define l11 leaf
LV(10, 11) LV(9, 10) LV(8, 9) LV(7, 8) LV(6, 7) LV(5, 6) LV(4, 5) LV(3, 4) LV(2, 3) LV(1, 2) LV(0, 1)

int main(void)
{
	printf("sum %ld\n", l0(0));
	return 0;
}
