/*
 * flagsin.c - hand-written assembly that passes the carry flag to one of
 * its own routines.
 *
 * The ABI leaves the flags undefined at a call, but assembly that knows
 * its callee need not: OpenSSL's __rsaz_512_mulx starts
 * `mulx; mov; mulx; mov; mulx; adc` and adds the carry its caller left.
 * Entry instrumentation, or a counting stub, that changes the flags
 * makes the program compute wrong numbers (openssl rsa -check said
 * "p not prime"). The copy must print what the original prints.
 */
#include <stdio.h>

/* carry_add returns a + b + CF, the carry flag as its caller left it;
 * add3 returns a + b + (c != 0), setting the carry with neg. */
__asm__(".text\n"
	".globl carry_add\n"
	".type carry_add,@function\n"
	"carry_add:\n"
	"	mov %rdi,%rax\n"
	"	mov %rsi,%rcx\n"
	"	adc %rcx,%rax\n"
	"	ret\n"
	".size carry_add,.-carry_add\n"
	".globl add3\n"
	".type add3,@function\n"
	"add3:\n"
	"	neg %rdx\n"
	"	call carry_add\n"
	"	ret\n"
	".size add3,.-add3\n"
	".previous\n");

long add3(long a, long b, long c);

int main(void)
{
	long s = 0;
	for (long i = 0; i < 100; i++)
		s += add3(i, 3 * i, i & 1) * (i + 1);
	printf("%ld\n", s);
	printf("%ld %ld %ld\n", add3(1, 2, 0), add3(1, 2, 7), add3(-1, 0, -5));
	return 0;
}
