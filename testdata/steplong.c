/*
 * steplong.c - a signal handler's siglongjmp out of closed functions
 * (decision 57), with a handler after every instruction (decision 163).
 *
 * "steplong 1" runs the work with the trap flag (EFLAGS.TF) set, so the
 * CPU raises SIGTRAP after each instruction and the handler runs its own
 * instrumented code. Once a round, a handler that lands in spin (closed
 * in a flow-only image: it calls only a one-path leaf) siglongjmps back
 * to main, abandoning spin and big, whose large local array puts spin's
 * stack far below what runs next. The runtime pops the abandoned frames
 * when it next looks (unwind_from) and must clear their %rsp: the next
 * call at spin's depth (small2) reserves the same shadow slot, and a
 * handler landing between that reservation and its %rsp store would
 * otherwise find spin's stale, far lower %rsp there, take the live frame
 * for one a longjmp left and unwind it. "steplong 0" runs the same work
 * plainly and abandons nothing.
 *
 * Nothing in the stepped run calls instrumented code but at one step:
 * the handler is left out of the instrumentation (its own frame, pushed
 * and popped at every step, would clear the slot before small2 takes
 * it), and "steplong 1 N" has it call probe_loop only after the N-th
 * step of the phase that follows each longjmp. Settle's entry, not
 * stepped, has the runtime pop the abandoned frames first. A test runs N
 * over every step up to the one where small2's own code first ran:
 * one of them is the step between small2's reservation and its %rsp
 * store.
 *
 * The output is each function's activations as the program counts them,
 * "name count" a line, then "abandoned N" and "window W": the step of
 * the last round's phase at which the handler first saw small2's own
 * code run (the first round's is longer: its first calls take the
 * runtime's stub, which is stepped too).
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

volatile unsigned long sink, handled, abandoned;
volatile unsigned long n_leafc, n_spin, n_big, n_small, n_small2, n_settle;
static volatile int in_spin, armed;
static volatile unsigned long target, since; /* the step after which the handler calls probe_loop */
static volatile unsigned long small2_base, window; /* the step at which small2's own code first ran */
static sigjmp_buf out;

/* The handler's own code (probe_leaf, probe_loop) and trap_flag. */
#include "stepping.h"

static void on_trap(int sig)
{
	(void)sig;
	handled++;
	since++;
	if (target && since == target)
		sink += probe_loop(3);
	if (!window && n_small2 != small2_base)
		window = since;
	if (armed && in_spin && handled % 7 == 0) {
		armed = 0;
		abandoned++;
		siglongjmp(out, 1);
	}
}

/* The work. */
NOINLINE unsigned long leafc(unsigned long x)
{
	n_leafc++;
	return x * 31 + 7;
}

NOINLINE unsigned long spin(unsigned long n)
{
	unsigned long s = 0;
	n_spin++;
	in_spin = 1;
	for (unsigned long i = 0; i < n; i++)
		s += (i & 1) ? leafc(i) : i;
	in_spin = 0;
	return s;
}

NOINLINE unsigned long big(unsigned long n)
{
	volatile char pad[16384];
	n_big++;
	pad[n % sizeof(pad)] = (char)n;
	return spin(n) + (unsigned long)pad[(n * 7) % sizeof(pad)];
}

NOINLINE unsigned long small2(unsigned long x)
{
	n_small2++;
	return leafc(x) ^ 3;
}

NOINLINE unsigned long small(unsigned long n)
{
	unsigned long s = 0;
	n_small++;
	for (unsigned long k = 0; k < n; k++)
		s += small2(k);
	return s;
}

/* The first call after the longjmp, not stepped: its entry finds the
 * abandoned frames and the runtime pops them. */
NOINLINE unsigned long settle(int round)
{
	n_settle++;
	return leafc((unsigned long)round);
}

int main(int argc, char **argv)
{
	int step = argc > 1 && argv[1][0] == '1';
	if (step && argc > 2)
		target = strtoul(argv[2], 0, 10);
	unsigned long s = 0;
	on_sigtrap(on_trap, 1);
	for (int round = 0; round < 6; round++) {
		if (sigsetjmp(out, 1) == 0) {
			armed = step;
			if (step)
				trap_flag(1);
			s += big(40 + (unsigned long)round);
			if (step)
				trap_flag(0);
		} else {
			/* From the handler: no sigreturn, so the flag is clear. */
			in_spin = 0;
		}
		armed = 0;
		s += settle(round);
		since = window = 0;
		small2_base = n_small2;
		if (step)
			trap_flag(1);
		s += small(4 + (unsigned long)round % 3);
		if (step)
			trap_flag(0);
	}
	sink += s;
	printf("leafc %lu\nspin %lu\nbig %lu\nsettle %lu\nsmall %lu\nsmall2 %lu\nabandoned %lu\nwindow %lu\n", n_leafc, n_spin, n_big,
	       n_settle, n_small, n_small2, abandoned, window);
	if (step && (handled == 0 || abandoned == 0))
		fprintf(stderr, "the handler never ran, or never left spin\n");
	return 0;
}
