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
 * never touched. The C halves live in blpp_enter.c, blpp_dark.c,
 * blpp_resume.c and blpp_start.c (see blpp_rt.c).
 *
 * Compiled on its own with the runtime's flags and linked with blpp_rt.c
 * into the image: text only, no data, every reference rip-relative or
 * a direct call, so the image needs no relocation.
 */

#include "blpp_layout.h"

	.text

/* PUSHR and POPR push and pop a register and say so in the unwind
 * tables: every stub and routine here has an FDE (FUNC opens it), so a
 * debugger or profiler stopped in the runtime unwinds to the
 * instrumented code that called it (decision 159). */
.macro PUSHR reg
	push	\reg
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset \reg, 0
.endm

.macro POPR reg
	pop	\reg
	.cfi_adjust_cfa_offset -8
	.cfi_restore \reg
.endm

/* SAVE pushes the flags and the caller-saved registers, plus %rbx, which
 * then holds the unaligned %rsp: 11 words, 88 bytes. From then on the
 * frame's CFA is %rbx + 96 (the words, the return address). */
.macro SAVE
	pushfq
	.cfi_adjust_cfa_offset 8
	PUSHR	%rax
	PUSHR	%rcx
	PUSHR	%rdx
	PUSHR	%rsi
	PUSHR	%rdi
	PUSHR	%r8
	PUSHR	%r9
	PUSHR	%r10
	PUSHR	%r11
	PUSHR	%rbx
	mov	%rsp, %rbx
	.cfi_def_cfa_register %rbx
	and	$-16, %rsp
	cld
.endm

.macro RESTORE
	mov	%rbx, %rsp
	.cfi_def_cfa_register %rsp
	POPR	%rbx
	POPR	%r11
	POPR	%r10
	POPR	%r9
	POPR	%r8
	POPR	%rdi
	POPR	%rsi
	POPR	%rdx
	POPR	%rcx
	POPR	%rax
	popfq
	.cfi_adjust_cfa_offset -8
.endm

/* FUNC starts global function name, hidden from the program it is linked
 * into, and its FDE; ENDFUNC ends both. */
.macro FUNC name
	.globl	\name
	.hidden	\name
	.type	\name, @function
\name:
	.cfi_startproc
.endm

.macro ENDFUNC name
	.cfi_endproc
	.size	\name, . - \name
.endm

/* STUB starts a stub: its registers and flags saved (SAVE), its C half's
 * arguments to be loaded from ARG and CALLER_RSP; ENDSTUB calls the C
 * half, restores everything and returns. */
.macro STUB name
	FUNC	\name
	SAVE
.endm

.macro ENDSTUB name, cfunc
	call	\cfunc
	RESTORE
	ret
	ENDFUNC	\name
.endm

/* After SAVE, %rbx points at the saved registers: rbx, r11, r10, r9,
 * r8, rdi, rsi, rdx, rcx, rax, flags (a word each). The entry and exit
 * stubs pass it to C, which saves and restores a function's path
 * register there (Func.path_reg). The return address is at 88(%rbx), argument i at
 * 96+8*i(%rbx), and the caller's %rsp before its red-zone step was
 * 88 + 8 (return address) + 8*nargs + BLPP_RED_ZONE above %rbx. */
#define ARG(i) (96 + 8 * (i))(%rbx)
#define CALLER_RSP(nargs) (96 + 8 * (nargs) + BLPP_RED_ZONE)(%rbx)

/* FID_RSP loads the C half's first two arguments: the function id (the
 * first pushed word) and the instrumented code's %rsp, above nargs words. */
.macro FID_RSP nargs
	mov	ARG(0), %rdi
	lea	CALLER_RSP(\nargs), %rsi
.endm

/*
 * The stubs. The common cases never reach them: the rewriter emits the
 * fast paths inline (see rewriter/codegen.go), and only what those cannot
 * do (a thread's first entry, a new calling context, a hashed function,
 * unwinding, metrics) comes here, to C.
 */
	STUB	blpp_enter
	FID_RSP	1
	mov	%rbx, %rdx
	ENDSTUB	blpp_enter, blpp_rt_enter

	STUB	blpp_exit
	FID_RSP	1
	xor	%edx, %edx
	mov	%rbx, %rcx
	ENDSTUB	blpp_exit, blpp_rt_exit

