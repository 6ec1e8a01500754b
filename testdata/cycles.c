/*
 * cycles.c - loops whose later iterations run in a second copy of one
 * cycle of their blocks, which counts at its head (decisions 58, 63).
 *
 * The first loops below follow a single path round and round and can
 * leave from several of its blocks: a byte search with two exits, a scan
 * with four, a running sum that stops at a bound, and a do-while that
 * turns a number into digits. The last two have more than one cycle: a
 * rare store the copy leaves for, and an if/else with an inner loop on
 * one side. Every exit is taken on some call, at a different point of
 * the cycle, so a copy that gives the path register the wrong value
 * where it leaves shows up in the counts of the code after it.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile long vol_rounds = 150;
static char text[4096];
static long arr[512];

/* Two exits: the stop byte, or the end. */
NOINLINE long find(const char *s, long n, char stop)
{
	long i = 0;
	for (;;) {
		if (s[i] == stop)
			return i;
		if (++i >= n)
			return -1;
	}
}

/* Four exits: the end, a zero byte, a high byte, a newline. */
NOINLINE long span(const unsigned char *s, long n)
{
	long i = 0;
	while (i < n) {
		unsigned c = s[i];
		if (c == 0)
			break;
		if (c > 200)
			return -i;
		if (c == '\n')
			return i + 1000;
		i++;
	}
	return i;
}

/* The exit in the middle: the sum passes the cap. */
NOINLINE long bounded(const long *a, long n, long cap)
{
	long s = 0;
	for (long i = 0; i < n; i++) {
		s += a[i];
		if (s > cap)
			return -s;
	}
	return s;
}

NOINLINE int digits(char *out, unsigned long v)
{
	int k = 0;
	do {
		out[k++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
		v /= 36;
	} while (v);
	out[k] = 0;
	return k;
}

static long marks[4096];

/* Two cycles: the copy follows the bypass of the rare store and leaves
 * for the first copy's block when the byte matches [decision 63]. */
NOINLINE long mark(const char *s, long n, char c)
{
	long k = 0;
	for (long i = 0; i < n; i++) {
		if (s[i] == c)
			marks[k++] = i;
	}
	return k;
}

/* An if/else in the body, one side holding an inner loop: iterations
 * leave the copy at different blocks, about half of them. */
NOINLINE long weave(const char *s, long n)
{
	long acc = 0;
	for (long i = 0; i < n; i++) {
		if (s[i] < 'm') {
			marks[i & 4095] = acc;
			acc += 3;
		} else {
			long j = 0;
			while (j < 4 && s[i + j] >= 'm')
				j++;
			acc = acc * 5 + j;
		}
	}
	return acc;
}

int main(void)
{
	long rounds = vol_rounds, acc = 0;
	char buf[32];
	for (long i = 0; i < (long)sizeof text - 1; i++)
		text[i] = (char)('a' + (i * 7 + i / 13) % 26);
	text[1200] = '\n';
	text[1700] = (char)230;
	text[2300] = 0;
	for (int i = 0; i < 512; i++)
		arr[i] = (i * 37) % 101 - 20;
	for (long r = 0; r < rounds; r++) {
		acc += find(text + r % 50, 900, (char)('a' + r % 27)); /* '{' is never found */
		acc += span((const unsigned char *)text + (r * 37) % 2600, 400 + r * 13 % 2000);
		acc += bounded(arr, 300 + r % 200, 500 + r * 11 % 900);
		acc += digits(buf, (unsigned long)r * 2654435761u);
		acc += mark(text + r % 64, 1000 + r % 700, (char)('a' + r % 26));
		acc ^= weave(text + r % 80, 900 + r % 500);
		acc += marks[(r * 7) & 63];
	}
	printf("%ld %s\n", acc, buf);
	return 0;
}
