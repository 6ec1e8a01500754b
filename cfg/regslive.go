package cfg

import (
	"github.com/blpp/blpp/cfg/x86"

	"golang.org/x/arch/x86/x86asm"
)

// General-register liveness, so that instrumentation can use a register
// the code after it surely overwrites instead of saving one on the stack
// [decision 43].
//
// The analysis is deliberately one-sided: it may call a dead register
// live (costing a push and a pop), never a live one dead. So:
//
//   - Only the instructions regUses knows in full (integer moves and
//     arithmetic with explicit operands, scalar SSE) are modelled; any
//     other reads every register.
//   - A call, a return, an indirect jump, a system call, a trap and every
//     edge to Exit read every register: no calling convention is assumed
//     (hand-written code passes values in any register, TLS descriptor
//     calls preserve all of them, retpoline thunks read %r11).
//   - Only full writes define: a 32- or 64-bit destination (a 32-bit
//     write zeroes the upper half [Intel SDM Vol.1 3.4.1.1]); an 8- or
//     16-bit write merges and so also reads.
//
// A register is thus dead at a point only when every path from there
// overwrites it within the function before any call, return or unknown
// instruction.

// RegSet is a set of general registers by family: bit i is rax (0), rcx,
// rdx, rbx, rsp, rbp, rsi, rdi, r8 ... r15 (15), at any width.
type RegSet uint16

// AllRegs is every general register.
const AllRegs RegSet = 0xffff

// Has reports whether family r (0..15) is in s.
func (s RegSet) Has(r int) bool { return s&(1<<r) != 0 }

