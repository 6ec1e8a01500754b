package enc

import (
	"bytes"
	"fmt"

	"github.com/blpp/blpp/cfg/x86"
)

// checkRelocated decodes the relocated form of orig (whose bytes are
// origCode) found at the start of out, which is loaded at addr, and
// checks that it does what orig did: the same bytes for instructions that
// do not depend on their address, the same rip-relative target, the same
// kind of branch to want (the relocated destination of orig's branch).
// It returns the number of bytes the relocated form takes.
func checkRelocated(orig *x86.Inst, origCode, out []byte, addr, want uint64) error {
	n := RelocatedSize(&orig.Info)
	if len(out) < n {
		return fmt.Errorf("%d bytes left, relocated form needs %d", len(out), n)
	}
	out = out[:n]
	in, err := x86.Decode(out, addr)
	if err != nil {
		return fmt.Errorf("relocated % x: %v", out, err)
	}
	f := formOf(&orig.Info)
	if f != formLoop && in.Len != n {
		return fmt.Errorf("relocated % x decodes as %d bytes, want %d", out, in.Len, n)
	}
	if in.Op != orig.Op || in.Kind != orig.Kind {
		return fmt.Errorf("relocated %v/%v, original %v/%v", x86.OpString(in.Op), in.Kind, x86.OpString(orig.Op), orig.Kind)
	}
	switch f {
	case formCopy:
		if !bytes.Equal(out, origCode[:orig.Len]) {
			return fmt.Errorf("copy % x differs from % x", out, origCode[:orig.Len])
		}
	case formRIP:
		d := orig.RIPDispOff
		if !in.RIPRel || in.RIPDispOff != d || in.RIPTarget != orig.RIPTarget {
			return fmt.Errorf("rip target %#x (rip %v at %d), want %#x at %d", in.RIPTarget, in.RIPRel, in.RIPDispOff, orig.RIPTarget, d)
		}
		if !bytes.Equal(out[:d], origCode[:d]) || !bytes.Equal(out[d+4:], origCode[d+4:orig.Len]) {
			return fmt.Errorf("% x differs from % x outside the displacement", out, origCode[:orig.Len])
		}
	case formJmp, formCall, formJcc, formXbegin:
		if in.Target != want || in.BranchSize != 4 {
			return fmt.Errorf("branch to %#x (rel%d), want %#x (rel32)", in.Target, in.BranchSize*8, want)
		}
	case formLoop:
		// insn +2; jmp +5; jmp rel32 want
		if in.Len != orig.Len || in.Target != addr+uint64(in.Len)+2 ||
			!bytes.Equal(out[:in.Len-1], origCode[:orig.Len-1]) {
			return fmt.Errorf("trampoline head % x", out[:in.Len])
		}
		skip, err := x86.Decode(out[in.Len:], addr+uint64(in.Len))
		if err != nil || skip.Kind != x86.Jmp || skip.Len != 2 || skip.Target != addr+uint64(n) {
			return fmt.Errorf("trampoline skip % x: %v", out[in.Len:], err)
		}
		far, err := x86.Decode(out[in.Len+2:], addr+uint64(in.Len+2))
		if err != nil || far.Kind != x86.Jmp || far.Len != 5 || far.Target != want {
			return fmt.Errorf("trampoline jump % x to %#x, want %#x: %v", out[in.Len+2:], far.Target, want, err)
		}
	}
	return nil
}
