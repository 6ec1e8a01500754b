package enc

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/blpp/blpp/cfg/x86"

	"golang.org/x/arch/x86/x86asm"
)

// RelocError locates an instruction Relocate refused.
type RelocError struct {
	Addr uint64 // original address of the instruction
	Op   string // its mnemonic
	Err  error  // wraps ErrUnsupported, ErrInconsistent or ErrOperand
}

func (e *RelocError) Error() string {
	return fmt.Sprintf("enc: relocate %s at %#x: %v", e.Op, e.Addr, e.Err)
}

func (e *RelocError) Unwrap() error { return e.Err }

// form is how Relocate moves an instruction.
type form uint8

const (
	formCopy   form = iota // bytes as they are
	formRIP                // bytes with the rip disp32 re-aimed
	formJmp                // jmp rel8/rel32 → e9 rel32
	formCall               // call rel32 → e8 rel32
	formJcc                // jcc rel8/rel32 → 0f 8x rel32
	formXbegin             // xbegin rel32 → c7 f8 rel32
	formLoop               // loop*/jrcxz/jecxz rel8 → trampoline
)

// The trampoline after a rel8-only branch: the original instruction with
// rel8 = 2 jumps over "jmp +5" (eb 05) to "jmp rel32" (e9 rel32); falling
// through takes the jmp +5 past it.
var loopSkip = [...]byte{0xeb, 0x05}

const loopTail = len(loopSkip) + 5

// RelocatedSize is the number of bytes Relocate emits for in: its own
// length for instructions copied as they are, 5 for jmp and call, 6 for
// jcc and xbegin, and in.Len+7 for loop, loope, loopne, jrcxz and jecxz.
// A layout pass can size relocated code with it before any address is
// known. For an instruction Relocate refuses the value is meaningless.
func RelocatedSize(in *x86.Info) int {
	return sizeOf(formOf(in), in.Len)
}

func sizeOf(f form, n int) int {
	switch f {
	case formJmp, formCall:
		return 5
	case formJcc, formXbegin:
		return 6
	case formLoop:
		return n + loopTail
	}
	return n
}

// formOf classifies in from its decoded fields; Relocate checks that the
// bytes agree.
func formOf(in *x86.Info) form {
	switch in.Kind {
	case x86.Jmp:
		return formJmp
	case x86.Call:
		return formCall
	case x86.Jcc:
		switch in.Op {
		case x86asm.XBEGIN:
			return formXbegin
		case x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE, x86asm.JRCXZ, x86asm.JECXZ, x86asm.JCXZ:
			return formLoop
		}
		return formJcc
	}
	if in.RIPRel {
		return formRIP
	}
	return formCopy
}

// Relocate appends to b a copy of the original instruction in, whose
// bytes start code, that behaves the same at its new address.
//
//   - Instructions that do not depend on their address (no direct branch,
//     no rip-relative operand) are copied byte for byte: prefixes such as
//     notrack (3e) on indirect branches, lock and rep stay.
//   - A rip-relative operand (legacy, VEX or EVEX; indirect jmp/call
//     through memory included) is copied with its disp32 re-aimed at
//     in.RIPTarget, counted from the end of the instruction so that an
//     immediate after the displacement is accounted for.
//   - Direct jmp, call, jcc and xbegin are re-encoded in their rel32 form
//     (jmp e9, call e8, jcc 0f 8x, xbegin c7 f8) towards branchTo, which
//     the caller chooses: a Label where the destination was relocated
//     too, the original address otherwise. Their prefixes are dropped:
//     bnd (f2, MPX, which current processors and Linux no longer
//     support), the 2e/3e branch hints, the 66 48 padding of the TLS
//     __tls_get_addr call, which only matters to the linker.
//   - loop, loope, loopne, jrcxz and jecxz have only a rel8 form; the
//     original instruction (prefixes included, since 67 selects %ecx) is
//     kept with rel8 aimed at a trampoline: insn +2; jmp +5; jmp rel32.
//
// A call pushes its new return address, so code that reads its own
// return address sees the relocated one.
//
// Relocate refuses, with a *RelocError and without touching b, an Inst
// that does not match code and 66-prefixed rel8 branches (AMD truncates
// their target to 16 bits [AMD APM Vol.3, Near Branches in 64-Bit Mode]).
// A displacement that ends up out of reach is reported by Finish.
func Relocate(b *Buf, in *x86.Info, code []byte, branchTo Target) error {
	f, err := classify(in, code)
	if err == nil && (f == formJmp || f == formCall || f == formJcc || f == formXbegin || f == formLoop) {
		switch {
		case !branchTo.Valid():
			err = fmt.Errorf("branch target not set: %w", ErrOperand)
		case branchTo.kind == targetLabel && !b.ownsLabel(branchTo.label):
			err = fmt.Errorf("label %d was not made by this Buf: %w", branchTo.label, ErrOperand)
		}
	}
	if err != nil {
		e := &RelocError{Op: "instruction", Err: err}
		if in != nil {
			e.Addr = in.Addr
			if in.Op != 0 {
				e.Op = strings.ToLower(x86.OpString(in.Op))
			}
		}
		return e
	}
	raw := code[:in.Len]
	switch f {
	case formCopy:
		b.emit(raw...)
	case formRIP:
		start := len(b.code)
		b.emit(raw[:in.RIPDispOff]...)
		b.field(AbsTarget(in.RIPTarget), start+in.Len)
		b.emit(raw[in.RIPDispOff+4:]...)
	case formJmp:
		b.JmpRel32(branchTo)
	case formCall:
		b.CallRel32(branchTo)
	case formJcc:
		b.JccRel32(jccCond(raw, in.OpcodeOff), branchTo)
	case formXbegin:
		b.xbeginRel32(branchTo)
	case formLoop:
		b.emit(raw[:in.OpcodeOff+1]...)
		b.emit(byte(len(loopSkip)))
		b.emit(loopSkip[:]...)
		b.JmpRel32(branchTo)
	}
	return nil
}

