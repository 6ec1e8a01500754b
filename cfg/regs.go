package cfg

import (
	"github.com/blpp/blpp/cfg/x86"
	"golang.org/x/arch/x86/x86asm"
)

// regFamily maps a general-purpose register of any width to 0..15 (rax=0,
// rcx=1, ..., r15=15), and anything else to -1. Writes to a 32-bit
// register zero the upper half of its 64-bit family [Intel SDM Vol.1
// 3.4.1.1], so for data-flow purposes all widths are one register.
func regFamily(r x86asm.Reg) int {
	switch {
	case r >= x86asm.AL && r <= x86asm.R15B:
		i := int(r - x86asm.AL)
		switch {
		case i < 4:
			return i
		case i < 8: // AH, CH, DH, BH
			return i - 4
		default: // SPB, BPB, SIB, DIB, R8B.. follow in family order
			return i - 4
		}
	case r >= x86asm.AX && r <= x86asm.R15W:
		return int(r - x86asm.AX)
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return int(r - x86asm.EAX)
	case r >= x86asm.RAX && r <= x86asm.R15:
		return int(r - x86asm.RAX)
	}
	return -1
}

// writesReg reports whether inst writes general register family fam (as
// its first, destination operand, or implicitly for the few instructions
// that matter to slicing). Unknown instructions with a register first
// operand are assumed to write it. Family -1 (regFamily's answer for
// any other register) is written where such a register is.
func writesReg(inst *x86.Info, fam int) bool {
	set, other := writtenRegs(inst)
	if fam >= 0 && fam < 16 {
		return set.Has(fam)
	}
	return fam == -1 && other
}

// writtenRegs returns the families writesReg reports for inst, and
// whether it writes a register of no family (an XMM, segment or other
// register as its destination): one decision per instruction for a
// caller that wants them all (the constant data flow).
func writtenRegs(inst *x86.Info) (set RegSet, other bool) {
	const rax, rcx, rdx, r11 = 1 << 0, 1 << 1, 1 << 2, 1 << 11
	add := func(r x86asm.Reg) {
		if f := regFamily(r); f >= 0 {
			set |= 1 << f
		} else {
			other = true
		}
	}
	switch inst.Op {
	case x86asm.CMP, x86asm.TEST, x86asm.PUSH, x86asm.JMP, x86asm.CALL, x86asm.BT,
		x86asm.NOP:
		return 0, false
	case x86asm.CDQE, x86asm.CWDE:
		return rax, false
	case x86asm.CQO, x86asm.CDQ:
		return rax | rdx, false
	case x86asm.XCHG, x86asm.XADD, x86asm.CMPXCHG:
		for i := range inst.Args {
			if r, ok := inst.Args[i].AsReg(); ok {
				add(r)
			}
		}
		if inst.Op == x86asm.CMPXCHG {
			set |= rax
		}
		return set, other
	case x86asm.MUL, x86asm.DIV, x86asm.IDIV:
		return rax | rdx, false
	case x86asm.IMUL:
		if inst.Args[1].Kind == x86.ArgNone {
			return rax | rdx, false
		}
	case x86asm.POP:
		// pop writes its operand and rsp
	case x86asm.SYSCALL:
		return rax | rcx | r11, false
	}
	if r, ok := inst.Args[0].AsReg(); ok {
		add(r)
	}
	return set, other
}
