/*
 * coldloop.c - loops of functions with cold records (decision 99).
 *
 * work() has 256 paths (eight independent choices before its loop), so
 * in context mode its records start cold and count their first path
 * ends through the runtime's stub; its loop is a one-cycle loop that the
 * rewriter copies (decision 58), with choices inside, so the copy's
 * cycle carries increments. Each call runs the loop for a while, from
 * three call sites: every record counts some of its loop's paths cold
 * and the rest hot. The output is a checksum.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static unsigned char text[4096];

NOINLINE long work(const unsigned char *s, long n, unsigned flags)
{
	long acc = 0;
	if (flags & 1)
		acc += 3;
	if (flags & 2)
		acc ^= 5;
	if (flags & 4)
		acc *= 7;
	if (flags & 8)
		acc += 11;
	if (flags & 16)
		acc ^= 13;
	if (flags & 32)
		acc *= 17;
	if (flags & 64)
		acc += 19;
	if (flags & 128)
		acc ^= 23;
	for (long i = 0; i < n; i++) {
		unsigned c = s[i];
		if (c < 'k')
			acc += c;
		else
			acc ^= (long)c << 3;
		if (c & 1)
			acc = acc * 3 + 1;
	}
	return acc;
}

int main(void)
{
	unsigned x = 12345;
	long sum = 0;
	for (int i = 0; i < (int)sizeof(text); i++) {
		x = x * 1103515245 + 12345;
		text[i] = (unsigned char)('a' + (x >> 16) % 26);
	}
	for (int round = 0; round < 300; round++) {
		long n = 40 + round % 200;
		sum += work(text + round, n, (unsigned)round);
		if (round % 3 == 0)
			sum ^= work(text + 2 * round, n / 2, (unsigned)round * 7);
		if (round % 5 == 0)
			sum -= work(text, 400, 255);
	}
	printf("%ld\n", sum);
	return 0;
}
