/*
 * slotcases.c - jump tables whose address is reloaded from a frame slot
 * (decision 168), written in assembly so that each case has exactly the
 * code it names.  Every function spills the table's address to 8(%rsp),
 * calls helper (which clobbers the caller-saved registers), reloads it
 * and dispatches on its argument's low bit:
 *
 *   slot_reload      nothing else: the slot keeps the constant;
 *   slot_above       stores through an index and takes an address, both
 *                    above the slot: it keeps the constant;
 *   slot_lea         passes the slot's own address to helper_ptr, which
 *                    may write it: no constant;
 *   slot_fp          copies %rsp into %rbp (a frame pointer reaches
 *                    below it): no constant;
 *   slot_index       stores through an index from 0(%rsp), below the
 *                    slot: no constant;
 *   slot_join        overwrites the slot with another value on one path:
 *                    no constant.
 *
 * main runs each once; the test looks at which the analysis resolves.
 */
#include <stdio.h>

long helper(long x) { return x + 1; }
long helper_ptr(long *p) { return p != 0; }

#define PROLOGUE(name) \
	".text\n.globl " #name "\n.type " #name ",@function\n" #name ":\n" \
	".cfi_startproc\n" \
	"push %rbx\n.cfi_def_cfa_offset 16\n.cfi_offset %rbx,-16\n" \
	"sub $48,%rsp\n.cfi_def_cfa_offset 64\n" \
	"mov %edi,%ebx\n" \
	"lea " #name "_tab(%rip),%rax\n" \
	"mov %rax,8(%rsp)\n"

#define DISPATCH(name) \
	"mov 8(%rsp),%rdx\n" \
	"mov %ebx,%ecx\n" \
	"and $1,%ecx\n" \
	"mov (%rdx,%rcx,8),%rdx\n" \
	"jmp *%rdx\n" \
	#name "_0: mov $10,%eax\njmp " #name "_out\n" \
	#name "_1: mov $20,%eax\n" \
	#name "_out: add $48,%rsp\n.cfi_def_cfa_offset 16\npop %rbx\n.cfi_def_cfa_offset 8\nret\n" \
	".cfi_endproc\n.size " #name ",.-" #name "\n" \
	".section .rodata\n.p2align 3\n" #name "_tab: .quad " #name "_0, " #name "_1\n.text\n"

__asm__(PROLOGUE(slot_reload)
	"call helper\n"
	DISPATCH(slot_reload));

__asm__(PROLOGUE(slot_above)
	"mov %rbx,%rcx\nand $1,%ecx\n"
	"mov %rax,16(%rsp,%rcx,8)\n"
	"lea 24(%rsp),%rdi\n"
	"call helper_ptr\n"
	DISPATCH(slot_above));

__asm__(PROLOGUE(slot_lea)
	"lea 8(%rsp),%rdi\n"
	"call helper_ptr\n"
	DISPATCH(slot_lea));

__asm__(PROLOGUE(slot_fp)
	"push %rbp\n.cfi_adjust_cfa_offset 8\n"
	"mov %rsp,%rbp\n"
	"mov %rbp,%rdi\n"
	"call helper\n"
	"pop %rbp\n.cfi_adjust_cfa_offset -8\n"
	DISPATCH(slot_fp));

__asm__(PROLOGUE(slot_index)
	"mov %rbx,%rcx\nand $1,%ecx\n"
	"mov %rax,(%rsp,%rcx,8)\n"
	"call helper\n"
	DISPATCH(slot_index));

__asm__(PROLOGUE(slot_join)
	"test $2,%bl\n"
	"je 1f\n"
	"mov %rbx,8(%rsp)\n"
	"1: call helper\n"
	DISPATCH(slot_join));

long slot_reload(long), slot_above(long), slot_lea(long), slot_fp(long), slot_index(long), slot_join(long);

int main(void)
{
	printf("%ld %ld %ld %ld %ld %ld\n", slot_reload(1), slot_above(2), slot_lea(3), slot_fp(4), slot_index(5), slot_join(1));
	return 0;
}
