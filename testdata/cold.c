/*
 * cold.c - code gcc splits into foo.cold fragments.
 *
 * With -O2 and above gcc partitions each function into hot and cold parts
 * (-freorder-blocks-and-partition) and moves the blocks it predicts never
 * run to a separate symbol "foo.cold" in .text.unlikely, far from foo.  Blocks that
 * only lead to a call of a function marked cold, or that __builtin_expect
 * marks unlikely, are predicted never to run.  A path profiler must treat
 * foo and foo.cold as one function: control jumps between them with plain
 * conditional and unconditional jumps.
 *
 * parse_record() and checksum() get .cold fragments under gcc -O2/-O3
 * (and no other function of this file does); the cold paths are never
 * taken in a normal run.  clang does not split functions (no .cold symbols
 * at any level).  report() ends in a tail call to fprintf from -O2 on.
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

#define unlikely(x) __builtin_expect(!!(x), 0)

volatile int sink;
volatile int vol_n = 16;

/* An error reporter: cold, so every block that calls it is cold too. */
NOINLINE __attribute__((cold)) void report(const char *what, int where)
{
	fprintf(stderr, "error: %s at %d\n", what, where);
}

/* Parses a record of n digits from buf; bad input is reported and gives
 * -1.  loops: 1, depths: [1]. */
NOINLINE int parse_record(const char *buf, int n)
{
	int value = 0;
	for (int i = 0; i < n; i++) {
		char c = buf[i];
		if (unlikely(c < '0' || c > '9')) {
			report("not a digit", i);
			sink = c;
			return -1;
		}
		value = value * 10 + (c - '0');
		if (unlikely(value > 100000000)) {
			report("overflow", i);
			sink = value;
			return -2;
		}
	}
	return value;
}

/* loops: 1, depths: [1]. */
NOINLINE unsigned checksum(const unsigned char *p, int n)
{
	unsigned h = 0;
	if (unlikely(p == NULL)) {
		report("null buffer", n);
		abort();
	}
	for (int i = 0; i < n; i++) {
		h = (h << 5) ^ (h >> 27) ^ p[i];
		if (unlikely(h == 0xdeadbeef)) {
			report("poisoned checksum", i);
			h = 1;
		}
	}
	return h;
}

int main(int argc, char **argv)
{
	(void)argv;
	int n = vol_n + argc - 1; /* 16 when run without arguments */
	char buf[32];

	for (int i = 0; i < n; i++)
		buf[i] = (char)('0' + (i * 7) % 10);
	printf("parse_record %d %d\n", parse_record(buf, n / 2), parse_record(buf + 3, 5));
	printf("checksum %u\n", checksum((const unsigned char *)buf, n));
	return 0;
}
