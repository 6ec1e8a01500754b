/*
 * coldtable.c - a jump table whose first entry leads to the function's
 * .cold fragment.
 *
 * Case 0 of pick's switch only calls a cold no-return function, so gcc
 * -O2 moves it to pick.cold in .text.unlikely, and the table's entry 0
 * points there, outside pick's own range. Stripped, pick.cold has no
 * name and nothing but the table jumps to it. cc1 has hundreds of such
 * tables (gcc_unreachable in case 0). The jump is a table inside
 * pick, not a tail call through an array of function pointers: pick's
 * frame is still set up there (decision 121).
 *
 * leaf is frameless, so its fragment's unwind rules start as a
 * function's do, and the fragment must be told apart from a function
 * another way: without PIE, the table's absolute entries are words in
 * data that point at it, as a callback table's would; only words of the
 * jumping procedure's own table do not count (decision 175; cc1plus's
 * unsigned_condition and a dozen like it).
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noreturn, cold, noinline)) static void fail(const char *m, int line)
{
	fprintf(stderr, "%s %d\n", m, line);
	exit(3);
}

__attribute__((noinline, noipa)) static long g(long x, long y) { return x * 31 + y; }

__attribute__((noinline, noipa)) static long pick(long a, long b, unsigned long kind)
{
	long r = g(a, b);
	switch (kind) {
	case 0: fail("kind", __LINE__);
	case 1: r += g(r, 1); break;
	case 2: r ^= g(b, 2); break;
	case 3: r -= g(a, 3); break;
	case 4: r += g(r, a) * 3; break;
	case 5: r = r * 7 + g(b, b); break;
	case 6: r |= g(1, a); break;
	case 7: r += g(a, 7) ^ b; break;
	case 8: r += g(r, 8); break;
	case 9: r -= g(9, b); break;
	case 10: r += 10; break;
	default: r = g(r, a + b); break;
	}
	return r + g(a, r);
}

__attribute__((noinline, noipa)) static long leaf(unsigned long kind, long x)
{
	switch (kind) {
	case 0: fail("leaf", __LINE__);
	case 1: return x + 1;
	case 2: return x * 3;
	case 3: return x ^ 5;
	case 4: return x - 9;
	case 5: return x << 2;
	case 6: return x / 7;
	case 7: return x % 11;
	case 8: return -x;
	default: return x * 5 + 1;
	}
}

int main(int argc, char **argv)
{
	long t = 0;
	for (int i = 0; i < 1000; i++) {
		t += pick(i, t & 1023, 1 + i % 12);
		t ^= leaf(1 + i % 10, t & 0xfff);
	}
	printf("%ld\n", t);
	if (argc > 1)
		pick(1, 2, 0);
	return 0;
}
