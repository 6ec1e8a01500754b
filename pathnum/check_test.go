package pathnum

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

// This file holds an oracle that checks a Numbering against laws computed
// independently of the package: its own DAG view built from Kind, Kahn's
// algorithm for acyclicity, a brute-force enumeration of every ENTRY→EXIT
// path, and its own sums of Val and Inc.

// enumLimit caps brute-force enumeration.
const enumLimit = 5000

type viewEdge struct {
	from, to int
	step     Step
}

// dagView is the DAG of a numbered graph, rebuilt from Kind alone: DAG
// edges, v→EXIT per breaking edge, ENTRY→w per distinct head w ≠ Entry
// (named by the lowest-numbered breaking edge into w).
type dagView struct {
	n, entry, exit int
	out            [][]viewEdge
	edges          []viewEdge
}

func buildView(g *Graph, kind []EdgeKind) *dagView {
	v := &dagView{n: g.NumNodes, entry: g.Entry, exit: g.Exit, out: make([][]viewEdge, g.NumNodes)}
	add := func(e viewEdge) {
		v.edges = append(v.edges, e)
		v.out[e.from] = append(v.out[e.from], e)
	}
	canon := make([]int, g.NumNodes)
	for i := range canon {
		canon[i] = -1
	}
	for i, e := range g.Edges {
		if kind[i] == DAGEdge {
			add(viewEdge{e.From, e.To, Step{i, None}})
			continue
		}
		add(viewEdge{e.From, g.Exit, Step{i, ToExit}})
		if e.To != g.Entry && canon[e.To] < 0 {
			canon[e.To] = i
		}
	}
	for w, i := range canon {
		if i >= 0 {
			add(viewEdge{g.Entry, w, Step{i, FromEntry}})
		}
	}
	return v
}

// kahn returns a topological order of the view, or ok=false on a cycle.
func (v *dagView) kahn() (order []int, ok bool) {
	indeg := make([]int, v.n)
	for _, e := range v.edges {
		indeg[e.to]++
	}
	for u := range v.n {
		if indeg[u] == 0 {
			order = append(order, u)
		}
	}
	for i := 0; i < len(order); i++ {
		for _, e := range v.out[order[i]] {
			if indeg[e.to]--; indeg[e.to] == 0 {
				order = append(order, e.to)
			}
		}
	}
	return order, len(order) == v.n
}

// counts returns per-node path counts to Exit, saturating at MaxUint64.
func (v *dagView) counts(order []int) []uint64 {
	np := make([]uint64, v.n)
	for i := len(order) - 1; i >= 0; i-- {
		u := order[i]
		if u == v.exit {
			np[u] = 1
			continue
		}
		for _, e := range v.out[u] {
			if np[u] > math.MaxUint64-np[e.to] {
				np[u] = math.MaxUint64
			} else {
				np[u] += np[e.to]
			}
		}
	}
	return np
}

// paths enumerates every ENTRY→EXIT path of the view.
func (v *dagView) paths() [][]Step {
	var all [][]Step
	var cur []Step
	var walk func(u int)
	walk = func(u int) {
		if u == v.exit {
			all = append(all, slices.Clone(cur))
			return
		}
		for _, e := range v.out[u] {
			cur = append(cur, e.step)
			walk(e.to)
			cur = cur[:len(cur)-1]
		}
	}
	walk(v.entry)
	return all
}

// stepVals returns the Ball-Larus value of one step and what the
// instrumentation adds to the register for it.
func stepVals(num *Numbering, s Step) (val uint64, inc int64) {
	switch s.Pseudo {
	case FromEntry:
		return num.EntryVal[s.Edge], num.EntryInc[s.Edge]
	case ToExit:
		return num.ExitVal[s.Edge], num.ExitInc[s.Edge]
	}
	return num.Val[s.Edge], num.Inc[s.Edge]
}

// stepInc is what the instrumentation adds to the register for one step.
func stepInc(num *Numbering, s Step) int64 {
	_, inc := stepVals(num, s)
	return inc
}

func graphString(g *Graph) string {
	return fmt.Sprintf("Graph{NumNodes: %d, Entry: %d, Exit: %d, Edges: %v}", g.NumNodes, g.Entry, g.Exit, g.Edges)
}