// instRegs returns the registers in reads and those it surely writes in
// full. Unknown instructions read every register and write none.
func instRegs(in *x86.Info) (use, def RegSet) {
	if in.Endbr {
		return 0, 0 // an instruction of this package's (ENDBR64); it touches no register
	}
	if !in.FromX86asm() {
		return AllRegs, 0
	}
	switch in.Kind {
	case x86.Jmp:
		return 0, 0
	case x86.Jcc:
		switch in.Op {
		case x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE, x86asm.JRCXZ, x86asm.JECXZ, x86asm.JCXZ:
			return 1 << 1, 0 // rcx
		case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JE, x86asm.JG, x86asm.JGE,
			x86asm.JL, x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP, x86asm.JNS, x86asm.JO,
			x86asm.JP, x86asm.JS:
			return 0, 0
		}
		return AllRegs, 0
	case x86.Other:
	default:
		return AllRegs, 0
	}
	// A rep prefix only matters on string instructions, which are not
	// modelled below (on scalar SSE f2/f3 select the instruction).
	if in.Lock {
		return AllRegs, 0
	}
	args := in.Args[:0]
	for _, a := range in.Args {
		if a.Kind == x86.ArgNone {
			break
		}
		args = args[:len(args)+1]
	}
	// The registers every operand reads: register operands and the
	// address registers of memory operands.
	reads := func(from int) RegSet {
		var s RegSet
		for i := range args[from:] {
			s |= argReads(&args[from+i])
		}
		return s
	}
	switch in.Op {
	case x86asm.NOP:
		return 0, 0
	case x86asm.MOV, x86asm.MOVZX, x86asm.MOVSX, x86asm.MOVSXD, x86asm.LEA:
		// Write-only destination.
		if len(args) != 2 {
			return AllRegs, 0
		}
		use = reads(1)
		if in.Op == x86asm.LEA {
			use = memRegs(&args[1])
		}
		u, d := destRegs(&args[0], false)
		return use | u, d
	case x86asm.ADD, x86asm.SUB, x86asm.AND, x86asm.OR, x86asm.XOR, x86asm.ADC, x86asm.SBB,
		x86asm.SHL, x86asm.SHR, x86asm.SAR, x86asm.ROL, x86asm.ROR,
		x86asm.CMOVA, x86asm.CMOVAE, x86asm.CMOVB, x86asm.CMOVBE, x86asm.CMOVE, x86asm.CMOVG,
		x86asm.CMOVGE, x86asm.CMOVL, x86asm.CMOVLE, x86asm.CMOVNE, x86asm.CMOVNO, x86asm.CMOVNP,
		x86asm.CMOVNS, x86asm.CMOVO, x86asm.CMOVP, x86asm.CMOVS:
		if len(args) != 2 {
			return AllRegs, 0
		}
		// xor/sub of a register with itself: the result does not
		// depend on it (the zeroing idiom).
		if args[0].Kind == x86.ArgReg && (in.Op == x86asm.XOR || in.Op == x86asm.SUB) && args[1] == args[0] {
			return destRegs(&args[0], false)
		}
		u, d := destRegs(&args[0], true)
		return reads(1) | u, d
	case x86asm.INC, x86asm.DEC, x86asm.NEG, x86asm.NOT:
		if len(args) != 1 {
			return AllRegs, 0
		}
		return destRegs(&args[0], true)
	case x86asm.IMUL:
		switch len(args) {
		case 2:
			u, d := destRegs(&args[0], true)
			return reads(1) | u, d
		case 3:
			u, d := destRegs(&args[0], false)
			return reads(1) | u, d
		}
		return AllRegs, 0
	case x86asm.CMP, x86asm.TEST, x86asm.BT:
		return reads(0), 0
	case x86asm.SETA, x86asm.SETAE, x86asm.SETB, x86asm.SETBE, x86asm.SETE, x86asm.SETG,
		x86asm.SETGE, x86asm.SETL, x86asm.SETLE, x86asm.SETNE, x86asm.SETNO, x86asm.SETNP,
		x86asm.SETNS, x86asm.SETO, x86asm.SETP, x86asm.SETS:
		if len(args) != 1 {
			return AllRegs, 0
		}
		return destRegs(&args[0], true)
	case x86asm.PUSH:
		return reads(0) | 1<<4, 0
	case x86asm.POP:
		if len(args) != 1 {
			return AllRegs, 0
		}
		u, d := destRegs(&args[0], false)
		return u | 1<<4, d
	case x86asm.MOVSD_XMM, x86asm.MOVSS, x86asm.MOVAPD, x86asm.MOVAPS, x86asm.MOVUPD, x86asm.MOVUPS,
		x86asm.MOVDQA, x86asm.MOVDQU, x86asm.ADDSD, x86asm.ADDSS, x86asm.SUBSD, x86asm.SUBSS,
		x86asm.MULSD, x86asm.MULSS, x86asm.DIVSD, x86asm.DIVSS, x86asm.MAXSD, x86asm.MAXSS,
		x86asm.MINSD, x86asm.MINSS, x86asm.SQRTSD, x86asm.SQRTSS, x86asm.ANDPD, x86asm.ANDPS,
		x86asm.ANDNPD, x86asm.ANDNPS, x86asm.ORPD, x86asm.ORPS, x86asm.XORPD, x86asm.XORPS,
		x86asm.PXOR, x86asm.PAND, x86asm.POR, x86asm.PADDD, x86asm.PADDQ, x86asm.PSUBD,
		x86asm.PSUBQ, x86asm.UCOMISD, x86asm.UCOMISS, x86asm.COMISD, x86asm.COMISS,
		x86asm.CVTSI2SD, x86asm.CVTSI2SS, x86asm.CVTSS2SD, x86asm.CVTSD2SS,
		x86asm.UNPCKLPD, x86asm.UNPCKLPS, x86asm.MOVHPD, x86asm.MOVLPD, x86asm.MOVQ, x86asm.MOVD:
		// No implicit general registers: those named are read (a
		// general-register destination of movq/movd counts as a read,
		// which is safe).
		return reads(0), 0
	}
	return AllRegs, 0
}

// destRegs is what a destination operand reads and writes: a memory
// operand reads its address registers; a 32- or 64-bit register is
// written in full (and read too when rmw); a narrower one is merged, so
// read as well.
func destRegs(a *x86.Arg, rmw bool) (use, def RegSet) {
	switch a.Kind {
	case x86.ArgMem:
		return memRegs(a), 0
	case x86.ArgReg:
		r := a.Reg
		f := regFamily(r)
		if f < 0 {
			return AllRegs, 0
		}
		bit := RegSet(1) << f
		full := (r >= x86asm.EAX && r <= x86asm.R15L) || (r >= x86asm.RAX && r <= x86asm.R15)
		if !full || rmw {
			use = bit
		}
		return use, bit
	}
	return AllRegs, 0
}

