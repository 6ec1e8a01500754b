package runtime_test

import (
	"bytes"
	"debug/elf"
	"testing"

	"github.com/blpp/blpp/cfg/ehframe"
	"github.com/blpp/blpp/runtime"
)

// TestImageUnwind checks the runtime's unwind tables (decision 159): every
// function of the image, its C and its stubs, lies inside one FDE, so a
// debugger stopped anywhere in the runtime can unwind out of it; except
// blpp_sigreturn, which neither it nor the byte before it may be inside,
// since unwinders recognise a signal frame by its bytes only where they
// find no FDE for the return address less one.
func TestImageUnwind(t *testing.T) {
	img, err := runtime.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(img.Frame) == 0 {
		t.Fatal("the runtime image has no .eh_frame")
	}
	f, err := ehframe.ParseFrame(img.Frame, img.FrameAddr, ehframe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	covered := func(pc uint64) int {
		n := 0
		for _, e := range f.Entries {
			if e.Begin <= pc && pc < e.End {
				n++
			}
		}
		return n
	}
	ef, err := elf.NewFile(bytes.NewReader(runtime.ImageBytes()))
	if err != nil {
		t.Fatal(err)
	}
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	funcs := 0
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 {
			continue
		}
		funcs++
		if s.Name == "blpp_sigreturn" {
			for _, pc := range []uint64{s.Value - 1, s.Value, s.Value + s.Size - 1} {
				if n := covered(pc); n != 0 {
					t.Errorf("blpp_sigreturn: %#x is inside %d FDEs; the sigreturn bytes must be found with none", pc, n)
				}
			}
			continue
		}
		for _, pc := range []uint64{s.Value, s.Value + s.Size - 1} {
			if n := covered(pc); n != 1 {
				t.Errorf("%s: %#x is inside %d FDEs, want 1", s.Name, pc, n)
			}
		}
	}
	if funcs < 50 {
		t.Errorf("only %d functions in the image's symbol table", funcs)
	}
}
