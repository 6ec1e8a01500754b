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
 * Each stub has an assembly fast path for the common case and falls back
 * to a slow stub that calls the C half, an ordinary SysV function: it
 * saves the registers the ABI lets C clobber, aligns the stack, clears DF
 * as the ABI requires, and restores everything afterwards. The C code is
 * compiled with -mgeneral-regs-only, so vector and x87 registers are
 * never touched. The fast paths check that the runtime is ready (before
 * blpp_init a library constructor may call instrumented code with %gs
 * unset), then assume %gs is set (the program does not
 * use %gs: the rewriter refuses such binaries) and that the CPU has
 * LAHF/SAHF in 64-bit mode (every x86-64 CPU since 2006).
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

/* After SAVE: the return address is at 88(%rbx), argument i at
 * 96+8*i(%rbx), and the caller's %rsp before its red-zone step was
 * 88 + 8 (return address) + 8*nargs + BLPP_RED_ZONE above %rbx. */
#define ARG(i) (96 + 8 * (i))(%rbx)
#define CALLER_RSP(nargs) (96 + 8 * (nargs) + BLPP_RED_ZONE)(%rbx)

/*
 * Fast paths. The common cases (the thread's own block, nothing to
 * unwind, a dense counter array already resolved in this process, a path
 * id in range) are done here with four scratch registers; everything else
 * restores them and jumps to the slow stub, which saves everything and
 * calls C. The flags are kept with lahf/seto and given back with
 * add/sahf (CF PF AF ZF SF OF); DF and the system flags are not touched.
 *
 * After FAST_SAVE: the return address is at 40(%rsp), argument i at
 * 48+8*i(%rsp), and the caller's %rsp before its red-zone step was
 * 48 + 8*nargs + BLPP_RED_ZONE above %rsp.
 */
.macro FAST_SAVE
	push	%rax
	lahf
	seto	%al
	push	%rax
	push	%rcx
	push	%rdx
	push	%rsi
.endm

.macro FAST_RESTORE
	pop	%rsi
	pop	%rdx
	pop	%rcx
	pop	%rax
	add	$0x7f, %al	/* OF = (al == 1) */
	sahf
	pop	%rax
.endm

#define FARG(i) (48 + 8 * (i))(%rsp)
#define FCALLER_RSP(nargs) (48 + 8 * (nargs) + BLPP_RED_ZONE)(%rsp)

/* struct slot of blpp_rt.c (checked there by _Static_assert). */
#define SLOT_DENSE 0
#define SLOT_CALLS 16
#define SLOT_NUM_PATHS 24
#define SLOT_SHIFT 5

#define T(field) BLPP_THREAD_OFF_##field(%rax)
#define F(field) (BLPP_FRAME_OFF_##field - BLPP_FRAME_SIZE)(%rcx)

/* OWNED: %rax = the thread block, if it is the calling thread's and no
 * runtime code of this thread is interrupted; else go to \slow. */
.macro OWNED slow
	cmpq	$0, blpp_fast_slots(%rip)	/* 0 until blpp_init: %gs may be unset */
	je	\slow
	mov	%gs:BLPP_THREAD_OFF_SELF, %rax
	mov	%fs:0, %rcx
	cmp	T(OWNER), %rcx
	jne	\slow
	cmpq	$0, T(BUSY)
	jne	\slow
.endm

/* SLOT: %rdx = &slots[fid] for fid in %rdx, else go to \slow. */
.macro SLOT slow
	cmp	blpp_fast_nfuncs(%rip), %rdx
	jae	\slow
	shl	$SLOT_SHIFT, %rdx
	add	blpp_fast_slots(%rip), %rdx
.endm

	.globl	blpp_enter
	.hidden	blpp_enter
	.type	blpp_enter, @function
blpp_enter:
	FAST_SAVE
	OWNED	9f
	cmpq	$0, T(OVERFLOW)
	jne	9f
	mov	T(SP), %rcx
	lea	FCALLER_RSP(1), %rdx
	cmp	T(SP_BASE), %rcx
	je	1f
	cmp	%rdx, F(RSP)		/* the newest frame must be a caller's */
	jbe	9f
