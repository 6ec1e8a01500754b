/*
 * sharedtail.c - procedures that share code, as glibc's hand-written
 * memmove family does (decision 85):
 *
 *   - big_copy (__memmove_*_erms) is a whole function: small sizes copy
 *     bytewise at .Lbig_small, in its middle;
 *   - copy (__memmove_*_unaligned) copies 16 bytes at a time and jumps
 *     into the middle of big_copy for what is left below 16 bytes;
 *   - pcopy (__mempcpy_*) computes its result and jumps past copy's
 *     first instruction;
 *   - copy_chk (__memmove_chk_*) checks the destination's size and runs
 *     through alignment nops into pcopy's entry;
 *   - big_chk checks and jumps to big_copy's entry.
 *
 * None of them can be instrumented alone: the jumps land in the middle
 * of other procedures. Together they are one procedure with five
 * entries. Written in assembly so that the layout is exact.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *big_copy(char *dst, const char *src, long n);
char *copy(char *dst, const char *src, long n);
char *pcopy(char *dst, const char *src, long n);
char *copy_chk(char *dst, const char *src, long n, long room);
char *big_chk(char *dst, const char *src, long n, long room);

__asm__(".text\n"
	".p2align 4\n"
	/* char *copy_chk(dst, src, n, room): pcopy when n <= room */
	".globl copy_chk\n"
	".type copy_chk, @function\n"
	"copy_chk:\n"
	"	.cfi_startproc\n"
	"	cmpq %rdx, %rcx\n"
	"	jb chk_fail\n"
	"	.cfi_endproc\n"
	".size copy_chk, .-copy_chk\n"
	".p2align 4\n"             /* nops: copy_chk runs through them */
	/* char *pcopy(dst, src, n): copies n bytes, returns dst + n */
	".globl pcopy\n"
	".type pcopy, @function\n"
	"pcopy:\n"
	"	.cfi_startproc\n"
	"	movq %rdi, %rax\n"
	"	addq %rdx, %rax\n"
	"	jmp .Lcopy_body\n"
	"	.cfi_endproc\n"
	".size pcopy, .-pcopy\n"
	".p2align 4\n"
	/* char *copy(dst, src, n): copies n bytes, returns dst */
	".globl copy\n"
	".type copy, @function\n"
	"copy:\n"
	"	.cfi_startproc\n"
	"	movq %rdi, %rax\n"     /* 3 bytes */
	".Lcopy_body:\n"
	"	movq %rdi, %r9\n"
	"1:	cmpq $16, %rdx\n"
	"	jb .Lbig_rest\n"       /* into big_copy's middle */
	"	movdqu (%rsi), %xmm0\n"
	"	movdqu %xmm0, (%r9)\n"
	"	addq $16, %rsi\n"
	"	addq $16, %r9\n"
	"	subq $16, %rdx\n"
	"	jmp 1b\n"
	"	.cfi_endproc\n"
	".size copy, .-copy\n"
	".p2align 4\n"
	/* char *big_chk(dst, src, n, room): big_copy when n <= room */
	".globl big_chk\n"
	".type big_chk, @function\n"
	"big_chk:\n"
	"	.cfi_startproc\n"
	"	cmpq %rdx, %rcx\n"
	"	jb chk_fail\n"
	"	jmp big_copy\n"
	"	.cfi_endproc\n"
	".size big_chk, .-big_chk\n"
	".p2align 4\n"
	/* char *big_copy(dst, src, n): copies n bytes, returns dst */
	".globl big_copy\n"
	".type big_copy, @function\n"
	"big_copy:\n"
	"	.cfi_startproc\n"
	"	movq %rdi, %rax\n"
	"	movq %rdi, %r9\n"
	"	cmpq $64, %rdx\n"
	"	jb .Lbig_rest\n"
	"	movq %rdx, %rcx\n"
	"	movq %rdi, %r8\n"
	"	movq %r9, %rdi\n"
	"	rep movsb\n"
	"	movq %r8, %rdi\n"
	"	ret\n"
	".Lbig_rest:\n"            /* copy jumps here */
	"	testq %rdx, %rdx\n"
	"	je 3f\n"
	"	xorl %ecx, %ecx\n"
	"2:	movzbl (%rsi,%rcx), %r8d\n"
	"	movb %r8b, (%r9,%rcx)\n"
	"	addq $1, %rcx\n"
	"	cmpq %rcx, %rdx\n"
	"	jne 2b\n"
	"3:	ret\n"
	"	.cfi_endproc\n"
	".size big_copy, .-big_copy\n"
	".p2align 4\n"
	/* void chk_fail(void): the checks' failure (__chk_fail) */
	".globl chk_fail\n"
	".type chk_fail, @function\n"
	"chk_fail:\n"
	"	.cfi_startproc\n"
	"	subq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call abort\n"
	"	.cfi_endproc\n"
	".size chk_fail, .-chk_fail\n");

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 100;
	char src[200], dst[200];
	long total = 0;
	char *(*via)(char *, const char *, long) = argc > 5 ? copy : pcopy;
	for (int i = 0; i < (int)sizeof src; i++)
		src[i] = (char)('a' + i % 26);
	for (int r = 0; r < rounds; r++) {
		long n = r % 150;
		memset(dst, 0, sizeof dst);
		total += copy(dst, src, n) - dst;
		total += dst[n / 2];
		total += pcopy(dst, src + 1, n % 37) - dst;
		total += copy_chk(dst, src + 2, n % 53, sizeof dst) - dst;
		total += big_copy(dst, src + 3, n) - dst;
		total += big_chk(dst, src, (n * 7) % 120, sizeof dst) - dst;
		total += via(dst, src + 4, n % 19) - dst; /* through a pointer */
		total += dst[0] + dst[n % 19];
	}
	printf("total %ld\n", total);
	return 0;
}
