/*
 * lockskip.c - glibc's way of skipping a lock prefix when the process is
 * single-threaded:
 *
 *     cmpl $0, single_threaded(%rip)
 *     je   1f
 *     lock
 * 1:  cmpxchg %rcx, (%rdx)
 *
 * The je lands one byte into the lock-prefixed instruction, where the same
 * instruction without the prefix begins: a jump into the middle of an
 * instruction that every static glibc binary (and libc.so) contains. The
 * functions below use the idiom with the instructions glibc's atomics use
 * (cmpxchg, xadd, add/sub/inc/dec on memory), taking both ways in turn,
 * so a rewriter must keep both decodings and count each on its own.
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

/* 0: take the lock prefix; otherwise skip it. */
volatile int single;

/* cas sets *p to v if it holds old, returning what *p held. */
NOINLINE long cas(long *p, long old, long v)
{
	long prev = old;
	__asm__ volatile("cmpl $0, %[st]\n\t"
			 "je 1f\n\t"
			 "lock\n"
			 "1:\tcmpxchgq %[v], %[m]"
			 : [m] "+m"(*p), "+a"(prev)
			 : [v] "r"(v), [st] "m"(single)
			 : "cc", "memory");
	return prev;
}

/* fetch_add adds v to *p, returning the old value. */
NOINLINE long fetch_add(long *p, long v)
{
	__asm__ volatile("cmpl $0, %[st]\n\t"
			 "je 1f\n\t"
			 "lock\n"
			 "1:\txaddq %[v], %[m]"
			 : [m] "+m"(*p), [v] "+r"(v)
			 : [st] "m"(single)
			 : "cc", "memory");
	return v;
}

/* decrement decrements *p and reports whether it reached 0; the skip
 * lands on the instruction that ends the function's block, and the flags
 * it sets are read after the join. */
NOINLINE int decrement(int *p)
{
	unsigned char zero;
	__asm__ volatile("cmpl $0, %[st]\n\t"
			 "je 1f\n\t"
			 "lock\n"
			 "1:\tdecl %[m]\n\t"
			 "sete %[z]"
			 : [m] "+m"(*p), [z] "=q"(zero)
			 : [st] "m"(single)
			 : "cc", "memory");
	return zero;
}

/* spin_add adds v with a compare-and-swap loop, as glibc's
 * catomic_add does: the loop's backedge and the skip share the
 * instruction after the prefix. */
NOINLINE long spin_add(long *p, long v)
{
	long old = *p, prev;
	for (;;) {
		prev = old;
		__asm__ volatile("cmpl $0, %[st]\n\t"
				 "je 1f\n\t"
				 "lock\n"
				 "1:\tcmpxchgq %[v], %[m]"
				 : [m] "+m"(*p), "+a"(prev)
				 : [v] "r"(old + v), [st] "m"(single)
				 : "cc", "memory");
		if (prev == old)
			return old + v;
		old = prev;
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	long total = 0, slot = 0;
	int refs = 0;
	for (long i = 0; i < n; i++) {
		single = i % 3 != 0;
		total += fetch_add(&slot, i & 7);
		if (cas(&slot, i, i + 1) == i)
			total++;
		spin_add(&slot, 3);
		refs += 2;
		if (decrement(&refs))
			total += 5;
		if (i % 5 == 0 && decrement(&refs))
			total += 7;
	}
	printf("total %ld slot %ld refs %d\n", total, slot, refs);
	return 0;
}