1:	add	$BLPP_FRAME_SIZE, %rcx
	cmp	T(SP_LIMIT), %rcx
	ja	9f
	incq	T(BUSY)			/* reserve, then fill (see blpp_rt.c) */
	mov	%rcx, T(SP)
	mov	%rdx, F(RSP)
	mov	T(R), %rdx
	mov	%rdx, F(SAVED_R)
	mov	T(CALL_SITE), %rdx	/* where the caller stopped */
	mov	%rdx, F(SITE)
	mov	FARG(0), %rdx
	mov	%rdx, F(FUNC)
	movq	$0, F(RECORD)
	movq	$0, T(R)
	decq	T(BUSY)
	SLOT	2f
	lock incq SLOT_CALLS(%rdx)
2:	FAST_RESTORE
	ret
9:	FAST_RESTORE
	jmp	blpp_enter_slow
	.size	blpp_enter, . - blpp_enter

	.globl	blpp_exit
	.hidden	blpp_exit
	.type	blpp_exit, @function
blpp_exit:
	FAST_SAVE
	OWNED	9f
	cmpq	$0, T(OVERFLOW)
	jne	9f
	mov	T(SP), %rcx
	cmp	T(SP_BASE), %rcx
	je	9f
	lea	FCALLER_RSP(1), %rdx
	cmp	%rdx, F(RSP)		/* below the caller's %rsp: unwind first */
	jb	9f
	mov	FARG(0), %rdx
	cmp	%rdx, F(FUNC)
	jne	9f
	SLOT	9f
	mov	SLOT_DENSE(%rdx), %rsi
	test	%rsi, %rsi
	jz	9f
	mov	SLOT_NUM_PATHS(%rdx), %rdx
	cmp	%rdx, T(R)
	jae	9f
	mov	T(R), %rdx
	lock incq (%rsi,%rdx,8)
	mov	F(SAVED_R), %rdx
	mov	%rdx, T(R)
	mov	F(SITE), %rdx		/* the caller's last call site again */
	mov	%rdx, T(CALL_SITE)
	sub	$BLPP_FRAME_SIZE, %rcx
	mov	%rcx, T(SP)
	FAST_RESTORE
	ret
9:	FAST_RESTORE
	jmp	blpp_exit_slow
	.size	blpp_exit, . - blpp_exit

	.globl	blpp_backedge
	.hidden	blpp_backedge
	.type	blpp_backedge, @function
blpp_backedge:
	FAST_SAVE
	OWNED	9f
	mov	FARG(0), %rdx
	SLOT	9f
	mov	SLOT_DENSE(%rdx), %rsi
	test	%rsi, %rsi
	jz	9f
	mov	T(R), %rcx
	add	FARG(1), %rcx
	cmp	SLOT_NUM_PATHS(%rdx), %rcx
	jae	9f
	lock incq (%rsi,%rcx,8)
	mov	FARG(2), %rdx
	mov	%rdx, T(R)
	FAST_RESTORE
	ret
9:	FAST_RESTORE
	jmp	blpp_backedge_slow
	.size	blpp_backedge, . - blpp_backedge

/* The slow stubs: same stack layout as the fast ones were entered with. */
blpp_enter_slow:
	SAVE
	mov	ARG(0), %rdi
	lea	CALLER_RSP(1), %rsi
	call	blpp_rt_enter
	RESTORE
	ret

blpp_exit_slow:
	SAVE
	mov	ARG(0), %rdi
	lea	CALLER_RSP(1), %rsi
	call	blpp_rt_exit
	RESTORE
	ret

blpp_backedge_slow:
	SAVE
	mov	ARG(0), %rdi
	mov	ARG(1), %rsi
	mov	ARG(2), %rdx
	call	blpp_rt_backedge
	RESTORE
	ret

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
