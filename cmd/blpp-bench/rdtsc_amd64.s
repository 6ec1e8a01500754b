#include "textflag.h"

// func rdtscLoop(n int64) uint64
// Reads the time-stamp counter n times, each read depending on the
// previous one as in instrumented code (now - start), and returns the
// sum of the differences so that no read can be dropped.
TEXT ·rdtscLoop(SB), NOSPLIT, $0-16
	MOVQ	n+0(FP), CX
	XORQ	R8, R8
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, R9
loop:
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, R10
	SUBQ	R9, R10
	ADDQ	R10, R8
	MOVQ	AX, R9
	DECQ	CX
	JNZ	loop
	MOVQ	R8, ret+8(FP)
	RET
