/*
 * early.c - early returns from nested conditions and from loops, and a goto
 * out of a loop nest: functions with many exits, several of them inside
 * loops.  Ball-Larus joins all exits into one EXIT, so paths that leave from
 * the middle of a loop end there.
 *
 * "loops"/"depths" as in loops.c (natural loops, outermost depth 1).
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile int vol_n = 9;

int table[64];

/* loops: 0. */
NOINLINE int probe(int x)
{
	sink = x;
	return table[x & 63];
}

/* loops: 0.  Six returns out of nested ifs. */
NOINLINE int classify(int a, int b, int c)
{
	if (a < 0) {
		if (b < 0)
			return 1;
		if (c < 0)
			return 2;
		return 3;
	}
	if (a > b) {
		if (a > c)
			return 4;
		return 5;
	}
	sink = a + b + c;
	return 6;
}

/* loops: 1, depths: [1].  A linear search returning from inside the loop;
 * the loop also exits normally when the key is absent. */
NOINLINE int find_first(int n, int key)
{
	for (int i = 0; i < n; i++)
		if (probe(i) == key)
			return i;
	return -1;
}

/* loops: 2, depths: [1 2].  Returns from the inner loop, leaving both. */
NOINLINE int search2d(int n, int m, int key)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < m; j++)
			if (probe(i * m + j) == key)
				return i * 100 + j;
	return -1;
}

/* loops: 2, depths: [1 2].  goto out of a loop nest to shared cleanup, and
 * an early return before either loop. */
NOINLINE int goto_out(int n, int limit)
{
	int acc = 0;
	if (n <= 0)
		return -1;
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < n; j++) {
			acc += probe(i + j);
			if (acc > limit)
				goto done;
		}
	}
	acc = -acc;
done:
	sink = acc;
	return acc;
}

/* loops: 1, depths: [1].  Several exits from one loop: two returns in the
 * body (one from a nested condition), a break, and the loop test. */
NOINLINE int validate(int n)
{
	int seen = 0;
	for (int i = 0; i < n; i++) {
		int v = probe(i * 5);
		if (v < 0)
			return -1;
		if (v > 1000) {
			if (seen > 3)
				return -2;
			break;
		}
		seen++;
	}
	return seen;
}

int main(int argc, char **argv)
{
	(void)argv;
	int n = vol_n + argc - 1; /* 9 when run without arguments */

	for (int i = 0; i < 64; i++)
		table[i] = (i * 37 + 11) % 97;
	table[45] = 2000; /* validate stops at i == 9 */

	printf("classify %d %d %d %d %d %d\n", classify(-1, -1, 0), classify(-1, 1, -1),
	       classify(-1, 1, 1), classify(5, 1, 2), classify(5, 1, 9), classify(1, 5, 0));
	printf("find_first %d %d\n", find_first(n, table[4]), find_first(n, 1000));
	printf("search2d %d %d\n", search2d(n, n, table[20]), search2d(n, n, 5000));
	printf("goto_out %d %d %d\n", goto_out(n, 300), goto_out(n, 1 << 20), goto_out(0, 1));
	printf("validate %d %d\n", validate(n), validate(n + 4));
	return 0;
}
