package x86

import (
	"strconv"

	"golang.org/x/arch/x86/x86asm"
)

// Kind classifies an instruction by how control leaves it.
type Kind uint8

const (
	Other        Kind = iota // falls through to the next instruction
	Call                     // direct call rel32; Target is the callee
	CallIndirect             // call through a register or memory (also far call m16:64)
	Jmp                      // direct jmp rel8/rel32; Target is the destination
	JmpIndirect              // jmp through a register or memory (also far jmp m16:64)
	Jcc                      // conditional direct branch: jcc, loop*, jrcxz/jecxz, xbegin
	Ret                      // ret, ret imm16, far ret, iret
	Halt                     // hlt, ud0/ud1/ud2, int3, int1, int n (n≠0x80): never falls through
	Syscall                  // syscall, sysenter, int 0x80: enters the kernel, falls through
)

var kindNames = [...]string{
	Other:        "other",
	Call:         "call",
	CallIndirect: "call-indirect",
	Jmp:          "jmp",
	JmpIndirect:  "jmp-indirect",
	Jcc:          "jcc",
	Ret:          "ret",
	Halt:         "halt",
	Syscall:      "syscall",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// FallsThrough reports whether execution can continue at the next
// instruction: everything but jmp, ret and the Halt group. A call falls
// through (whether the callee returns is the CFG builder's business).
func (k Kind) FallsThrough() bool {
	switch k {
	case Jmp, JmpIndirect, Ret, Halt:
		return false
	}
	return true
}

// HasTarget reports whether the kind carries a direct Target.
func (k Kind) HasTarget() bool { return k == Call || k == Jmp || k == Jcc }

// kindOf classifies the instruction from its encoding alone, so that the
// result does not depend on x86asm knowing the instruction [Intel SDM
// Vol.2 App. A opcode maps].
func kindOf(l *layout, code []byte) Kind {
	if l.enc != Legacy {
		return Other // no VEX/EVEX/XOP instruction transfers control
	}
	switch l.opMap {
	case map1Byte:
		switch op := l.op; {
		case op >= 0x70 && op <= 0x7f, op >= 0xe0 && op <= 0xe3:
			return Jcc
		case op == 0xe8:
			return Call
		case op == 0xe9 || op == 0xeb:
			return Jmp
		case op == 0xc2 || op == 0xc3 || op == 0xca || op == 0xcb || op == 0xcf:
			return Ret
		case op == 0xcc || op == 0xf1 || op == 0xf4:
			return Halt
		case op == 0xcd:
			// int 0x80 is the i386 system-call gate, still usable from
			// 64-bit code on Linux; other vectors fault (#GP → SIGSEGV)
			// or trap (int $3 → SIGTRAP).
			if code[l.immOff] == 0x80 {
				return Syscall
			}
			return Halt
		case op == 0xc7 && l.modrm == 0xf8:
			return Jcc // xbegin: the abort path is the branch target
		case op == 0xff && l.mod() != 3 || op == 0xff && l.reg() != 3 && l.reg() != 5:
			switch l.reg() {
			case 2, 3:
				return CallIndirect
			case 4, 5:
				return JmpIndirect
			}
		}
	case map0F:
		switch op := l.op; {
		case op >= 0x80 && op <= 0x8f:
			return Jcc
		case op == 0x05 || op == 0x34:
			return Syscall
		case op == 0x07 || op == 0x35:
			return Halt // sysret/sysexit: #GP outside ring 0
		case op == 0x0b || op == 0xb9 || op == 0xff:
			return Halt // ud2, ud1, ud0
		}
	}
	return Other
}

// kindOfOp is the classification implied by x86asm's mnemonic; Decode
// requires it to agree with kindOf. The int-vector split is taken from
// kindOf (x86asm reports INT for both).
func kindOfOp(op x86asm.Op) (Kind, bool) {
	switch op {
	case x86asm.CALL:
		return Call, true // or CallIndirect: checked by the caller
	case x86asm.LCALL:
		return CallIndirect, true
	case x86asm.JMP:
		return Jmp, true // or JmpIndirect
	case x86asm.LJMP:
		return JmpIndirect, true
	case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JE, x86asm.JG,
		x86asm.JGE, x86asm.JL, x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP,
		x86asm.JNS, x86asm.JO, x86asm.JP, x86asm.JS, x86asm.JCXZ, x86asm.JECXZ,
		x86asm.JRCXZ, x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE, x86asm.XBEGIN:
		return Jcc, true
	case x86asm.RET, x86asm.LRET, x86asm.IRET, x86asm.IRETD, x86asm.IRETQ:
		return Ret, true
	case x86asm.HLT, x86asm.UD0, x86asm.UD1, x86asm.UD2, x86asm.ICEBP,
		x86asm.SYSRET, x86asm.SYSEXIT:
		return Halt, true
	case x86asm.INT:
		return Halt, false // Halt or Syscall by vector
	case x86asm.SYSCALL, x86asm.SYSENTER:
		return Syscall, true
	}
	return Other, true
}

// kindAgrees checks x86asm's mnemonic against the encoding-based kind.
func kindAgrees(k Kind, op x86asm.Op) bool {
	want, exact := kindOfOp(op)
	switch {
	case !exact:
		return k == Halt || k == Syscall
	case want == Call:
		return k == Call || k == CallIndirect
	case want == Jmp:
		return k == Jmp || k == JmpIndirect
	}
	return k == want
}
