package cfg

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/blpp/blpp/cfg/x86"
)

// anUseDef is a block's flag summary in a hand-made test.
type anUseDef struct{ use, def x86.Flags }

// anSetFlags sets every block's FlagsUse and FlagsDef.
func anSetFlags(g *Graph, ud ...anUseDef) {
	for b, f := range ud {
		g.Blocks[b].FlagsUse, g.Blocks[b].FlagsDef = f.use, f.def
	}
}

// anRefLiveIn solves liveness the slow way: sweep every block, in index
// order, until a sweep changes nothing.
func anRefLiveIn(g *Graph) []x86.Flags {
	in := make([]x86.Flags, len(g.Blocks))
	for changed := true; changed; {
		changed = false
		for b := range g.Blocks {
			var out x86.Flags
			for _, e := range g.Succs(BlockID(b)) {
				ed := g.Edges[e]
				switch {
				case ed.To >= 0:
					out |= in[ed.To]
				case ed.Kind == EdgeReturn || ed.Kind == EdgeTailCall || ed.Kind == EdgeNoReturn || ed.Kind == EdgeHalt:
				default:
					out |= x86.AllFlags
				}
			}
			nin := g.Blocks[b].FlagsUse | out&^g.Blocks[b].FlagsDef
			if nin != in[b] {
				in[b], changed = nin, true
			}
		}
	}
	return in
}

func TestFlagsLivenessHandMade(t *testing.T) {
	const (
		none   = x86.Flags(0)
		status = x86.Status
		all    = x86.AllFlags
	)
	tests := []struct {
		name  string
		n     int
		edges []anEdge
		flags []anUseDef
		live  []bool // FlagsLive of each edge, in order
	}{
		{
			// cmp in block 0, je at the end of block 1 (after a mov): the
			// edge between them carries ZF. The arms of the je are dead.
			name:  "cmp then jcc",
			n:     4,
			edges: []anEdge{{0, 1}, {1, 2}, {1, 3}, {2, Exit}, {3, Exit}},
			flags: []anUseDef{{none, status}, {x86.ZF, none}, {none, none}, {none, none}},
			live:  []bool{true, false, false, false, false},
		},
		{
			// Block 1 writes every flag before reading any (xor; cld), so
			// nothing is live on the way in, though block 2 reads CF.
			name:  "writes first",
			n:     3,
			edges: []anEdge{{0, 1}, {1, 2}, {1, Exit}, {2, Exit}},
			flags: []anUseDef{{none, status}, {none, all}, {x86.CF, none}},
			live:  []bool{false, true, false, false},
		},
		{
			// A flag read after the loop (jo in block 4) and never written
			// inside it is live all the way round, backedge included; the
			// write in block 0 ends it.
			name:  "live around a loop",
			n:     5,
			edges: []anEdge{{0, 1}, {1, 2}, {2, 3}, {3, 1}, {3, 4}, {4, Exit}},
			flags: []anUseDef{{none, status}, {none, none}, {none, x86.ZF}, {x86.ZF, none}, {x86.OF, none}},
			live:  []bool{true, true, true, true, true, false},
		},
		{
			// adc at the loop header reads the CF set by the shift in
			// block 2: the edges from block 2 round to the header are
			// live, and so is the entry edge (the first iteration reads
			// the CF from before the loop); the edge into block 2 and the
			// loop exit are not.
			name:  "carry around a loop",
			n:     5,
			edges: []anEdge{{0, 1}, {1, 2}, {2, 3}, {3, 1}, {1, 4}, {4, Exit}},
			flags: []anUseDef{{none, none}, {x86.CF, status}, {none, x86.CF}, {none, none}, {none, none}},
			live:  []bool{true, false, true, true, false, false},
		},
		{
			// Every kind of leaving kills the flags; a halting block reads
			// them itself.
			name: "exits",
			n:    5,
			edges: []anEdge{{0, 1}, {0, 2}, {0, 3}, {0, 4}, {1, Exit}, {2, Exit}, {3, Exit},
				{4, Exit}},
			flags: []anUseDef{{none, none}, {none, none}, {none, none}, {none, none}, {all, none}},
			live:  []bool{false, false, false, true, false, false, false, false},
		},
		{
			// DF counts like any flag: a rep movs after std.
			name:  "direction flag",
			n:     3,
			edges: []anEdge{{0, 1}, {1, 2}, {2, Exit}},
			flags: []anUseDef{{none, x86.DF}, {x86.DF, none}, {none, none}},
			live:  []bool{true, false, false},
		},
		{
			// Unreachable code is solved as well.
			name:  "unreachable",
			n:     3,
			edges: []anEdge{{0, Exit}, {1, 2}, {2, Exit}},
			flags: []anUseDef{{none, none}, {none, status}, {x86.SF, none}},
			live:  []bool{false, true, false},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := anGraph(tc.n, tc.edges...)
			anSetFlags(g, tc.flags...)
			if tc.name == "exits" {
				// Return, tail call, no-return call, halt.
				for i, k := range []EdgeKind{EdgeReturn, EdgeTailCall, EdgeNoReturn, EdgeHalt} {
					g.Edges[4+i].Kind = k
				}
			}
			for e := range g.Edges {
				g.Edges[e].FlagsLive = !tc.live[e] // must be overwritten
			}
			g.ComputeFlagsLiveness()
			for e, ed := range g.Edges {
				if ed.FlagsLive != tc.live[e] {
					t.Errorf("edge %d→%d: FlagsLive %v, want %v", ed.From, ed.To, ed.FlagsLive, tc.live[e])
				}
			}
		})
	}
}

