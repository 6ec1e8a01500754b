/*
 * leajump.c - a switch whose jump adds the table's base to the entry
 * with lea instead of add (movslq (%rdx,%rcx,4),%rax; lea
 * (%rax,%rdx,1),%rsi; jmp *%rsi), as gcc compiles a switch of libzstd's
 * where the flags must survive the jump.  Written in assembly so that
 * every build has that form; main calls it with every case.
 */
#include <stdio.h>

__asm__(".text\n.globl lea_dispatch\n.type lea_dispatch,@function\nlea_dispatch:\n"
	".cfi_startproc\n"
	"mov %edi,%ecx\n"
	"and $3,%ecx\n"
	"lea lea_dispatch_tab(%rip),%rdx\n"
	"movslq (%rdx,%rcx,4),%rax\n"
	"lea (%rax,%rdx,1),%rsi\n"
	"cmp $2,%edi\n"
	"jmp *%rsi\n"
	"lea_dispatch_0: mov $10,%eax\nret\n"
	"lea_dispatch_1: mov $20,%eax\nret\n"
	"lea_dispatch_2: sbb %eax,%eax\nadd $31,%eax\nret\n"
	"lea_dispatch_3: lea 40(%rdi),%eax\nret\n"
	".cfi_endproc\n.size lea_dispatch,.-lea_dispatch\n"
	".section .rodata\n.p2align 2\n"
	"lea_dispatch_tab: .long lea_dispatch_0-lea_dispatch_tab, lea_dispatch_1-lea_dispatch_tab, "
	"lea_dispatch_2-lea_dispatch_tab, lea_dispatch_3-lea_dispatch_tab\n.text\n");

long lea_dispatch(long);

int main(void)
{
	long sum = 0;
	for (long i = 0; i < 1000; i++)
		sum += lea_dispatch(i * 7 % 11);
	printf("%ld\n", sum);
	return 0;
}