/*
 * blpp_tail_exit: the path end before a direct tail jump to an
 * instrumented function (site: the jump's call-site id):
 *	lea -128(%rsp),%rsp ; push $site ; push $fid ; call blpp_tail_exit ;
 *	lea 144(%rsp),%rsp
 */
	STUB	blpp_tail_exit
	FID_RSP	2
	mov	ARG(1), %rdx
	mov	%rbx, %rcx
	ENDSTUB	blpp_tail_exit, blpp_rt_exit

	STUB	blpp_backedge
	mov	ARG(0), %rdi
	mov	ARG(1), %rsi
	mov	ARG(2), %rdx
	ENDSTUB	blpp_backedge, blpp_rt_backedge

/*
 * blpp_lat_word: the inline tsc path end's latency word that holds no
 * entry (decision 148), unless it is the path's first execution and its
 * value fits in the word: %rax is the word's address, %rdx the value
 * (see blpp_rt_lat_word). No red-zone step: it is called below the
 * instrumented code's own pushes, at an exit or below a backedge's step.
 *	lea 16(%rcx),%rax ; call blpp_lat_word
 */
	STUB	blpp_lat_word
	mov	%rax, %rdi
	mov	%rdx, %rsi
	ENDSTUB	blpp_lat_word, blpp_rt_lat_word

/*
 * blpp_dark: an uninstrumented function (function id fid, at least
 * nfuncs) is entered; %rsp was the entry %rsp. The rewriter's stub at its
 * redirected entry calls it before running the function's first
 * instructions (see blpp_rt_dark, decision 70):
 *	lea -128(%rsp),%rsp ; push $fid ; call blpp_dark ; lea 136(%rsp),%rsp
 */
	STUB	blpp_dark
	FID_RSP	1
	ENDSTUB	blpp_dark, blpp_rt_dark

/*
 * blpp_fork_child: in a fork child, right after fork() returned 0 to
 * function fid at its call site site (see blpp_rt_fork_child):
 *	lea -128(%rsp),%rsp ; push $site ; push $fid ; call blpp_fork_child ;
 *	lea 144(%rsp),%rsp
 */
	STUB	blpp_fork_child
	mov	ARG(0), %rdi
	mov	ARG(1), %rsi
	ENDSTUB	blpp_fork_child, blpp_rt_fork_child

/*
 * blpp_vfork_child: in a vfork child, right after vfork() returned 0 to
 * function fid at its call site site (see blpp_rt_vfork_child):
 *	lea -128(%rsp),%rsp ; push $site ; push $fid ; call blpp_vfork_child ;
 *	lea 144(%rsp),%rsp
 */
	STUB	blpp_vfork_child
	mov	ARG(0), %rdi
	mov	ARG(1), %rsi
	ENDSTUB	blpp_vfork_child, blpp_rt_vfork_child

/*
 * blpp_fork_sys: right after a system call that makes a process or thread
 * (nr: clone, fork, vfork or clone3) at call site site of function fid,
 * with the call's result in %rax and its first argument in %rdi (see
 * blpp_rt_fork_sys):
 *	lea -128(%rsp),%rsp ; push $nr ; push $site ; push $fid ;
 *	call blpp_fork_sys ; lea 152(%rsp),%rsp
 */
	STUB	blpp_fork_sys
	mov	%rax, %rcx
	mov	%rdi, %r8
	mov	ARG(0), %rdi
	mov	ARG(1), %rsi
	mov	ARG(2), %rdx
	ENDSTUB	blpp_fork_sys, blpp_rt_fork_sys

/*
 * blpp_leave: the process image may end right after this without running
 * its exit handlers (kind 1: _exit or exit_group; 2: an exec; 4: an
 * execve system call or call, whose arguments the C half reads from the
 * saved registers), so the profile is written now (see blpp_rt_leave):
 *	lea -128(%rsp),%rsp ; push $kind ; call blpp_leave ; lea 136(%rsp),%rsp
 */
	STUB	blpp_leave
	mov	ARG(0), %rdi
	mov	%rbx, %rsi
	ENDSTUB	blpp_leave, blpp_rt_leave

/*
 * blpp_leaf: an activation of a function of one path that calls nothing
 * and has no shadow frame starts, and the inline entry could not count
 * it; %rsp was the entry %rsp (see blpp_rt_leaf):
 *	lea -128(%rsp),%rsp ; push $fid ; call blpp_leaf ; lea 136(%rsp),%rsp
 */
	STUB	blpp_leaf
	FID_RSP	1
	ENDSTUB	blpp_leaf, blpp_rt_leaf

