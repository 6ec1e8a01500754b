package rewriter_test

import (
	"bytes"
	"debug/elf"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
	"github.com/blpp/blpp/runtime"

	"golang.org/x/arch/x86/x86asm"
)

// TestGlobalFunctionIDs rewrites one library with tags 7 and 9 and
// compares the two codes instruction by instruction (decision 81): they
// differ only in function ids, 7<<FidBits|local against 9<<FidBits|local
// for a local id below NFuncs+NDark (immediates, and the displacement of
// the call cache's lea), and in the displacement of the flow-only
// entries' FlatMods load (8*tag), and every instrumented
// function's global id occurs. Tag 0 keeps executables byte for byte as
// they were, which the CLI's byte-identity runs check.
func TestGlobalFunctionIDs(t *testing.T) {
	lib := fixture.Build(t, "modules/rw_lib.c", libCfg)
	modes := append(procModes[:len(procModes):len(procModes)], struct {
		name  string
		opts  rewriter.Options
		flags cct.Flags
	}{"tsc", rewriter.Options{Metrics: []rewriter.Metric{{Name: "tsc", Type: runtime.MetricTypeTSC}}}, 0})
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			code := map[uint32][]byte{}
			var sum *rewriter.Summary
			for _, tag := range []uint32{7, 9} {
				opts := m.opts
				opts.ModuleTag = uint64(tag)
				_, out, s := rewriteLib(t, lib, opts)
				sum = s
				f, err := elf.NewFile(bytes.NewReader(out))
				if err != nil {
					t.Fatal(err)
				}
				if code[tag], err = f.Section(".blpp.text").Data(); err != nil {
					t.Fatal(err)
				}
			}
			a, b := code[7], code[9]
			if len(a) != len(b) {
				t.Fatalf("code of %d and %d bytes", len(a), len(b))
			}
			n := uint64(len(sum.Skipped) + sum.Instrumented)
			local := func(v int64, tag uint32) (uint64, bool) {
				x := uint64(v) - uint64(tag)<<runtime.FidBits
				return x, v >= 0 && x < n
			}
			seen, flats := map[uint64]bool{}, 0
			for off := 0; off < len(a); {
				ia, errA := x86asm.Decode(a[off:], 64)
				ib, errB := x86asm.Decode(b[off:], 64)
				if errA != nil || errB != nil || ia.Len != ib.Len {
					off++ // padding or a jump table: the same bytes in both
					continue
				}
				if !bytes.Equal(a[off:off+ia.Len], b[off:off+ia.Len]) {
					if ia.Op != ib.Op {
						t.Fatalf("%#x: %v and %v", off, ia, ib)
					}
					for i := range ia.Args {
						switch x := ia.Args[i].(type) {
						case x86asm.Imm:
							y, _ := ib.Args[i].(x86asm.Imm)
							la, okA := local(int64(x), 7)
							lb, okB := local(int64(y), 9)
							if x != y && (!okA || !okB || la != lb) {
								t.Errorf("%#x: %v and %v: immediates not function ids of tags 7 and 9", off, ia, ib)
							}
							if x != y {
								seen[la] = true
							}
						case x86asm.Mem:
							// The call cache's hash adds the id as a
							// displacement (lea fid(%rdx),%rax).
							y, _ := ib.Args[i].(x86asm.Mem)
							la, okA := local(x.Disp, 7)
							lb, okB := local(y.Disp, 9)
							x.Disp, y.Disp = 0, 0
							ids := okA && okB && la == lb && ia.Op == x86asm.LEA
							flat := ia.Args[i].(x86asm.Mem).Disp == 8*7 && ib.Args[i].(x86asm.Mem).Disp == 8*9 && m.name == "flow-only"
							if flat {
								flats++
							}
							if x != y || !ids && !flat && ia.Args[i] != ib.Args[i] {
								t.Errorf("%#x: %v and %v: operands differ beyond function ids and the FlatMods load", off, ia, ib)
							}
						default:
							if ia.Args[i] != ib.Args[i] {
								t.Errorf("%#x: %v and %v", off, ia, ib)
							}
						}
					}
				}
				off += ia.Len
			}
			if m.name == "flow-only" && flats == 0 {
				t.Error("no flow-only entry loads its records through FlatMods")
			}
			for i := 0; i < sum.Instrumented; i++ {
				if !seen[uint64(i)] {
					t.Errorf("function %d: its global id %#x never occurs", i, 7<<runtime.FidBits|i)
				}
			}
		})
	}
}
