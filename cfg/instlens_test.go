package cfg_test

import (
	"os"
	"testing"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
)

// TestInstLens checks the builder's word on each instruction against a
// decoding of its own: for every graph of libc and bash that may be
// instrumented, InstLens holds each block's instructions in the order
// of Blocks, with their decoded lengths, and calls plain exactly those
// x86.Plain calls plain (code generation copies them without decoding
// them again). Graphs whose entry block is not their lowest (moved to
// index 0 by the builder) must be among them: with the lengths left in
// address order, their blocks' lengths are someone else's.
func TestInstLens(t *testing.T) {
	graphs, entryMoved := 0, 0
	for _, path := range []string{"/bin/bash", "/usr/lib/x86_64-linux-gnu/libc.so.6"} {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		b, err := cfg.Load(data)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		p := cfg.Analyze(b, cfg.Options{})
		for _, g := range p.Graphs {
			if g == nil || g.Reason != cfg.ReasonOK {
				continue
			}
			graphs++
			lens := g.InstLens()
			next := 0
			for id := range g.Blocks {
				blk := &g.Blocks[id]
				if id == 0 && len(g.Blocks) > 1 && g.Blocks[1].Addr < blk.Addr {
					entryMoved++
				}
				if next+blk.Insts > len(lens) {
					t.Fatalf("%s: %s: %d lengths for more instructions", path, g.Func.Name, len(lens))
				}
				a := blk.Addr
				for _, l := range lens[next : next+blk.Insts] {
					code := b.Code(a)
					in, err := x86.DecodeInfo(code[:blk.End-a], a)
					if err != nil {
						t.Fatalf("%s: %s: %#x: %v", path, g.Func.Name, a, err)
					}
					if l.Len() != int(in.Len) {
						t.Fatalf("%s: %s: block %#x: length %d at %#x, decoded %d", path, g.Func.Name, blk.Addr, l.Len(), a, in.Len)
					}
					if plain := x86.Plain(code[:blk.End-a]) > 0; l.Plain() && !plain {
						t.Fatalf("%s: %s: %#x called plain, x86.Plain says not", path, g.Func.Name, a)
					} else if plain && !l.Plain() && b.Code(a - 1)[0] != 0xf0 {
						// Not plain where Plain says so is safe (it is
						// decoded); only an instruction a branch reaches
						// past its lock prefix is left out that way.
						t.Errorf("%s: %s: %#x not called plain, x86.Plain says it is", path, g.Func.Name, a)
					}
					a += uint64(l.Len())
				}
				if a != blk.End {
					t.Fatalf("%s: %s: block %#x: lengths end at %#x, the block at %#x", path, g.Func.Name, blk.Addr, a, blk.End)
				}
				next += blk.Insts
			}
			if next != len(lens) {
				t.Fatalf("%s: %s: %d lengths for %d instructions", path, g.Func.Name, len(lens), next)
			}
		}
	}
	if graphs == 0 {
		t.Skip("no /bin/bash or libc.so.6 (Debian packages bash, libc6)")
	}
	if entryMoved == 0 {
		t.Error("no graph whose entry is not its lowest block: the reordering is not checked")
	}
	t.Logf("%d graphs, %d with the entry block moved", graphs, entryMoved)
}
