/*
 * loops.c - loop shapes for loop detection and Ball-Larus backedges.
 *
 * Every function of interest is kept out of line and is given its trip
 * counts from a volatile global, so no compiler can see through it.  Each
 * loop body calls step(), an out-of-line function with a side effect; a call
 * in the body keeps the vectoriser away (no vector body plus scalar
 * epilogue) and makes gcc and clang leave the loop un-unrolled, so the
 * loops in the binary are the loops written here at every -O level - with
 * two deliberate exceptions: nested3_guarded, where gcc adds a loop, and
 * vector_sum, where clang does.
 *
 * Per function, "loops" counts natural loops (one per loop header) and
 * "depths" lists each loop's nesting depth, outermost = 1, sorted.
 * internal/testsupport/fixture/expect.go holds the same numbers as Go data, checked
 * against real builds.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
/* noipa: no clones (.constprop/.isra/.part), so symbol names stay put. */
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile int vol_n = 7;

/* loops: 0.  The opaque loop body: a store the compiler must keep. */
NOINLINE int step(int x)
{
	sink = x;
	return (x * 7 + 3) & 0xff;
}

/* loops: 0.  Branches but no cycle. */
NOINLINE int no_loop(int x)
{
	int r = step(x);
	if (r & 1)
		r += step(r);
	else
		r -= 3;
	return r;
}

/* loops: 1, depths: [1]. */
NOINLINE int simple_loop(int n)
{
	int acc = 0;
	for (int i = 0; i < n; i++)
		acc += step(i);
	return acc;
}

/* loops: 2, depths: [1 2]. */
NOINLINE int nested2(int n, int m)
{
	int acc = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < m; j++)
			acc += step(i * m + j);
	return acc;
}

/* loops: 3, depths: [1 2 3].  The innermost loop is a do-while: it has no
 * entry test, see nested3_guarded for why that matters. */
NOINLINE int nested3(int n, int m, int k)
{
	int acc = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < m; j++) {
			int l = 0;
			do
				acc ^= step(i + j * 3 + l * 5);
			while (++l < k);
		}
	return acc;
}

/* Source: 3 loops, depths [1 2 3] - but not in every binary.  The entry
 * test of the innermost loop (k > 0) does not change inside the outer two,
 * and gcc -O2/-O3 thread jumps across it: once an iteration of the middle
 * loop has run the inner loop, the next one skips the test, so gcc emits
 * the middle loop twice (with and without the inner loop).  gcc -O2/-O3:
 * loops: 4, depths: [1 2 2 3]; gcc -O0 and clang: loops: 3, depths:
 * [1 2 3]. */
NOINLINE int nested3_guarded(int n, int m, int k)
{
	int acc = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < m; j++)
			for (int l = 0; l < k; l++)
				acc ^= step(i + j * 3 + l * 5);
	return acc;
}

/* loops: 2, depths: [1 1].  Two loops one after the other. */
NOINLINE int two_loops(int n)
{
	int a = 0, b = 0;
	for (int i = 0; i < n; i++)
		a += step(i);
	for (int i = n; i > 0; i--)
		b ^= step(a + i);
	return a + b;
}

/* loops: 3, depths: [1 2 2].  One outer loop holding two inner loops in
 * sequence. */
NOINLINE int outer_two_inner(int n, int m)
{
	int acc = 0;
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < m; j++)
			acc += step(i + j);
		for (int j = 0; j < m; j++)
			acc -= step(i * j);
	}
	return acc;
}

/* loops: 1, depths: [1].  continue and break leave the same single loop:
 * the continue path is a second latch of the one header. */
NOINLINE int continue_break(int n, int limit)
{
	int acc = 0;
	for (int i = 0; i < n; i++) {
		int v = step(i);
		if (v & 1)
			continue;
		if (acc > limit)
			break;
		acc += v;
	}
	return acc;
}

/* loops: 1, depths: [1].  The body runs before the first test. */
NOINLINE int do_while(int n)
{
	int i = 0, acc = 0;
	do {
		acc += step(i);
		i++;
	} while (i < n);
	return acc;
}

/* loops: 1, depths: [1].  A data-dependent trip count (Collatz steps); no
 * call in the body, but nothing the vectoriser or unroller can count. */
NOINLINE int collatz(unsigned x)
{
	int steps = 0;
	while (x != 1) {
		if (x & 1)
			x = 3 * x + 1;
		else
			x >>= 1;
		steps++;
	}
	return steps;
}

int data[64];

/* Source: 1 loop, depths [1] - deliberately vectorisable (no call, a
 * countable trip count, independent iterations).  clang -O2/-O3 emit a
 * vector loop and a scalar loop for the remainder: loops: 2, depths: [1 1].
 * gcc -O3 vectorises too but unrolls the remainder (at most 3 iterations)
 * into straight-line code, and gcc -O2 (very cheap cost model) leaves the
 * loop scalar: loops: 1, depths: [1], as at -O0. */
NOINLINE int vector_sum(const int *a, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += a[i] * 3;
	return s;
}

int main(int argc, char **argv)
{
	(void)argv;
	int n = vol_n + argc - 1; /* 7 when run without arguments */

	printf("no_loop %d\n", no_loop(n));
	printf("simple_loop %d\n", simple_loop(n));
	printf("nested2 %d\n", nested2(n, n - 2));
	printf("nested3 %d\n", nested3(n - 3, n - 4, n - 2));
	printf("nested3_guarded %d %d\n", nested3_guarded(n - 3, n - 4, n - 2),
	       nested3_guarded(n - 4, n - 3, 0));
	printf("two_loops %d\n", two_loops(n));
	printf("outer_two_inner %d\n", outer_two_inner(n - 2, n - 3));
	printf("continue_break %d\n", continue_break(n * 4, 300));
	printf("do_while %d\n", do_while(n));
	printf("collatz %d\n", collatz((unsigned)n * 3 + 6));
	for (int i = 0; i < 64; i++)
		data[i] = i * i - 5 * i;
	printf("vector_sum %d %d\n", vector_sum(data, 64), vector_sum(data, n * 5));
	return 0;
}
