package cfg_test

import (
	"testing"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestLockSkipGraph checks the graph of testdata/lockskip.c's
// decrement, whose je lands one byte into `lock decl`: the prefixed and
// the unprefixed instruction are one-instruction blocks, [A, E) and
// [A+1, E), each falling through to the block at E, and BlockAt finds
// each by its start [decision 67].
func TestLockSkipGraph(t *testing.T) {
	for _, c := range []fixture.Config{{CC: "gcc", Opt: "-O2"}, {CC: "clang", Opt: "-O2", PIE: true}} {
		exe := fixture.Build(t, "lockskip.c", c)
		entry := fixture.FuncAddrs(t, exe)["decrement"]
		b, err := cfg.Open(exe)
		if err != nil {
			t.Fatal(err)
		}
		p := cfg.Analyze(b, cfg.Options{Match: func(f *cfg.Function) bool { return f.Addr == entry }})
		var g *cfg.Graph
		for i, f := range p.Funcs {
			if f.Addr == entry {
				g = p.Graphs[i]
			}
		}
		if g == nil || !g.Instrumentable() {
			t.Fatalf("lockskip.c %s: decrement not instrumentable: %+v", c, g)
		}
		pairs := 0
		for i, x := range g.Blocks {
			code := b.Code(x.Addr)
			if len(code) == 0 || code[0] != 0xf0 || x.Insts != 1 {
				continue
			}
			y, ok := g.BlockAt(x.Addr + 1)
			if !ok || g.Blocks[y].Addr != x.Addr+1 || g.Blocks[y].End != x.End || g.Blocks[y].Insts != 1 {
				t.Errorf("lockskip.c %s: no block of one instruction at %#x ending at %#x", c, x.Addr+1, x.End)
				continue
			}
			if id, _ := g.BlockAt(x.Addr); int(id) != i {
				t.Errorf("lockskip.c %s: BlockAt(%#x) = %d, want %d", c, x.Addr, id, i)
			}
			for _, id := range []cfg.BlockID{cfg.BlockID(i), y} {
				s := g.Succs(id)
				if len(s) != 1 || g.Edges[s[0]].Kind != cfg.EdgeFallThrough || g.Edges[s[0]].To < 0 || g.Blocks[g.Edges[s[0]].To].Addr != x.End {
					t.Errorf("lockskip.c %s: block %#x does not fall through to %#x only", c, g.Blocks[id].Addr, x.End)
				}
			}
			pairs++
		}
		if pairs != 1 {
			t.Errorf("lockskip.c %s: %d lock-prefixed blocks with a twin, want 1", c, pairs)
		}
	}
}
