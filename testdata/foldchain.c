/*
 * foldchain.c - folded calls and hot records in either order, for
 * TestPromoteLinear (rewriter decision 129). l0..l13 call on from two
 * call sites each, so the calling context tree has 8,192 contexts of
 * l13; each calls g, which calls itself: a folded node per context
 * (recursion folds onto the ancestor's record). f000..f999 have 128
 * paths each (seven branches on volatile stores, which no compiler
 * merges), so their context-mode records start cold, and each is called
 * often enough that the runtime makes its record hot. argv[1] "tree"
 * builds the folded nodes first, "hot" last: the same work, which should
 * cost the runtime the same either way; a promotion that walks every
 * folded node of the thread made the first order cost 8,192 node visits
 * per hot record more.
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static volatile long va, vb;

#define BR(k) \
	if (x & (1 << k)) \
		va = s + k; \
	else \
		vb = s - k; \
	s += va;

#define FN(i) \
	NOINLINE long f##i(long d, long x) \
	{ \
		long s = x; \
		BR(0) BR(1) BR(2) BR(3) BR(4) BR(5) BR(6) \
		if (d > 0) \
			s += f##i(d - 1, x * 5 + 1); \
		return s; \
	}

#define T10(M, a) M(a##0) M(a##1) M(a##2) M(a##3) M(a##4) M(a##5) M(a##6) M(a##7) M(a##8) M(a##9)
#define T100(M, a) T10(M, a##0) T10(M, a##1) T10(M, a##2) T10(M, a##3) T10(M, a##4) \
	T10(M, a##5) T10(M, a##6) T10(M, a##7) T10(M, a##8) T10(M, a##9)
#define T1000(M) T100(M, 0) T100(M, 1) T100(M, 2) T100(M, 3) T100(M, 4) \
	T100(M, 5) T100(M, 6) T100(M, 7) T100(M, 8) T100(M, 9)

T1000(FN)

NOINLINE long g(long d)
{
	if (d <= 0)
		return va;
	long r = g(d - 1);
	vb = r;
	return r + 1;
}

NOINLINE long l13(long x) { return g(1) + x; }
#define LV(n, m) \
	NOINLINE long l##n(long x) \
	{ \
		long s = l##m(x + 1); \
		return s + l##m(x + 2); \
	}
LV(12, 13) LV(11, 12) LV(10, 11) LV(9, 10) LV(8, 9) LV(7, 8) LV(6, 7)
LV(5, 6) LV(4, 5) LV(3, 4) LV(2, 3) LV(1, 2) LV(0, 1)

#define PTR(i) f##i,
static long (*const fns[])(long, long) = {T1000(PTR)};

static long hot(void)
{
	long sum = 0;
	for (long i = 0; i < 1000; i++)
		for (long j = 0; j < 12; j++)
			sum += fns[i](2, i * 31 + j);
	return sum;
}

int main(int argc, char **argv)
{
	int tree = argc > 1 && argv[1][0] == 't';
	long sum = 0;
	if (tree)
		sum += l0(0);
	sum += hot();
	if (!tree)
		sum += l0(0);
	printf("sum %ld\n", sum);
	return 0;
}