type checkOpts struct {
	maxPaths   uint64 // the effective limit (0: default)
	prefixes   bool   // check Prefix on every prefix of every path
	enumerated *int   // incremented when all paths were enumerated
}

// checkNumbering checks every law on num, a numbering of g.
func checkNumbering(t *testing.T, g *Graph, num *Numbering, co checkOpts) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\n%s", fmt.Sprintf(format, args...), graphString(g))
	}
	m := len(g.Edges)
	if len(num.Kind) != m || len(num.Val) != m || len(num.Inc) != m || len(num.EntryInc) != m ||
		len(num.ExitInc) != m || len(num.EntryVal) != m || len(num.ExitVal) != m || len(num.NodePaths) != g.NumNodes {
		fail("slice lengths wrong")
	}
	limit := co.maxPaths
	if limit == 0 {
		limit = DefaultMaxPaths
	}
	if num.NumPaths == 0 || num.NumPaths > limit {
		fail("NumPaths %d outside [1,%d]", num.NumPaths, limit)
	}
	broken := 0
	for i, k := range num.Kind {
		switch k {
		case DAGEdge:
			if num.EntryInc[i] != 0 || num.ExitInc[i] != 0 || num.EntryVal[i] != 0 || num.ExitVal[i] != 0 {
				fail("DAG edge %d has pseudo values", i)
			}
		case Backedge:
			if num.Val[i] != 0 || num.Inc[i] != 0 {
				fail("backedge %d has Val/Inc", i)
			}
		case Broken:
			broken++
			if num.Val[i] != 0 || num.Inc[i] != 0 {
				fail("broken edge %d has Val/Inc", i)
			}
		default:
			fail("edge %d has kind %v", i, k)
		}
		if e := g.Edges[i]; e.From == e.To && k != Backedge {
			fail("self loop %d is %v", i, k)
		}
		if e := g.Edges[i]; e.To == g.Entry && k != Backedge {
			fail("edge %d into entry is %v", i, k)
		}
	}
	if num.Split != (broken > 0) || (num.Split && !num.RawOverflow) {
		fail("Split=%v RawOverflow=%v with %d broken edges", num.Split, num.RawOverflow, broken)
	}
	if num.RawOverflow != (num.RawPaths > limit) {
		fail("RawOverflow=%v but RawPaths=%d, limit %d", num.RawOverflow, num.RawPaths, limit)
	}

	// Backedge removal (plus broken edges) leaves a DAG: Kahn's algorithm
	// on the real DAG edges and on the whole view.
	dagOnly := buildView(g, num.Kind)
	if _, ok := dagOnly.kahn(); !ok {
		fail("DAG view has a cycle")
	}
	// Each backedge closes a cycle: its target reaches its source without
	// backedges (through the DFS tree). Quadratic, so small graphs only.
	if m <= 1000 {
		for i, k := range num.Kind {
			if k != Backedge {
				continue
			}
			e := g.Edges[i]
			if !e.Break && !e.Dispatch && !reaches(g, num.Kind, e.To, e.From) {
				fail("backedge %d (%d→%d) closes no cycle", i, e.From, e.To)
			}
		}
	}
	view := dagOnly
	order, _ := view.kahn()
	np := view.counts(order)
	for v := range g.NumNodes {
		if np[v] != num.NodePaths[v] {
			fail("NodePaths[%d] = %d, oracle %d", v, num.NodePaths[v], np[v])
		}
	}
	if np[g.Entry] != num.NumPaths {
		fail("NumPaths = %d, oracle %d", num.NumPaths, np[g.Entry])
	}
	// Chords: at most |E|+1 - (N-1) edges (fake edge included) need code.
	nonzero := 0
	for _, e := range view.edges {
		if stepInc(num, e.step) != 0 {
			nonzero++
		}
	}
	if chords := len(view.edges) + 1 - (g.NumNodes - 1); nonzero > chords {
		fail("%d increments on %d chords", nonzero, chords)
	}
	// Each edge into EXIT of the view ends a different path, and each
	// out-edge of a node starts a different suffix (the policy's lower
	// bound rests on this).
	ends, outdeg := 0, 0
	for _, e := range view.edges {
		if e.to == g.Exit {
			ends++
		}
	}
	for u := range g.NumNodes {
		outdeg = max(outdeg, len(view.out[u]))
	}
	if uint64(max(ends, outdeg)) > num.NumPaths {
		fail("%d paths, but %d edges into exit and out-degree %d", num.NumPaths, ends, outdeg)
	}
	if _, err := num.Regenerate(num.NumPaths); !errors.Is(err, ErrPathRange) {
		fail("Regenerate(NumPaths) = %v", err)
	}

	if num.NumPaths > enumLimit {
		// Too many to enumerate: check a sample of numbers instead.
		for _, id := range []uint64{0, 1, num.NumPaths / 3, num.NumPaths / 2, num.NumPaths - 1} {
			if id < num.NumPaths {
				checkRoundTrip(t, g, num, id)
			}
		}
		return
	}
	if co.enumerated != nil {
		*co.enumerated++
	}
	paths := view.paths()
	if uint64(len(paths)) != num.NumPaths {
		fail("enumerated %d paths, NumPaths %d", len(paths), num.NumPaths)
	}
	seen := make([]bool, num.NumPaths)
	for _, p := range paths {
		id, err := num.PathID(p)
		if err != nil {
			fail("PathID(%v): %v", p, err)
		}
		if id >= num.NumPaths || seen[id] {
			fail("path %v got number %d twice or out of range", p, id)
		}
		seen[id] = true
		var vals uint64
		var r int64
		for _, s := range p {
			v, inc := stepVals(num, s)
			vals += v
			r += inc
		}
		if vals != id || r != int64(id) {
			fail("path %v: PathID %d, Σ Val %d, Σ Inc %d", p, id, vals, r)
		}
		back, err := num.Regenerate(id)
		if err != nil || !slices.Equal(back, p) {
			fail("Regenerate(%d) = %v, %v; want %v", id, back, err, p)
		}
		nodes := num.Nodes(p)
		if len(nodes) != len(p)+1 || nodes[0] != g.Entry || nodes[len(p)] != g.Exit {
			fail("Nodes(%v) = %v", p, nodes)
		}
		if co.prefixes {
			r = 0
			for k := 0; k <= len(p); k++ {
				if k > 0 {
					r += stepInc(num, p[k-1])
				}
				pre, err := num.Prefix(nodes[k], r)
				if err != nil || !slices.Equal(pre, p[:k]) {
					fail("Prefix(%d, %d) = %v, %v; want %v", nodes[k], r, pre, err, p[:k])
				}
			}
		}
	}
	for id := range num.NumPaths {
		if !seen[id] {
			fail("number %d names no path", id)
		}
	}
}

