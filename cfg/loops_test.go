package cfg

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// anWantLoop is an expected loop, with backedges as block pairs.
type anWantLoop struct {
	header  BlockID
	blocks  []BlockID
	entries []BlockID // nil means just the header
	back    []anEdge
	parent  int
}

func TestFindLoopsHandMade(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		edges []anEdge
		want  []anWantLoop
		depth []int // LoopDepth of each block
	}{
		{
			name:  "no loop",
			n:     4,
			edges: []anEdge{{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, Exit}},
			depth: []int{0, 0, 0, 0},
		},
		{
			// while (c) body;
			name:  "while",
			n:     4,
			edges: []anEdge{{0, 1}, {1, 2}, {2, 1}, {1, 3}, {3, Exit}},
			want:  []anWantLoop{{header: 1, blocks: []BlockID{1, 2}, back: []anEdge{{2, 1}}, parent: -1}},
			depth: []int{0, 1, 1, 0},
		},
		{
			// do body while (c);  — the header is the body, entered by fall-through.
			name:  "do-while",
			n:     3,
			edges: []anEdge{{0, 1}, {1, 1}, {1, 2}, {2, Exit}},
			want:  []anWantLoop{{header: 1, blocks: []BlockID{1}, back: []anEdge{{1, 1}}, parent: -1}},
			depth: []int{0, 1, 0},
		},
		{
			name:  "two sequential loops",
			n:     7,
			edges: []anEdge{{0, 1}, {1, 2}, {2, 1}, {1, 3}, {3, 4}, {4, 5}, {5, 3}, {3, 6}, {6, Exit}},
			want: []anWantLoop{
				{header: 1, blocks: []BlockID{1, 2}, back: []anEdge{{2, 1}}, parent: -1},
				{header: 3, blocks: []BlockID{3, 4, 5}, back: []anEdge{{5, 3}}, parent: -1},
			},
			depth: []int{0, 1, 1, 1, 1, 1, 0},
		},
		{
			name: "triple nesting",
			n:    8,
			edges: []anEdge{{0, 1}, {1, 2}, {1, 7}, {2, 3}, {3, 4}, {4, 3}, {4, 5}, {5, 2},
				{5, 6}, {6, 1}, {7, Exit}},
			want: []anWantLoop{
				{header: 1, blocks: []BlockID{1, 2, 3, 4, 5, 6}, back: []anEdge{{6, 1}}, parent: -1},
				{header: 2, blocks: []BlockID{2, 3, 4, 5}, back: []anEdge{{5, 2}}, parent: 0},
				{header: 3, blocks: []BlockID{3, 4}, back: []anEdge{{4, 3}}, parent: 1},
			},
			depth: []int{0, 1, 2, 3, 3, 2, 1, 0},
		},
		{
			// for (...) { if (c) continue; ... }: two backedges, one loop.
			name:  "continue",
			n:     6,
			edges: []anEdge{{0, 1}, {1, 2}, {1, 5}, {2, 3}, {2, 1}, {3, 4}, {4, 1}, {5, Exit}},
			want:  []anWantLoop{{header: 1, blocks: []BlockID{1, 2, 3, 4}, back: []anEdge{{2, 1}, {4, 1}}, parent: -1}},
			depth: []int{0, 1, 1, 1, 1, 0},
		},
		{
			// A loop left by its test, a break and an early return.
			name: "multiple exits",
			n:    6,
			edges: []anEdge{{0, 1}, {1, 2}, {1, 4}, {2, 3}, {2, Exit}, {3, 1}, {3, 5},
				{4, Exit}, {5, Exit}},
			want:  []anWantLoop{{header: 1, blocks: []BlockID{1, 2, 3}, back: []anEdge{{3, 1}}, parent: -1}},
			depth: []int{0, 1, 1, 1, 0, 0},
		},
		{
			name:  "self loop on entry",
			n:     2,
			edges: []anEdge{{0, 0}, {0, 1}, {1, Exit}},
			want:  []anWantLoop{{header: 0, blocks: []BlockID{0}, back: []anEdge{{0, 0}}, parent: -1}},
			depth: []int{1, 0},
		},
		{
			// The whole function is a loop back to its first block.
			name:  "entry is header",
			n:     3,
			edges: []anEdge{{0, 1}, {1, 2}, {2, 0}, {2, Exit}},
			want:  []anWantLoop{{header: 0, blocks: []BlockID{0, 1, 2}, back: []anEdge{{2, 0}}, parent: -1}},
			depth: []int{1, 1, 1},
		},
		{
			// entry→a, entry→b, a→b, b→a [Aho et al. Fig. 9.45].
			name:  "classic irreducible",
			n:     4,
			edges: []anEdge{{0, 1}, {0, 2}, {1, 2}, {2, 1}, {1, 3}, {3, Exit}},
			want: []anWantLoop{{header: 1, blocks: []BlockID{1, 2}, entries: []BlockID{1, 2},
				back: []anEdge{{1, 2}, {2, 1}}, parent: -1}},
			depth: []int{0, 1, 1, 0},
		},
		{
			// The DFS meets b first, so b is the header.
			name:  "classic irreducible, other order",
			n:     4,
			edges: []anEdge{{0, 2}, {0, 1}, {1, 2}, {2, 1}, {1, 3}, {3, Exit}},
			want: []anWantLoop{{header: 2, blocks: []BlockID{1, 2}, entries: []BlockID{1, 2},
				back: []anEdge{{1, 2}, {2, 1}}, parent: -1}},
			depth: []int{0, 1, 1, 0},
		},
		{
			// A natural loop 1..4 whose body holds the irreducible {2,3}.
			name: "irreducible in natural",
			n:    6,
			edges: []anEdge{{0, 1}, {1, 2}, {1, 3}, {2, 3}, {3, 2}, {2, 4}, {3, 4}, {4, 1},
				{4, 5}, {5, Exit}},
			want: []anWantLoop{
				{header: 1, blocks: []BlockID{1, 2, 3, 4}, back: []anEdge{{4, 1}}, parent: -1},
				{header: 2, blocks: []BlockID{2, 3}, entries: []BlockID{2, 3}, back: []anEdge{{2, 3}, {3, 2}}, parent: 0},
			},
			depth: []int{0, 1, 2, 2, 1, 0},
		},
		{
			// The irreducible region {1,2,3,4} (entries 1 and 2) holds the
			// natural loop {3,4}. Its backedge 4→2 is a DFS tree edge: it
			// enters the region's second entry.
			name: "natural in irreducible",
			n:    6,
			edges: []anEdge{{0, 1}, {0, 2}, {1, 3}, {3, 4}, {4, 3}, {4, 2}, {2, 1}, {2, 5},
				{5, Exit}},
			want: []anWantLoop{
				{header: 1, blocks: []BlockID{1, 2, 3, 4}, entries: []BlockID{1, 2},
					back: []anEdge{{4, 2}, {2, 1}}, parent: -1},
				{header: 3, blocks: []BlockID{3, 4}, back: []anEdge{{4, 3}}, parent: 0},
			},
			depth: []int{0, 1, 1, 2, 2, 0},
		},
		{
			// The retreating edge 4→2 goes to a block that is no entry of
			// the outer region {1,2,3,4} (entries 1 and 3): it belongs to
			// the inner region {2,3,4}, entered at 2 and 3.
			name: "irreducible in irreducible",
			n:    6,
			edges: []anEdge{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 2}, {4, 1}, {0, 5}, {5, 3},
				{4, Exit}},
			want: []anWantLoop{
				{header: 1, blocks: []BlockID{1, 2, 3, 4}, entries: []BlockID{1, 3},
					back: []anEdge{{2, 3}, {4, 1}}, parent: -1},
				{header: 2, blocks: []BlockID{2, 3, 4}, entries: []BlockID{2, 3},
					back: []anEdge{{2, 3}, {4, 2}}, parent: 0},
			},
			depth: []int{0, 1, 2, 2, 2, 0},
		},
		{
			// A header with a self-loop that also heads an irreducible
			// region: the self-loop is one of the region's backedges.
			name:  "self loop on irreducible header",
			n:     3,
			edges: []anEdge{{0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 1}, {2, Exit}},
			want: []anWantLoop{{header: 1, blocks: []BlockID{1, 2}, entries: []BlockID{1, 2},
				back: []anEdge{{1, 1}, {1, 2}, {2, 1}}, parent: -1}},
			depth: []int{0, 1, 1},
		},
		{
			// Code that cannot be reached is in no loop, and an edge from it
			// does not make a second entry.
			name:  "unreachable",
			n:     6,
			edges: []anEdge{{0, 1}, {1, 2}, {2, 1}, {2, Exit}, {3, 4}, {4, 3}, {5, 2}},
			want:  []anWantLoop{{header: 1, blocks: []BlockID{1, 2}, back: []anEdge{{2, 1}}, parent: -1}},
			depth: []int{0, 1, 1, 0, 0, 0},
		},
		{
			// Siblings inside one loop, listed by header although the DFS
			// finds the one at 4 first.
			name: "siblings",
			n:    7,
			edges: []anEdge{{0, 1}, {1, 4}, {4, 5}, {5, 4}, {5, 6}, {1, 2}, {2, 3},
				{3, 2}, {3, 6}, {6, 1}, {6, Exit}},
			want: []anWantLoop{
				{header: 1, blocks: []BlockID{1, 2, 3, 4, 5, 6}, back: []anEdge{{6, 1}}, parent: -1},
				{header: 2, blocks: []BlockID{2, 3}, back: []anEdge{{3, 2}}, parent: 0},
				{header: 4, blocks: []BlockID{4, 5}, back: []anEdge{{5, 4}}, parent: 0},
			},
			depth: []int{0, 1, 2, 2, 2, 2, 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := anGraph(tc.n, tc.edges...)
			g.FindLoops()
			if len(g.Loops) != len(tc.want) {
				t.Fatalf("got %d loops, want %d:\n%s", len(g.Loops), len(tc.want), anShowLoops(g))
			}
			for i, w := range tc.want {
				l := g.Loops[i]
				entries := w.entries
				if entries == nil {
					entries = []BlockID{w.header}
				}
				var back []anEdge
				for _, e := range l.Backedges {
					back = append(back, anEdge{g.Edges[e].From, g.Edges[e].To})
				}
				depth := 1
				if w.parent >= 0 {
					depth = g.Loops[w.parent].Depth + 1
				}
				if l.Header != w.header || !slices.Equal(l.Blocks, w.blocks) ||
					!slices.Equal(l.Entries, entries) || !slices.Equal(back, w.back) ||
					l.Parent != w.parent || l.Depth != depth || l.Irreducible != (len(entries) > 1) {
					t.Errorf("loop %d: got\n%s\nwant %+v", i, anShowLoops(g), w)
				}
			}
			for b, d := range tc.depth {
				if g.Blocks[b].LoopDepth != d {
					t.Errorf("LoopDepth of block %d = %d, want %d", b, g.Blocks[b].LoopDepth, d)
				}
			}
			anCheckLoops(t, g)
		})
	}
}

