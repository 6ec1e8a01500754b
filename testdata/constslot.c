/*
 * constslot.c: a jump through one fixed entry of a jump table, as gcc
 * leaves it where it knows the switch's index on one path (cc1plus's
 * grokdeclarator: jmp *0x1ba2fd0, entry 6 of a table in .rodata). The
 * word is read-only, so the jump is a direct one (decision 175).
 * slotjump has a frame at its jumps; slotleaf is frameless, where a jump
 * through a constant word could pass for a tail call. Written in
 * assembly so that the shape does not depend on the compiler; the tables
 * hold absolute addresses, which a PIE cannot have in .rodata, so a PIE
 * build has the same functions in C.
 *
 * slotjump(k, x) and slotleaf(k, x): x + 1, 3x, x ^ 5, x - 9, 4x for k
 * = 0..4, 0 for larger k; k = 2 and k = 3 take the fixed entries, the
 * one through the jump's memory operand, the other through a register
 * loaded from the word.
 */
#include <stdio.h>

long slotjump(long k, long x);
long slotleaf(long k, long x);

#ifndef __PIE__
__asm__(
	"	.text\n"
	"	.globl slotjump\n"
	"	.type slotjump, @function\n"
	"slotjump:\n"
	"	.cfi_startproc\n"
	"	push %rbx\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbx, -16\n"
	"	mov %rsi, %rbx\n"
	"	cmp $2, %rdi\n"
	"	je .Lj2\n"
	"	cmp $3, %rdi\n"
	"	je .Lj3\n"
	"	cmp $4, %rdi\n"
	"	ja .Ljdef\n"
	"	jmp *.Ljtab(,%rdi,8)\n"
	".Lj2:\n"
	"	jmp *.Ljtab+16(%rip)\n"
	".Lj3:\n"
	"	mov .Ljtab+24, %rax\n"
	"	jmp *%rax\n"
	".Ljc0:\n"
	"	lea 1(%rbx), %rax\n"
	"	jmp .Ljout\n"
	".Ljc1:\n"
	"	lea (%rbx,%rbx,2), %rax\n"
	"	jmp .Ljout\n"
	".Ljc2:\n"
	"	mov %rbx, %rax\n"
	"	xor $5, %rax\n"
	"	jmp .Ljout\n"
	".Ljc3:\n"
	"	lea -9(%rbx), %rax\n"
	"	jmp .Ljout\n"
	".Ljc4:\n"
	"	lea (,%rbx,4), %rax\n"
	"	jmp .Ljout\n"
	".Ljdef:\n"
	"	xor %eax, %eax\n"
	".Ljout:\n"
	"	pop %rbx\n"
	"	.cfi_def_cfa_offset 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size slotjump, .-slotjump\n"
	"\n"
	"	.globl slotleaf\n"
	"	.type slotleaf, @function\n"
	"slotleaf:\n"
	"	.cfi_startproc\n"
	"	cmp $2, %rdi\n"
	"	je .Ll2\n"
	"	cmp $3, %rdi\n"
	"	je .Ll3\n"
	"	cmp $4, %rdi\n"
	"	ja .Lldef\n"
	"	jmp *.Lltab(,%rdi,8)\n"
	".Ll2:\n"
	"	jmp *.Lltab+16(%rip)\n"
	".Ll3:\n"
	"	mov .Lltab+24(%rip), %rcx\n"
	"	jmp *%rcx\n"
	".Llc0:\n"
	"	lea 1(%rsi), %rax\n"
	"	ret\n"
	".Llc1:\n"
	"	lea (%rsi,%rsi,2), %rax\n"
	"	ret\n"
	".Llc2:\n"
	"	mov %rsi, %rax\n"
	"	xor $5, %rax\n"
	"	ret\n"
	".Llc3:\n"
	"	lea -9(%rsi), %rax\n"
	"	ret\n"
	".Llc4:\n"
	"	lea (,%rsi,4), %rax\n"
	"	ret\n"
	".Lldef:\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size slotleaf, .-slotleaf\n"
	"\n"
	"	.section .rodata\n"
	"	.align 8\n"
	".Ljtab:\n"
	"	.quad .Ljc0, .Ljc1, .Ljc2, .Ljc3, .Ljc4\n"
	".Lltab:\n"
	"	.quad .Llc0, .Llc1, .Llc2, .Llc3, .Llc4\n"
	"	.text\n");
#else
static long slot(long k, long x)
{
	switch (k) {
	case 0: return x + 1;
	case 1: return x * 3;
	case 2: return x ^ 5;
	case 3: return x - 9;
	case 4: return x * 4;
	default: return 0;
	}
}
long slotjump(long k, long x) { return slot(k, x); }
long slotleaf(long k, long x) { return slot(k, x); }
#endif

int main(void)
{
	long s = 0;
	for (long i = 0; i < 3000; i++) {
		s += slotjump(i % 7, i);
		s ^= slotleaf((i * 5) % 6, s & 0xffff);
	}
	printf("%ld\n", s);
	return 0;
}