// TestFlagsLivenessExactSets checks the flag sets, not just liveness.
func TestFlagsLivenessExactSets(t *testing.T) {
	// 0: cmp → 1: cmovb (CF) → 2: ja (CF, ZF) → 3: ret, or 4: js (SF)
	// after a test.
	g := anGraph(5, anEdge{0, 1}, anEdge{1, 2}, anEdge{2, 3}, anEdge{2, 4}, anEdge{3, Exit}, anEdge{4, Exit})
	anSetFlags(g, anUseDef{0, x86.Status}, anUseDef{x86.CF, 0}, anUseDef{x86.CF | x86.ZF, 0}, anUseDef{}, anUseDef{x86.SF, x86.Status})
	in := g.FlagsLiveIn()
	want := []x86.Flags{0, x86.CF | x86.ZF | x86.SF, x86.CF | x86.ZF | x86.SF, 0, x86.SF}
	for b := range want {
		if in[b] != want[b] {
			t.Errorf("live-in of %d: %v, want %v", b, in[b], want[b])
		}
	}
	if f := g.FlagsLiveOn(in, 0); f != x86.CF|x86.ZF|x86.SF {
		t.Errorf("edge 0→1: %v", f)
	}
	// A malformed edge to Exit of a kind that never leaves keeps all.
	g.Edges[4].Kind = EdgeBranch
	if f := g.FlagsLiveOn(g.FlagsLiveIn(), 4); f != x86.AllFlags {
		t.Errorf("branch to Exit: %v", f)
	}
	empty := &Graph{}
	empty.ComputeFlagsLiveness()
	if len(empty.FlagsLiveIn()) != 0 {
		t.Error("empty graph")
	}
}

// anRandomFlags gives every block a random summary: mostly a little, now
// and then everything.
func anRandomFlags(r *rand.Rand, g *Graph) {
	for b := range g.Blocks {
		pick := func() x86.Flags {
			switch r.Intn(6) {
			case 0:
				return x86.AllFlags
			case 1, 2:
				return 0
			}
			return x86.Flags(1 << r.Intn(7))
		}
		g.Blocks[b].FlagsUse, g.Blocks[b].FlagsDef = pick(), pick()
	}
	kinds := []EdgeKind{EdgeReturn, EdgeTailCall, EdgeNoReturn, EdgeHalt, EdgeCallReturn}
	for e := range g.Edges {
		if g.Edges[e].To == Exit {
			g.Edges[e].Kind = kinds[r.Intn(len(kinds))]
		}
	}
}

func TestFlagsLivenessRandom(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for iter := 0; iter < 2000; iter++ {
		n := 1 + r.Intn(40)
		var g *Graph
		if iter%2 == 0 {
			g = anRandomGraph(r, n)
		} else {
			g = anReducibleGraph(r, n, r.Intn(n+1), true)
		}
		anRandomFlags(r, g)
		want := anRefLiveIn(g)
		got := g.FlagsLiveIn()
		g.ComputeFlagsLiveness()
		for b := range want {
			if got[b] != want[b] {
				t.Fatalf("iter %d: live-in of %d: %v, want %v", iter, b, got[b], want[b])
			}
		}
		for e, ed := range g.Edges {
			w := anRefEdge(want, ed) != 0
			if ed.FlagsLive != w {
				t.Fatalf("iter %d: edge %d (%d→%d %v): FlagsLive %v", iter, e, ed.From, ed.To, ed.Kind, ed.FlagsLive)
			}
		}
	}
}

