/*
 * pathreg.c - functions whose path register the rewriter keeps in a
 * general register (decision 44), and callers that would notice if it
 * leaked.
 *
 * sum_to() is hand-written: a leaf loop naming only %rdi and %rax, so
 * every candidate register (%r11, %r10, ...) is free in it. Its caller,
 * also hand-written, puts marker values in %r11, %r10, %r9, %r8, %rsi
 * and stores them after the call: a TLS-descriptor-like contract (more
 * than the ABI promises). The rewritten sum_to must hand them all back.
 *
 * busy_r11() uses %r11 itself, so its path register must be another
 * one; walk() calls other functions in its loop, so its register is
 * spilled and reloaded around each call; pick() has chords on edges
 * where the flags are live (a compare feeding two branches).
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

/* long sum_to(long n): 1 + 2 + ... + n, with a branch inside the loop. */
__asm__(".text\n"
	".globl sum_to\n"
	".type sum_to, @function\n"
	"sum_to:\n"
	"	xor %eax, %eax\n"
	"1:	test %rdi, %rdi\n"
	"	jle 3f\n"
	"	test $1, %dil\n"
	"	jz 2f\n"
	"	add %rdi, %rax\n"
	"	dec %rdi\n"
	"	jmp 1b\n"
	"2:	add %rdi, %rax\n"
	"	dec %rdi\n"
	"	jmp 1b\n"
	"3:	ret\n"
	".size sum_to, .-sum_to\n"

	/* void call_keep(long n, long out[6]): out[0] = sum_to(n), then the
	 * five marker registers as they are after the call. */
	".globl call_keep\n"
	".type call_keep, @function\n"
	"call_keep:\n"
	"	push %rbx\n"
	"	mov %rsi, %rbx\n"
	"	mov $0x1111, %r11\n"
	"	mov $0x2222, %r10\n"
	"	mov $0x3333, %r9\n"
	"	mov $0x4444, %r8\n"
	"	mov $0x5555, %rsi\n"
	"	call sum_to\n"
	"	mov %rax, 0(%rbx)\n"
	"	mov %r11, 8(%rbx)\n"
	"	mov %r10, 16(%rbx)\n"
	"	mov %r9, 24(%rbx)\n"
	"	mov %r8, 32(%rbx)\n"
	"	mov %rsi, 40(%rbx)\n"
	"	pop %rbx\n"
	"	ret\n"
	".size call_keep, .-call_keep\n");

void call_keep(long n, long out[6]);

/* busy_r11: a loop that keeps a value in %r11 across its iterations. */
NOINLINE long busy_r11(long n)
{
	long acc = 0;
	for (long i = 0; i < n; i++) {
		long t = i * 7;
		__asm__ volatile("mov %1, %%r11\n\tadd %%r11, %0" : "+r"(acc) : "r"(t) : "r11");
		if (i % 3 == 0)
			acc ^= i;
	}
	return acc;
}

NOINLINE long leaf(long x) { return x % 5 == 0 ? x / 5 : x + 1; }

/* walk: calls in the loop, and a branch on their results. */
NOINLINE long walk(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++) {
		long v = leaf(i);
		if (v & 1)
			s += leaf(v);
		else
			s -= v;
	}
	return s;
}

/* pick: a three-way compare chain, so some edges carry live flags. */
NOINLINE int pick(long a, long b)
{
	int r = 0;
	for (long i = 0; i < a; i++) {
		if (i < b)
			r += 1;
		else if (i == b)
			r += 10;
		else
			r += 100;
	}
	return r;
}

int main(void)
{
	long out[6];
	for (long n = 0; n < 40; n += 7) {
		call_keep(n, out);
		printf("sum_to(%ld)=%ld regs %lx %lx %lx %lx %lx\n", n, out[0], out[1], out[2], out[3], out[4], out[5]);
	}
	printf("busy_r11=%ld walk=%ld pick=%d\n", busy_r11(1000), walk(500), pick(300, 120));
	return 0;
}
