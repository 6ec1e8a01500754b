package x86

import "golang.org/x/arch/x86/x86asm"

// ArgKind says which of x86asm's operand types an Arg holds.
type ArgKind uint8

const (
	ArgNone ArgKind = iota // no operand (x86asm's nil)
	ArgReg                 // x86asm.Reg
	ArgMem                 // x86asm.Mem
	ArgImm                 // x86asm.Imm
	ArgRel                 // x86asm.Rel
)

// Arg is one of x86asm's operands without the interface: the same
// values in a fixed-size struct with no pointers, so that an Info holds
// its operands without allocating and arrays of Infos cost the garbage
// collector nothing.
type Arg struct {
	Kind ArgKind
	Reg  x86asm.Reg // ArgReg
	// ArgMem: segment override, base and index registers (0: none) and
	// the scale (1, 2, 4 or 8; 0 without an index).
	Segment, Base, Index x86asm.Reg
	Scale                uint8
	// Val is the displacement of an ArgMem, the value of an ArgImm and
	// the displacement of an ArgRel.
	Val int64
}

// argOf converts one of x86asm's operands.
func argOf(a x86asm.Arg) Arg {
	switch a := a.(type) {
	case x86asm.Reg:
		return Arg{Kind: ArgReg, Reg: a}
	case x86asm.Mem:
		return Arg{Kind: ArgMem, Segment: a.Segment, Base: a.Base, Index: a.Index, Scale: a.Scale, Val: a.Disp}
	case x86asm.Imm:
		return Arg{Kind: ArgImm, Val: int64(a)}
	case x86asm.Rel:
		return Arg{Kind: ArgRel, Val: int64(a)}
	}
	return Arg{}
}

// argsOf converts x86asm's operand list (an EVEX comparison into a
// mask register has five: vpcmpb $0,%zmm3,%zmm0,%k5{%k1}).
func argsOf(args *x86asm.Args) (out Args) {
	for i, a := range args {
		out[i] = argOf(a)
	}
	return out
}

// Args is an operand list: x86asm.Args as Arg values.
type Args [len(x86asm.Args{})]Arg

// Mem returns a as x86asm's memory operand (meaningful for ArgMem).
func (a *Arg) Mem() x86asm.Mem {
	return x86asm.Mem{Segment: a.Segment, Base: a.Base, Scale: a.Scale, Index: a.Index, Disp: a.Val}
}

// AsReg returns a's register, and whether a is a register operand.
func (a *Arg) AsReg() (x86asm.Reg, bool) {
	if a.Kind != ArgReg {
		return 0, false
	}
	return a.Reg, true
}

// AsMem returns a as x86asm's memory operand, and whether it is one.
func (a *Arg) AsMem() (x86asm.Mem, bool) {
	if a.Kind != ArgMem {
		return x86asm.Mem{}, false
	}
	return a.Mem(), true
}

// AsImm returns a's immediate, and whether a is an immediate operand.
func (a *Arg) AsImm() (x86asm.Imm, bool) {
	if a.Kind != ArgImm {
		return 0, false
	}
	return x86asm.Imm(a.Val), true
}
