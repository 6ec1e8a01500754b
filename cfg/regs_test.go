package cfg

import (
	"os"
	"testing"

	"github.com/blpp/blpp/cfg/x86"

	"golang.org/x/arch/x86/x86asm"
)

// writesRegOne is writesReg as it was before writtenRegs: one family at
// a time. TestWrittenRegs holds the two to the same answers.
func writesRegOne(inst *x86.Info, fam int) bool {
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
	case x86asm.SYSCALL:
		return fam == 0 || fam == 1 || fam == 11
	}
	if r, ok := inst.Args[0].AsReg(); ok && regFamily(r) == fam {
		return true
	}
	return false
}

// TestWrittenRegs compares writesReg and the set writtenRegs returns with
// the one-family rule for every family, -1 (no family) included, over a
// linear sweep of bash's and libc's code.
func TestWrittenRegs(t *testing.T) {
	n := 0
	for _, path := range []string{"/bin/bash", "/usr/lib/x86_64-linux-gnu/libc.so.6"} {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		b, err := Load(data)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, s := range b.sections {
			if !s.Exec || s.data == nil {
				continue
			}
			for off := 0; off < len(s.data); {
				in, err := x86.DecodeInfo(s.data[off:], s.Addr+uint64(off))
				if err != nil {
					off++
					continue
				}
				set, other := writtenRegs(&in)
				for fam := -1; fam < 16; fam++ {
					want := writesRegOne(&in, fam)
					if got := writesReg(&in, fam); got != want {
						t.Fatalf("%s %#x %v: writesReg(%d) = %v, want %v", path, in.Addr, in.Op, fam, got, want)
					}
					if fam >= 0 && set.Has(fam) != want || fam == -1 && other != want {
						t.Fatalf("%s %#x %v: writtenRegs = %#x, %v; family %d should be %v", path, in.Addr, in.Op, set, other, fam, want)
					}
				}
				off += in.Len
				n++
			}
		}
	}
	if n == 0 {
		t.Skip("no /bin/bash or libc.so.6 (Debian packages bash, libc6)")
	}
}