// argReads is what reading operand a reads.
func argReads(a *x86.Arg) RegSet {
	switch a.Kind {
	case x86.ArgReg:
		if f := regFamily(a.Reg); f >= 0 {
			return 1 << f
		}
		return 0 // xmm, segment: not general registers
	case x86.ArgMem:
		return memRegs(a)
	case x86.ArgImm, x86.ArgRel:
		return 0
	}
	return AllRegs
}

// memRegs is the address registers of a memory operand.
func memRegs(a *x86.Arg) RegSet {
	if a.Kind != x86.ArgMem {
		return AllRegs
	}
	var s RegSet
	for _, r := range [...]x86asm.Reg{a.Base, a.Index} {
		if r == 0 || r == x86asm.RIP {
			continue
		}
		f := regFamily(r)
		if f < 0 {
			return AllRegs
		}
		s |= 1 << f
	}
	return s
}

// RegsLiveIn solves general-register liveness and returns, for every
// block, the registers that may be read before being written on some
// path from its start (see the rules above). Edges to Exit keep every
// register live.
func (g *Graph) RegsLiveIn() []RegSet {
	n := len(g.Blocks)
	in := make([]RegSet, n)
	t := g.dfs()
	defer t.release()
	post := t.post
	// Blocks the DFS from Entry does not reach (landing pads are roots
	// of their own) keep everything live.
	seen := make([]bool, n)
	for _, b := range post {
		seen[b] = true
	}
	for b := range in {
		if !seen[b] {
			in[b] = AllRegs
		}
	}
	for changed := true; changed; {
		changed = false
		for _, b := range post {
			blk := &g.Blocks[b]
			var out RegSet
			for _, e := range g.Succs(b) {
				if to := g.Edges[e].To; to < 0 {
					out = AllRegs
				} else {
					out |= in[to]
				}
			}
			nin := blk.RegsUse | out&^blk.RegsDef
			if nin != in[b] {
				in[b], changed = nin, true
			}
		}
	}
	return in
}

// implicitRegs are the registers some instructions use without naming
// them: rax, rcx, rdx, rbx (mul, div, cpuid, cmpxchg, rdtsc, loop, xlat,
// shifts by %cl ...), rsp and rbp (push, pop, enter, leave). namedRegs
// counts them as named by every instruction, so that it needs to know
// the few instructions with other implicit registers only.
const implicitRegs RegSet = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5

// namedRegs returns the general registers instruction in may read or
// write by itself, whatever it passes to other code: its operands'
// registers, those of implicitRegs, and every register for an
// instruction it cannot tell (an undecoded one, a string or masked-move
// instruction with %rsi/%rdi, a system call, which clobbers %rcx and
// %r11, or %r8-%r11 for int $0x80). A call or jump names only its
// operand's registers here: what the callee reads is its own business
// (the rewriter keeps to the calling convention's registers for that).
func namedRegs(in *x86.Info) RegSet {
	if in.Endbr {
		return 0
	}
	if !in.FromX86asm() || in.Kind == x86.Syscall {
		return AllRegs
	}
	switch in.Op {
	case x86asm.MOVSB, x86asm.MOVSW, x86asm.MOVSD, x86asm.MOVSQ,
		x86asm.STOSB, x86asm.STOSW, x86asm.STOSD, x86asm.STOSQ,
		x86asm.LODSB, x86asm.LODSW, x86asm.LODSD, x86asm.LODSQ,
		x86asm.CMPSB, x86asm.CMPSW, x86asm.CMPSD, x86asm.CMPSQ,
		x86asm.SCASB, x86asm.SCASW, x86asm.SCASD, x86asm.SCASQ,
		x86asm.INSB, x86asm.INSW, x86asm.INSD, x86asm.OUTSB, x86asm.OUTSW, x86asm.OUTSD,
		x86asm.MASKMOVQ, x86asm.MASKMOVDQU, x86asm.SYSCALL, x86asm.SYSENTER, x86asm.INT:
		return AllRegs
	}
	s := implicitRegs
	for i := range in.Args {
		if in.Args[i].Kind == x86.ArgNone {
			break
		}
		s |= argReads(&in.Args[i])
	}
	return s
}
