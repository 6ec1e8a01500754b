/*
 * Register and flags preservation checks for the runtime stubs.
 *
 *   void regcheck_enter(unsigned long long out[17]);
 *   void regcheck_exit(unsigned long long out[17]);
 *   void regcheck_backedge(unsigned long long out[17]);
 *   and the same with _bad: a function id the runtime refuses.
 *
 * Each loads a distinct pattern into every general register but %rsp,
 * loads the flags from rc_flags (DF included), calls the stub exactly as
 * instrumented code does, and stores what it finds afterwards: out[0..14]
 * rax rbx rcx rdx rsi rdi rbp r8..r15, out[15] the flags, out[16] the
 * change of %rsp.
 */
	.data
	.globl	rc_flags
rc_flags:	.quad	0x2
rc_rsp:		.quad	0
rc_rsp_after:	.quad	0

	.text
.macro PATTERN
	movabs	$0x1111111111111111, %rax
	movabs	$0x2222222222222222, %rbx
	movabs	$0x3333333333333333, %rcx
	movabs	$0x4444444444444444, %rdx
	movabs	$0x5555555555555555, %rsi
	movabs	$0x6666666666666666, %rdi
	movabs	$0x7777777777777777, %rbp
	movabs	$0x8888888888888888, %r8
	movabs	$0x9999999999999999, %r9
	movabs	$0xaaaaaaaaaaaaaaaa, %r10
	movabs	$0xbbbbbbbbbbbbbbbb, %r11
	movabs	$0xcccccccccccccccc, %r12
	movabs	$0xdddddddddddddddd, %r13
	movabs	$0xeeeeeeeeeeeeeeee, %r14
	movabs	$0x0f0f0f0f0f0f0f0f, %r15
.endm

/* STORE stores the registers regs, 8 bytes each, from off(%rdi) on. */
.macro STORE off, regs:vararg
	.set	store_off, \off
	.irp	reg, \regs
	mov	\reg, store_off(%rdi)
	.set	store_off, store_off + 8
	.endr
.endm

.macro CHECK name, call
	.globl	\name
	.type	\name, @function
\name:
	push	%rbx
	push	%rbp
	push	%r12
	push	%r13
	push	%r14
	push	%r15
	push	%rdi
	mov	%rsp, rc_rsp(%rip)
	PATTERN
	push	rc_flags(%rip)
	popfq
	\call
	mov	%rsp, rc_rsp_after(%rip)
	pushfq
	push	%rdi
	mov	16(%rsp), %rdi
	STORE	0, %rax, %rbx, %rcx, %rdx, %rsi
	pop	%rax
	STORE	40, %rax, %rbp, %r8, %r9, %r10, %r11, %r12, %r13, %r14, %r15
	pop	%rax
	mov	%rax, 120(%rdi)
	mov	rc_rsp_after(%rip), %rax
	sub	rc_rsp(%rip), %rax
	mov	%rax, 128(%rdi)
	cld
	pop	%rdi
	pop	%r15
	pop	%r14
	pop	%r13
	pop	%r12
	pop	%rbp
	pop	%rbx
	ret
	.size	\name, . - \name
.endm

/* The checks count under function id 11 (F_REGS of harness.c); id 1000
 * is beyond the function table, which sends exit and backedge to the slow
 * path (counted as bad_funcs). */

/* CALL_FID calls a stub whose one argument is the function id (entry,
 * exit), CALL_BACKEDGE the backedge stub, as instrumented code does. */
.macro CALL_FID stub, fid
	lea	-128(%rsp), %rsp
	push	$\fid
	call	\stub
	lea	136(%rsp), %rsp
.endm
.macro CALL_BACKEDGE fid
	lea	-128(%rsp), %rsp
	push	$0
	push	$1
	push	$\fid
	call	blpp_backedge
	lea	152(%rsp), %rsp
.endm

	CHECK	regcheck_enter, "CALL_FID blpp_enter, 11"
	CHECK	regcheck_exit, "CALL_FID blpp_exit, 11"
	CHECK	regcheck_backedge, "CALL_BACKEDGE 11"
	CHECK	regcheck_enter_bad, "CALL_FID blpp_enter, 1000"
	CHECK	regcheck_exit_bad, "CALL_FID blpp_exit, 1000"
	CHECK	regcheck_backedge_bad, "CALL_BACKEDGE 1000"

	.section .note.GNU-stack,"",@progbits
