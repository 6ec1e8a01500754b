/*
 * irreducible.c - cycles with two entries, made with goto.
 *
 * twoentry(): blocks A and B form the cycle A -> B -> A.  Control enters it
 * at A (falling in) or at B (the goto), chosen by a runtime argument, so
 * neither block dominates the other and the cycle is not a natural loop:
 * dominator-based loop finders see no loop, while a DFS still finds one
 * retreating edge.  Each block calls an out-of-line function, so the blocks
 * cannot be merged, and nothing in the function lets the compiler prove
 * which entry is taken.  The cycle stays irreducible in every gcc and clang
 * build at -O0, -O2 and -O3 (neither compiler splits nodes to make it
 * reducible): at -O3 gcc rotates it so that the entry test jumps either to
 * the fb call or to the fa call, but both remain entries.
 *
 * reducible_twin(): the same work as a plain loop, for comparison.
 *
 * irr_in_loop(): a counted loop whose body holds such a cycle, so an
 * irreducible region nests inside a natural loop.  loop_in_irr(): such a
 * cycle whose block B holds a counted inner loop, so a natural loop nests
 * inside an irreducible region.  The loops view of `blpp report` and
 * `blpp cfg` must list the same nests (cmd/blpp/loops_agree_test.go).
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile int vol_n = 10;

NOINLINE int fa(int x) { sink = x; return x * 3 + 1; }
NOINLINE int fb(int x) { sink = x; return x ^ 0x2a; }
NOINLINE int fc(int x) { sink = x; return x + 7; }

/* loops: 0 natural; one irreducible cycle {A, B}. */
NOINLINE int twoentry(int n, int start_in_b)
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
	acc ^= fb(acc + i);
	i++;
	if (i < n)
		goto A;
out:
	return acc;
}

/* loops: 1, depths: [1]. */
NOINLINE int reducible_twin(int n)
{
	int acc = 0;
	for (int i = 0; i < n; i += 2) {
		acc += fa(i);
		if (i + 1 >= n)
			break;
		acc ^= fb(acc + i + 1);
	}
	return acc;
}

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
	int n = vol_n + argc - 1; /* 10 when run without arguments */

	printf("twoentry %d %d %d\n", twoentry(n, 0), twoentry(n, 1), twoentry(n - 3, 1));
	printf("reducible_twin %d\n", reducible_twin(n));
	printf("irr_in_loop %d %d\n", irr_in_loop(n - 4, n - 4, 0), irr_in_loop(n - 6, n - 3, 1));
	printf("loop_in_irr %d %d\n", loop_in_irr(n - 4, 3, 0), loop_in_irr(n - 3, 2, 1));
	return 0;
}
