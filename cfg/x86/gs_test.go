package x86

import (
	"debug/elf"
	"encoding/hex"
	"math/rand"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// namesGS is what MayNameGS must never deny.
func namesGS(in Inst) bool {
	if in.Raw.Op == x86asm.RDGSBASE || in.Raw.Op == x86asm.WRGSBASE {
		return true
	}
	for _, a := range in.Raw.Args {
		if m, ok := a.(x86asm.Mem); ok && m.Segment == x86asm.GS {
			return true
		}
	}
	return false
}

// TestMayNameGS: every instruction that names %gs, in hand-picked
// encodings, in libc's code and in random bytes, is let through.
func TestMayNameGS(t *testing.T) {
	for _, h := range []string{"65488b042528000000", "f3480faec8", "f3480faed8", "f30faecf", "6548890c2500000000", "c5f8776548ff00"} {
		code, _ := hex.DecodeString(h)
		for off := 0; off < len(code); off++ {
			if in, err := Decode(code[off:], testAddr); err == nil && namesGS(in) && !MayNameGS(code[off:off+in.Len]) {
				t.Errorf("%s at %d: %s names %%gs, MayNameGS says no", h, off, OpString(in.Op))
			}
		}
	}
	if MayNameGS([]byte{0x48, 0x8b, 0x04, 0x24}) {
		t.Errorf("mov (%%rsp),%%rax may name %%gs, says MayNameGS")
	}
	inputs := [][]byte{make([]byte, 1<<16)}
	rand.New(rand.NewSource(2)).Read(inputs[0])
	if f, err := elf.Open("/usr/lib/x86_64-linux-gnu/libc.so.6"); err == nil {
		if s := f.Section(".text"); s != nil {
			if d, err := s.Data(); err == nil {
				inputs = append(inputs, d)
			}
		}
		f.Close()
	}
	seen := 0
	for _, code := range inputs {
		for off := 0; off < len(code); {
			in, err := Decode(code[off:], testAddr)
			if err != nil {
				off++
				continue
			}
			if namesGS(in) {
				seen++
				if !MayNameGS(code[off : off+in.Len]) {
					t.Errorf("%x names %%gs, MayNameGS says no", code[off:off+in.Len])
				}
			}
			off += in.Len
		}
	}
	t.Logf("%d instructions naming %%gs checked", seen)
}
