//go:build ignore

/*
 * blpp runtime: the entry point and the stubs instrumented code calls.
 *
 * Calling sequences (every stub preserves every general register, %rsp
 * and the flags, DF included; the caller pops the arguments):
 *
 *   function entry, rsp == the activation's entry %rsp:
 *	lea -128(%rsp),%rsp ; push $fid ; call blpp_enter ; lea 136(%rsp),%rsp
 *   path end at an exit (before ret / the tail jump / a no-return call):
 *	lea -128(%rsp),%rsp ; push $fid ; call blpp_exit ; lea 136(%rsp),%rsp
 *   path end at a backedge (count[r + k]++, r = restart):
 *	lea -128(%rsp),%rsp ; push $restart ; push $k ; push $fid ;
 *	call blpp_backedge ; lea 152(%rsp),%rsp
 *
 * `push $imm32` sign-extends; a 64-bit argument is `push $lo32` followed
 * by `movl $hi32, 4(%rsp)`. The stubs recover the caller's %rsp from the
 * fixed shape of these sequences (BLPP_RED_ZONE bytes, the pushed words,
 * the return address), so it must be exactly this.
 *
 * Each stub calls its C half, an ordinary SysV function: it saves the
 * registers the ABI lets C clobber, aligns the stack, clears DF as the
 * ABI requires, and restores everything afterwards. The C code is
 * compiled with -mgeneral-regs-only, so vector and x87 registers are
 * never touched.
 */

#include "blpp_layout.h"

	.text

/* SAVE pushes the flags and the caller-saved registers, plus %rbx, which
 * then holds the unaligned %rsp: 11 words, 88 bytes. */
.macro SAVE
	pushfq
	push	%rax
	push	%rcx
	push	%rdx
	push	%rsi
	push	%rdi
	push	%r8
	push	%r9
	push	%r10
	push	%r11
	push	%rbx
	mov	%rsp, %rbx
	and	$-16, %rsp
	cld
.endm

.macro RESTORE
	mov	%rbx, %rsp
	pop	%rbx
	pop	%r11
	pop	%r10
	pop	%r9
	pop	%r8
	pop	%rdi
	pop	%rsi
	pop	%rdx
	pop	%rcx
	pop	%rax
	popfq
.endm

/* After SAVE, %rbx points at the saved registers: rbx, r11, r10, r9,
 * r8, rdi, rsi, rdx, rcx, rax, flags (a word each). The entry and exit
 * stubs pass it to C, which saves and restores a function's path
 * register there (Func.path_reg). The return address is at 88(%rbx), argument i at
 * 96+8*i(%rbx), and the caller's %rsp before its red-zone step was
 * 88 + 8 (return address) + 8*nargs + BLPP_RED_ZONE above %rbx. */
#define ARG(i) (96 + 8 * (i))(%rbx)
#define CALLER_RSP(nargs) (96 + 8 * (nargs) + BLPP_RED_ZONE)(%rbx)

/*
 * The stubs. The common cases never reach them: the rewriter emits the
 * fast paths inline (see rewriter/codegen.go), and only what those cannot
 * do (a thread's first entry, a new calling context, a hashed function,
 * unwinding, metrics) comes here, to C.
 */
	.globl	blpp_enter
	.hidden	blpp_enter
	.type	blpp_enter, @function
blpp_enter:
	SAVE
	mov	ARG(0), %rdi
	lea	CALLER_RSP(1), %rsi
	mov	%rbx, %rdx
	call	blpp_rt_enter
	RESTORE
	ret
	.size	blpp_enter, . - blpp_enter

	.globl	blpp_exit
	.hidden	blpp_exit
	.type	blpp_exit, @function
blpp_exit:
	SAVE
	mov	ARG(0), %rdi
	lea	CALLER_RSP(1), %rsi
	xor	%edx, %edx
	mov	%rbx, %rcx
	call	blpp_rt_exit
	RESTORE
	ret
	.size	blpp_exit, . - blpp_exit

/*
 * blpp_tail_exit: the path end before a direct tail jump to an
 * instrumented function (site: the jump's call-site id):
 *	lea -128(%rsp),%rsp ; push $site ; push $fid ; call blpp_tail_exit ;
 *	lea 144(%rsp),%rsp
 */
	.globl	blpp_tail_exit
	.hidden	blpp_tail_exit
	.type	blpp_tail_exit, @function
blpp_tail_exit:
	SAVE
	mov	ARG(0), %rdi
	lea	CALLER_RSP(2), %rsi
	mov	ARG(1), %rdx
	mov	%rbx, %rcx
	call	blpp_rt_exit
	RESTORE
	ret
	.size	blpp_tail_exit, . - blpp_tail_exit

	.globl	blpp_backedge
	.hidden	blpp_backedge
	.type	blpp_backedge, @function