/*
 * blpp_setjmp_ret: after a call that returns twice (setjmp):
 *	lea -128(%rsp),%rsp ; push $site ; push $restart ; push $k ; push $fid ;
 *	call blpp_setjmp_ret ; lea 160(%rsp),%rsp
 * (site: the call's own call-site id). See blpp_rt_setjmp_ret.
 */
	STUB	blpp_setjmp_ret
	mov	ARG(0), %rdi
	mov	ARG(1), %rsi
	mov	ARG(2), %rdx
	mov	ARG(3), %rcx
	lea	CALLER_RSP(4), %r8
	ENDSTUB	blpp_setjmp_ret, blpp_rt_setjmp_ret

/*
 * blpp_start replaces the program's entry point. The kernel (or, in a
 * dynamic binary, ld.so) left the initial stack at %rsp and, in %rdx, a
 * finaliser for the program to register with atexit: both, and every
 * other register, reach the original entry unchanged. blpp_init gets a
 * pointer to the initial stack (argc, argv, envp, auxv) and sets
 * blpp_entry_target. ld.so reaches it by an indirect jump, so it starts
 * with endbr64 for programs that keep CET IBT (rewriter/cet.go); the
 * stubs above are only ever called directly. The jump to the original
 * entry is not a return, so the shadow stack stays paired.
 */
	FUNC	blpp_start
	.cfi_undefined %rip	/* the first frame: nothing called it */
	endbr64
	SAVE
	lea	88(%rbx), %rdi
	call	blpp_init
	RESTORE
	jmp	*blpp_entry_target(%rip)
	ENDFUNC	blpp_start

/* blpp_sigreturn is the sa_restorer of the runtime's signal actions. Its
 * bytes are glibc's __restore_rt's (48 c7 c0 0f 00 00 00 0f 05), which
 * unwinders (libgcc's MD_FALLBACK_FRAME_STATE_FOR) and debuggers take
 * for a signal frame: a backtrace goes through it. They find it only
 * where no FDE covers it, nor the byte before it (an unwinder looks up a
 * return address less one): so it has none, and a nop outside every FDE
 * comes first, as glibc puts one before __restore_rt. */
	nop
	.globl	blpp_sigreturn
	.hidden	blpp_sigreturn
	.type	blpp_sigreturn, @function
blpp_sigreturn:
	.byte	0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00	/* mov $15,%rax (rt_sigreturn) */
	syscall
	.size	blpp_sigreturn, . - blpp_sigreturn

/*
 * blpp_sig_entry is the kernel's handler of every signal whose action the
 * runtime keeps (blpp_signal.c, decision 94), installed with SA_SIGINFO:
 * %rdi, %rsi and %rdx are the signal, its siginfo and its ucontext.
 * blpp_rt_signal returns the program's handler, which the entry jumps
 * to with those arguments, %rax 0 and %rsp as the kernel left them, so
 * that the handler runs in the kernel's frame and returns to its
 * restorer; or 0, when the runtime handled the signal itself.
 */
	FUNC	blpp_sig_entry
	endbr64			/* the kernel enters it as a handler (decision 95) */
	PUSHR	%rdi
	PUSHR	%rsi
	PUSHR	%rdx
	call	blpp_rt_signal
	POPR	%rdx
	POPR	%rsi
	POPR	%rdi
	test	%rax, %rax
	jz	1f
	mov	%rax, %r11
	xor	%eax, %eax
	jmp	*%r11
1:	ret
	ENDFUNC	blpp_sig_entry

/*
 * blpp_sys_sigaction takes the place of a syscall instruction that makes
 * rt_sigaction (13), whose arguments are in %rdi, %rsi, %rdx and %r10:
 *	lea -128(%rsp),%rsp ; call blpp_sys_sigaction ; lea 128(%rsp),%rsp
 * The result is in %rax; every other register and the flags are kept.
 */
	STUB	blpp_sys_sigaction
	mov	%r10, %rcx
	call	blpp_rt_sigaction
	mov	%rax, 72(%rbx)
	RESTORE
	ret
	ENDFUNC	blpp_sys_sigaction

/*
 * blpp_libc_sigaction and blpp_libc_signal take the place of an
 * uninstrumented sigaction (and __sigaction), and of signal and its kin
 * (bsd_signal, ssignal, sysv_signal, __sysv_signal, sigset): instrumented
 * code calls them with the function's own arguments, and the function
 * in %r11 (the rewriter's thunk loads it, as a PLT stub may clobber
 * %r11 anyway). They are C functions with one more argument.
 */
	FUNC	blpp_libc_sigaction
	mov	%r11, %rcx
	jmp	blpp_rt_libc_sigaction
	ENDFUNC	blpp_libc_sigaction

	FUNC	blpp_libc_signal
	mov	%r11, %rdx
	jmp	blpp_rt_libc_signal
	ENDFUNC	blpp_libc_signal

