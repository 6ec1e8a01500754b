package enc

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/blpp/blpp/cfg/x86"
)

// CopyDisp32 appends to b a copy of the original instruction in (whose
// bytes start code) with its memory operand's displacement in the 32-bit
// form, so that the caller can fill it: ModRM mod=00 (no displacement) and
// mod=01 (disp8) become mod=10 (disp32) [Intel SDM Vol.2 Table 2-2];
// mod=10 and the base-less SIB form (mod=00, base=101: disp32 alone) keep
// their field. Prefixes, opcode, SIB and any immediate are kept. It
// returns the offset of the disp32 field in b and the original
// displacement. Used to aim a jump table's loads at a copy of the table:
// the caller adds the copy's distance to the displacement.
//
// Only legacy-encoded instructions with a ModRM memory operand that is not
// rip-relative are accepted.
func (b *Buf) CopyDisp32(in *x86.Info, code []byte) (at int, disp int32, err error) {
	fail := func(format string, args ...any) (int, int32, error) {
		op := "instruction"
		if in != nil && in.Op != 0 {
			op = strings.ToLower(x86.OpString(in.Op))
		}
		var addr uint64
		if in != nil {
			addr = in.Addr
		}
		return 0, 0, &RelocError{Addr: addr, Op: op, Err: fmt.Errorf(format+": %w", append(args, ErrOperand)...)}
	}
	if in == nil || in.Len < 1 || in.Len > 15 || len(code) < in.Len {
		return fail("no instruction bytes")
	}
	m := in.ModRMOff
	if in.Encoding != x86.Legacy || m < 0 || m >= in.Len || in.RIPRel || in.Kind.HasTarget() {
		return fail("not a legacy instruction with a memory operand")
	}
	raw := code[:in.Len]
	modrm := raw[m]
	mod, rm := modrm>>6, modrm&7
	if mod == 3 {
		return fail("register operand")
	}
	rest := m + 1 // first byte after ModRM (and SIB)
	noBase := false
	if rm == 4 {
		if rest >= in.Len {
			return fail("truncated SIB")
		}
		noBase = mod == 0 && raw[rest]&7 == 5
		rest++
	}
	var dispLen int
	switch {
	case mod == 0 && noBase, mod == 2:
		dispLen = 4
	case mod == 1:
		dispLen = 1
	case mod == 0 && rm == 5:
		return fail("rip-relative operand")
	}
	if rest+dispLen > in.Len {
		return fail("truncated displacement")
	}
	switch dispLen {
	case 4:
		disp = int32(binary.LittleEndian.Uint32(raw[rest:]))
	case 1:
		disp = int32(int8(raw[rest]))
	}
	b.emit(raw[:m]...)
	if noBase {
		b.emit(modrm)
	} else {
		b.emit(2<<6 | modrm&0x3f)
	}
	b.emit(raw[m+1 : rest]...)
	at = b.Len()
	b.emit32(uint32(disp))
	b.emit(raw[rest+dispLen:]...)
	return at, disp, nil
}