func TestFindLoopsReset(t *testing.T) {
	g := anGraph(3, anEdge{0, 1}, anEdge{1, 1}, anEdge{1, 2})
	g.FindLoops()
	first := anShowLoops(g)
	g.FindLoops()
	if again := anShowLoops(g); again != first || g.Blocks[1].LoopDepth != 1 {
		t.Errorf("second run differs:\n%s\nthen\n%s", first, again)
	}
	// Stale results are cleared when the loop goes away: the self-loop
	// edge (1, 1) is taken out.
	g.Edges = slices.DeleteFunc(g.Edges, func(e Edge) bool { return e.From == 1 && e.To == 1 })
	g.link()
	g.FindLoops()
	if len(g.Loops) != 0 || g.Blocks[1].LoopDepth != 0 {
		t.Errorf("stale loops: %s", anShowLoops(g))
	}
	empty := &Graph{}
	empty.FindLoops()
	if empty.Loops != nil {
		t.Error("loops in an empty graph")
	}
}

func anShowLoops(g *Graph) string {
	s := ""
	for i, l := range g.Loops {
		var back []string
		for _, e := range l.Backedges {
			back = append(back, fmt.Sprintf("%d→%d", g.Edges[e].From, g.Edges[e].To))
		}
		s += fmt.Sprintf("  %d: header %d blocks %v entries %v back %v parent %d depth %d irr %v\n",
			i, l.Header, l.Blocks, l.Entries, back, l.Parent, l.Depth, l.Irreducible)
	}
	return s
}

// anDFS is a plain recursive depth-first search from Entry, written apart
// from dfs() in dom.go, that visits successors in Succs order. It returns
// preorder numbers (-1 if unreached) and the retreating edges: those u→v
// met while v is still on the stack (v is u or an ancestor of u).
func anDFS(g *Graph) (pre []int, retreating []EdgeID) {
	pre = make([]int, len(g.Blocks))
	for i := range pre {
		pre[i] = -1
	}
	onStack := make([]bool, len(g.Blocks))
	n := 0
	var visit func(b BlockID)
	visit = func(b BlockID) {
		pre[b] = n
		n++
		onStack[b] = true
		for _, e := range g.Succs(BlockID(b)) {
			s := g.Edges[e].To
			switch {
			case s < 0:
			case pre[s] < 0:
				visit(s)
			case onStack[s]:
				retreating = append(retreating, e)
			}
		}
		onStack[b] = false
	}
	if len(g.Blocks) > 0 {
		visit(Entry)
	}
	return pre, retreating
}

// anCheckLoops checks the laws every loop forest obeys.
func anCheckLoops(t *testing.T, g *Graph) {
	t.Helper()
	pre, retreating := anDFS(g)
	dt := g.DomTree()
	in := make([][]bool, len(g.Loops))
	for i, l := range g.Loops {
		in[i] = make([]bool, len(g.Blocks))
		for _, b := range l.Blocks {
			in[i][b] = true
		}
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\n%s", append(args, anShowLoops(g))...)
	}
	for i, l := range g.Loops {
		if len(l.Blocks) == 0 || !slices.IsSorted(l.Blocks) || len(slices.Compact(slices.Clone(l.Blocks))) != len(l.Blocks) {
			fail("loop %d: blocks not sorted and unique", i)
		}
		for _, b := range l.Blocks {
			if pre[b] < 0 {
				fail("loop %d: unreached block %d", i, b)
			}
		}
		// Strongly connected inside the loop: the header reaches every
		// block and every block reaches the header, along edges of the
		// loop; and there is at least one edge (a single block needs a
		// self-loop).
		for _, forward := range []bool{true, false} {
			seen := map[BlockID]bool{l.Header: true}
			stack := []BlockID{l.Header}
			for len(stack) > 0 {
				b := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				es := g.Succs(BlockID(b))
				if !forward {
					es = g.Preds(BlockID(b))
				}
				for _, e := range es {
					o := g.Edges[e].To
					if !forward {
						o = g.Edges[e].From
					}
					if o >= 0 && in[i][o] && !seen[o] {
						seen[o] = true
						stack = append(stack, o)
					}
				}
			}
			if len(seen) != len(l.Blocks) {
				fail("loop %d: not strongly connected (forward=%v)", i, forward)
			}
		}
		hasEdge := false
		for _, b := range l.Blocks {
			for _, e := range g.Succs(BlockID(b)) {
				if to := g.Edges[e].To; to >= 0 && in[i][to] {
					hasEdge = true
				}
			}
		}
		if !hasEdge {
			fail("loop %d has no edge", i)
		}
		// Entries: the blocks with a reached predecessor outside, and
		// Entry; the header is the one the DFS meets first.
		var entries []BlockID
		for _, b := range l.Blocks {
			outside := b == Entry
			for _, e := range g.Preds(BlockID(b)) {
				if p := g.Edges[e].From; pre[p] >= 0 && !in[i][p] {
					outside = true
				}
			}
			if outside {
				entries = append(entries, b)
			}
		}
		if !slices.Equal(entries, l.Entries) {
			fail("loop %d: entries %v, want %v", i, l.Entries, entries)
		}
		for _, en := range entries {
			if pre[en] < pre[l.Header] {
				fail("loop %d: entry %d met before header %d", i, en, l.Header)
			}
		}
		if !slices.Contains(entries, l.Header) {
			fail("loop %d: header %d is no entry", i, l.Header)
		}
		if l.Irreducible != (len(entries) > 1) {
			fail("loop %d: Irreducible %v with %d entries", i, l.Irreducible, len(entries))
		}
		if !l.Irreducible {
			for _, b := range l.Blocks {
				if !dt.Dominates(l.Header, b) {
					fail("loop %d: header %d does not dominate %d", i, l.Header, b)
				}
			}
		}
		// Backedges: exactly the edges from the loop to its entries.
		var back []EdgeID
		for e, ed := range g.Edges {
			if ed.To >= 0 && in[i][ed.From] && slices.Contains(entries, ed.To) {
				back = append(back, EdgeID(e))
			}
		}
		if !slices.Equal(back, l.Backedges) {
			fail("loop %d: backedges %v, want %v", i, l.Backedges, back)
		}
		// Nesting: preorder, proper containment, depth.
		if l.Parent >= i || l.Parent < -1 {
			fail("loop %d: parent %d not before it", i, l.Parent)
		}
		if l.Parent == -1 {
			if l.Depth != 1 {
				fail("loop %d: top level with depth %d", i, l.Depth)
			}
		} else {
			p := g.Loops[l.Parent]
			if l.Depth != p.Depth+1 {
				fail("loop %d: depth %d under depth %d", i, l.Depth, p.Depth)
			}
			if len(l.Blocks) >= len(p.Blocks) {
				fail("loop %d not smaller than its parent", i)
			}
			for _, b := range l.Blocks {
				if !in[l.Parent][b] {
					fail("loop %d: block %d not in parent %d", i, b, l.Parent)
				}
			}
			if in[i][p.Header] {
				fail("loop %d holds its parent's header", i)
			}
		}
		// Preorder: every loop between the parent and this one descends
		// from the parent.
		for j := l.Parent + 1; j < i; j++ {
			k := j
			for k > l.Parent {
				k = g.Loops[k].Parent
			}
			if k != l.Parent {
				fail("loop %d: loop %d between it and its parent is not in the parent", i, j)
			}
		}
		for j := i + 1; j < len(g.Loops); j++ {
			if g.Loops[j].Parent != l.Parent {
				continue
			}
			if g.Loops[j].Header < l.Header {
				fail("siblings %d and %d out of header order", i, j)
			}
			for _, b := range g.Loops[j].Blocks {
				if in[i][b] {
					fail("siblings %d and %d share block %d", i, j, b)
				}
			}
		}
	}
	// Block depths count the loops around each block.
	for b := range g.Blocks {
		d := 0
		for i := range g.Loops {
			if in[i][b] {
				d++
			}
		}
		if g.Blocks[b].LoopDepth != d {
			fail("block %d: LoopDepth %d, in %d loops", b, g.Blocks[b].LoopDepth, d)
		}
	}
	// Every retreating edge is a backedge of some loop.
	for _, e := range retreating {
		found := false
		for _, l := range g.Loops {
			if slices.Contains(l.Backedges, e) {
				found = true
			}
		}
		if !found {
			fail("retreating edge %d→%d is no loop's backedge", g.Edges[e].From, g.Edges[e].To)
		}
	}
}

// anRefLoop is a loop found by the reference implementation.
type anRefLoop struct {
	blocks  []BlockID
	entries []BlockID
	parent  BlockID // header of the enclosing loop, NoBlock at top level
}

// anRefLoops computes the loop forest by its recursive definition (see
// loops.go), by brute force: the loops of a block set are its strongly
// connected components with an edge; each one's header is the entry the
// DFS meets first; its children are the loops of its blocks with the edges
// into the header removed. The result is keyed by header.
func anRefLoops(g *Graph) map[BlockID]anRefLoop {
	pre, _ := anDFS(g)
	n := len(g.Blocks)
	out := map[BlockID]anRefLoop{}
	var rec func(set []bool, cut BlockID, parent BlockID)
	rec = func(set []bool, cut BlockID, parent BlockID) {
		edge := func(u, v BlockID) bool { return v >= 0 && set[u] && set[v] && v != cut }
		reach := make([][]bool, n)
		for u := 0; u < n; u++ {
			if !set[u] {
				continue
			}
			reach[u] = make([]bool, n)
			stack := []BlockID{BlockID(u)}
			for len(stack) > 0 {
				b := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				for _, e := range g.Succs(BlockID(b)) {
					if s := g.Edges[e].To; edge(b, s) && !reach[u][s] {
						reach[u][s] = true
						stack = append(stack, s)
					}
				}
			}
		}
		done := make([]bool, n)
		for u := 0; u < n; u++ {
			if !set[u] || done[u] || !reach[u][u] {
				continue // a block on no cycle is in no loop
			}
			comp := make([]bool, n)
			var blocks []BlockID
			for v := 0; v < n; v++ {
				if set[v] && reach[u][v] && reach[v][u] {
					comp[v], done[v] = true, true
					blocks = append(blocks, BlockID(v))
				}
			}
			var entries []BlockID
			header := NoBlock
			for _, b := range blocks {
				outside := b == Entry
				for _, e := range g.Preds(BlockID(b)) {
					if p := g.Edges[e].From; pre[p] >= 0 && !comp[p] {
						outside = true
					}
				}
				if outside {
					entries = append(entries, b)
					if header == NoBlock || pre[b] < pre[header] {
						header = b
					}
				}
			}
			out[header] = anRefLoop{blocks: blocks, entries: entries, parent: parent}
			rec(comp, header, header)
		}
	}
	set := make([]bool, n)
	for b := range set {
		set[b] = pre[b] >= 0
	}
	rec(set, NoBlock, NoBlock)
	return out
}

// anNaturalLoops computes the natural loops of a reducible graph by their
// textbook definition [Aho et al. §9.6.6]: for every edge u→h where h
// dominates u, h and the blocks that reach u without passing h; loops with
// one header merged. Parents are the smallest enclosing loop.
func anNaturalLoops(g *Graph) map[BlockID]anRefLoop {
	dom := anBruteDom(g)
	body := map[BlockID][]bool{}
	for _, ed := range g.Edges {
		u, h := ed.From, ed.To
		if h < 0 || !dom[h][u] {
			continue
		}
		in := body[h]
		if in == nil {
			in = make([]bool, len(g.Blocks))
			in[h] = true
			body[h] = in
		}
		var stack []BlockID
		if u != h && !in[u] {
			in[u] = true
			stack = append(stack, u)
		}
		for len(stack) > 0 {
			b := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, e := range g.Preds(BlockID(b)) {
				if p := g.Edges[e].From; !in[p] && p != h && dom[p][p] {
					in[p] = true
					stack = append(stack, p)
				}
			}
		}
	}
	out := map[BlockID]anRefLoop{}
	for h, in := range body {
		var blocks []BlockID
		for b, ok := range in {
			if ok {
				blocks = append(blocks, BlockID(b))
			}
		}
		parent, best := NoBlock, len(g.Blocks)+1
		for h2, in2 := range body {
			n2 := 0
			for _, ok := range in2 {
				if ok {
					n2++
				}
			}
			if h2 != h && in2[h] && n2 < best {
				parent, best = h2, n2
			}
		}
		out[h] = anRefLoop{blocks: blocks, entries: []BlockID{h}, parent: parent}
	}
	return out
}

// anCompareRef compares g.Loops with a reference forest.
func anCompareRef(t *testing.T, g *Graph, ref map[BlockID]anRefLoop, what string) {
	t.Helper()
	if len(ref) != len(g.Loops) {
		t.Fatalf("%s: %d loops, reference has %d: %v\n%s", what, len(g.Loops), len(ref), ref, anShowLoops(g))
	}
	for _, l := range g.Loops {
		r, ok := ref[l.Header]
		parent := NoBlock
		if l.Parent >= 0 {
			parent = g.Loops[l.Parent].Header
		}
		if !ok || !slices.Equal(r.blocks, l.Blocks) || !slices.Equal(r.entries, l.Entries) || r.parent != parent {
			t.Fatalf("%s: loop at %d differs from reference %+v\n%s", what, l.Header, r, anShowLoops(g))
		}
	}
}

// anReducible reports whether g is reducible: every retreating edge of a
// DFS goes to a block that dominates its source [Hecht & Ullman 1974].
func anReducible(g *Graph) bool {
	_, retreating := anDFS(g)
	dt := g.DomTree()
	for _, e := range retreating {
		if !dt.Dominates(g.Edges[e].To, g.Edges[e].From) {
			return false
		}
	}
	return true
}

func TestFindLoopsRandom(t *testing.T) {
	r := rand.New(rand.NewSource(42))
	var reducible, irreducible, loops int
	for iter := 0; iter < 3000; iter++ {
		n := 1 + r.Intn(24)
		var g *Graph
		switch iter % 4 {
		case 0:
			g = anRandomGraph(r, n)
		case 3:
			g = anDenseGraph(r, n)
		case 1:
			g = anReducibleGraph(r, n, r.Intn(n+1), iter%2 == 0)
		default:
			// Sparse random graphs are reducible more often.
			g = anReducibleGraph(r, n, r.Intn(3), false)
			for k := r.Intn(3); k > 0; k-- {
				g.appendEdge(Edge{From: BlockID(r.Intn(n)), To: BlockID(r.Intn(n)), Kind: EdgeBranch})
			}
			g.link()
		}
		g.FindLoops()
		loops += len(g.Loops)
		t.Run("", func(t *testing.T) {
			anCheckLoops(t, g)
			anCompareRef(t, g, anRefLoops(g), fmt.Sprintf("iter %d: definition", iter))
			if anReducible(g) {
				reducible++
				anCompareRef(t, g, anNaturalLoops(g), fmt.Sprintf("iter %d: natural loops", iter))
			} else {
				irreducible++
			}
		})
		if t.Failed() {
			break
		}
	}
	t.Logf("%d reducible and %d irreducible graphs, %d loops", reducible, irreducible, loops)
	if reducible < 500 || irreducible < 300 {
		t.Errorf("too few graphs of a kind: %d reducible, %d irreducible", reducible, irreducible)
	}
}

// anNest returns d loops nested in each other around a straight body of m
// blocks: headers 1..d, body d+1..d+m, latches d+m+1..d+m+d (latch of loop
// i jumps back to header i), and a final block.
func anNest(d, m int) *Graph {
	n := 2*d + m + 2
	var es []anEdge
	es = append(es, anEdge{0, 1})
	for i := 1; i < d+m; i++ {
		es = append(es, anEdge{BlockID(i), BlockID(i + 1)})
	}
	es = append(es, anEdge{BlockID(d + m), BlockID(d + m + d)})
	for i := d; i >= 1; i-- {
		latch := BlockID(d + m + i)
		es = append(es, anEdge{latch, BlockID(i)})
		if i > 1 {
			es = append(es, anEdge{latch, latch - 1})
		} else {
			es = append(es, anEdge{latch, BlockID(n - 1)})
		}
	}
	return anGraph(n, append(es, anEdge{BlockID(n - 1), Exit})...)
}

// TestFindLoopsLarge checks 50 000-block graphs: deep DFS paths (no
// recursion), deep nesting, irreducible tangles. The budget is 50 ms; the
// test allows anLargeLimit so a loaded machine or -race does not make it
// flaky, and logs the time; BenchmarkFindLoops measures. Graphs whose description would be too large
// must be refused, quickly.
func TestFindLoopsLarge(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for _, c := range []struct {
		name   string
		g      *Graph
		loops  int // -1: any
		refuse bool
	}{
		{"chain", anChain(50000), -1, false},
		{"nest 20", anNest(20, 50000-42), 20, false},
		{"nest 80", anNest(80, 50000-162), 80, false},
		{"reducible", anReducibleGraph(r, 50000, 20000, true), -1, false},
		{"nest 200", anNest(200, 50000-402), 0, true},
		{"dense", anDenseGraph(r, 50000), 0, true},
	} {
		start := time.Now()
		c.g.FindLoops()
		el := time.Since(start)
		maxDepth, total := 0, 0
		for _, l := range c.g.Loops {
			maxDepth = max(maxDepth, l.Depth)
			total += len(l.Blocks)
		}
		t.Logf("%s: %d blocks, %d edges: %d loops, depth %d, %d block entries: %v %s",
			c.name, len(c.g.Blocks), len(c.g.Edges), len(c.g.Loops), maxDepth, total, el, c.g.Detail)
		if el > anLargeLimit {
			t.Errorf("%s: took %v", c.name, el)
		}
		if c.loops >= 0 && (len(c.g.Loops) != c.loops || maxDepth != c.loops) {
			t.Errorf("%s: %d loops, depth %d, want %d", c.name, len(c.g.Loops), maxDepth, c.loops)
		}
		if refused := c.g.Reason == ReasonTooLarge; refused != c.refuse {
			t.Errorf("%s: reason %v", c.name, c.g.Reason)
		}
		if c.refuse {
			for b := range c.g.Blocks {
				if c.g.Blocks[b].LoopDepth != 0 {
					t.Fatalf("%s: refused, but block %d has depth %d", c.name, b, c.g.Blocks[b].LoopDepth)
				}
			}
		}
	}
}

// anDenseGraph returns n blocks with two random successors each: one
// strongly connected tangle, irreducible at every level.
func anDenseGraph(r *rand.Rand, n int) *Graph {
	es := make([]anEdge, 0, 2*n+1)
	for b := 0; b < n; b++ {
		es = append(es, anEdge{BlockID(b), BlockID(r.Intn(n))}, anEdge{BlockID(b), BlockID(r.Intn(n))})
	}
	return anGraph(n, append(es, anEdge{0, Exit})...)
}

func BenchmarkFindLoops(b *testing.B) {
	r := rand.New(rand.NewSource(3))
	for _, c := range []struct {
		name string
		g    *Graph
	}{
		{"reducible", anReducibleGraph(r, 50000, 20000, false)},
		{"nest", anNest(20, 50000-42)},
		{"dense", anDenseGraph(r, 50000)},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				c.g.FindLoops()
			}
		})
	}
}