blpp_backedge:
	SAVE
	mov	ARG(0), %rdi
	mov	ARG(1), %rsi
	mov	ARG(2), %rdx
	call	blpp_rt_backedge
	RESTORE
	ret
	.size	blpp_backedge, . - blpp_backedge

/*
 * blpp_dark: an uninstrumented function (function id fid, at least
 * nfuncs) is entered; %rsp was the entry %rsp. The rewriter's stub at its
 * redirected entry calls it before running the function's first
 * instructions (see blpp_rt_dark, decision 70):
 *	lea -128(%rsp),%rsp ; push $fid ; call blpp_dark ; lea 136(%rsp),%rsp
 */
	.globl	blpp_dark
	.hidden	blpp_dark
	.type	blpp_dark, @function
blpp_dark:
	SAVE
	mov	ARG(0), %rdi
	lea	CALLER_RSP(1), %rsi
	call	blpp_rt_dark
	RESTORE
	ret
	.size	blpp_dark, . - blpp_dark

/*
 * blpp_fork_child: in a fork child, right after fork() returned 0 to
 * function fid at its call site site (see blpp_rt_fork_child):
 *	lea -128(%rsp),%rsp ; push $site ; push $fid ; call blpp_fork_child ;
 *	lea 144(%rsp),%rsp
 */
	.globl	blpp_fork_child
	.hidden	blpp_fork_child
	.type	blpp_fork_child, @function
blpp_fork_child:
	SAVE
	mov	ARG(0), %rdi
	mov	ARG(1), %rsi
	call	blpp_rt_fork_child
	RESTORE
	ret
	.size	blpp_fork_child, . - blpp_fork_child

/*
 * blpp_leave: the process image may end right after this without running
 * its exit handlers (kind 1: _exit or exit_group; 2: an exec), so the
 * profile is written now (see blpp_rt_leave):
 *	lea -128(%rsp),%rsp ; push $kind ; call blpp_leave ; lea 136(%rsp),%rsp
 */
	.globl	blpp_leave
	.hidden	blpp_leave
	.type	blpp_leave, @function
blpp_leave:
	SAVE
	mov	ARG(0), %rdi
	call	blpp_rt_leave
	RESTORE
	ret
	.size	blpp_leave, . - blpp_leave

/*
 * blpp_leaf: an activation of a flow-only function of one path that calls
 * nothing starts, and the inline entry could not count it (see
 * blpp_rt_leaf):
 *	lea -128(%rsp),%rsp ; push $fid ; call blpp_leaf ; lea 136(%rsp),%rsp
 */
	.globl	blpp_leaf
	.hidden	blpp_leaf
	.type	blpp_leaf, @function
blpp_leaf:
	SAVE
	mov	ARG(0), %rdi
	call	blpp_rt_leaf
	RESTORE
	ret
	.size	blpp_leaf, . - blpp_leaf

/*
 * blpp_setjmp_ret: after a call that returns twice (setjmp):
 *	lea -128(%rsp),%rsp ; push $site ; push $restart ; push $k ; push $fid ;
 *	call blpp_setjmp_ret ; lea 160(%rsp),%rsp
 * (site: the call's own call-site id). See blpp_rt_setjmp_ret.
 */
	.globl	blpp_setjmp_ret
	.hidden	blpp_setjmp_ret
	.type	blpp_setjmp_ret, @function
blpp_setjmp_ret:
	SAVE
	mov	ARG(0), %rdi
	mov	ARG(1), %rsi
	mov	ARG(2), %rdx
	mov	ARG(3), %rcx
	lea	CALLER_RSP(4), %r8
	call	blpp_rt_setjmp_ret
	RESTORE
	ret
	.size	blpp_setjmp_ret, . - blpp_setjmp_ret

/*
 * blpp_start replaces the program's entry point. The kernel (or, in a
 * dynamic binary, ld.so) left the initial stack at %rsp and, in %rdx, a
 * finaliser for the program to register with atexit: both, and every
 * other register, reach the original entry unchanged. blpp_init gets a
 * pointer to the initial stack (argc, argv, envp, auxv) and sets
 * blpp_entry_target.
 */
	.globl	blpp_start
	.hidden	blpp_start
	.type	blpp_start, @function
blpp_start:
	SAVE
	lea	88(%rbx), %rdi
	call	blpp_init
	RESTORE
	jmp	*blpp_entry_target(%rip)
	.size	blpp_start, . - blpp_start

/* blpp_sigreturn is the sa_restorer of the runtime's signal handlers. */
	.globl	blpp_sigreturn
	.hidden	blpp_sigreturn
	.type	blpp_sigreturn, @function
blpp_sigreturn:
	mov	$15, %eax	/* rt_sigreturn */
	syscall
	.size	blpp_sigreturn, . - blpp_sigreturn

	.section .note.GNU-stack,"",@progbits
