/*
 * stubsig.c - a signal handler that runs instrumented code while the
 * runtime makes records (decision 99).
 *
 * The main loop walks random chains of a0..a7 (each calls a later one
 * through a table, from one of two call sites) ending in a leaf, a
 * function of 128 paths (wide) or one of 8192 (huge, hashed): thousands
 * of calling contexts, made as the walk finds them, many of
 * them cold records that get hot. A 50-microsecond timer's SIGALRM
 * handler walks chains too, so it often lands while a stub is making or
 * moving a record or node, and makes records of the same functions,
 * some in the same contexts.
 *
 * Every function counts its own activations; main prints the counts once
 * the timer is off. The runtime must count the same activations and,
 * the functions having no loops, as many path executions, in a profile
 * the reader accepts (one record per context). The number of handler runs
 * depends on timing and goes to stderr, which the test does not compare.
 *
 * With an argument N, "stubsig N" runs deterministically instead: no
 * timer, but N rounds of the main loop with the trap flag set, so a
 * SIGTRAP handler walks a chain after every single instruction the
 * main loop executes, inline entries and exits and the runtime's stubs
 * included (the kernel clears the flag while the handler runs and
 * sigreturn sets it again). Every window where a handler can find the
 * thread's state half changed is visited once per round.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

#define NA 8
#define NL 4

volatile unsigned long calls[NA + NL + 2];
volatile unsigned long sink;
volatile unsigned long handled;

typedef unsigned long (*fn)(unsigned long);
static fn as[NA], leaves[NL];

/* 128 paths: seven independent choices (cold records: decision 99). */
NOINLINE unsigned long wide(unsigned long x)
{
	unsigned long h = x;
	__atomic_fetch_add(&calls[NA + NL], 1, __ATOMIC_RELAXED);
	if (x & 1)
		h += 3;
	if (x & 2)
		h ^= 5;
	if (x & 4)
		h *= 7;
	if (x & 8)
		h += 11;
	if (x & 16)
		h ^= 13;
	if (x & 32)
		h *= 17;
	if (x & 64)
		h += 19;
	return h;
}

/* 8192 paths: a hashed function's records (DenseMax 4096). */
NOINLINE unsigned long huge(unsigned long x)
{
	unsigned long h = x;
	__atomic_fetch_add(&calls[NA + NL + 1], 1, __ATOMIC_RELAXED);
	if (x & 1)
		h += 3;
	if (x & 2)
		h ^= 5;
	if (x & 4)
		h *= 7;
	if (x & 8)
		h += 11;
	if (x & 16)
		h ^= 13;
	if (x & 32)
		h *= 17;
	if (x & 64)
		h += 19;
	if (x & 128)
		h ^= 23;
	if (x & 256)
		h *= 29;
	if (x & 512)
		h += 31;
	if (x & 1024)
		h ^= 37;
	if (x & 2048)
		h *= 41;
	if (x & 4096)
		h += 43;
	return h;
}

#define LEAF(i)                                                                \
	NOINLINE unsigned long l##i(unsigned long x)                           \
	{                                                                      \
		__atomic_fetch_add(&calls[NA + i], 1, __ATOMIC_RELAXED);                                             \
		return x * 31 + i;                                             \
	}
LEAF(0)
LEAF(1)
LEAF(2)
LEAF(3)

/* a(i) calls a later a through the table, or a leaf, wide or huge at
 * the end of the chain; from one of two call sites. */
#define A(i)                                                                   \
	NOINLINE unsigned long a##i(unsigned long x)                           \
	{                                                                      \
		unsigned long y = x * 6364136223846793005ul + 1442695040888963407ul; \
		unsigned long j = i + 1 + (y >> 60) % 2;                       \
		__atomic_fetch_add(&calls[i], 1, __ATOMIC_RELAXED);                                                 \
		if (j >= NA) {                                                 \
			if ((y >> 40) % 5 == 0)                                \
				return wide(y >> 20);                          \
			if ((y >> 40) % 5 == 1)                                \
				return huge(y >> 20);                          \
			return leaves[(y >> 33) % NL](y);                      \
		}                                                              \
		if (y & (1ul << 50))                                           \
			return as[j](y) + 1;                                   \
		return as[j](y ^ 0x55) + 2;                                    \
	}
A(0)
A(1)
A(2)
A(3)
A(4)
A(5)
A(6)
A(7)

static void on_alarm(int sig)
{
	(void)sig;
	handled++;
	sink += as[4 + handled % 4](handled * 977);
}

static void on_trap(int sig)
{
	(void)sig;
	handled++;
	sink += as[4 + handled % 4](handled * 977);
}

/* trap_flag sets or clears EFLAGS.TF: with it set, the CPU raises a
 * debug exception after each instruction (SIGTRAP). */
static void trap_flag(int on)
{
	if (on)
		__asm__ volatile("pushf; orl $0x100, (%%rsp); popf" ::: "memory", "cc");
	else
		__asm__ volatile("pushf; andl $~0x100, (%%rsp); popf" ::: "memory", "cc");
}

/* stepped runs n rounds of the main loop single-stepped. */
static int stepped(int n)
{
	struct sigaction sa;
	unsigned long x = 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_trap;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTRAP, &sa, 0);
	for (int round = 0; round < n; round++) {
		x = x * 2862933555777941757ul + 3037000493ul;
		trap_flag(1);
		sink += as[round % 3](x);
		trap_flag(0);
	}
	for (int i = 0; i < NA + NL + 2; i++)
		printf("%d %lu\n", i, calls[i]);
	fprintf(stderr, "handled %lu\n", handled);
	return 0;
}

int main(int argc, char **argv)
{
	fn a[NA] = {a0, a1, a2, a3, a4, a5, a6, a7};
	fn l[NL] = {l0, l1, l2, l3};
	struct sigaction sa;
	struct itimerval it = {{0, 50}, {0, 50}};
	unsigned long x = 1;
	memcpy(as, a, sizeof(a));
	memcpy(leaves, l, sizeof(l));
	if (argc > 1)
		return stepped(atoi(argv[1]));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, 0);
	setitimer(ITIMER_REAL, &it, 0);
	for (int round = 0; round < 400000; round++) {
		x = x * 2862933555777941757ul + 3037000493ul;
		sink += as[round % 3](x);
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, 0);
	for (int i = 0; i < NA + NL + 2; i++)
		printf("%d %lu\n", i, calls[i]);
	fprintf(stderr, "handled %lu\n", handled);
	return 0;
}
