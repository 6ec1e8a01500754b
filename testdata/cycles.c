/*
 * cycles.c - loops whose body is one cycle of blocks with exits along
 * it (decision 58 gives them a second copy that counts at its head).
 *
 * Each loop below follows a single path round and round and can leave
 * from several of its blocks: a byte search with two exits, a scan with
 * four, a running sum that stops at a bound, and a do-while that turns a
 * number into digits. Every exit is taken on some call, at a different
 * point of the cycle, so a copy that gives the path register the wrong
 * value where it leaves shows up in the counts of the code after it.
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
	}
	printf("%ld %s\n", acc, buf);
	return 0;
}
