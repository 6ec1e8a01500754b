/*
 * A function blpp must leave out, entered from instrumented code and
 * calling back into it (decision 70).
 *
 * dispatch(op, x, f) is written in assembly so that no analysis can
 * resolve its indirect jump: the target is an indexed load from a
 * writable table that dispatch_init fills at run time (the file holds
 * zeros there). It calls f(x) once for an even op, f(x) and f(x + 1) for
 * an odd one, and returns the sum. run calls it n times from one call
 * site, in the main thread and in a second one at the same time, hop once
 * more through a function pointer (an indirect call from instrumented
 * code), and nothing else enters it: callgrind's count of calls to
 * dispatch is 2n + 1.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

long dispatch(long op, long x, long (*f)(long));
void dispatch_init(void);

__asm__(
	"	.text\n"
	"	.globl	dispatch\n"
	"	.type	dispatch, @function\n"
	"	.p2align 4\n"
	"dispatch:\n"
	"	.cfi_startproc\n"
	"	push	%rbx\n"
	"	.cfi_def_cfa_offset 16\n"
	"	push	%r12\n"
	"	.cfi_def_cfa_offset 24\n"
	"	push	%r13\n"
	"	.cfi_def_cfa_offset 32\n"
	"	mov	%rdx, %r12\n"
	"	mov	%rsi, %rbx\n"
	"	mov	%rdi, %r13\n"
	"	and	$1, %r13d\n"
	"	lea	dispatch_tab(%rip), %rax\n"
	"	jmp	*(%rax,%r13,8)\n"
	".Ldispatch_one:\n"
	"	mov	%rbx, %rdi\n"
	"	call	*%r12\n"
	"	jmp	.Ldispatch_out\n"
	".Ldispatch_two:\n"
	"	mov	%rbx, %rdi\n"
	"	call	*%r12\n"
	"	mov	%rax, %r13\n"
	"	lea	1(%rbx), %rdi\n"
	"	call	*%r12\n"
	"	add	%r13, %rax\n"
	".Ldispatch_out:\n"
	"	pop	%r13\n"
	"	.cfi_def_cfa_offset 24\n"
	"	pop	%r12\n"
	"	.cfi_def_cfa_offset 16\n"
	"	pop	%rbx\n"
	"	.cfi_def_cfa_offset 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size	dispatch, . - dispatch\n"
	"\n"
	"	.globl	dispatch_init\n"
	"	.type	dispatch_init, @function\n"
	"	.p2align 4\n"
	"dispatch_init:\n"
	"	.cfi_startproc\n"
	"	lea	.Ldispatch_one(%rip), %rax\n"
	"	mov	%rax, dispatch_tab(%rip)\n"
	"	lea	.Ldispatch_two(%rip), %rax\n"
	"	mov	%rax, dispatch_tab+8(%rip)\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size	dispatch_init, . - dispatch_init\n"
	"\n"
	"	.local	dispatch_tab\n"
	"	.comm	dispatch_tab, 16, 8\n");

static __thread long acc;

/* The callback: instrumented, with a branch so that it has two paths. */
__attribute__((noinline)) long visit(long x)
{
	if (x % 3 == 0)
		acc += x;
	else
		acc -= 1;
	return x & 7;
}

__attribute__((noinline)) long run(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += dispatch(i, i, visit);
	return s;
}

long (*volatile hop)(long, long, long (*)(long)) = dispatch;

static long worker_sum, worker_acc;

static void *worker(void *arg)
{
	worker_sum = run((long)arg);
	worker_acc = acc;
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	pthread_t th;
	dispatch_init();
	if (pthread_create(&th, 0, worker, (void *)n) != 0)
		return 1;
	long s = run(n);
	pthread_join(th, 0);
	s += hop(3, 5, visit) + worker_sum;
	printf("dispatch: %ld calls, sum %ld, acc %ld\n", 2 * n + 1, s, acc + worker_acc);
	return 0;
}
