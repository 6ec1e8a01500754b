/*
 * stepmix.c - a signal handler after every instruction of loops, tail
 * calls, recursion, callbacks from the C library, a jump table,
 * mutually recursive functions and a longjmp (decision 163).
 *
 * "stepmix 1" runs the work with the trap flag (EFLAGS.TF) set: the
 * CPU raises SIGTRAP after each instruction, and the handler calls
 * instrumented code of its own (probe_*) that never calls the work's
 * functions. The kernel clears the flag while the handler runs and
 * sigreturn sets it again; every 256th handler single-steps its own
 * calls the same way, so a second handler runs inside the first after
 * each of their instructions. "stepmix 0" runs the same work without it, as
 * valgrind does (it does not single-step), so every work function's
 * block counts under the handler must equal callgrind's of the plain
 * run. The output is the same either way; the number of handler runs
 * goes to stderr only when it is 0 (an error).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile unsigned long sink, handled;
static jmp_buf back;

/* The handler's own code (probe_leaf, probe_loop) and trap_flag. */
#include "stepping.h"

static volatile int depth;

/* Every 256th handler steps its own calls too: SA_NODEFER lets a second
 * handler run after each of their instructions, inside the first. */
static void on_trap(int sig)
{
	(void)sig;
	handled++;
	if (depth == 0 && handled % 256 == 0) {
		depth = 1;
		trap_flag(1);
		sink += probe_loop(2 + handled % 3);
		trap_flag(0);
		depth = 0;
		return;
	}
	sink += probe_loop(2 + handled % 3);
}

/* The work. */
NOINLINE unsigned long leaf(unsigned long x) { return x * 31 + 7; }

NOINLINE unsigned long loopy(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++) {
		if (i % 3 == 0)
			s += leaf(i);
		else
			s ^= i;
	}
	return s;
}

NOINLINE unsigned long rec(unsigned long n) { return n < 2 ? n : rec(n - 1) + leaf(n) + rec(n - 2); }

/* At -O2 a tail jump to leaf. */
NOINLINE unsigned long tailer(unsigned long x) { return leaf(x + 1); }

NOINLINE unsigned long odd(unsigned long n);
NOINLINE unsigned long even(unsigned long n) { return n == 0 ? 1 : odd(n - 1); }
NOINLINE unsigned long odd(unsigned long n) { return n == 0 ? 0 : even(n - 1); }

NOINLINE unsigned long pick(unsigned long k, unsigned long x)
{
	switch (k % 7) {
	case 0: return x + 1;
	case 1: return x * 3;
	case 2: return x ^ 0x55;
	case 3: return leaf(x);
	case 4: return x - 9;
	case 5: return x << 2;
	default: return x / 3;
	}
}

NOINLINE int cmp(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
	return x < y ? -1 : x > y;
}

NOINLINE void deep(unsigned long n)
{
	if (n == 0)
		longjmp(back, 1);
	sink += leaf(n);
	deep(n - 1);
	sink += n; /* never: the longjmp leaves every activation */
}

NOINLINE unsigned long jumper(unsigned long n)
{
	if (setjmp(back) == 0)
		deep(n);
	return n;
}

NOINLINE unsigned long work(int round)
{
	unsigned long v[24], s = 0;
	for (int i = 0; i < 24; i++)
		v[i] = leaf((unsigned long)(i * 7 + round) % 24);
	qsort(v, 24, sizeof(v[0]), cmp);
	s += v[0] + v[23];
	s += loopy(5 + round % 4);
	s += rec(4 + round % 2);
	s += tailer(round);
	s += even(3 + round % 4);
	for (int k = 0; k < 9; k++)
		s += pick(k + round, s);
	s += jumper(2 + round % 3);
	return s;
}

int main(int argc, char **argv)
{
	/* The handler is there in both runs, so that the C library runs
	 * the same code in both: only the flag differs. */
	int step = argc > 1 && argv[1][0] == '1';
	unsigned long s = 0;
	on_sigtrap(on_trap, 1);
	for (int round = 0; round < 4; round++) {
		if (step)
			trap_flag(1);
		s += work(round);
		if (step)
			trap_flag(0);
	}
	printf("%lu\n", s);
	if (step && handled == 0)
		fprintf(stderr, "the handler never ran\n");
	return 0;
}
