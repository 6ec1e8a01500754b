/*
 * partunwind.c: a function whose FDE covers only its first part, as
 * glibc's __clone's stops before its system call. triple_sum's symbol
 * covers all of it; its .cfi_endproc comes after the add, so .eh_frame
 * says nothing of the imul and what follows. A copy could not unwind
 * like the original there, so it stays uninstrumented, and the rewriter
 * finds that before it lays out the code (decision 179). tidy is an
 * ordinary neighbour that is instrumented.
 *
 * triple_sum(a, b): 3 * (a + b) + 1; tidy(a): a ^ (a >> 3).
 */
#include <stdio.h>

long triple_sum(long a, long b);
long tidy(long a);

__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"	.globl triple_sum\n"
	"	.type triple_sum, @function\n"
	"triple_sum:\n"
	"	.cfi_startproc\n"
	"	mov %rdi, %rax\n"
	"	add %rsi, %rax\n"
	"	.cfi_endproc\n"
	"	imul $3, %rax, %rax\n"
	"	add $1, %rax\n"
	"	ret\n"
	"	.size triple_sum, .-triple_sum\n");

__attribute__((noinline)) long tidy(long a)
{
	return a ^ (a >> 3);
}

volatile long vol_n = 500;

int main(void)
{
	long acc = 0;
	for (long i = 0; i < vol_n; i++)
		acc += tidy(triple_sum(i, i % 7));
	printf("%ld\n", acc);
	return 0;
}
