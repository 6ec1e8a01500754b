/*
 * unreachable.c: switches whose impossible cases are __builtin_unreachable,
 * without a bounds check. clang points those cases' table entries at the
 * padding after the function, in the middle of the table: an unguarded
 * table cannot be cut at its first entry outside the function (cfg
 * jumptable.go, extent), or the later cases would run the original code.
 */
#include <stdio.h>

__attribute__((noinline)) static int pick(unsigned x, int y)
{
	switch (x) {
	case 0: return y + 1;
	case 1: return y * 3 + printf("a");
	case 2: return y - 7;
	case 3: return y ^ 5;
	case 4: __builtin_unreachable();
	case 5: return y * y + printf("b");
	case 6: return y / 3;
	case 7: return y % 11;
	case 8: return y + 100;
	case 9: return puts("z");
	default: __builtin_unreachable();
	}
}

int main(void)
{
	long s = 0;
	for (int i = 0; i < 2000; i++) {
		unsigned x = (unsigned)i % 10;
		if (x != 4)
			s += pick(x, i);
	}
	printf("\n%ld\n", s);
	return 0;
}
