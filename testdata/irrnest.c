/*
 * irrnest.c - irreducible cycles nested with natural loops, made with goto.
 *
 * irr_in_loop(): a counted loop whose body holds a cycle A <-> B entered
 * at A or at B (chosen by a runtime argument), so an irreducible region
 * nests inside a natural loop.
 *
 * loop_in_irr(): a cycle A <-> B with two entries whose block B holds a
 * counted inner loop, so a natural loop nests inside an irreducible region.
 *
 * Each block calls an out-of-line function, so the blocks cannot be merged
 * and nothing lets the compiler prove which entry is taken.  The loops
 * view of `blpp report` and `blpp cfg` must list the same nest for both
 * (cmd/blpp/loops_agree_test.go).
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile int vol_n = 6;

NOINLINE int fa(int x) { sink = x; return x * 3 + 1; }
NOINLINE int fb(int x) { sink = x; return x ^ 0x2a; }
NOINLINE int fc(int x) { sink = x; return x + 7; }

/* loops: a natural loop holding an irreducible region {A, B}. */
NOINLINE int irr_in_loop(int rounds, int n, int start_in_b)
{
	int acc = 0;
	for (int r = 0; r < rounds; r++) {
		int i = 0;
		if ((start_in_b ^ r) & 1)
			goto B;
A:
		acc += fa(i + r);
		i++;
		if (i >= n)
			goto next;
B:
		acc ^= fb(acc + i);
		i++;
		if (i < n)
			goto A;
next:
		acc = fc(acc);
	}
	return acc;
}

/* loops: an irreducible region {A, B, inner loop} holding a natural loop. */
NOINLINE int loop_in_irr(int n, int m, int start_in_b)
{
	int i = 0, acc = 0;
	if (start_in_b)
		goto B;
A:
	acc += fa(i);
	i++;
	if (i >= n)
		goto out;
B:
	for (int j = 0; j < m; j++)
		acc ^= fb(acc + j);
	i++;
	if (i < n)
		goto A;
out:
	return acc;
}

int main(int argc, char **argv)
{
	(void)argv;
	int n = vol_n + argc - 1; /* 6 when run without arguments */

	printf("irr_in_loop %d %d\n", irr_in_loop(n, n, 0), irr_in_loop(n - 2, n + 1, 1));
	printf("loop_in_irr %d %d\n", loop_in_irr(n, 3, 0), loop_in_irr(n + 1, 2, 1));
	return 0;
}