func anRefEdge(in []x86.Flags, ed Edge) x86.Flags {
	if ed.To >= 0 {
		return in[ed.To]
	}
	if ed.Kind.LeavesProcedure() {
		return 0
	}
	return x86.AllFlags
}

func TestFlagsLivenessLarge(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	for _, c := range []struct {
		name string
		g    *Graph
	}{
		{"chain", anChain(50000)},
		{"reducible", anReducibleGraph(r, 50000, 20000, true)},
		{"dense", anDenseGraph(r, 50000)},
	} {
		anRandomFlags(r, c.g)
		start := time.Now()
		c.g.ComputeFlagsLiveness()
		el := time.Since(start)
		live := 0
		for _, e := range c.g.Edges {
			if e.FlagsLive {
				live++
			}
		}
		t.Logf("%s: %d blocks, %d edges, %d live: %v", c.name, len(c.g.Blocks), len(c.g.Edges), live, el)
		if el > anLargeLimit {
			t.Errorf("%s: took %v", c.name, el)
		}
	}
	// A loop that carries one flag the whole way round, the worst order
	// for a backward sweep: the answer needs every block.
	const n = 50000
	var es []anEdge
	for b := 0; b+1 < n; b++ {
		es = append(es, anEdge{BlockID(b), BlockID(b + 1)})
	}
	g := anGraph(n, append(es, anEdge{n - 1, 1}, anEdge{n - 1, Exit})...)
	g.Blocks[1].FlagsUse = x86.CF
	g.ComputeFlagsLiveness()
	for e, ed := range g.Edges {
		if want := ed.To != Exit; ed.FlagsLive != want {
			t.Fatalf("edge %d: %v", e, ed.FlagsLive)
		}
	}
}

func ExampleGraph_ComputeFlagsLiveness() {
	// 0: cmp %rsi, %rdi   → 1: jl …   → 2: ret / 3: ret
	g := anGraph(4, anEdge{0, 1}, anEdge{1, 2}, anEdge{1, 3}, anEdge{2, Exit}, anEdge{3, Exit})
	g.Blocks[0].FlagsDef = x86.Status
	g.Blocks[1].FlagsUse = x86.SF | x86.OF
	g.ComputeFlagsLiveness()
	for _, e := range g.Edges {
		fmt.Printf("%d→%d live=%v\n", e.From, e.To, e.FlagsLive)
	}
	// Output:
	// 0→1 live=true
	// 1→2 live=false
	// 1→3 live=false
	// 2→-1 live=false
	// 3→-1 live=false
}

// TestGotoFlags checks the flags on computed gotos' edges (decision 169):
// the least fixed point of what their labels read. A label that only
// jumps on makes no flag live by itself; one that reads CF makes CF live
// on every goto.
func TestGotoFlags(t *testing.T) {
	for _, reads := range []x86.Flags{0, x86.CF} {
		// 0: entry, returns or resumes at 1 and 2; 1: jumps on; 2: reads
		// reads, writes the status flags, jumps on.
		g := anGraph(3, anEdge{0, Exit}, anEdge{0, 1}, anEdge{0, 2}, anEdge{1, Exit}, anEdge{2, Exit})
		g.Edges[1].Kind, g.Edges[2].Kind = EdgeResume, EdgeResume
		g.Edges[3].Kind, g.Edges[4].Kind = EdgeGoto, EdgeGoto
		anSetFlags(g, anUseDef{0, x86.Status}, anUseDef{0, 0}, anUseDef{reads, x86.Status})
		g.ComputeFlagsLiveness()
		want := reads != 0
		if g.Edges[3].FlagsLive != want || g.Edges[4].FlagsLive != want {
			t.Errorf("label reads %v: gotos' flags live %v %v, want %v", reads, g.Edges[3].FlagsLive, g.Edges[4].FlagsLive, want)
		}
		if want && g.gotoFlags != reads {
			t.Errorf("label reads %v: gotos carry %v", reads, g.gotoFlags)
		}
	}
}
