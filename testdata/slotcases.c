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
 *                    no constant;
 *   slot_pushpop     pushes the address around the call and pops it
 *                    into the register the dispatch reads: the constant;
 *   slot_below       stores into a frame it then releases, so the slot
 *                    lies more than 128 bytes below %rsp, where a signal
 *                    handler may write, before it takes the frame again
 *                    and reloads: no constant.
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
	".section .data.rel.ro,\"aw\"\n.p2align 3\n" #name "_tab: .quad " #name "_0, " #name "_1\n.text\n"

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

__asm__(".text\n.globl slot_pushpop\n.type slot_pushpop,@function\nslot_pushpop:\n"
	".cfi_startproc\n"
	"push %rbx\n.cfi_def_cfa_offset 16\n.cfi_offset %rbx,-16\n"
	"mov %edi,%ebx\n"
	"lea slot_pushpop_tab(%rip),%rax\n"
	"push %rax\n.cfi_def_cfa_offset 24\n"
	"call helper\n"
	"pop %rdx\n.cfi_def_cfa_offset 16\n"
	"mov %ebx,%ecx\n"
	"and $1,%ecx\n"
	"mov (%rdx,%rcx,8),%rdx\n"
	"jmp *%rdx\n"
	"slot_pushpop_0: mov $10,%eax\njmp slot_pushpop_out\n"
	"slot_pushpop_1: mov $20,%eax\n"
	"slot_pushpop_out: pop %rbx\n.cfi_def_cfa_offset 8\nret\n"
	".cfi_endproc\n.size slot_pushpop,.-slot_pushpop\n"
	".section .data.rel.ro,\"aw\"\n.p2align 3\nslot_pushpop_tab: .quad slot_pushpop_0, slot_pushpop_1\n.text\n");

__asm__(".text\n.globl slot_below\n.type slot_below,@function\nslot_below:\n"
	".cfi_startproc\n"
	"push %rbx\n.cfi_def_cfa_offset 16\n.cfi_offset %rbx,-16\n"
	"mov %edi,%ebx\n"
	"lea slot_below_tab(%rip),%rax\n"
	"sub $256,%rsp\n.cfi_def_cfa_offset 272\n"
	"mov %rax,8(%rsp)\n"
	"add $256,%rsp\n.cfi_def_cfa_offset 16\n"
	"sub $256,%rsp\n.cfi_def_cfa_offset 272\n"
	"mov 8(%rsp),%rdx\n"
	"add $256,%rsp\n.cfi_def_cfa_offset 16\n"
	"mov %ebx,%ecx\n"
	"and $1,%ecx\n"
	"mov (%rdx,%rcx,8),%rdx\n"
	"jmp *%rdx\n"
	"slot_below_0: mov $10,%eax\njmp slot_below_out\n"
	"slot_below_1: mov $20,%eax\n"
	"slot_below_out: pop %rbx\n.cfi_def_cfa_offset 8\nret\n"
	".cfi_endproc\n.size slot_below,.-slot_below\n"
	".section .data.rel.ro,\"aw\"\n.p2align 3\nslot_below_tab: .quad slot_below_0, slot_below_1\n.text\n");

long slot_reload(long), slot_above(long), slot_lea(long), slot_fp(long), slot_index(long), slot_join(long), slot_pushpop(long), slot_below(long);

int main(void)
{
	printf("%ld %ld %ld %ld %ld %ld %ld %ld\n", slot_reload(1), slot_above(2), slot_lea(3), slot_fp(4), slot_index(5), slot_join(1), slot_pushpop(3), slot_below(4));
	return 0;
}
