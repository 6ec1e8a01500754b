package elfw

import (
	"bytes"
	"encoding/binary"

	"golang.org/x/arch/x86/x86asm"
)

// asm assembles the few x86-64 instructions the tests' stubs need, at a
// known virtual address. Encodings from the Intel SDM vol. 2; every stub
// is executed by the tests, and objdump disassembles it.
type asm struct {
	base uint64
	b    []byte
}

func (a *asm) pc() uint64 { return a.base + uint64(len(a.b)) }

func (a *asm) bytes(b ...byte) { a.b = append(a.b, b...) }

// rel32 appends the displacement from the end of a 4-byte field (plus
// trailing immediate bytes) to target.
func (a *asm) rel32(target uint64, trailing int) {
	next := a.pc() + 4 + uint64(trailing)
	a.b = binary.LittleEndian.AppendUint32(a.b, uint32(int32(int64(target-next))))
}

// jmp emits jmp rel32.
func (a *asm) jmp(target uint64) { a.bytes(0xe9); a.rel32(target, 0) }

// jne emits jne rel32.
func (a *asm) jne(target uint64) { a.bytes(0x0f, 0x85); a.rel32(target, 0) }

// loadRAX emits mov addr(%rip),%rax.
func (a *asm) loadRAX(addr uint64) { a.bytes(0x48, 0x8b, 0x05); a.rel32(addr, 0) }

// storeRCX emits mov %rcx,addr(%rip).
func (a *asm) storeRCX(addr uint64) { a.bytes(0x48, 0x89, 0x0d); a.rel32(addr, 0) }

// movabsRCX emits movabs $v,%rcx.
func (a *asm) movabsRCX(v uint64) {
	a.bytes(0x48, 0xb9)
	a.b = binary.LittleEndian.AppendUint64(a.b, v)
}

// cmpRAXRCX emits cmp %rcx,%rax.
func (a *asm) cmpRAXRCX() { a.bytes(0x48, 0x39, 0xc8) }

// testRAX emits test %rax,%rax.
func (a *asm) testRAX() { a.bytes(0x48, 0x85, 0xc0) }

// movEAX, movEDI, movEDX emit mov $v,%eax / %edi / %edx.
func (a *asm) movEAX(v uint32) { a.bytes(0xb8); a.b = binary.LittleEndian.AppendUint32(a.b, v) }
func (a *asm) movEDI(v uint32) { a.bytes(0xbf); a.b = binary.LittleEndian.AppendUint32(a.b, v) }
func (a *asm) movEDX(v uint32) { a.bytes(0xba); a.b = binary.LittleEndian.AppendUint32(a.b, v) }

// leaRSI emits lea addr(%rip),%rsi.
func (a *asm) leaRSI(addr uint64) { a.bytes(0x48, 0x8d, 0x35); a.rel32(addr, 0) }

func (a *asm) syscall() { a.bytes(0x0f, 0x05) }
func (a *asm) ret()     { a.bytes(0xc3) }

var endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}

// movable returns how many leading bytes of code (at least 5) form whole
// instructions that can run at another address unchanged: no branches,
// no rip-relative operands. x86asm v0.32 decodes endbr64 as a bare rep
// prefix, so it is recognised by its bytes.
func movable(code []byte) (int, bool) {
	n := 0
	for n < 5 {
		if bytes.HasPrefix(code[n:], endbr64) {
			n += len(endbr64)
			continue
		}
		inst, err := x86asm.Decode(code[n:], 64)
		if err != nil || inst.Op == 0 || inst.PCRel != 0 {
			return 0, false
		}
		switch inst.Op {
		case x86asm.CALL, x86asm.JMP, x86asm.RET, x86asm.LCALL, x86asm.LJMP, x86asm.LRET,
			x86asm.SYSCALL, x86asm.INT, x86asm.HLT, x86asm.UD2:
			return 0, false
		}
		for _, arg := range inst.Args {
			switch arg := arg.(type) {
			case x86asm.Rel:
				return 0, false
			case x86asm.Mem:
				if arg.Base == x86asm.RIP {
					return 0, false
				}
			}
		}
		n += inst.Len
	}
	return n, true
}
