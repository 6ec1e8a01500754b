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
// operand are assumed to write it.
func writesReg(inst *x86.Info, fam int) bool {
	switch inst.Op {
	case x86asm.CMP, x86asm.TEST, x86asm.PUSH, x86asm.JMP, x86asm.CALL, x86asm.BT,
		x86asm.NOP:
		return false
	case x86asm.CDQE, x86asm.CQO, x86asm.CDQ, x86asm.CWDE:
		return fam == 0 || (fam == 2 && inst.Op != x86asm.CDQE && inst.Op != x86asm.CWDE)
	case x86asm.XCHG, x86asm.XADD, x86asm.CMPXCHG:
		for i := range inst.Args {
			if r, ok := inst.Args[i].AsReg(); ok && regFamily(r) == fam {
				return true
			}
		}
		return inst.Op == x86asm.CMPXCHG && fam == 0
	case x86asm.MUL, x86asm.DIV, x86asm.IDIV:
		return fam == 0 || fam == 2
	case x86asm.IMUL:
		if inst.Args[1].Kind == x86.ArgNone {
			return fam == 0 || fam == 2
		}
	case x86asm.POP:
		// pop writes its operand and rsp
	case x86asm.SYSCALL:
		return fam == 0 || fam == 1 || fam == 11
	}
	if r, ok := inst.Args[0].AsReg(); ok && regFamily(r) == fam {
		return true
	}
	return false
}
