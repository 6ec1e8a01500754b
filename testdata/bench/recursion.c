/*
 * recursion.c - benchmark workload: call-heavy recursive code.
 *
 * Four classic recursions, each dominated by calls and returns rather than
 * loops: naive Fibonacci, Ackermann's function, building and walking
 * binary trees (allocation, a checksum walk and a mirror-image compare, as
 * in the binary-trees benchmark), and counting N-queens solutions by
 * backtracking.  This is the case where per-call instrumentation (entry,
 * exit, calling-context records) costs the most relative to the work.
 *
 * usage: recursion [SCALE]   (SCALE 100 is the benchmark size, ~0.5 s at -O2)
 * Prints a checksum; the output depends only on SCALE.
 */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

NOINLINE static long fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

NOINLINE static long ack(long m, long n)
{
	if (m == 0)
		return n + 1;
	if (n == 0)
		return ack(m - 1, 1);
	return ack(m - 1, ack(m, n - 1));
}

struct tree {
	struct tree *left, *right;
	long val;
};

NOINLINE static struct tree *build(int depth, long val)
{
	struct tree *t = malloc(sizeof *t);
	if (t == NULL) {
		fprintf(stderr, "recursion: out of memory\n");
		exit(1);
	}
	t->val = val;
	if (depth > 0) {
		t->left = build(depth - 1, 2 * val);
		t->right = build(depth - 1, 2 * val + 1);
	} else {
		t->left = t->right = NULL;
	}
	return t;
}

NOINLINE static long walk(const struct tree *t)
{
	if (t == NULL)
		return 0;
	return (t->val & 0xffff) + 3 * walk(t->left) - walk(t->right);
}

/* mirrored reports whether b's shape is a's reflected; both are full trees
 * of the same depth, so it is always true, but it has to look. */
NOINLINE static int mirrored(const struct tree *a, const struct tree *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return mirrored(a->left, b->right) && mirrored(a->right, b->left);
}

NOINLINE static void release(struct tree *t)
{
	if (t == NULL)
		return;
	release(t->left);
	release(t->right);
	free(t);
}

NOINLINE static long queens(int n, int row, unsigned cols, unsigned d1, unsigned d2)
{
	if (row == n)
		return 1;
	long count = 0;
	unsigned avail = ~(cols | d1 | d2) & ((1u << n) - 1);
	while (avail != 0) {
		unsigned bit = avail & -avail;
		avail ^= bit;
		count += queens(n, row + 1, cols | bit, (d1 | bit) << 1, (d2 | bit) >> 1);
	}
	return count;
}

int main(int argc, char **argv)
{
	long scale = argc > 1 ? atol(argv[1]) : 100;
	unsigned long check = 0;
	if (scale <= 0) {
		fprintf(stderr, "usage: recursion [SCALE>0]\n");
		return 2;
	}
	/* 8 * SCALE repetitions of fixed-size recursions, so the work grows
	 * linearly with SCALE and the call depth does not */
	long f = 0, a = 0, w = 0, q = 0;
	int trees = 0;
	for (long rep = 0; rep < scale * 8; rep++) {
		int k = (int)(rep % 4);
		f += fib(20 + k);
		a += ack(2, 300 + k) + ack(3, 3 + k);
		struct tree *x = build(10 + k, rep), *y = build(10 + k, rep + 1);
		w = w * 31 + walk(x) - walk(y);
		trees += mirrored(x, y);
		release(x);
		release(y);
		q += queens(6 + k, 0, 0, 0, 0);
	}
	check = (unsigned long)f * 1000003u + (unsigned long)a;
	check = check * 1000003u + (unsigned long)w;
	check = check * 1000003u + (unsigned long)q + (unsigned long)trees;
	printf("recursion scale=%ld fib=%ld ack=%ld queens=%ld trees=%d checksum=%016lx\n", scale, f, a, q, trees, check);
	return 0;
}