// checkRoundTrip checks one path number without enumeration.
func checkRoundTrip(t *testing.T, g *Graph, num *Numbering, id uint64) {
	t.Helper()
	p, err := num.Regenerate(id)
	if err != nil {
		t.Fatalf("Regenerate(%d): %v\n%s", id, err, graphString(g))
	}
	back, err := num.PathID(p)
	if err != nil || back != id {
		t.Fatalf("PathID(Regenerate(%d)) = %d, %v\n%s", id, back, err, graphString(g))
	}
	var r int64
	nodes := num.Nodes(p)
	for k := 0; k <= len(p); k++ {
		if k > 0 {
			r += stepInc(num, p[k-1])
		}
		pre, err := num.Prefix(nodes[k], r)
		if err != nil || !slices.Equal(pre, p[:k]) {
			t.Fatalf("Prefix(%d, %d) = %v, %v; want %v\n%s", nodes[k], r, pre, err, p[:k], graphString(g))
		}
	}
	if r != int64(id) {
		t.Fatalf("Σ Inc of path %d = %d\n%s", id, r, graphString(g))
	}
}

// reaches reports whether from reaches to using non-backedges (edges
// made path-breaking by Break or Dispatch count as such: the DFS may
// have taken them).
func reaches(g *Graph, kind []EdgeKind, from, to int) bool {
	succ := make([][]int, g.NumNodes)
	for i, e := range g.Edges {
		if kind[i] != Backedge || e.Break || e.Dispatch {
			succ[e.From] = append(succ[e.From], e.To)
		}
	}
	seen := make([]bool, g.NumNodes)
	stack := []int{from}
	seen[from] = true
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if u == to {
			return true
		}
		for _, w := range succ[u] {
			if !seen[w] {
				seen[w] = true
				stack = append(stack, w)
			}
		}
	}
	return false
}
