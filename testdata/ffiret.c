/*
 * ffiret.c: libffi's ffi_call_unix64 (src/x86/unix64.S, libffi 3.4), the
 * code under every ctypes call in Python. callk moves its return address
 * into an area its caller alloca'd, runs the callee on a stack there,
 * and then, its frame gone (the unwind rules say CFA = %rsp+8), jumps to
 * one of its own 8-byte return handlers: the handlers' base plus the
 * result kind times 8. That jump is neither a table nor a tail call (its
 * target is inside callk); taken for a tail call, the activation ended
 * on another stack than it began, and every ctypes call to qsort counted
 * a bad path, an exit mismatch and a path without a record (decision
 * 121). Written in assembly: the shape is hand-written in libffi too.
 *
 * callk(area, fn, x, kind) returns fn(x), negated, doubled or plus one
 * for kind 1, 2, 3.
 */
#include <alloca.h>
#include <stdint.h>
#include <stdio.h>

long callk(char *area, long (*fn)(long), long x, long kind);

__asm__(
	"	.text\n"
	"	.globl callk\n"
	"	.type callk, @function\n"
	"callk:\n"
	"	.cfi_startproc\n"
	"	mov (%rsp), %r10\n"
	"	mov %rbp, 0(%rdi)\n"
	"	mov %rcx, 8(%rdi)\n"
	"	mov %r10, 16(%rdi)\n"
	"	mov %rdi, %rbp\n"
	"	.cfi_def_cfa %rbp, 24\n"
	"	.cfi_offset %rbp, -24\n"
	"	mov %rsi, %r11\n"
	"	mov %rdx, %rdi\n"
	"	mov %rbp, %rsp\n"
	"	call *%r11\n"
	"	lea 16(%rbp), %rsp\n"
	"	mov 8(%rbp), %r10\n"
	"	mov 0(%rbp), %rbp\n"
	"	.cfi_def_cfa %rsp, 8\n"
	"	.cfi_restore %rbp\n"
	"	and $3, %r10\n"
	"	lea .Lhandlers(%rip), %r11\n"
	"	lea (%r11,%r10,8), %r10\n"
	"	jmp *%r10\n"
	"	.p2align 3\n"
	".Lhandlers:\n"
	"	ret\n"
	"	.p2align 3\n"
	"	neg %rax\n"
	"	ret\n"
	"	.p2align 3\n"
	"	add %rax, %rax\n"
	"	ret\n"
	"	.p2align 3\n"
	"	add $1, %rax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size callk, .-callk\n");

__attribute__((noinline)) static long square(long x) { return x * x; }
__attribute__((noinline)) static long triple(long x) { return 3 * x + 1; }

volatile long room = 4096;

/* As libffi's ffi_call_int: the area at the top of a block alloca'd with
 * a size known at run time only, so that the caller restores %rsp from
 * its frame pointer after callk, which returns on another stack. */
__attribute__((noinline)) static long call(long (*fn)(long), long x, long kind)
{
	long n = room;
	char *block = alloca(n);
	char *area = (char *)(((uintptr_t)block + n - 64) & ~(uintptr_t)15);
	return callk(area, fn, x, kind);
}

int main(void)
{
	long sum = 0;
	for (long i = 0; i < 300; i++)
		sum += call(i % 2 ? square : triple, i, i % 4);
	printf("%ld\n", sum);
	return 0;
}
