package cfg

import (
	"github.com/blpp/blpp/cfg/x86"

	"golang.org/x/arch/x86/x86asm"
)

// Setjmp without a name. A stripped static binary has no symbol for
// setjmp, so IsReturnsTwiceName cannot see that a call to it returns
// twice: busybox's shell calls _setjmp from its command loop and
// longjmps back on `exit` or an error, and every such return ran on
// with a stale path register (decision 117). What gives setjmp away is
// what it must do: record the point it will return to, its return
// address `mov (%rsp),%reg`, and its caller's stack pointer
// `lea 8(%rsp),%reg`, both before it moves %rsp [glibc
// sysdeps/x86_64/setjmp.S; musl src/setjmp/x86_64/setjmp.s]. Ordinary
// compiled code does not read its own return address. Analyze asks only
// about procedures without a name (sub_<hex>): a named one is what its
// name says (swapcontext does this too, and is not setjmp's kin).

// maxSaveInsts bounds the instructions followed from an entry, and
// maxSaveJumps the direct jumps (_setjmp is `xor %esi,%esi; jmp
// __sigsetjmp`).
const (
	maxSaveInsts = 40
	maxSaveJumps = 2
)

// SavesContext reports whether the code at addr, followed along direct
// jumps in a straight line, reads its return address and computes its
// caller's stack pointer before it changes %rsp, calls or returns.
func SavesContext(b *Binary, addr uint64) bool {
	ret, sp := false, false
	jumps := 0
	for n := 0; n < maxSaveInsts; n++ {
		code := b.Code(addr)
		if len(code) == 0 {
			return false
		}
		in, err := x86.Decode(code, addr)
		if err != nil {
			return false
		}
		switch in.Kind {
		case x86.Jmp:
			if jumps++; jumps > maxSaveJumps {
				return false
			}
			addr = in.Target
			continue
		case x86.Other:
		default:
			return false
		}
		if writesRSP(&in) {
			return false
		}
		if r, ok := in.Raw.Args[1].(x86asm.Mem); ok && isRSPAt(r, 0) && in.Op == x86asm.MOV {
			ret = true
		}
		if r, ok := in.Raw.Args[1].(x86asm.Mem); ok && isRSPAt(r, 8) && in.Op == x86asm.LEA {
			sp = true
		}
		if ret && sp {
			return true
		}
		addr += uint64(in.Len)
	}
	return false
}

// isRSPAt reports the memory operand disp(%rsp) with no index or segment.
func isRSPAt(m x86asm.Mem, disp int64) bool {
	return m.Base == x86asm.RSP && m.Index == 0 && m.Segment == 0 && m.Disp == disp
}

// writesRSP reports an instruction that changes %rsp: push, pop, or any
// write to it as the first operand.
func writesRSP(in *x86.Inst) bool {
	switch in.Op {
	case x86asm.PUSH, x86asm.POP, x86asm.PUSHF, x86asm.POPF, x86asm.PUSHFQ, x86asm.POPFQ, x86asm.ENTER, x86asm.LEAVE:
		return true
	}
	if r, ok := in.Raw.Args[0].(x86asm.Reg); ok && (r == x86asm.RSP || r == x86asm.ESP || r == x86asm.SP) {
		return true
	}
	return false
}
