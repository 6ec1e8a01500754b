package pathnum

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// The running example of [Ball-Larus 96] (Figure 1 and the edge values that
// follow it): nodes A..F, six paths, values A→B=2, B→D=2, D→E=1 and 0
// elsewhere. Edges are listed so that our out-edge order (by index) gives
// the paper's values.
func TestBallLarusExample(t *testing.T) {
	const A, B, C, D, E, F = 0, 1, 2, 3, 4, 5
	g := &Graph{NumNodes: 6, Entry: A, Exit: F, Edges: []Edge{
		{From: A, To: C, Weight: 1}, // 0
		{From: A, To: B, Weight: 1}, // 1
		{From: B, To: C, Weight: 1}, // 2
		{From: B, To: D, Weight: 1}, // 3
		{From: C, To: D, Weight: 1}, // 4
		{From: D, To: F, Weight: 1}, // 5
		{From: D, To: E, Weight: 1}, // 6
		{From: E, To: F, Weight: 1}, // 7
	}}
	num, err := Number(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if num.NumPaths != 6 || num.Split || num.RawOverflow {
		t.Fatalf("NumPaths=%d Split=%v RawOverflow=%v", num.NumPaths, num.Split, num.RawOverflow)
	}
	if want := []uint64{0, 2, 0, 2, 0, 0, 1, 0}; !slices.Equal(num.Val, want) {
		t.Errorf("Val = %v, want %v", num.Val, want)
	}
	if want := []uint64{6, 4, 2, 2, 1, 1}; !slices.Equal(num.NodePaths, want) {
		t.Errorf("NodePaths = %v, want %v", num.NodePaths, want)
	}
	// The paper's table of paths and their numbers.
	want := [][]int{
		{A, C, D, F},
		{A, C, D, E, F},
		{A, B, C, D, F},
		{A, B, C, D, E, F},
		{A, B, D, F},
		{A, B, D, E, F},
	}
	for id, nodes := range want {
		p, err := num.Regenerate(uint64(id))
		if err != nil {
			t.Fatal(err)
		}
		if got := num.Nodes(p); !slices.Equal(got, nodes) {
			t.Errorf("path %d = %v, want %v", id, got, nodes)
		}
	}
	checkNumbering(t, g, num, checkOpts{prefixes: true})
}

// Hot edges (heavy weights) lie on the spanning tree and carry no code.
func TestHotEdgesNeedNoIncrement(t *testing.T) {
	const entry, h, a, b, l, exit = 0, 1, 2, 3, 4, 5
	g := &Graph{NumNodes: 6, Entry: entry, Exit: exit, Edges: []Edge{
		{From: entry, To: h, Weight: 1}, // 0
		{From: h, To: a, Weight: 10},    // 1
		{From: h, To: b, Weight: 100},   // 2 hot
		{From: a, To: l, Weight: 10},    // 3
		{From: b, To: l, Weight: 100},   // 4 hot
		{From: l, To: h, Weight: 100},   // 5 hot backedge
		{From: h, To: exit, Weight: 1},  // 6
	}}
	num, err := Number(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if num.Kind[5] != Backedge {
		t.Fatalf("edge 5 is %v", num.Kind[5])
	}
	if num.Inc[2] != 0 || num.Inc[4] != 0 || num.ExitInc[5] != 0 || num.Inc[1] != 0 {
		t.Errorf("hot edges carry increments: Inc=%v ExitInc=%v", num.Inc, num.ExitInc)
	}
	checkNumbering(t, g, num, checkOpts{prefixes: true})
}

// Shapes that stress the backedge and pseudo edge rules.
func TestShapes(t *testing.T) {
	tests := []struct {
		name  string
		g     Graph
		paths uint64
		kinds []EdgeKind
	}{
		{
			name:  "entry to exit",
			g:     Graph{NumNodes: 2, Entry: 0, Exit: 1, Edges: []Edge{{From: 0, To: 1}}},
			paths: 1, kinds: []EdgeKind{DAGEdge},
		},
		{
			name:  "parallel edges",
			g:     Graph{NumNodes: 2, Entry: 1, Exit: 0, Edges: []Edge{{From: 1, To: 0}, {From: 1, To: 0}, {From: 1, To: 0}}},
			paths: 3, kinds: []EdgeKind{DAGEdge, DAGEdge, DAGEdge},
		},
		{
			// 0→1→2, 1↺: paths 0-1-2, 0-1(end), 1-2 (restart), 1(restart, end).
			name:  "self loop",
			g:     Graph{NumNodes: 3, Entry: 0, Exit: 2, Edges: []Edge{{From: 0, To: 1}, {From: 1, To: 1}, {From: 1, To: 2}}},
			paths: 4, kinds: []EdgeKind{DAGEdge, Backedge, DAGEdge},
		},
		{
			// The backedge into Entry needs no ENTRY→Entry edge: paths are
			// 0-1-exit and 0-1 ending at the backedge.
			name:  "loop back to entry",
			g:     Graph{NumNodes: 3, Entry: 0, Exit: 2, Edges: []Edge{{From: 0, To: 1}, {From: 1, To: 0}, {From: 1, To: 2}}},
			paths: 2, kinds: []EdgeKind{DAGEdge, Backedge, DAGEdge},
		},
		{
			name:  "self loop on entry",
			g:     Graph{NumNodes: 2, Entry: 0, Exit: 1, Edges: []Edge{{From: 0, To: 0}, {From: 0, To: 1}}},
			paths: 2, kinds: []EdgeKind{Backedge, DAGEdge},
		},
		{
			// An infinite loop never reaches Exit, but its paths end at the
			// backedge: 0-1-2, 1-2 (the loop never exits).
			name:  "infinite loop",
			g:     Graph{NumNodes: 4, Entry: 0, Exit: 3, Edges: []Edge{{From: 0, To: 1}, {From: 1, To: 2}, {From: 2, To: 1}, {From: 0, To: 3}}},
			paths: 3, kinds: []EdgeKind{DAGEdge, DAGEdge, Backedge, DAGEdge},
		},
		{
			// A procedure that never returns: Exit is unreachable, yet the
			// paths 0-1(end) and 1-1(end) exist.
			name:  "never returns",
			g:     Graph{NumNodes: 3, Entry: 0, Exit: 2, Edges: []Edge{{From: 0, To: 1}, {From: 1, To: 1}}},
			paths: 2, kinds: []EdgeKind{DAGEdge, Backedge},
		},
		{
			// Two continues into one head share the ENTRY→head edge:
			// from entry: 0-1-2(x2 backedges)+0-1-3; from head: 1-2(x2)+1-3.
			name: "two backedges one head",
			g: Graph{NumNodes: 4, Entry: 0, Exit: 3, Edges: []Edge{
				{From: 0, To: 1}, {From: 1, To: 2}, {From: 2, To: 1}, {From: 2, To: 1}, {From: 1, To: 3}}},
			paths: 6, kinds: []EdgeKind{DAGEdge, DAGEdge, Backedge, Backedge, DAGEdge},
		},
		{
			// Infinite weights order like any others; +Inf and -Inf
			// backedges into one head sum to NaN, which must not leak.
			name: "infinite weights",
			g: Graph{NumNodes: 4, Entry: 0, Exit: 3, Edges: []Edge{
				{From: 0, To: 1, Weight: math.Inf(1)}, {From: 1, To: 2, Weight: math.Inf(-1)},
				{From: 2, To: 1, Weight: math.Inf(1)}, {From: 2, To: 1, Weight: math.Inf(-1)},
				{From: 1, To: 3, Weight: math.MaxFloat64}}},
			paths: 6, kinds: []EdgeKind{DAGEdge, DAGEdge, Backedge, Backedge, DAGEdge},
		},
		{
			// The classic irreducible loop: two entries into {1,2}.
			name: "irreducible",
			g: Graph{NumNodes: 4, Entry: 0, Exit: 3, Edges: []Edge{
				{From: 0, To: 1}, {From: 0, To: 2}, {From: 1, To: 2}, {From: 2, To: 1}, {From: 1, To: 3}}},
			kinds: []EdgeKind{DAGEdge, DAGEdge, DAGEdge, Backedge, DAGEdge},
			// 0-1-3, 0-1-2(end), 0-2(end), 1-3, 1-2(end)
			paths: 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			num, err := Number(&tt.g, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if num.NumPaths != tt.paths {
				t.Errorf("NumPaths = %d, want %d", num.NumPaths, tt.paths)
			}
			if !slices.Equal(num.Kind, tt.kinds) {
				t.Errorf("Kind = %v, want %v", num.Kind, tt.kinds)
			}
			checkNumbering(t, &tt.g, num, checkOpts{prefixes: true})
		})
	}
}

func TestSharedHead(t *testing.T) {
	g := &Graph{NumNodes: 4, Entry: 0, Exit: 3, Edges: []Edge{
		{From: 0, To: 1}, {From: 1, To: 2}, {From: 2, To: 1}, {From: 2, To: 1}, {From: 1, To: 3}}}
	num, err := Number(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if num.EntryInc[2] != num.EntryInc[3] || num.EntryVal[2] != num.EntryVal[3] {
		t.Errorf("backedges into one head disagree: EntryInc %v EntryVal %v", num.EntryInc, num.EntryVal)
	}
	// Regenerate names the head by the lower edge; PathID accepts both.
	for id := range num.NumPaths {
		p, _ := num.Regenerate(id)
		if len(p) > 0 && p[0].Pseudo == FromEntry {
			if p[0].Edge != 2 {
				t.Errorf("path %d starts with %v, want edge 2", id, p[0])
			}
			alt := slices.Clone(p)
			alt[0].Edge = 3
			if got, err := num.PathID(alt); err != nil || got != id {
				t.Errorf("PathID(%v) = %d, %v; want %d", alt, got, err, id)
			}
		}
	}
	// A FromEntry step of a backedge into Entry is the empty edge.
	g2 := &Graph{NumNodes: 3, Entry: 0, Exit: 2, Edges: []Edge{{From: 0, To: 1}, {From: 1, To: 0}, {From: 1, To: 2}}}
	num2, err := Number(g2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := num2.PathID([]Step{{1, FromEntry}, {0, None}, {2, None}})
	want, _ := num2.PathID([]Step{{0, None}, {2, None}})
	if err != nil || id != want {
		t.Errorf("PathID with empty FromEntry = %d, %v; want %d", id, err, want)
	}
	if num2.EntryInc[1] != 0 {
		t.Errorf("EntryInc of backedge into entry = %d, want 0", num2.EntryInc[1])
	}
}

func TestInvalidGraphs(t *testing.T) {
	e := func(from, to int) Edge { return Edge{From: from, To: to, Weight: 1} }
	tests := []struct {
		name       string
		g          *Graph
		node, edge int
		reason     string
	}{
		{"nil", nil, -1, -1, "nil graph"},
		{"no nodes", &Graph{}, -1, -1, "need at least"},
		{"one node", &Graph{NumNodes: 1}, -1, -1, "need at least"},
		{"negative nodes", &Graph{NumNodes: -5}, -1, -1, "need at least"},
		{"huge", &Graph{NumNodes: 1 << 31, Entry: 0, Exit: 1}, -1, -1, "supported"},
		{"entry out of range", &Graph{NumNodes: 2, Entry: 2, Exit: 1}, -1, -1, "entry 2 out of range"},
		{"entry negative", &Graph{NumNodes: 2, Entry: -1, Exit: 1}, -1, -1, "entry -1 out of range"},
		{"exit out of range", &Graph{NumNodes: 2, Entry: 0, Exit: 7}, -1, -1, "exit 7 out of range"},
		{"entry is exit", &Graph{NumNodes: 2, Entry: 1, Exit: 1}, -1, -1, "both node 1"},
		{"source out of range", &Graph{NumNodes: 2, Exit: 1, Edges: []Edge{e(0, 1), e(5, 1)}}, -1, 1, "source 5"},
		{"target negative", &Graph{NumNodes: 2, Exit: 1, Edges: []Edge{e(0, -1)}}, -1, 0, "target -1"},
		{"exit has successor", &Graph{NumNodes: 3, Exit: 1, Edges: []Edge{e(0, 1), e(1, 2)}}, -1, 1, "leaves exit"},
		{"exit self loop", &Graph{NumNodes: 2, Exit: 1, Edges: []Edge{e(0, 1), e(1, 1)}}, -1, 1, "leaves exit"},
		{"nan weight", &Graph{NumNodes: 2, Exit: 1, Edges: []Edge{e(0, 1), {From: 0, To: 1, Weight: math.NaN()}}}, -1, 1, "NaN"},
		{"no edges", &Graph{NumNodes: 2, Exit: 1}, 0, -1, "no path to exit"},
		{"unreachable node", &Graph{NumNodes: 3, Exit: 1, Edges: []Edge{e(0, 1), e(2, 1)}}, 2, -1, "not reachable"},
		{"dead end", &Graph{NumNodes: 3, Exit: 1, Edges: []Edge{e(0, 1), e(0, 2)}}, 2, -1, "no path to exit"},
		{"dead end, exit unreachable", &Graph{NumNodes: 4, Exit: 3, Edges: []Edge{e(0, 1), e(1, 0), e(1, 2)}}, 2, -1, "no path to exit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			num, err := Number(tt.g, Options{})
			if num != nil || !errors.Is(err, ErrInvalidGraph) {
				t.Fatalf("Number = %v, %v; want ErrInvalidGraph", num, err)
			}
			var ge *GraphError
			if !errors.As(err, &ge) {
				t.Fatalf("%v is not a *GraphError", err)
			}
			if ge.Node != tt.node || ge.Edge != tt.edge || !strings.Contains(ge.Reason, tt.reason) {
				t.Errorf("got %+v (%v), want node %d edge %d reason %q", ge, err, tt.node, tt.edge, tt.reason)
			}
		})
	}
}

func TestPathErrors(t *testing.T) {
	g := &Graph{NumNodes: 4, Entry: 0, Exit: 3, Edges: []Edge{
		{From: 0, To: 1}, {From: 1, To: 2}, {From: 2, To: 1}, {From: 1, To: 3}, {From: 0, To: 3}}}
	num, err := Number(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name  string
		steps []Step
	}{
		{"empty", nil},
		{"edge out of range", []Step{{9, None}}},
		{"negative edge", []Step{{-1, None}}},
		{"backedge as real", []Step{{0, None}, {1, None}, {2, None}}},
		{"dag edge as pseudo", []Step{{0, ToExit}}},
		{"dag edge from entry", []Step{{4, FromEntry}}},
		{"unknown pseudo", []Step{{4, PseudoKind(7)}}},
		{"gap", []Step{{0, None}, {3, None}, {4, None}}},
		{"not at exit", []Step{{0, None}, {1, None}}},
		{"from entry later", []Step{{0, None}, {2, FromEntry}, {3, None}}},
		{"past exit", []Step{{4, None}, {4, None}}},
	}
	for _, tt := range bad {
		if id, err := num.PathID(tt.steps); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("%s: PathID(%v) = %d, %v; want ErrInvalidPath", tt.name, tt.steps, id, err)
		}
	}
	if got := num.Nodes([]Step{{9, None}}); got != nil {
		t.Errorf("Nodes of a bad step = %v, want nil", got)
	}
	if _, err := num.Regenerate(num.NumPaths); !errors.Is(err, ErrPathRange) {
		t.Errorf("Regenerate(NumPaths): %v", err)
	}
	if _, err := num.Regenerate(math.MaxUint64); !errors.Is(err, ErrPathRange) {
		t.Errorf("Regenerate(MaxUint64): %v", err)
	}
	for _, c := range []struct {
		v int
		r int64
	}{{-1, 0}, {4, 0}, {0, 1}, {0, -1}, {3, math.MaxInt64}, {3, math.MinInt64}, {2, 1 << 40}} {
		if p, err := num.Prefix(c.v, c.r); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("Prefix(%d, %d) = %v, %v; want ErrInvalidPath", c.v, c.r, p, err)
		}
	}
	// A Numbering not made by Number answers errors, not panics.
	for _, z := range []*Numbering{nil, {}} {
		if _, err := z.Regenerate(0); err == nil {
			t.Error("Regenerate on empty Numbering succeeded")
		}
		if _, err := z.PathID(nil); err == nil {
			t.Error("PathID on empty Numbering succeeded")
		}
		if _, err := z.Prefix(0, 0); err == nil {
			t.Error("Prefix on empty Numbering succeeded")
		}
		if z.Nodes(nil) != nil {
			t.Error("Nodes on empty Numbering returned nodes")
		}
	}
}

func TestKindStrings(t *testing.T) {
	for _, c := range []struct {
		s    interface{ String() string }
		want string
	}{
		{DAGEdge, "edge"}, {Backedge, "backedge"}, {Broken, "broken"}, {EdgeKind(9), "EdgeKind(9)"},
		{None, "none"}, {FromEntry, "from-entry"}, {ToExit, "to-exit"}, {PseudoKind(5), "PseudoKind(5)"},
		{Step{3, None}, "3"}, {Step{4, ToExit}, "4:to-exit"},
	} {
		if got := c.s.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
	err := &GraphError{Node: 3, Edge: -1, Reason: "not reachable from entry"}
	if got, want := err.Error(), "pathnum: invalid graph: node 3: not reachable from entry"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// Number is deterministic: the same graph gives the same numbering.
func TestDeterministic(t *testing.T) {
	g := structuredCFG(newRand(7), 200)
	a, err := Number(g, Options{MaxPaths: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		b, err := Number(g, Options{MaxPaths: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Kind, b.Kind) || !slices.Equal(a.Inc, b.Inc) || !slices.Equal(a.Val, b.Val) ||
			!slices.Equal(a.EntryInc, b.EntryInc) || !slices.Equal(a.ExitInc, b.ExitInc) {
			t.Fatal("two runs differ")
		}
	}
}

// TestBreakEdge: an edge marked Break ends and starts paths like a
// backedge without closing a cycle; all paths still number 0..N-1.
func TestBreakEdge(t *testing.T) {
	// 0 -> 1 -> 2 -> 3(exit), 0 -> 2; edge 1 (1->2) is a break.
	g := &Graph{NumNodes: 4, Entry: 0, Exit: 3, Edges: []Edge{
		{From: 0, To: 1, Weight: 1}, {From: 1, To: 2, Weight: 1, Break: true}, {From: 2, To: 3, Weight: 1}, {From: 0, To: 2, Weight: 1},
	}}
	n, err := Number(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Kind[1] != Backedge {
		t.Fatalf("break edge has kind %v", n.Kind[1])
	}
	// Paths: 0-1 (ends at the break), 0-2-3, (restart at 2)-3.
	if n.NumPaths != 3 {
		t.Fatalf("NumPaths = %d, want 3", n.NumPaths)
	}
	for id := uint64(0); id < n.NumPaths; id++ {
		steps, err := n.Regenerate(id)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := n.PathID(steps); err != nil || got != id {
			t.Fatalf("PathID(Regenerate(%d)) = %d, %v", id, got, err)
		}
	}
}
