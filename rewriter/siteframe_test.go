package rewriter_test

import (
	"bytes"
	"debug/elf"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
	"github.com/blpp/blpp/runtime"
)

// TestSiteInFrame: each activation keeps its call site in its own shadow
// frame (decision 158), so no instruction of the new code reads or
// writes Thread.CallSite (%gs:OffCallSite): the calls store their sites
// into the newest frame, entries read the caller's from the frame below
// their own, and exits give nothing back. It decodes every stretch of
// new code the code map lists, in context and flow-only mode, and
// counts the call-site stretches, which must be there. TestCCT's
// qsortcb.c checks that the sites stored this way put the callbacks from
// qsort under the right call site.
func TestSiteInFrame(t *testing.T) {
	orig := fixture.Build(t, filepath.Join("cct", "qsortcb.c"), fixture.Config{CC: "gcc", Opt: "-O2"})
	for _, opts := range []rewriter.Options{{}, {NoContext: true}} {
		var cmap bytes.Buffer
		opts.CodeMap = &cmap
		inst := filepath.Join(t.TempDir(), "prog.blpp")
		rewriteSum(t, orig, inst, opts)
		f, err := elf.Open(inst)
		if err != nil {
			t.Fatal(err)
		}
		sites, insns := 0, 0
		for _, l := range strings.Split(cmap.String(), "\n") {
			fs := strings.Fields(l)
			if len(fs) != 5 || fs[2] == "original" || fs[2] == "relocation" {
				continue
			}
			start, err1 := strconv.ParseUint(fs[0], 16, 64)
			end, err2 := strconv.ParseUint(fs[1], 16, 64)
			if err1 != nil || err2 != nil || end < start {
				t.Fatalf("code map line %q", l)
			}
			code := readAt(t, f, start, end-start)
			if fs[2] == "call_site" {
				sites++
			}
			for off := 0; off < len(code); {
				in, err := x86asm.Decode(code[off:], 64)
				if err != nil {
					break // a stretch may end in data of the encoder's (a table) or padding
				}
				insns++
				for _, a := range in.Args {
					if m, ok := a.(x86asm.Mem); ok && m.Segment == x86asm.GS && m.Base == 0 && m.Index == 0 && m.Disp == runtime.OffCallSite {
						t.Errorf("flow-only %v: %s at %#x in %s (%s) uses Thread.CallSite", opts.NoContext, in, start+uint64(off), fs[4], fs[2])
					}
				}
				off += in.Len
			}
		}
		f.Close()
		if sites == 0 || insns == 0 {
			t.Errorf("flow-only %v: %d call-site stretches, %d instructions decoded", opts.NoContext, sites, insns)
		}
	}
}

// readAt reads size bytes at virtual address addr of f's loaded
// segments.
func readAt(t *testing.T, f *elf.File, addr, size uint64) []byte {
	t.Helper()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && addr >= p.Vaddr && addr+size <= p.Vaddr+p.Filesz {
			b := make([]byte, size)
			if _, err := p.ReadAt(b, int64(addr-p.Vaddr)); err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatalf("%#x+%d is in no loaded segment", addr, size)
	return nil
}
