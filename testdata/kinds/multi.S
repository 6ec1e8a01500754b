/*
 * multi.S - hand-written functions with more than one entry point:
 *   sum_all(a, n) sets a start index and jumps into the middle of
 *   sum_from(a, n, start); twice(x) falls through, without a jump, into
 *   once(x), the next symbol. multi_main.c calls every entry.
 */
	.text

	.globl	sum_all
	.type	sum_all, @function
sum_all:			/* int sum_all(const int *a, int n) */
	xorl	%edx, %edx
	xorl	%eax, %eax
	jmp	.Lloop
	.size	sum_all, .-sum_all

	.globl	sum_from
	.type	sum_from, @function
sum_from:			/* int sum_from(const int *a, int n, int start) */
	xorl	%eax, %eax
.Lloop:
	cmpl	%esi, %edx
	jge	.Ldone
	movslq	%edx, %rcx
	addl	(%rdi,%rcx,4), %eax
	incl	%edx
	jmp	.Lloop
.Ldone:
	ret
	.size	sum_from, .-sum_from

	.globl	twice
	.type	twice, @function
twice:				/* int twice(int x): once(x + 1), by falling into it */
	incl	%edi
	addl	$1, %edi
	leal	-1(%rdi), %edi
	.size	twice, .-twice
	.globl	once
	.type	once, @function
once:				/* int once(int x): x + 1 */
	leal	1(%rdi), %eax
	ret
	.size	once, .-once

	.section .note.GNU-stack,"",@progbits
