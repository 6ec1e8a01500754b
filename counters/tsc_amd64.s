#include "textflag.h"

// func rdtscAsm() uint64
TEXT ·rdtscAsm(SB), NOSPLIT, $0-8
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET
