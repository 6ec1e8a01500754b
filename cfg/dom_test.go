package cfg

import (
	"math/rand"
	"testing"
	"time"
)

// Helpers shared by dom_test.go, loops_test.go and liveness_test.go. Their
// names start with "an" (analysis) to stay clear of other tests in the
// package.

// anLargeLimit is how long the tests on 50 000-block graphs let one
// analysis take. The target is 50 ms (the benchmarks measure it); the tests
// only catch blow-ups, and must pass under -race (about ten times slower)
// on a loaded two-core machine.
const anLargeLimit = 3 * time.Second

// anEdge is a hand-written edge; To may be Exit.
type anEdge struct {
	From, To BlockID
}

// anGraph builds a graph of n blocks, 16 bytes each from 0x1000, with the
// given edges in order. Edges to Exit are returns, others branches.
func anGraph(n int, edges ...anEdge) *Graph {
	g := &Graph{Blocks: make([]Block, n)}
	for i := range g.Blocks {
		a := 0x1000 + 16*uint64(i)
		g.Blocks[i].Addr, g.Blocks[i].End, g.Blocks[i].Last, g.Blocks[i].Insts = a, a+16, a+12, 4
	}
	for _, e := range edges {
		k := EdgeBranch
		if e.To == Exit {
			k = EdgeReturn
		}
		g.appendEdge(Edge{From: e.From, To: e.To, Kind: k})
	}
	g.link()
	return g
}

// anRandomGraph returns a random graph of n blocks where each block has
// 0-3 successors (occasionally Exit), anywhere in the graph.
func anRandomGraph(r *rand.Rand, n int) *Graph {
	var es []anEdge
	for b := 0; b < n; b++ {
		k := r.Intn(4)
		if b == 0 && k == 0 {
			k = 1
		}
		for j := 0; j < k; j++ {
			if r.Intn(8) == 0 {
				es = append(es, anEdge{BlockID(b), Exit})
			} else {
				es = append(es, anEdge{BlockID(b), BlockID(r.Intn(n))})
			}
		}
	}
	return anGraph(n, es...)
}

// anReducibleGraph returns a random reducible graph: a random DAG in which
// every block is reachable (each block b > 0 gets a predecessor below it),
// plus backedges u→h to dominators h of u. Adding such an edge leaves the
// dominator tree unchanged (any new path to h passes h first), and removing
// the backedges leaves the DAG, so the graph is reducible [Hecht & Ullman
// 1972]. A few blocks are left unreachable if unreach is set.
func anReducibleGraph(r *rand.Rand, n int, back int, unreach bool) *Graph {
	var es []anEdge
	for b := 1; b < n; b++ {
		if unreach && r.Intn(10) == 0 {
			// An unreachable block: edges out of it, none in from below.
			if b+1 < n {
				es = append(es, anEdge{BlockID(b), BlockID(b + 1 + r.Intn(n-b-1))})
			}
			continue
		}
		es = append(es, anEdge{BlockID(r.Intn(b)), BlockID(b)})
		if r.Intn(3) == 0 {
			es = append(es, anEdge{BlockID(r.Intn(b)), BlockID(b)})
		}
	}
	g := anGraph(n, es...)
	dt := g.DomTree()
	for i := 0; i < back; i++ {
		u := BlockID(r.Intn(n))
		if dt.Idom[u] == NoBlock {
			continue
		}
		// A random dominator of u (u itself included: a self-loop).
		h := u
		for r.Intn(3) != 0 && h != Entry {
			h = dt.Idom[h]
		}
		g.appendEdge(Edge{From: u, To: h, Kind: EdgeBranch})
	}
	for b := range g.Blocks {
		if r.Intn(6) == 0 {
			g.appendEdge(Edge{From: BlockID(b), To: Exit, Kind: EdgeReturn})
		}
	}
	g.link()
	return g
}

// anReach returns the blocks reachable from Entry without entering avoid
// (avoid < 0: none avoided).
func anReach(g *Graph, avoid BlockID) []bool {
	seen := make([]bool, len(g.Blocks))
	if len(g.Blocks) == 0 || avoid == Entry {
		return seen
	}
	stack := []BlockID{Entry}
	seen[Entry] = true
	for len(stack) > 0 {
		b := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range g.Succs(BlockID(b)) {
			s := g.Edges[e].To
			if s < 0 || s == avoid || seen[s] {
				continue
			}
			seen[s] = true
			stack = append(stack, s)
		}
	}
	return seen
}

// anBruteDom returns dom[a][b]: a dominates b, by definition: b is
// reachable, and b is a or removing a makes b unreachable.
func anBruteDom(g *Graph) [][]bool {
	n := len(g.Blocks)
	all := anReach(g, -1)
	dom := make([][]bool, n)
	for a := range dom {
		dom[a] = make([]bool, n)
		if !all[a] {
			continue
		}
		without := anReach(g, BlockID(a))
		for b := range dom[a] {
			dom[a][b] = all[b] && (a == b || !without[b])
		}
	}
	return dom
}

// anBruteIdom derives immediate dominators from the dominance relation:
// the strict dominator of b that every other strict dominator dominates.
func anBruteIdom(g *Graph, dom [][]bool) []BlockID {
	n := len(g.Blocks)
	idom := make([]BlockID, n)
	for b := range idom {
		idom[b] = NoBlock
		if n == 0 || !dom[b][b] {
			continue
		}
		if b == int(Entry) {
			idom[b] = Entry
			continue
		}
		for d := 0; d < n; d++ {
			if d == b || !dom[d][b] {
				continue
			}
			ok := true
			for o := 0; o < n && ok; o++ {
				if o != b && dom[o][b] && !dom[o][d] {
					ok = false
				}
			}
			if ok {
				idom[b] = BlockID(d)
			}
		}
	}
	return idom
}

func TestDominatorsHandMade(t *testing.T) {
	X := NoBlock
	tests := []struct {
		name  string
		n     int
		edges []anEdge
		want  []BlockID
	}{
		{"single", 1, []anEdge{{0, Exit}}, []BlockID{0}},
		{"chain", 3, []anEdge{{0, 1}, {1, 2}, {2, Exit}}, []BlockID{0, 0, 1}},
		{"diamond", 4, []anEdge{{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, Exit}}, []BlockID{0, 0, 0, 0}},
		{"while", 4, []anEdge{{0, 1}, {1, 2}, {2, 1}, {1, 3}, {3, Exit}}, []BlockID{0, 0, 1, 1}},
		{"self loop on entry", 2, []anEdge{{0, 0}, {0, 1}}, []BlockID{0, 0}},
		// entry→a, entry→b, a↔b: neither a nor b dominates the other.
		{"irreducible", 4, []anEdge{{0, 1}, {0, 2}, {1, 2}, {2, 1}, {1, 3}, {2, 3}}, []BlockID{0, 0, 0, 0}},
		{"unreachable", 4, []anEdge{{0, 1}, {2, 1}, {3, 2}, {1, Exit}}, []BlockID{0, 0, X, X}},
		// The example of Cooper-Harvey-Kennedy Figure 4 (nodes 5..1 as
		// 0..4): it needs a second pass to settle.
		{"chk figure 4", 5, []anEdge{{0, 1}, {0, 2}, {1, 3}, {2, 4}, {3, 4}, {4, 3}}, []BlockID{0, 0, 0, 0, 0}},
		// Edges listed so the second pass matters and idoms chain.
		{"nested", 6, []anEdge{{0, 1}, {1, 2}, {2, 3}, {3, 2}, {3, 4}, {4, 1}, {4, 5}, {1, 5}}, []BlockID{0, 0, 1, 2, 3, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := anGraph(tc.n, tc.edges...)
			got := g.Dominators()
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
			dom := anBruteDom(g)
			dt := NewDomTree(got)
			for a := range dom {
				for b := range dom {
					w := dom[a][b]
					if d := Dominates(got, BlockID(a), BlockID(b)); d != w {
						t.Errorf("Dominates(%d, %d) = %v, want %v", a, b, d, w)
					}
					if d := dt.Dominates(BlockID(a), BlockID(b)); d != w {
						t.Errorf("DomTree.Dominates(%d, %d) = %v, want %v", a, b, d, w)
					}
					if d := dt.StrictlyDominates(BlockID(a), BlockID(b)); d != (w && a != b) {
						t.Errorf("StrictlyDominates(%d, %d) = %v", a, b, d)
					}
				}
			}
		})
	}
}

func TestDominatesOutOfRange(t *testing.T) {
	g := anGraph(2, anEdge{0, 1})
	idom := g.Dominators()
	dt := g.DomTree()
	for _, p := range [][2]BlockID{{Exit, 0}, {0, Exit}, {NoBlock, 1}, {0, 2}, {5, 0}} {
		if Dominates(idom, p[0], p[1]) || dt.Dominates(p[0], p[1]) {
			t.Errorf("Dominates(%d, %d) = true", p[0], p[1])
		}
	}
	// A malformed idom with a cycle must not hang.
	if Dominates([]BlockID{0, 2, 1, 1}, 3, 1) || Dominates([]BlockID{0, 2, 1}, 0, 1) {
		t.Error("malformed idom")
	}
	empty := &Graph{}
	if len(empty.Dominators()) != 0 || empty.DomTree().Dominates(0, 0) {
		t.Error("empty graph")
	}
}

