/*
 * padrun.c: a function that runs through the nops after its range into
 * the next function, as glibc's __memmove_chk_avx_unaligned runs five
 * 11-byte nopw into __memmove_avx_unaligned. checked_sum's symbol and FDE
 * cover its compare and branch alone; the .p2align that places sum3
 * fills the bytes between with nops, which every call of checked_sum
 * that passes its check executes (decision 178).
 *
 * checked_sum(a, b, c, limit): a + b + c, or -1 (pr_fail's) when
 * limit < 3; sum3(a, b, c): a + b + c.
 */
#include <stdio.h>

long checked_sum(long a, long b, long c, long limit);
long sum3(long a, long b, long c);

__asm__(
	"	.text\n"
	"	.p2align 6\n"
	"	.globl checked_sum\n"
	"	.type checked_sum, @function\n"
	"checked_sum:\n"
	"	.cfi_startproc\n"
	"	cmp $3, %rcx\n"
	"	jb pr_fail\n"
	"	.cfi_endproc\n"
	"	.size checked_sum, .-checked_sum\n"
	"	.p2align 6\n"
	"	.globl sum3\n"
	"	.type sum3, @function\n"
	"sum3:\n"
	"	.cfi_startproc\n"
	"	lea (%rdi,%rsi), %rax\n"
	"	add %rdx, %rax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size sum3, .-sum3\n"
	"	.p2align 4\n"
	"	.type pr_fail, @function\n"
	"pr_fail:\n"
	"	.cfi_startproc\n"
	"	mov $-1, %rax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size pr_fail, .-pr_fail\n");

volatile long vol_n = 300;

int main(void)
{
	long acc = 0;
	for (long i = 0; i < vol_n; i++)
		acc += checked_sum(i, 2 * i, 7, i % 5) + sum3(i, 1, 2);
	printf("%ld\n", acc);
	return 0;
}
