/*
 * coldcase.c - a switch whose table has no bounds check (the index is
 * masked to the cases it has) and one of whose cases gcc moves into the
 * function's .cold fragment (it calls a cold function): in a stripped build the table's entry for it leads outside
 * the function, and the entries after it back inside, as in PHP's
 * zval_get_string_func.  The fragment must be joined to the function
 * for the table to be sized.
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int vol_n = 200;

long odd;

__attribute__((cold, noinline)) void complain(int v)
{
	odd += v;
}

NOINLINE long classify(unsigned v, long acc)
{
	switch (v & 7) {
	case 0:
		return acc + 3;
	case 1:
		return acc * 5 + 1;
	case 2:
		complain(v);
		return -acc;
	case 3:
		return acc ^ 0x55;
	case 4:
		return acc + v;
	case 5:
		return acc * 3;
	case 6:
		return acc - v;
	case 7:
		return acc / 2;
	}
	return 0;
}

int main(void)
{
	long acc = 1;
	for (int i = 0; i < vol_n; i++)
		acc = classify((unsigned)(i * 37 + 11), acc) % 1000003;
	printf("%ld %ld\n", acc, odd);
	return 0;
}
