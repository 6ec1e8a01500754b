/*
 * tailcall.c - tail calls, built at -O2 only: functions that end by
 * calling another function, which the compiler emits as a jump.
 *
 * main calls top(i) for i = 0..4; top ends with a tail jump to mid, mid
 * with one to leaf (top -> jmp mid -> jmp leaf).  via_ptr ends with an
 * indirect tail jump through a writable table (jmp *), called 4 times:
 * twice to leaf, twice to other.  ping and pong tail-jump to each other
 * (mutual recursion by jumps): main calls ping(6): ping for 6, 4, 2, 0
 * and pong for 5, 3, 1.  ping's result comes from a volatile, so the
 * compiler cannot see that it is a constant and drop the tail calls'
 * results (clang does, turning the jumps into calls).  The test checks with objdump that the jumps are
 * there.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int sink;
volatile int vol_n = 5;
volatile int vol_ping = 6;
volatile int vol_base = 100;

NOINLINE int leaf(int x)
{
	sink = x;
	return x * 3;
}

NOINLINE int other(int x)
{
	sink = x;
	return x - 7;
}

NOINLINE int mid(int x)
{
	sink = x;
	return leaf(x + 1);
}

NOINLINE int top(int x)
{
	sink = x;
	return mid(x * 2);
}

int (*table[2])(int) = {leaf, other};

NOINLINE int via_ptr(int x)
{
	sink = x;
	return table[x & 1](x);
}

int pong(int n);

NOINLINE int ping(int n)
{
	sink = n;
	if (n == 0)
		return vol_base;
	return pong(n - 1);
}

NOINLINE int pong(int n)
{
	sink = n;
	return ping(n - 1);
}

int main(void)
{
	int acc = 0;
	for (int i = 0; i < vol_n; i++)
		acc += top(i);
	printf("top %d\n", acc);
	acc = 0;
	for (int i = 0; i < 4; i++)
		acc += via_ptr(i);
	printf("via_ptr %d\n", acc);
	printf("ping %d\n", ping(vol_ping));
	return 0;
}
