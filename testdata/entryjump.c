/*
 * entryjump.c - functions whose first five bytes, which a rewriter
 * replaces with a jump to the relocated copy, are themselves the target
 * of a branch:
 *
 *   - sum_to loops back to its second instruction, two bytes in (gcc
 *     emits such loops when the loop head directly follows a short
 *     prologue: lua's luaK_exp2const jumps back past its push);
 *   - copy_end is glibc's __mempcpy: it computes its result and jumps
 *     three bytes into copy_fwd (__memmove), past copy_fwd's own first
 *     instruction, to share its body (the shared tails of glibc's string
 *     functions).
 *
 * Written in assembly so that the byte offsets are exact.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long sum_to(long n);
char *copy_fwd(char *dst, const char *src, long n);
char *copy_end(char *dst, const char *src, long n);

__asm__(".text\n"
	/* long sum_to(long n): 1 + 2 + ... + n, n >= 1 */
	".globl sum_to\n"
	".type sum_to, @function\n"
	"sum_to:\n"
	"	.cfi_startproc\n"
	"	xorl %eax, %eax\n"     /* 2 bytes */
	"1:	addq %rdi, %rax\n"     /* sum_to+2: the loop head */
	"	subq $1, %rdi\n"
	"	jne 1b\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size sum_to, .-sum_to\n"
	/* char *copy_fwd(char *dst, const char *src, long n): copies n
	 * bytes, returns dst (memmove's contract for what it returns) */
	".globl copy_fwd\n"
	".type copy_fwd, @function\n"
	"copy_fwd:\n"
	"	.cfi_startproc\n"
	"	movq %rdi, %rax\n"     /* 3 bytes */
	".Lcopy_body:\n"           /* copy_fwd+3: copy_end jumps here */
	"	testq %rdx, %rdx\n"
	"	je 3f\n"
	"	xorl %ecx, %ecx\n"
	"2:	movzbl (%rsi,%rcx), %r8d\n"
	"	movb %r8b, (%rdi,%rcx)\n"
	"	addq $1, %rcx\n"
	"	cmpq %rcx, %rdx\n"
	"	jne 2b\n"
	"3:	ret\n"
	"	.cfi_endproc\n"
	".size copy_fwd, .-copy_fwd\n"
	/* char *copy_end(char *dst, const char *src, long n): copies n
	 * bytes, returns dst + n (mempcpy) */
	".globl copy_end\n"
	".type copy_end, @function\n"
	"copy_end:\n"
	"	.cfi_startproc\n"
	"	movq %rdi, %rax\n"
	"	addq %rdx, %rax\n"
	"	jmp .Lcopy_body\n"
	"	.cfi_endproc\n"
	".size copy_end, .-copy_end\n");

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 100;
	char src[64], dst[64];
	long total = 0;
	for (int i = 0; i < (int)sizeof src; i++)
		src[i] = (char)('a' + i % 26);
	for (int r = 0; r < rounds; r++) {
		long n = r % 17 + 1;
		total += sum_to(n);
		memset(dst, 0, sizeof dst);
		char *end = copy_end(dst, src + r % 7, n);
		total += end - dst;
		char *p = copy_fwd(dst + n, src, r % 5);
		total += (p - dst) + dst[n / 2];
	}
	printf("total %ld %.20s\n", total, dst);
	return 0;
}
