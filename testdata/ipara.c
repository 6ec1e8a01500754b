/*
 * ipara.c: a switch whose table base stays in a caller-saved register
 * across a call to a local function, as gcc's -fipa-ra allows when the
 * callee does not write that register (libbfd's _bfd_elf_parse_eh_frame
 * keeps %r11 across get_DW_EH_PE_width). dispatch_sum loads the base
 * into %r11 once, before its loop; case 'w' calls weight, which writes
 * only %eax and %edx, and goes back round the loop to the jump through
 * the table. %r11 is written again after the loop, so no one constant
 * is in every write of it (decision 180).
 *
 * dispatch_sum(s): the sum over s of 1 for 'a', 10 for 'b', weight(c)
 * for 'w' followed by c, stopping at the end or another character.
 */
#include <stdio.h>

long dispatch_sum(const char *s);

__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"	.type weight, @function\n"
	"weight:\n"
	"	.cfi_startproc\n"
	"	movzbl %dil, %eax\n"
	"	mov %eax, %edx\n"
	"	and $7, %edx\n"
	"	add %edx, %eax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size weight, .-weight\n"
	"	.p2align 4\n"
	"	.globl dispatch_sum\n"
	"	.type dispatch_sum, @function\n"
	"dispatch_sum:\n"
	"	.cfi_startproc\n"
	"	push %rbx\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbx, -16\n"
	"	xor %ebx, %ebx\n"
	"	lea ds_table(%rip), %r11\n"
	"1:	movzbl (%rdi), %eax\n"
	"	sub $0x61, %eax\n"
	"	cmp $0x16, %eax\n"
	"	ja 9f\n"
	"	movslq (%r11,%rax,4), %rax\n"
	"	add %r11, %rax\n"
	"	jmp *%rax\n"
	"2:	add $1, %rbx\n"
	"	add $1, %rdi\n"
	"	jmp 1b\n"
	"3:	add $10, %rbx\n"
	"	add $1, %rdi\n"
	"	jmp 1b\n"
	"4:	mov %rdi, %rcx\n"
	"	movzbl 1(%rcx), %edi\n"
	"	test %edi, %edi\n"
	"	je 9f\n"
	"	push %rcx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call weight\n"
	"	pop %rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	add %rax, %rbx\n"
	"	add $2, %rdi\n"
	"	jmp 1b\n"
	"9:	mov %rbx, %r11\n"
	"	mov %r11, %rax\n"
	"	pop %rbx\n"
	"	.cfi_def_cfa_offset 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size dispatch_sum, .-dispatch_sum\n"
	"	.section .rodata\n"
	"	.p2align 2\n"
	"ds_table:\n"
	"	.long 2b-ds_table\n"   /* a */
	"	.long 3b-ds_table\n"   /* b */
	"	.rept 20\n"
	"	.long 9b-ds_table\n"   /* c .. v */
	"	.endr\n"
	"	.long 4b-ds_table\n"   /* w */
	"	.text\n");

int main(void)
{
	static const char *inputs[] = {"aabwq", "ba", "wwwzab", "abababwa", "", "wbwcaaa"};
	long total = 0;
	for (int r = 0; r < 400; r++)
		for (unsigned i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
			total += dispatch_sum(inputs[i]) * (r % 3 + 1);
	printf("%ld\n", total);
	return 0;
}