/*
 * blpp_libc_clone and blpp_libc_clone3 take the place of the C library's
 * clone wrappers that instrumented code calls (decision 101): clone(fn,
 * stack, flags, arg, ptid, tls, ctid) (glibc's __clone) and glibc's
 * internal __clone3(args, size, fn, arg), the function in %r11 (the
 * rewriter's thunk loads it). A child that will run in this memory on
 * this thread pointer (CLONE_VM without CLONE_SETTLS: posix_spawn's)
 * starts at blpp_clone_start instead of fn, with a record { fn, arg,
 * flags } at the top of its stack, below which its stack then starts
 * (see blpp_resume.c). clone's seventh argument stays on the stack, so
 * blpp_libc_clone jumps to the function with the caller's frame as it
 * was; the flags are dead at a call [SysV x86-64 ABI 3.2.1].
 */
	FUNC	blpp_libc_clone
	test	$0x100, %edx		/* CLONE_VM */
	jz	1f
	test	$0x80000, %edx		/* CLONE_SETTLS */
	jnz	1f
	test	%rdi, %rdi
	jz	1f
	and	$-16, %rsi
	cmp	$256, %rsi
	jb	1f
	sub	$32, %rsi
	mov	%rdi, (%rsi)
	mov	%rcx, 8(%rsi)
	mov	%rdx, 16(%rsi)
	mov	%rsi, %rcx
	lea	blpp_clone_start(%rip), %rdi
1:	jmp	*%r11
	ENDFUNC	blpp_libc_clone

	FUNC	blpp_libc_clone3
	mov	%r11, %r8
	jmp	blpp_rt_libc_clone3
	ENDFUNC	blpp_libc_clone3

/*
 * User contexts (decision 122, blpp_context.c): the C library's
 * swapcontext(oucp, ucp), setcontext(ucp), getcontext(ucp) and
 * makecontext(ucp, fn, argc, ...), the function in %r11. swapcontext and
 * setcontext go to their C halves with it as one more argument.
 * getcontext must save its caller's own context, and makecontext takes
 * variable arguments (some on the stack, their count of vector
 * registers in %al): their stubs note ucp with every argument register
 * kept, then jump to the function with the caller's stack as it was.
 */
	FUNC	blpp_libc_swapcontext
	mov	%r11, %rdx
	jmp	blpp_rt_libc_swapcontext
	ENDFUNC	blpp_libc_swapcontext

	FUNC	blpp_libc_setcontext
	mov	%r11, %rsi
	jmp	blpp_rt_libc_setcontext
	ENDFUNC	blpp_libc_setcontext

	FUNC	blpp_libc_getcontext
	push	$0
	.cfi_adjust_cfa_offset 8
	jmp	blpp_ctx_note
	ENDFUNC	blpp_libc_getcontext

	FUNC	blpp_libc_makecontext
	push	$1
	.cfi_adjust_cfa_offset 8
	jmp	blpp_ctx_note
	ENDFUNC	blpp_libc_makecontext

/* blpp_ctx_note: the word pushed says which; 8 more words keep the
 * stack 16-aligned at the call (it was 8 off at the stub's entry and
 * the push made it aligned). */
	FUNC	blpp_ctx_note
	.cfi_adjust_cfa_offset 8	/* the stub's word above the return address */
	PUSHR	%rdi
	PUSHR	%rsi
	PUSHR	%rdx
	PUSHR	%rcx
	PUSHR	%r8
	PUSHR	%r9
	PUSHR	%rax
	PUSHR	%r11
	mov	64(%rsp), %rsi
	cld
	call	blpp_rt_ctx_note
	POPR	%r11
	POPR	%rax
	POPR	%r9
	POPR	%r8
	POPR	%rcx
	POPR	%rdx
	POPR	%rsi
	POPR	%rdi
	lea	8(%rsp), %rsp
	.cfi_adjust_cfa_offset -8
	jmp	*%r11
	ENDFUNC	blpp_ctx_note

/*
 * blpp_clone_start is where such a child starts: the C library's clone
 * calls it with the record in %rdi. blpp_rt_clone_child moves the child
 * off its parent's thread block; then fn(arg) runs as clone would have
 * run it, and returns to clone, which exits with its value.
 */
	FUNC	blpp_clone_start
	endbr64			/* clone calls it through a register */
	PUSHR	%rdi
	mov	16(%rdi), %rdi
	call	blpp_rt_clone_child
	pop	%rcx
	.cfi_adjust_cfa_offset -8
	mov	8(%rcx), %rdi
	jmp	*(%rcx)
	ENDFUNC	blpp_clone_start

	.section .note.GNU-stack,"",@progbits
