/*
 * ucontext.c - coroutines on their own stacks: makecontext, swapcontext,
 * setcontext and uc_link.
 *
 * Two fibers and main pass control around with swapcontext; each fiber
 * calls functions with branches between its switches, so activations are
 * live on three stacks at once. One fiber returns (uc_link takes it back
 * to main); the other is still suspended, in the middle of a call, when
 * main returns, so its live activations end with the process. A
 * getcontext/setcontext pair is used like setjmp/longjmp on one stack.
 * The activations of one stack must not be taken for another's, every
 * path must be counted where it ran, and the output is deterministic.
 */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

static ucontext_t main_ctx, a_ctx, b_ctx;
volatile int sink;
static long total;
static int a_done;

NOINLINE static int step(int x)
{
	if (x % 3 == 0)
		return x / 3;
	if (x % 2)
		return 3 * x + 1;
	return x / 2;
}

/* yield_to switches from one fiber to another from two calls deep. */
NOINLINE static void yield_to(ucontext_t *from, ucontext_t *to, int x)
{
	sink = step(x);
	if (swapcontext(from, to) != 0)
		abort();
	sink += step(x + 1);
}

NOINLINE static int work(ucontext_t *me, ucontext_t *other, int n)
{
	int acc = 0;
	for (int i = 0; i < n; i++) {
		acc += step(i + n);
		if (i % 4 == 1)
			yield_to(me, other, i);
	}
	return acc;
}

NOINLINE static void fiber_a(int n)
{
	total += work(&a_ctx, &b_ctx, n);
	a_done = 1; /* returns: uc_link resumes main */
}

NOINLINE static void fiber_b(int n)
{
	for (;;) {
		total += work(&b_ctx, &main_ctx, n);
		yield_to(&b_ctx, &a_ctx, n); /* never resumed the last time */
	}
}

/* Like setjmp and longjmp: getcontext's second return is by setcontext. */
NOINLINE static int again(void)
{
	volatile int tries = 0;
	ucontext_t here;
	getcontext(&here);
	tries++;
	sink = step(tries);
	if (tries < 4)
		setcontext(&here);
	return tries;
}

static char stack_a[1 << 16], stack_b[1 << 16];

int main(void)
{
	getcontext(&a_ctx);
	a_ctx.uc_stack.ss_sp = stack_a;
	a_ctx.uc_stack.ss_size = sizeof(stack_a);
	a_ctx.uc_link = &main_ctx;
	makecontext(&a_ctx, (void (*)(void))fiber_a, 1, 9);
	getcontext(&b_ctx);
	b_ctx.uc_stack.ss_sp = stack_b;
	b_ctx.uc_stack.ss_size = sizeof(stack_b);
	b_ctx.uc_link = &main_ctx;
	makecontext(&b_ctx, (void (*)(void))fiber_b, 1, 6);
	for (int round = 0; !a_done; round++) {
		sink = step(round);
		printf("round %d\n", round);
		if (swapcontext(&main_ctx, round % 2 ? &a_ctx : &b_ctx) != 0)
			return 1;
	}
	printf("total %ld again %d\n", total, again());
	return 0;
}