func TestDominatorsRandom(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for iter := 0; iter < 400; iter++ {
		n := 1 + r.Intn(30)
		var g *Graph
		if iter%2 == 0 {
			g = anRandomGraph(r, n)
		} else {
			g = anReducibleGraph(r, n, r.Intn(2*n), true)
		}
		dom := anBruteDom(g)
		want := anBruteIdom(g, dom)
		got := g.Dominators()
		for b := range want {
			if got[b] != want[b] {
				t.Fatalf("iter %d: idom[%d] = %d, want %d\ngot  %v\nwant %v", iter, b, got[b], want[b], got, want)
			}
		}
		dt := NewDomTree(got)
		for a := range dom {
			for b := range dom {
				if dt.Dominates(BlockID(a), BlockID(b)) != dom[a][b] || Dominates(got, BlockID(a), BlockID(b)) != dom[a][b] {
					t.Fatalf("iter %d: dominates(%d, %d) wrong, want %v", iter, a, b, dom[a][b])
				}
			}
		}
	}
}

// anLadder returns a chain of n blocks where block b+1 also jumps back to
// block b/2: the DFS and the dominator tree are chains n deep, and half the
// backedges span half the chain.
func anLadder(n int) *Graph {
	es := make([]anEdge, 0, 2*n)
	for b := 0; b+1 < n; b++ {
		es = append(es, anEdge{BlockID(b), BlockID(b + 1)}, anEdge{BlockID(b + 1), BlockID(b / 2)})
	}
	return anGraph(n, append(es, anEdge{BlockID(n - 1), Exit})...)
}

// anChain returns a chain of n blocks with a backedge from the last block
// to the entry and, every 100 blocks, a short backedge and a forward skip:
// deep like a huge straight-line function inside one loop.
func anChain(n int) *Graph {
	es := make([]anEdge, 0, 2*n)
	for b := 0; b+1 < n; b++ {
		es = append(es, anEdge{BlockID(b), BlockID(b + 1)})
		if b%100 == 99 {
			es = append(es, anEdge{BlockID(b), BlockID(b - 50)})
			if b+20 < n {
				es = append(es, anEdge{BlockID(b - 10), BlockID(b + 20)})
			}
		}
	}
	return anGraph(n, append(es, anEdge{BlockID(n - 1), Entry}, anEdge{BlockID(n - 1), Exit})...)
}

// TestDominatorsLarge checks that deep and large graphs need no recursion
// and take little time (the budget is 50 ms for 50 000 blocks; the test
// allows anLargeLimit so that a loaded machine or -race does not make it
// flaky, and logs the time; BenchmarkDominators measures).
//
// The ladder is the Cooper-Harvey-Kennedy worst case: each intersect walks
// a backedge's whole span up the dominator tree, so the time grows with
// n²; it is kept small here and only logged.
func TestDominatorsLarge(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, c := range []struct {
		name  string
		g     *Graph
		limit time.Duration
	}{
		{"chain", anChain(50000), anLargeLimit},
		{"reducible", anReducibleGraph(r, 50000, 20000, false), anLargeLimit},
		{"random", anRandomGraph(r, 50000), anLargeLimit},
		{"ladder", anLadder(5000), anLargeLimit},
	} {
		start := time.Now()
		idom := c.g.Dominators()
		dt := NewDomTree(idom)
		el := time.Since(start)
		t.Logf("%s: %d blocks, %d edges: %v", c.name, len(c.g.Blocks), len(c.g.Edges), el)
		if el > c.limit {
			t.Errorf("%s: took %v", c.name, el)
		}
		// Spot-check against the definition on a few blocks.
		reach := anReach(c.g, -1)
		for i := 0; i < 5; i++ {
			b := BlockID(r.Intn(len(idom)))
			if !reach[b] || b == Entry {
				continue
			}
			d := idom[b]
			if !dt.StrictlyDominates(d, b) || anReach(c.g, d)[b] {
				t.Errorf("%s: idom[%d] = %d does not dominate it", c.name, b, d)
			}
		}
	}
}

func BenchmarkDominators(b *testing.B) {
	g := anReducibleGraph(rand.New(rand.NewSource(3)), 50000, 20000, false)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.Dominators()
	}
}
