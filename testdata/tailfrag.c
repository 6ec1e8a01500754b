/*
 * tailfrag.c - functions reached only by tail jumps from one dispatcher.
 *
 * In a stripped binary such a function has an FDE and nothing else: no
 * symbol, no call, no address taken, only the dispatcher's jump, so the
 * analysis joins it to the dispatcher as a fragment (decisions 7, 60).
 * Each has its own switch over a value whose impossible cases clang
 * sends past the function's end (__builtin_unreachable), between live
 * cases: the copy of its table must keep every live case, although the
 * dead entries come first. libclang-cpp's StmtPrinter is this shape.
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile long sink;

#define SHAPE(name, k)                                                  \
	NOINLINE static long name(long x, long y)                       \
	{                                                               \
		switch ((x >> 3) & 7) {                                 \
		case 0: sink += y * k; return y + 1;                    \
		case 1: sink ^= y + k; return y * 3;                    \
		case 2: sink -= y; return y - k;                        \
		case 3: case 4: __builtin_unreachable();                \
		case 5: sink += k; return y << 1;                       \
		case 6: sink |= y; return y ^ k;                        \
		case 7: sink += 7 * k; return y / 2;                    \
		}                                                       \
		__builtin_unreachable();                                \
	}

SHAPE(shape_a, 3)
SHAPE(shape_b, 5)
SHAPE(shape_c, 7)
SHAPE(shape_d, 11)
SHAPE(shape_e, 13)

/* Every case tail-calls, with an x whose cases are live (3 and 4 never
 * occur: the program relies on it as the compiler does). */
NOINLINE static long dispatch(long op, long x, long y)
{
	switch (op) {
	case 0: return shape_a(x, y);
	case 1: return shape_b(x, y);
	case 2: return shape_c(x, y);
	case 3: return shape_d(x, y);
	case 4: return shape_e(x, y);
	case 5: return shape_a(x, y + 1);
	case 6: return shape_b(x, y ^ 5);
	default: return shape_c(x, y - 3);
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 3000, acc = 0;
	static const int live[] = {0, 1, 2, 5, 6, 7};
	for (long i = 0; i < n; i++) {
		long x = live[i % 6] << 3 | (i & 7);
		acc += dispatch(i % 8, x, i);
		acc ^= dispatch((i * 7) % 8, x, acc & 0xff);
	}
	printf("%ld %ld\n", acc, (long)sink);
	return 0;
}
