/*
 * hashins.c - first runs of paths of hashed functions, which the inline
 * code puts into the record's hash table itself (decision 161).
 *
 * wide() has 8,192 paths (thirteen independent choices) and loopy()
 * 4,096 before a loop, so both count in hash tables. main calls each
 * with a few thousand different arguments, from two call sites, so that
 * most of their path ends are the first run of a path in that context:
 * at wide()'s exit, and at loopy()'s backedge (its first iteration's
 * path starts at the entry). The output is a checksum.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static volatile long sink;

#define PICK(bit, k)            \
	if (f & (1u << (bit)))  \
		sink += (k);    \
	else                    \
		sink ^= (k) * 3;

NOINLINE long wide(unsigned f)
{
	PICK(0, 1) PICK(1, 2) PICK(2, 3) PICK(3, 4) PICK(4, 5) PICK(5, 6) PICK(6, 7)
	PICK(7, 8) PICK(8, 9) PICK(9, 10) PICK(10, 11) PICK(11, 12) PICK(12, 13)
	return sink & 0xff;
}

NOINLINE long loopy(unsigned f, long n)
{
	long acc = 0;
	PICK(0, 21) PICK(1, 22) PICK(2, 23) PICK(3, 24) PICK(4, 25) PICK(5, 26)
	PICK(6, 27) PICK(7, 28) PICK(8, 29) PICK(9, 30) PICK(10, 31) PICK(11, 32)
	for (long i = 0; i < n; i++) {
		if ((i ^ f) & 1)
			sink += i;
		else
			sink ^= i;
		acc += sink & 7;
	}
	return acc;
}

int main(void)
{
	long sum = 0;
	for (unsigned i = 0; i < 3000; i++)
		sum += wide(i * 2654435761u >> 19);
	for (unsigned i = 0; i < 500; i++)
		sum += wide(i * 40503u);
	for (unsigned i = 0; i < 2500; i++)
		sum += loopy(i * 2654435761u >> 20, 3);
	for (unsigned i = 0; i < 400; i++)
		sum += loopy(i * 40503u, 2);
	printf("%ld\n", sum);
	return 0;
}
