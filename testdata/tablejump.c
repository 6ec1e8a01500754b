/*
 * tablejump.c - a hand-written function whose constants sit in .text right
 * after it, as OpenSSL's perlasm keeps SHA-256's round constants (K256)
 * after sha256_block_data_order.  The linear sweep of the code reads the
 * table as instructions: its first byte (0x06, push %es) does not decode
 * in 64-bit mode, and the next two (0x71 rel8) make a jno into the
 * middle of the function.  That "branch" is data, and must not keep the
 * function uninstrumented (decision 172).  twin_add is the other case:
 * real code outside any function jumps into it.
 */
#include <stdio.h>
#include <stdlib.h>

unsigned sum_tab(unsigned n);

__asm__(
	".text\n"
	".globl sum_tab\n"
	".type sum_tab,@function\n"
	"sum_tab:\n"
	".cfi_startproc\n"
	"	xor %eax,%eax\n"
	"	lea tab_k(%rip),%rdx\n"
	"	xor %ecx,%ecx\n"
	"	test %edi,%edi\n"
	"	je 2f\n"
	"1:	movzbl (%rdx,%rcx,1),%esi\n"
	"	add %esi,%eax\n"
	"	inc %ecx\n"
	"	cmp %edi,%ecx\n"
	"	jb 1b\n"
	"2:	ret\n"
	".cfi_endproc\n"
	".size sum_tab,.-sum_tab\n"
	"tab_k:\n"
	"	.byte 0x06, 0x71, 1b - (. + 1)\n"
	"	.byte 0x42, 0x8a, 0x2f, 0x98, 0x71, 0x37, 0x44, 0x91\n"
	"	.byte 0xb5, 0xc0, 0xfb, 0xcf, 0xe9, 0xb5, 0xdb, 0xa5\n"
	/* twin_add is followed by code of no function that decodes cleanly
	 * and jumps into its body: that is code branching in (it never runs
	 * here, but nothing tells blpp so), and twin_add stays out. */
	".globl twin_add\n"
	".type twin_add,@function\n"
	"twin_add:\n"
	".cfi_startproc\n"
	"	mov %edi,%eax\n"
	"	imul $3,%eax,%eax\n"
	"	xor %edx,%edx\n"
	"3:	add %esi,%eax\n"
	"	ret\n"
	".cfi_endproc\n"
	".size twin_add,.-twin_add\n"
	"	mov $7,%esi\n"
	"	jmp 3b\n");

unsigned twin_add(unsigned a, unsigned b);

volatile unsigned vol_rounds = 1000;

int main(int argc, char **argv)
{
	unsigned total = 0;
	for (unsigned r = 0; r < vol_rounds; r++)
		total += twin_add(sum_tab(r % 20), r);
	printf("%u %d\n", total, argc);
	return 0;
}