// CopyPlain appends raw, one original instruction that moves byte for
// byte (x86.Plain gave its length): Relocate's copy form, for callers
// that know the form without a decoding.
func CopyPlain(b *Buf, raw []byte) error {
	if len(raw) < 1 || len(raw) > 15 {
		return &RelocError{Op: "instruction", Err: fmt.Errorf("length %d: %w", len(raw), ErrInconsistent)}
	}
	b.emit(raw...)
	return nil
}

// jccCond extracts the condition from 7x rel8 or 0f 8x rel32.
func jccCond(raw []byte, opOff int) Cond { return Cond(raw[opOff] & 0x0f) }

// classify checks in against code and decides how to move it.
func classify(in *x86.Info, code []byte) (form, error) {
	if in == nil {
		return 0, fmt.Errorf("nil instruction: %w", ErrOperand)
	}
	n := in.Len
	if n < 1 || n > 15 || len(code) < n {
		return 0, fmt.Errorf("length %d with %d bytes: %w", n, len(code), ErrInconsistent)
	}
	raw := code[:n]
	f := formOf(in)
	if in.Kind.HasTarget() {
		if err := checkBranch(in, raw, f); err != nil {
			return 0, err
		}
	} else if in.BranchSize != 0 {
		return 0, fmt.Errorf("%v with a branch field: %w", in.Kind, ErrInconsistent)
	}
	if in.RIPRel {
		if in.Kind.HasTarget() {
			return 0, fmt.Errorf("direct branch with a rip-relative operand: %w", ErrInconsistent)
		}
		off := in.RIPDispOff
		if off < 1 || off+4 > n {
			return 0, fmt.Errorf("rip displacement at %d of %d bytes: %w", off, n, ErrInconsistent)
		}
		disp := int64(int32(binary.LittleEndian.Uint32(raw[off:])))
		if in.Addr+uint64(n)+uint64(disp) != in.RIPTarget {
			return 0, fmt.Errorf("rip target %#x but the bytes say %#x: %w",
				in.RIPTarget, in.Addr+uint64(n)+uint64(disp), ErrInconsistent)
		}
	}
	return f, nil
}

// checkBranch verifies that the opcode bytes are the branch formOf chose
// and that the displacement field gives in.Target.
func checkBranch(in *x86.Info, raw []byte, f form) error {
	n, op, size, off := len(raw), in.OpcodeOff, in.BranchSize, in.BranchOff
	if op < 0 || op >= n || (size != 1 && size != 4) || off < 1 || off+size > n {
		return fmt.Errorf("opcode at %d, branch field %d+%d, %d bytes: %w", op, off, size, n, ErrInconsistent)
	}
	var rel int64
	if size == 1 {
		rel = int64(int8(raw[off]))
	} else {
		rel = int64(int32(binary.LittleEndian.Uint32(raw[off:])))
	}
	if in.Addr+uint64(n)+uint64(rel) != in.Target {
		return fmt.Errorf("target %#x but the bytes say %#x: %w", in.Target, in.Addr+uint64(n)+uint64(rel), ErrInconsistent)
	}
	c := raw[op]
	esc := op >= 1 && raw[op-1] == 0x0f
	var ok bool
	switch f {
	case formJmp:
		ok = !esc && (c == 0xeb && size == 1 || c == 0xe9 && size == 4)
	case formCall:
		ok = !esc && c == 0xe8 && size == 4
	case formJcc:
		ok = !esc && c&0xf0 == 0x70 && size == 1 || esc && c&0xf0 == 0x80 && size == 4
	case formXbegin:
		ok = !esc && c == 0xc7 && op+1 < n && raw[op+1] == 0xf8 && size == 4
	case formLoop:
		ok = !esc && c >= 0xe0 && c <= 0xe3 && size == 1 && off == op+1 && n == off+1
	}
	if !ok {
		return fmt.Errorf("opcode %#02x is not a %v of %d-byte displacement: %w", c, in.Kind, size, ErrInconsistent)
	}
	if size == 1 && opsize16(raw[:op]) {
		return fmt.Errorf("66-prefixed rel8 branch: %w", ErrUnsupported)
	}
	return nil
}

// opsize16 reports whether the prefixes select a 16-bit operand size: a
// 66 prefix not overridden by REX.W (REX is the last byte before the
// opcode when present) [Intel SDM Vol.1 §3.6.1].
func opsize16(pfx []byte) bool {
	has66 := false
	for _, p := range pfx {
		if p == 0x66 {
			has66 = true
		}
	}
	if !has66 {
		return false
	}
	last := pfx[len(pfx)-1]
	return !(last&0xf0 == 0x40 && last&0x08 != 0)
}
