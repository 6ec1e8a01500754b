/*
 * leajump.c - a switch whose jump adds the table's base to the entry
 * with lea instead of add (movslq (%rdx,%rcx,4),%rax; lea
 * (%rax,%rdx,1),%rsi; jmp *%rsi), as gcc compiles a switch of libzstd's
 * where the flags must survive the jump.  Written in assembly so that
 * every build has that form; main calls it with every case.
 * trap_dispatch (below) has a dead case, and flags_dispatch a load that
 * overwrites its base with the flags live after it (decision 168).
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

/* trap_dispatch's table sends case 0 to code outside the function (past
 * its .size, with no symbol of its own) that runs straight into ud2,
 * as gcc places an unreachable case in a stripped foo.cold: a dead
 * entry.  main never takes it. */
__asm__(".text\n.globl trap_dispatch\n.type trap_dispatch,@function\ntrap_dispatch:\n"
	".cfi_startproc\n"
	"push %rbx\n.cfi_def_cfa_offset 16\n.cfi_offset %rbx,-16\n"
	"mov %edi,%ecx\n"
	"and $3,%ecx\n"
	"lea trap_dispatch_tab(%rip),%rdx\n"
	"movslq (%rdx,%rcx,4),%rax\n"
	"add %rdx,%rax\n"
	"jmp *%rax\n"
	"trap_dispatch_1: mov $11,%eax\npop %rbx\n.cfi_remember_state\n.cfi_def_cfa_offset 8\nret\n"
	".cfi_restore_state\n"
	"trap_dispatch_2: mov $22,%eax\npop %rbx\n.cfi_remember_state\n.cfi_def_cfa_offset 8\nret\n"
	".cfi_restore_state\n"
	"trap_dispatch_3: lea 33(%rdi),%eax\npop %rbx\n.cfi_def_cfa_offset 8\nret\n"
	".cfi_endproc\n.size trap_dispatch,.-trap_dispatch\n"
	"trap_dispatch_0: mov %rdi,0x38(%rbx)\nmovq 0x18,%rax\nud2\n"
	".section .rodata\n.p2align 2\n"
	"trap_dispatch_tab: .long trap_dispatch_0-trap_dispatch_tab, trap_dispatch_1-trap_dispatch_tab, "
	"trap_dispatch_2-trap_dispatch_tab, trap_dispatch_3-trap_dispatch_tab\n.text\n");

/* flags_dispatch reloads its absolute table's address from a frame
 * slot into the register the entry overwrites, and case 0 reads the
 * carry the cmp before the jump set: in a PIE its load cannot become an
 * add of the entry to the base (decision 168), so it stays out. */
__asm__(".text\n.globl flags_dispatch\n.type flags_dispatch,@function\nflags_dispatch:\n"
	".cfi_startproc\n"
	"push %rbx\n.cfi_def_cfa_offset 16\n.cfi_offset %rbx,-16\n"
	"sub $16,%rsp\n.cfi_def_cfa_offset 32\n"
	"lea flags_dispatch_tab(%rip),%rax\n"
	"mov %rax,8(%rsp)\n"
	"mov %edi,%ecx\n"
	"and $1,%ecx\n"
	"cmp $1,%edi\n"
	"mov 8(%rsp),%rdx\n"
	"mov (%rdx,%rcx,8),%rdx\n"
	"jmp *%rdx\n"
	"flags_dispatch_0: sbb %eax,%eax\nadd $5,%eax\njmp flags_dispatch_out\n"
	"flags_dispatch_1: mov $7,%eax\n"
	"flags_dispatch_out: add $16,%rsp\n.cfi_def_cfa_offset 16\npop %rbx\n.cfi_def_cfa_offset 8\nret\n"
	".cfi_endproc\n.size flags_dispatch,.-flags_dispatch\n"
	".section .data.rel.ro,\"aw\"\n.p2align 3\n"
	"flags_dispatch_tab: .quad flags_dispatch_0, flags_dispatch_1\n.text\n");

long lea_dispatch(long), trap_dispatch(long), flags_dispatch(long);

int main(void)
{
	long sum = 0;
	for (long i = 0; i < 1000; i++) {
		sum += lea_dispatch(i * 7 % 11);
		if (i % 4 != 0)
			sum += trap_dispatch(i);
		sum += flags_dispatch(i % 3);
	}
	printf("%ld\n", sum);
	return 0;
}
