/*
 * asmvm.c - a bytecode interpreter in hand-written assembly laid out as
 * LuaJIT's is (decision 174).  The handlers are one block of code with one
 * FDE whose rules hold the interpreter's frame throughout; its first
 * bytes are the handler of opcode 0.  main builds the dispatch table at
 * run time from the block's start plus a table of 16-bit offsets in
 * read-only data, so no relocation names a handler.  run_vm enters the
 * block with a jump into its middle (lua_call's tail jump to lj_vm_call),
 * vm_pcall with a call into its middle (lua_pcall's call of
 * lj_vm_pcall).  OP_DBL falls into OP_INC three bytes on, and OP_TRAP is
 * one int3 right before OP_NEG: labels with no room for a 5-byte jump.
 * OP_CFN jumps to the handler a C function returns.
 */
#include <stdio.h>
#include <stdlib.h>

enum { OP_ADDK, OP_DBL, OP_INC, OP_TRAP, OP_NEG, OP_CFN, OP_RET, OP_SUBK, OP_ZERO, NOPS };

extern char vm_block[];
extern const unsigned short vm_ofs[NOPS];
long run_vm(void **disp, const unsigned char *pc);
long vm_pcall(void **disp, const unsigned char *pc);

/* The interpreter's registers: %r14 the dispatch table, %rbx the
 * bytecode pointer, %rax the accumulator. */
#define NEXT "movzbl (%rbx),%ecx\n\tinc %rbx\n\tjmp *(%r14,%rcx,8)\n"

__asm__(
	".text\n"
	".p2align 4\n"
	".globl vm_block\n"
	".type vm_block,@function\n"
	"vm_block:\n"
	".cfi_startproc\n"
	".cfi_def_cfa_offset 32\n"
	".cfi_offset %rbx,-16\n"
	".cfi_offset %r14,-24\n"
	".Lop_addk:\n"
	"	movzbl (%rbx),%edx\n"
	"	inc %rbx\n"
	"	add %rdx,%rax\n"
	"	" NEXT
	".Lop_dbl:\n"
	"	add %rax,%rax\n"
	".Lop_inc:\n"
	"	add $1,%rax\n"
	"	" NEXT
	".Lop_trap:\n"
	"	int3\n"
	".Lop_neg:\n"
	"	neg %rax\n"
	"	" NEXT
	".Lop_cfn:\n"
	"	mov %rax,(%rsp)\n"
	"	mov %rax,%rdi\n"
	"	call pick\n"
	"	mov %rax,%rdx\n"
	"	mov (%rsp),%rax\n"
	"	jmp *%rdx\n"
	".Lop_ret:\n"
	".cfi_remember_state\n"
	"	add $8,%rsp\n"
	".cfi_def_cfa_offset 24\n"
	"	pop %r14\n"
	".cfi_def_cfa_offset 16\n"
	"	pop %rbx\n"
	".cfi_def_cfa_offset 8\n"
	"	ret\n"
	".cfi_restore_state\n"
	".Lop_subk:\n"
	"	movzbl (%rbx),%edx\n"
	"	inc %rbx\n"
	"	sub %rdx,%rax\n"
	"	" NEXT
	".Lop_zero:\n"
	"	xor %eax,%eax\n"
	"	" NEXT
	/* The entries: reached only by the jump and the call from outside. */
	/* A symbol for the tests to find it by; the builds they rewrite
	 * are stripped, as Debian's luajit is. */
	".globl vm_enter\n"
	".type vm_enter,@function\n"
	"vm_enter:\n"
	"	push %rbx\n"
	"	push %r14\n"
	"	sub $8,%rsp\n"
	"	mov %rdi,%r14\n"
	"	mov %rsi,%rbx\n"
	"	xor %eax,%eax\n"
	"	" NEXT
	".Lvm_center:\n"
	"	push %rbx\n"
	"	push %r14\n"
	"	sub $8,%rsp\n"
	"	mov %rdi,%r14\n"
	"	mov %rsi,%rbx\n"
	"	mov $100,%eax\n"
	"	" NEXT
	".cfi_endproc\n"
	".size vm_block,.-vm_block\n"

	".globl run_vm\n"
	".type run_vm,@function\n"
	"run_vm:\n"
	".cfi_startproc\n"
	"	test %rsi,%rsi\n"
	"	je 1f\n"
	"	jmp vm_enter\n"
	"1:	xor %eax,%eax\n"
	"	ret\n"
	".cfi_endproc\n"
	".size run_vm,.-run_vm\n"

	".globl vm_pcall\n"
	".type vm_pcall,@function\n"
	"vm_pcall:\n"
	".cfi_startproc\n"
	"	sub $8,%rsp\n"
	".cfi_def_cfa_offset 16\n"
	"	call .Lvm_center\n"
	"	add $1,%rax\n"
	"	add $8,%rsp\n"
	".cfi_def_cfa_offset 8\n"
	"	ret\n"
	".cfi_endproc\n"
	".size vm_pcall,.-vm_pcall\n"

	".section .rodata\n"
	".p2align 1\n"
	".globl vm_ofs\n"
	"vm_ofs:\n"
	"	.short .Lop_addk-vm_block, .Lop_dbl-vm_block, .Lop_inc-vm_block\n"
	"	.short .Lop_trap-vm_block, .Lop_neg-vm_block, .Lop_cfn-vm_block\n"
	"	.short .Lop_ret-vm_block, .Lop_subk-vm_block, .Lop_zero-vm_block\n"
	".text\n");

static void *disp[NOPS];

/* pick is OP_CFN's callee: the handler to go on in (OP_INC or OP_NEG). */
__attribute__((noinline)) void *pick(long acc)
{
	return disp[acc & 1 ? OP_NEG : OP_INC];
}

int main(int argc, char **argv)
{
	static const unsigned char progs[][12] = {
		{OP_ADDK, 5, OP_DBL, OP_INC, OP_RET},
		{OP_ADDK, 7, OP_CFN, OP_DBL, OP_RET},
		{OP_ZERO, OP_ADDK, 2, OP_CFN, OP_NEG, OP_SUBK, 3, OP_RET},
		{OP_SUBK, 9, OP_DBL, OP_DBL, OP_CFN, OP_RET},
		{OP_INC, OP_INC, OP_DBL, OP_NEG, OP_ADDK, 200, OP_RET},
	};
	int n = argc > 1 ? atoi(argv[1]) : 3000;
	long sum = 0, psum = 0;
	for (int i = 0; i < NOPS; i++)
		disp[i] = vm_block + vm_ofs[i];
	for (int i = 0; i < n; i++) {
		const unsigned char *p = progs[(i * 7 + i / 5) % 5];
		if (i % 3)
			sum += run_vm(disp, p);
		else
			psum += vm_pcall(disp, p);
	}
	printf("%ld %ld\n", sum, psum);
	return 0;
}
