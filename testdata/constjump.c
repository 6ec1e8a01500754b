/*
 * constjump.c: glibc's vfprintf dispatch (stdio-common/vfprintf-internal.c,
 * its JUMP macro, as gcc 12 compiles it into libc.so.6): the next label is
 * the base label plus an int32 offset from a table that a character class
 * indexes, and a character out of the classes' range goes to the base label
 * itself. gcc loads the base label into the register first, and the
 * out-of-range side of the check branches to a copy of the indirect jump:
 * an indirect jump whose register holds one address of the function on
 * every path (decision 98: a constant jump). Written in assembly so that
 * the shape does not depend on the compiler. As compiled code does, it
 * reads no register that held a table entry after the jump (a copy of
 * the table holds other offsets).
 *
 * classify(c) returns 10 for a digit, 20 for a letter, 30 for a space,
 * 1 for any other character in ' '..'z', and 0 outside it, counting the
 * out-of-range ones in `wide`; classify_back is the same with its labels
 * before the dispatch, as libc has them (x86asm reads the base label's
 * negative disp32 as a large positive one).
 */
#include <stdio.h>

long classify(long c);
long classify_back(long c);
long wide;

__asm__(
	"	.text\n"
	"	.globl classify\n"
	"	.type classify, @function\n"
	"classify:\n"
	"	.cfi_startproc\n"
	"	lea .Lunknown(%rip), %rax\n"
	"	lea -0x20(%rdi), %rdx\n"
	"	cmp $0x5a, %rdx\n"
	"	ja .Lout\n"
	"	lea cls(%rip), %rcx\n"
	"	movzbl (%rcx,%rdx,1), %edx\n"
	"	lea steps(%rip), %rcx\n"
	"	movslq (%rcx,%rdx,4), %rdx\n"
	"	add %rdx, %rax\n"
	"	jmp *%rax\n"
	".Lout:\n"
	"	addq $1, wide(%rip)\n"
	"	jmp *%rax\n"
	".Lunknown:\n"
	"	lea -0x20(%rdi), %rdx\n"
	"	xor %eax, %eax\n"
	"	cmp $0x5a, %rdx\n"
	"	setbe %al\n"
	"	ret\n"
	".Ldigit:\n"
	"	mov $10, %eax\n"
	"	ret\n"
	".Lletter:\n"
	"	mov $20, %eax\n"
	"	ret\n"
	".Lspace:\n"
	"	mov $30, %eax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size classify, .-classify\n"
	/* The same with the labels before the dispatch, as in libc: the
	 * base label's lea has a negative displacement. */
	"	.globl classify_back\n"
	"	.type classify_back, @function\n"
	"classify_back:\n"
	"	.cfi_startproc\n"
	"	jmp .Ldispatch\n"
	".Lunknown_b:\n"
	"	lea -0x20(%rdi), %rdx\n"
	"	xor %eax, %eax\n"
	"	cmp $0x5a, %rdx\n"
	"	setbe %al\n"
	"	ret\n"
	".Ldigit_b:\n"
	"	mov $11, %eax\n"
	"	ret\n"
	".Lletter_b:\n"
	"	mov $21, %eax\n"
	"	ret\n"
	".Lspace_b:\n"
	"	mov $31, %eax\n"
	"	ret\n"
	".Ldispatch:\n"
	"	lea .Lunknown_b(%rip), %rax\n"
	"	lea -0x20(%rdi), %rdx\n"
	"	cmp $0x5a, %rdx\n"
	"	ja .Lout_b\n"
	"	lea cls(%rip), %rcx\n"
	"	movzbl (%rcx,%rdx,1), %edx\n"
	"	lea steps_b(%rip), %rcx\n"
	"	movslq (%rcx,%rdx,4), %rdx\n"
	"	add %rdx, %rax\n"
	"	jmp *%rax\n"
	".Lout_b:\n"
	"	addq $1, wide(%rip)\n"
	"	jmp *%rax\n"
	"	.cfi_endproc\n"
	"	.size classify_back, .-classify_back\n"
	"	.section .rodata\n"
	"	.p2align 2\n"
	"steps:\n"
	"	.long 0\n"
	"	.long .Ldigit-.Lunknown\n"
	"	.long .Lletter-.Lunknown\n"
	"	.long .Lspace-.Lunknown\n"
	"steps_b:\n"
	"	.long 0\n"
	"	.long .Ldigit_b-.Lunknown_b\n"
	"	.long .Lletter_b-.Lunknown_b\n"
	"	.long .Lspace_b-.Lunknown_b\n"
	"	.text\n");

/* The class of each character ' '..'z': 0 other, 1 digit, 2 letter, 3 space. */
const unsigned char cls[91] = {
	3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0,
	0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0,
	0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
};

int main(void)
{
	static const char text[] = "Hello, World 42! {tab}\t~ x9 \x01\x7f";
	long sum = 0;
	for (int r = 0; r < 300; r++)
		for (const char *p = text; *p; p++)
			sum += classify((unsigned char)*p) * (r % 7 + 1) + classify_back((unsigned char)*p);
	printf("%ld %ld\n", sum, wide);
	return 0;
}
