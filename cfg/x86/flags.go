package x86

import (
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// Flags is a set of RFLAGS bits that instructions read or write. Only the
// six status flags and DF are tracked: blpp's counter increments clobber
// the status flags and nothing else [Intel SDM Vol.1 §3.4.3].
type Flags uint8

const (
	CF Flags = 1 << iota // carry
	PF                   // parity
	AF                   // auxiliary carry
	ZF                   // zero
	SF                   // sign
	OF                   // overflow
	DF                   // direction

	// Status is the set an add/sub/inc clobbers.
	Status = CF | PF | AF | ZF | SF | OF
	// AllFlags is every flag tracked.
	AllFlags = Status | DF
)

var flagNames = [...]string{"CF", "PF", "AF", "ZF", "SF", "OF", "DF"}

// String lists the flags as "CF|ZF"; the empty set is "none".
func (f Flags) String() string {
	if f == 0 {
		return "none"
	}
	var parts []string
	for i, n := range flagNames {
		if f&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if rest := f &^ AllFlags; rest != 0 {
		parts = append(parts, "0x"+hex8(uint8(rest)))
	}
	return strings.Join(parts, "|")
}

func hex8(b uint8) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}

// flagEffect is one row of the flag table.
type flagEffect struct {
	r, w  Flags
	known bool
}

// The flag table, indexed by x86asm.Op. "Writes" means the instruction
// leaves the flag with a value that does not depend on its value before:
// set, cleared, computed or undefined [Intel SDM Vol.1 App. A, EFLAGS
// cross-reference]. An undefined flag counts as written: a program cannot
// rely on it afterwards, so liveness may treat it as killed. Instructions
// whose effect depends on a run-time count (shifts by %cl, rep cmps/scas)
// are handled in flagsOf. Anything missing from the table is treated as
// reading every flag and writing none, so liveness errs towards "live".
var flagTable [maxKnownOp + 1]flagEffect

// maxKnownOp is the last Op x86asm v0.32 defines; the AVX range is
// (XTEST, VZEROUPPER]. TestOpRanges checks both bounds.
const maxKnownOp = x86asm.VZEROUPPER

func setFlags(r, w Flags, ops ...x86asm.Op) {
	for _, op := range ops {
		flagTable[op] = flagEffect{r: r, w: w, known: true}
	}
}

func init() {
	// Instructions that neither read nor write any tracked flag.
	setFlags(0, 0,
		x86asm.MOV, x86asm.MOVZX, x86asm.MOVSX, x86asm.MOVSXD, x86asm.MOVBE,
		x86asm.LEA, x86asm.PUSH, x86asm.POP, x86asm.NOP, x86asm.XCHG,
		x86asm.BSWAP, x86asm.CBW, x86asm.CWDE, x86asm.CDQE, x86asm.CWD,
		x86asm.CDQ, x86asm.CQO, x86asm.NOT, x86asm.LEAVE, x86asm.ENTER,
		x86asm.PAUSE, x86asm.LFENCE, x86asm.MFENCE, x86asm.SFENCE,
		x86asm.PREFETCHNTA, x86asm.PREFETCHT0, x86asm.PREFETCHT1,
		x86asm.PREFETCHT2, x86asm.PREFETCHW, x86asm.CLFLUSH, x86asm.CPUID,
		x86asm.RDTSC, x86asm.RDTSCP, x86asm.RDPMC, x86asm.XGETBV,
		x86asm.RDFSBASE, x86asm.RDGSBASE, x86asm.WRFSBASE, x86asm.WRGSBASE,
		x86asm.FXSAVE, x86asm.FXSAVE64, x86asm.FXRSTOR, x86asm.FXRSTOR64,
		x86asm.XSAVE, x86asm.XSAVE64, x86asm.XSAVEC, x86asm.XSAVEC64,
		x86asm.XSAVEOPT, x86asm.XSAVEOPT64, x86asm.XRSTOR, x86asm.XRSTOR64,
		x86asm.LDMXCSR, x86asm.STMXCSR, x86asm.EMMS, x86asm.FWAIT,
		x86asm.XEND, x86asm.XABORT, x86asm.XLATB, x86asm.CRC32,
		// x87 arithmetic uses the FPU status word, not RFLAGS.
		x86asm.F2XM1, x86asm.FABS, x86asm.FADD, x86asm.FADDP, x86asm.FBLD,
		x86asm.FBSTP, x86asm.FCHS, x86asm.FCOM, x86asm.FCOMP, x86asm.FCOMPP,
		x86asm.FCOS, x86asm.FDECSTP, x86asm.FDIV, x86asm.FDIVP, x86asm.FDIVR,
		x86asm.FDIVRP, x86asm.FFREE, x86asm.FFREEP, x86asm.FIADD,
		x86asm.FICOM, x86asm.FICOMP, x86asm.FIDIV, x86asm.FIDIVR, x86asm.FILD,
		x86asm.FIMUL, x86asm.FINCSTP, x86asm.FIST, x86asm.FISTP,
		x86asm.FISTTP, x86asm.FISUB, x86asm.FISUBR, x86asm.FLD, x86asm.FLD1,
		x86asm.FLDCW, x86asm.FLDENV, x86asm.FLDL2E, x86asm.FLDL2T,
		x86asm.FLDLG2, x86asm.FLDLN2, x86asm.FLDPI, x86asm.FLDZ, x86asm.FMUL,
		x86asm.FMULP, x86asm.FNCLEX, x86asm.FNINIT, x86asm.FNOP,
		x86asm.FNSAVE, x86asm.FNSTCW, x86asm.FNSTENV, x86asm.FNSTSW,
		x86asm.FPATAN, x86asm.FPREM, x86asm.FPREM1, x86asm.FPTAN,
		x86asm.FRNDINT, x86asm.FRSTOR, x86asm.FSCALE, x86asm.FSIN,
		x86asm.FSINCOS, x86asm.FSQRT, x86asm.FST, x86asm.FSTP, x86asm.FSUB,
		x86asm.FSUBP, x86asm.FSUBR, x86asm.FSUBRP, x86asm.FTST, x86asm.FUCOM,
		x86asm.FUCOMP, x86asm.FUCOMPP, x86asm.FXAM, x86asm.FXCH,
		x86asm.FXTRACT, x86asm.FYL2X, x86asm.FYL2XP1,
		// SSE/SSE2/SSE3/SSSE3/SSE4.1/AES/SHA: vector state only.
		x86asm.ADDPD, x86asm.ADDPS, x86asm.ADDSD, x86asm.ADDSS,
		x86asm.ADDSUBPD, x86asm.ADDSUBPS, x86asm.AESDEC, x86asm.AESDECLAST,
		x86asm.AESENC, x86asm.AESENCLAST, x86asm.AESIMC,
		x86asm.AESKEYGENASSIST, x86asm.ANDNPD, x86asm.ANDNPS, x86asm.ANDPD,
		x86asm.ANDPS, x86asm.BLENDPD, x86asm.BLENDPS, x86asm.BLENDVPD,
		x86asm.BLENDVPS, x86asm.CMPPD, x86asm.CMPPS, x86asm.CMPSD_XMM,
		x86asm.CMPSS, x86asm.CVTDQ2PD, x86asm.CVTDQ2PS, x86asm.CVTPD2DQ,
		x86asm.CVTPD2PI, x86asm.CVTPD2PS, x86asm.CVTPI2PD, x86asm.CVTPI2PS,
		x86asm.CVTPS2DQ, x86asm.CVTPS2PD, x86asm.CVTPS2PI, x86asm.CVTSD2SI,
		x86asm.CVTSD2SS, x86asm.CVTSI2SD, x86asm.CVTSI2SS, x86asm.CVTSS2SD,
		x86asm.CVTSS2SI, x86asm.CVTTPD2DQ, x86asm.CVTTPD2PI,
		x86asm.CVTTPS2DQ, x86asm.CVTTPS2PI, x86asm.CVTTSD2SI,
		x86asm.CVTTSS2SI, x86asm.DIVPD, x86asm.DIVPS, x86asm.DIVSD,
		x86asm.DIVSS, x86asm.DPPD, x86asm.DPPS, x86asm.EXTRACTPS,
		x86asm.HADDPD, x86asm.HADDPS, x86asm.HSUBPD, x86asm.HSUBPS,
		x86asm.INSERTPS, x86asm.LDDQU, x86asm.MASKMOVDQU, x86asm.MASKMOVQ,
		x86asm.MAXPD, x86asm.MAXPS, x86asm.MAXSD, x86asm.MAXSS, x86asm.MINPD,
		x86asm.MINPS, x86asm.MINSD, x86asm.MINSS, x86asm.MOVAPD,
		x86asm.MOVAPS, x86asm.MOVD, x86asm.MOVDDUP, x86asm.MOVDQ2Q,
		x86asm.MOVDQA, x86asm.MOVDQU, x86asm.MOVHLPS, x86asm.MOVHPD,
		x86asm.MOVHPS, x86asm.MOVLHPS, x86asm.MOVLPD, x86asm.MOVLPS,
		x86asm.MOVMSKPD, x86asm.MOVMSKPS, x86asm.MOVNTDQ, x86asm.MOVNTDQA,
		x86asm.MOVNTI, x86asm.MOVNTPD, x86asm.MOVNTPS, x86asm.MOVNTQ,
		x86asm.MOVNTSD, x86asm.MOVNTSS, x86asm.MOVQ, x86asm.MOVQ2DQ,
		x86asm.MOVSD_XMM, x86asm.MOVSHDUP, x86asm.MOVSLDUP, x86asm.MOVSS,
		x86asm.MOVUPD, x86asm.MOVUPS, x86asm.MPSADBW, x86asm.MULPD,
		x86asm.MULPS, x86asm.MULSD, x86asm.MULSS, x86asm.ORPD, x86asm.ORPS,
		x86asm.PABSB, x86asm.PABSD, x86asm.PABSW, x86asm.PACKSSDW,
		x86asm.PACKSSWB, x86asm.PACKUSDW, x86asm.PACKUSWB, x86asm.PADDB,
		x86asm.PADDD, x86asm.PADDQ, x86asm.PADDSB, x86asm.PADDSW,
		x86asm.PADDUSB, x86asm.PADDUSW, x86asm.PADDW, x86asm.PALIGNR,
		x86asm.PAND, x86asm.PANDN, x86asm.PAVGB, x86asm.PAVGW,
		x86asm.PBLENDVB, x86asm.PBLENDW, x86asm.PCLMULQDQ, x86asm.PCMPEQB,
		x86asm.PCMPEQD, x86asm.PCMPEQQ, x86asm.PCMPEQW, x86asm.PCMPGTB,
		x86asm.PCMPGTD, x86asm.PCMPGTQ, x86asm.PCMPGTW, x86asm.PEXTRB,
		x86asm.PEXTRD, x86asm.PEXTRQ, x86asm.PEXTRW, x86asm.PHADDD,
		x86asm.PHADDSW, x86asm.PHADDW, x86asm.PHMINPOSUW, x86asm.PHSUBD,
		x86asm.PHSUBSW, x86asm.PHSUBW, x86asm.PINSRB, x86asm.PINSRD,
		x86asm.PINSRQ, x86asm.PINSRW, x86asm.PMADDUBSW, x86asm.PMADDWD,
		x86asm.PMAXSB, x86asm.PMAXSD, x86asm.PMAXSW, x86asm.PMAXUB,
		x86asm.PMAXUD, x86asm.PMAXUW, x86asm.PMINSB, x86asm.PMINSD,
		x86asm.PMINSW, x86asm.PMINUB, x86asm.PMINUD, x86asm.PMINUW,
		x86asm.PMOVMSKB, x86asm.PMOVSXBD, x86asm.PMOVSXBQ, x86asm.PMOVSXBW,
		x86asm.PMOVSXDQ, x86asm.PMOVSXWD, x86asm.PMOVSXWQ, x86asm.PMOVZXBD,
		x86asm.PMOVZXBQ, x86asm.PMOVZXBW, x86asm.PMOVZXDQ, x86asm.PMOVZXWD,
		x86asm.PMOVZXWQ, x86asm.PMULDQ, x86asm.PMULHRSW, x86asm.PMULHUW,
		x86asm.PMULHW, x86asm.PMULLD, x86asm.PMULLW, x86asm.PMULUDQ,
		x86asm.POR, x86asm.PSADBW, x86asm.PSHUFB, x86asm.PSHUFD,
		x86asm.PSHUFHW, x86asm.PSHUFLW, x86asm.PSHUFW, x86asm.PSIGNB,
		x86asm.PSIGND, x86asm.PSIGNW, x86asm.PSLLD, x86asm.PSLLDQ,
		x86asm.PSLLQ, x86asm.PSLLW, x86asm.PSRAD, x86asm.PSRAW, x86asm.PSRLD,
		x86asm.PSRLDQ, x86asm.PSRLQ, x86asm.PSRLW, x86asm.PSUBB,
		x86asm.PSUBD, x86asm.PSUBQ, x86asm.PSUBSB, x86asm.PSUBSW,
		x86asm.PSUBUSB, x86asm.PSUBUSW, x86asm.PSUBW, x86asm.PUNPCKHBW,
		x86asm.PUNPCKHDQ, x86asm.PUNPCKHQDQ, x86asm.PUNPCKHWD,
		x86asm.PUNPCKLBW, x86asm.PUNPCKLDQ, x86asm.PUNPCKLQDQ,
		x86asm.PUNPCKLWD, x86asm.PXOR, x86asm.RCPPS, x86asm.RCPSS,
		x86asm.ROUNDPD, x86asm.ROUNDPS, x86asm.ROUNDSD, x86asm.ROUNDSS,
		x86asm.RSQRTPS, x86asm.RSQRTSS, x86asm.SHA1MSG1, x86asm.SHA1MSG2,
		x86asm.SHA1NEXTE, x86asm.SHA1RNDS4, x86asm.SHA256MSG1,
		x86asm.SHA256MSG2, x86asm.SHA256RNDS2, x86asm.SHUFPD, x86asm.SHUFPS,
		x86asm.SQRTPD, x86asm.SQRTPS, x86asm.SQRTSD, x86asm.SQRTSS,
		x86asm.SUBPD, x86asm.SUBPS, x86asm.SUBSD, x86asm.SUBSS,
		x86asm.UNPCKHPD, x86asm.UNPCKHPS, x86asm.UNPCKLPD, x86asm.UNPCKLPS,
		x86asm.XORPD, x86asm.XORPS,
		// Transfers whose flag effect is the ABI's, not the instruction's,
		// are set in flagsOf; a plain jmp touches nothing.
		x86asm.JMP, x86asm.LJMP, x86asm.LOOP, x86asm.JCXZ, x86asm.JECXZ,
		x86asm.JRCXZ,
		// xbegin leaves flags alone; on abort the processor restores the
		// state of the xbegin, flags included [Intel SDM Vol.1 §16.3.8].
		x86asm.XBEGIN,
	)

	// Arithmetic and logic that define (or leave undefined) all six
	// status flags.
	setFlags(0, Status,
		x86asm.ADD, x86asm.SUB, x86asm.CMP, x86asm.NEG, x86asm.AND,
		x86asm.OR, x86asm.XOR, x86asm.TEST, x86asm.XADD, x86asm.CMPXCHG,
		x86asm.MUL, x86asm.IMUL, x86asm.DIV, x86asm.IDIV, x86asm.BSF,
		x86asm.BSR, x86asm.LZCNT, x86asm.TZCNT, x86asm.POPCNT,
		x86asm.COMISD, x86asm.COMISS, x86asm.UCOMISD, x86asm.UCOMISS,
		x86asm.PTEST, x86asm.PCMPESTRI, x86asm.PCMPESTRM, x86asm.PCMPISTRI,
		x86asm.PCMPISTRM, x86asm.FCOMI, x86asm.FCOMIP, x86asm.FUCOMI,
		x86asm.FUCOMIP, x86asm.RDRAND, x86asm.XTEST,
		// BMI1 (VEX-encoded, in x86asm's AVX range).
		x86asm.ANDN, x86asm.BEXTR, x86asm.BLSI, x86asm.BLSMSK, x86asm.BLSR,
		x86asm.BZHI,
		// AVX/AVX-512 compares and tests.
		x86asm.VCOMISD, x86asm.VCOMISS, x86asm.VCOMISH, x86asm.VCOMISBF16,
		x86asm.VUCOMISD, x86asm.VUCOMISS, x86asm.VUCOMISH, x86asm.VPTEST,
		x86asm.VTESTPD, x86asm.VTESTPS, x86asm.VPCMPESTRI,
		x86asm.VPCMPESTRI64, x86asm.VPCMPESTRM, x86asm.VPCMPESTRM64,
		x86asm.VPCMPISTRI, x86asm.VPCMPISTRI64, x86asm.VPCMPISTRM,
		x86asm.KORTESTB, x86asm.KORTESTW, x86asm.KORTESTD, x86asm.KORTESTQ,
		x86asm.KTESTB, x86asm.KTESTW, x86asm.KTESTD, x86asm.KTESTQ,
	)
	setFlags(0, ZF, x86asm.CMPXCHG8B, x86asm.CMPXCHG16B, x86asm.LAR,
		x86asm.LSL, x86asm.VERR, x86asm.VERW)
	setFlags(0, Status&^CF, x86asm.INC, x86asm.DEC)
	// bt*: CF is the bit, ZF is unchanged, the rest undefined.
	setFlags(0, Status&^ZF, x86asm.BT, x86asm.BTS, x86asm.BTR, x86asm.BTC)
	setFlags(CF, Status, x86asm.ADC, x86asm.SBB)
	// Shifts and rotates: the entries mark them known; shiftFlags works
	// out the effect from the count.
	setFlags(0, Status, x86asm.SHL, x86asm.SHR, x86asm.SAR, x86asm.SHLD,
		x86asm.SHRD)
	setFlags(0, CF|OF, x86asm.ROL, x86asm.ROR)
	setFlags(CF, CF|OF, x86asm.RCL, x86asm.RCR)

	// Condition readers [Intel SDM Vol.1 App. B, condition codes].
	for _, c := range []struct {
		f   Flags
		ops []x86asm.Op
	}{
		{OF, []x86asm.Op{x86asm.JO, x86asm.JNO, x86asm.SETO, x86asm.SETNO, x86asm.CMOVO, x86asm.CMOVNO}},
		{CF, []x86asm.Op{x86asm.JB, x86asm.JAE, x86asm.SETB, x86asm.SETAE, x86asm.CMOVB, x86asm.CMOVAE, x86asm.FCMOVB, x86asm.FCMOVNB}},
		{ZF, []x86asm.Op{x86asm.JE, x86asm.JNE, x86asm.SETE, x86asm.SETNE, x86asm.CMOVE, x86asm.CMOVNE, x86asm.FCMOVE, x86asm.FCMOVNE, x86asm.LOOPE, x86asm.LOOPNE}},
		{CF | ZF, []x86asm.Op{x86asm.JBE, x86asm.JA, x86asm.SETBE, x86asm.SETA, x86asm.CMOVBE, x86asm.CMOVA, x86asm.FCMOVBE, x86asm.FCMOVNBE}},
		{SF, []x86asm.Op{x86asm.JS, x86asm.JNS, x86asm.SETS, x86asm.SETNS, x86asm.CMOVS, x86asm.CMOVNS}},
		{PF, []x86asm.Op{x86asm.JP, x86asm.JNP, x86asm.SETP, x86asm.SETNP, x86asm.CMOVP, x86asm.CMOVNP, x86asm.FCMOVU, x86asm.FCMOVNU}},
		{SF | OF, []x86asm.Op{x86asm.JL, x86asm.JGE, x86asm.SETL, x86asm.SETGE, x86asm.CMOVL, x86asm.CMOVGE}},
		{ZF | SF | OF, []x86asm.Op{x86asm.JLE, x86asm.JG, x86asm.SETLE, x86asm.SETG, x86asm.CMOVLE, x86asm.CMOVG}},
	} {
		setFlags(c.f, 0, c.ops...)
	}

	// Explicit flag moves.
	setFlags(AllFlags, 0, x86asm.PUSHF, x86asm.PUSHFQ)
	setFlags(0, AllFlags, x86asm.POPF, x86asm.POPFQ)
	setFlags(SF|ZF|AF|PF|CF, 0, x86asm.LAHF)
	setFlags(0, SF|ZF|AF|PF|CF, x86asm.SAHF)
	setFlags(0, CF, x86asm.STC, x86asm.CLC)
	setFlags(CF, CF, x86asm.CMC)
	setFlags(0, DF, x86asm.STD, x86asm.CLD)

	// String instructions step by DF.
	setFlags(DF, 0,
		x86asm.MOVSB, x86asm.MOVSW, x86asm.MOVSD, x86asm.MOVSQ,
		x86asm.STOSB, x86asm.STOSW, x86asm.STOSD, x86asm.STOSQ,
		x86asm.LODSB, x86asm.LODSW, x86asm.LODSD, x86asm.LODSQ,
		x86asm.INSB, x86asm.INSW, x86asm.INSD,
		x86asm.OUTSB, x86asm.OUTSW, x86asm.OUTSD)
	setFlags(DF, Status,
		x86asm.CMPSB, x86asm.CMPSW, x86asm.CMPSD, x86asm.CMPSQ,
		x86asm.SCASB, x86asm.SCASW, x86asm.SCASD, x86asm.SCASQ)

	// Every AVX/AVX-512/BMI2 instruction not listed above leaves RFLAGS
	// alone: mulx, pdep, pext, rorx, sarx, shlx and shrx are flagless by
	// design, and the vector and mask instructions touch only their
	// registers [Intel SDM Vol.2, "Flags Affected" of each].
	for op := x86asm.XTEST + 1; op <= maxKnownOp; op++ {
		if !flagTable[op].known {
			flagTable[op] = flagEffect{known: true}
		}
	}
}

// flagsOf returns the flags the instruction reads and writes.
func flagsOf(inst *Inst, l *layout) (r, w Flags) {
	switch inst.Kind {
	case Call, CallIndirect:
		// The status flags are not preserved across calls and DF is
		// clear on entry and on return [SysV x86-64 ABI 3.2.1]: the call
		// kills the status flags, and nothing before it is read.
		return 0, Status
	case Ret:
		// Flags are dead at a return: the caller may not rely on them
		// [SysV x86-64 ABI 3.2.1], DESIGN decision 5. DF is clear here
		// by the same rule and blpp's increments never change it.
		return 0, 0
	case Syscall:
		// syscall saves RFLAGS in r11 and Linux returns with it restored
		// (sysret/iret reload the user flags) [Intel SDM Vol.2 SYSCALL,
		// SYSRET]: flags pass through unchanged.
		return 0, 0
	case Halt:
		// A signal handler or debugger may inspect the flags.
		return AllFlags, 0
	}
	switch inst.Op {
	case ENDBR64, ENDBR32, RDSSPD, RDSSPQ, INCSSPD, INCSSPQ, SAVEPREVSSP,
		SETSSBSY, WRSSD, WRSSQ, WRUSSD, WRUSSQ, RDPKRU, WRPKRU, SERIALIZE,
		MONITORX, MWAITX, CLZERO, RDPID, CLFLUSHOPT, CLWB, UMONITOR,
		PTWRITE, CLDEMOTE, EXTRQ, INSERTQ, MOVDIRI, MOVDIR64B:
		return 0, 0
	case RSTORSSP, CLRSSBSY, RDSEED:
		return 0, Status
	case ADCX:
		return CF, CF
	case ADOX:
		return OF, OF
	}
	op := inst.Op
	if op == 0 || op > maxKnownOp || !flagTable[op].known {
		return AllFlags, 0
	}
	e := flagTable[op]
	switch op {
	case x86asm.SHL, x86asm.SHR, x86asm.SAR, x86asm.ROL, x86asm.ROR,
		x86asm.RCL, x86asm.RCR, x86asm.SHLD, x86asm.SHRD:
		return shiftFlags(inst)
	case x86asm.CMPSB, x86asm.CMPSW, x86asm.CMPSD, x86asm.CMPSQ,
		x86asm.SCASB, x86asm.SCASW, x86asm.SCASD, x86asm.SCASQ:
		// With a rep prefix and rcx = 0 nothing executes and the flags
		// stay as they were [Intel SDM Vol.2 REP/REPE/REPNE].
		if l.pfx&(pfxRep|pfxRepne) != 0 {
			return DF, 0
		}
	}
	return e.r, e.w
}

// shiftFlags handles shifts and rotates: a count of zero (after masking
// to 5 or 6 bits) leaves every flag alone, so only an immediate non-zero
// count writes them [Intel SDM Vol.2 SAL/SAR/SHL/SHR, RCL/RCR/ROL/ROR,
// SHLD, SHRD].
func shiftFlags(inst *Inst) (r, w Flags) {
	rotate := false
	switch inst.Op {
	case x86asm.RCL, x86asm.RCR:
		r = CF
		rotate = true
	case x86asm.ROL, x86asm.ROR:
		rotate = true
	}
	// The count is the last argument: an immediate (including the
	// implicit 1 of the d0/d1 forms) or CL.
	var count x86asm.Arg
	for _, a := range inst.Raw.Args {
		if a != nil {
			count = a
		}
	}
	imm, ok := count.(x86asm.Imm)
	if !ok {
		return r, 0 // by %cl: possibly zero
	}
	mask := x86asm.Imm(0x1f)
	if inst.Raw.DataSize == 64 {
		mask = 0x3f
	}
	if imm&mask == 0 {
		return r, 0
	}
	if rotate {
		return r, CF | OF
	}
	return r, Status
}
