package pathnum

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
)

// Numbering is the Ball-Larus numbering of one procedure. The exported
// slices indexed by input edge all have len(Graph.Edges) entries; NodePaths
// has Graph.NumNodes entries. The methods use private copies, so changing
// the exported fields does not change what Regenerate, PathID, Nodes and
// Prefix answer.
type Numbering struct {
	NumNodes, Entry, Exit int // as in the Graph

	// NumPaths is the number of ENTRY→EXIT paths of the DAG view (after
	// any splitting); path numbers are 0..NumPaths-1.
	NumPaths uint64
	// RawPaths is the path count before the overflow policy ran,
	// saturated at math.MaxUint64.
	RawPaths uint64
	// RawOverflow is true when RawPaths exceeded the limit.
	RawOverflow bool
	// Split is true when the overflow policy broke at least one edge.
	Split bool

	Kind []EdgeKind // per input edge
	// Val is the Ball-Larus value of each DAG edge; 0 for backedges and
	// broken edges, whose pseudo edges carry EntryVal and ExitVal.
	Val []uint64
	// Inc is the increment placed on each DAG edge (0 on spanning-tree
	// edges, which need no code).
	Inc []int64
	// For a backedge or broken edge i (v→w): EntryVal/EntryInc belong to
	// the pseudo edge ENTRY→w (EntryInc is the value the register is reset
	// to after the edge), ExitVal/ExitInc to v→EXIT (count[r+ExitInc[i]]++
	// ends the path). All four are 0 for DAG edges.
	EntryVal, ExitVal []uint64
	EntryInc, ExitInc []int64
	// NodePaths is the number of paths from each node to Exit in the DAG.
	NodePaths []uint64

	entry, exit int32
	edgeTo      []int32    // input edge targets
	kind        []EdgeKind // private copy of Kind
	dag         []dagEdge  // edges of the DAG view, see Number
	outStart    []int32    // out-edges of node v: outList[outStart[v]:outStart[v+1]]
	outList     []int32    // dag indices, in Val order
	realDag     []int32    // per input edge: its dag index, or -1
	exitDag     []int32    // per input edge: dag index of its v→EXIT, or -1
	entryDag    []int32    // per node w: dag index of ENTRY→w, or -1
	phi         []int64    // node potentials of the spanning tree
	// dispatchFirst holds, per source of Dispatch edges, the dag index of
	// its first Dispatch pseudo edge, which the spanning tree must hold.
	dispatchFirst []int32
	total         uint64 // NumPaths
}

// dagEdge is an edge of the DAG view: a real DAG edge or a pseudo edge.
type dagEdge struct {
	from, to int32
	edge     int32 // input edge; for ENTRY→w the lowest-numbered edge into w
	pseudo   PseudoKind
	weight   float64
	val      uint64
	inc      int64
}

// numberer holds the working state of one Number call.
type numberer struct {
	s          *scratch
	lean       bool // Options.Lean: fill only what Numbering.Lean keeps
	g          *Graph
	entry      int32
	exit       int32
	from, to   []int32
	succStart  []int32 // input out-edges of v: succ[succStart[v]:succStart[v+1]]
	succ       []int32
	post       []int32 // DFS postorder: a reverse topological order of the DAG view
	np         []uint64
	mark       []uint32 // scratch for distinct ENTRY→w targets
	stamp      uint32
	candidates []int32  // scratch for the overflow policy
	suffix     []uint64 // scratch for the overflow policy
	heads      []bool   // nodes with an ENTRY→w pseudo edge, during the policy
}

// Number builds the Ball-Larus numbering of g [Ball-Larus 96 §3]. It never
// panics: a bad graph yields an error wrapping ErrInvalidGraph, a path count
// the overflow policy cannot bring under the limit ErrPathLimit. g is not
// modified or retained.
func Number(g *Graph, opts Options) (*Numbering, error) {
	if g == nil {
		return nil, graphError("nil graph")
	}
	if err := validate(g); err != nil {
		return nil, err
	}
	maxPaths := opts.MaxPaths
	if maxPaths == 0 {
		maxPaths = DefaultMaxPaths
	}
	maxPaths = min(maxPaths, maxPathsLimit)

	// Nothing a lean Numbering holds comes from s (build). The scratch
	// (and the Numbering below) are made only where they are used: made
	// first and replaced, they were 220 MB of garbage in a large
	// library's rewrite.
	var s *scratch
	if opts.Lean {
		s = scratchPool.Get().(*scratch)
		defer scratchPool.Put(s)
	} else {
		s = &scratch{}
	}
	b := newNumberer(g, s)
	b.lean = opts.Lean
	kind, err := b.findBackedges()
	if err != nil {
		return nil, err
	}
	for i, e := range g.Edges {
		if (e.Break || e.Dispatch) && kind[i] == DAGEdge {
			kind[i] = Backedge
		}
	}
	raw, err := b.countRaw(kind)
	if err != nil {
		return nil, err
	}
	var num *Numbering
	if opts.Lean {
		num = &s.num // only its lean part leaves (Lean)
	} else {
		num = new(Numbering)
	}
	*num = Numbering{RawPaths: raw}
	if raw > maxPaths {
		num.RawOverflow = true
		kind, err = b.split(kind, maxPaths)
		if err != nil {
			return nil, err
		}
		for _, k := range kind {
			if k == Broken {
				num.Split = true
				break
			}
		}
	}
	if err := b.build(num, kind, maxPaths); err != nil {
		return nil, err
	}
	if opts.Lean {
		return num.Lean(), nil
	}
	return num, nil
}

// Lean returns the part of num that instruments a procedure: NumPaths,
// RawPaths, RawOverflow and Split, the node counts, and per edge Kind,
// Inc, EntryInc and ExitInc (Options.Lean). Its methods (Regenerate,
// PathID, Prefix) do not work; reports number the procedure again from
// the metadata.
func (num *Numbering) Lean() *Numbering {
	return &Numbering{NumNodes: num.NumNodes, Entry: num.Entry, Exit: num.Exit,
		NumPaths: num.NumPaths, RawPaths: num.RawPaths, RawOverflow: num.RawOverflow, Split: num.Split,
		Kind: num.Kind, Inc: num.Inc, EntryInc: num.EntryInc, ExitInc: num.ExitInc}
}

// scratch holds the arrays of one Number call. A call that is not lean
// gets a fresh one, so every array it hands out is new (the Numbering
// keeps several); lean calls share theirs through scratchPool, the
// arrays grown to the largest graph seen. The rewriter numbers every
// procedure of a library once (libLLVM: 100 thousand, 1 GB of arrays
// that lived a few microseconds each), and the collector's pace under
// the rewrite's memory limit follows what is allocated [decision 118].
type scratch struct {
	from, to, succStart, succ, post, next, stack, pos []int32
	realDag, exitDag, entryDag, outStart, outList     []int32
	order, parent, size, adjStart, adj, queue, tnext  []int32
	dispatchFirst                                     []int32
	np, val, entryVal, exitVal                        []uint64
	mark                                              []uint32
	phi                                               []int64
	kind                                              []EdgeKind
	state                                             []uint8
	inTree, seen                                      []bool
	dag                                               []dagEdge
	b                                                 numberer
	num                                               Numbering
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// take returns *p resliced to n zero elements, allocating when its
// capacity is short.
func take[T any](p *[]T, n int) []T {
	if cap(*p) < n {
		*p = make([]T, n)
	}
	*p = (*p)[:n]
	clear(*p)
	return *p
}

// takeCap returns *p emptied with room for n, allocating when short.
func takeCap[T any](p *[]T, n int) []T {
	if cap(*p) < n {
		*p = make([]T, 0, n)
	}
	return (*p)[:0]
}

// validate checks everything about g that does not need a traversal.
func validate(g *Graph) error {
	switch {
	case g.NumNodes < 2:
		return graphError(fmt.Sprintf("%d nodes; need at least entry and exit", g.NumNodes))
	case g.NumNodes > maxGraphSize:
		return graphError(fmt.Sprintf("%d nodes; at most %d supported", g.NumNodes, maxGraphSize))
	case len(g.Edges) > maxGraphSize:
		return graphError(fmt.Sprintf("%d edges; at most %d supported", len(g.Edges), maxGraphSize))
	case g.Entry < 0 || g.Entry >= g.NumNodes:
		return graphError(fmt.Sprintf("entry %d out of range [0,%d)", g.Entry, g.NumNodes))
	case g.Exit < 0 || g.Exit >= g.NumNodes:
		return graphError(fmt.Sprintf("exit %d out of range [0,%d)", g.Exit, g.NumNodes))
	case g.Entry == g.Exit:
		return graphError(fmt.Sprintf("entry and exit are both node %d", g.Entry))
	}
	for i, e := range g.Edges {
		switch {
		case e.From < 0 || e.From >= g.NumNodes:
			return edgeError(i, fmt.Sprintf("source %d out of range [0,%d)", e.From, g.NumNodes))
		case e.To < 0 || e.To >= g.NumNodes:
			return edgeError(i, fmt.Sprintf("target %d out of range [0,%d)", e.To, g.NumNodes))
		case e.From == g.Exit:
			return edgeError(i, fmt.Sprintf("leaves exit node %d", g.Exit))
		case math.IsNaN(e.Weight):
			return edgeError(i, "weight is NaN")
		}
	}
	return nil
}

func newNumberer(g *Graph, s *scratch) *numberer {
	n, m := g.NumNodes, len(g.Edges)
	s.b = numberer{
		s:     s,
		g:     g,
		entry: int32(g.Entry),
		exit:  int32(g.Exit),
		from:  take(&s.from, m),
		to:    take(&s.to, m),
		np:    take(&s.np, n),
		mark:  take(&s.mark, n),
	}
	b := &s.b
	for i, e := range g.Edges {
		b.from[i], b.to[i] = int32(e.From), int32(e.To)
	}
	// Successor lists by counting sort; stable, so each list is in input
	// edge order and the DFS is deterministic.
	b.succStart = take(&s.succStart, n+1)
	for _, f := range b.from {
		b.succStart[f+1]++
	}
	for v := range n {
		b.succStart[v+1] += b.succStart[v]
	}
	b.succ = take(&s.succ, m)
	next := take(&s.next, n)
	copy(next, b.succStart[:n])
	for i, f := range b.from {
		b.succ[next[f]] = int32(i)
		next[f]++
	}
	return b
}

// findBackedges runs an iterative DFS from Entry (graphs of 50k blocks
// would overflow a recursive one). An edge into a node still on the DFS
// stack closes a cycle: it is a backedge. Removing backedges leaves a DAG
// whatever the graph's shape, reducible or not [Ball-Larus 96 §3.3]. The
// postorder it records is a reverse topological order of that DAG.
func (b *numberer) findBackedges() ([]EdgeKind, error) {
	n := b.g.NumNodes
	const (
		unseen = iota
		onStack
		done
	)
	s := b.s
	kind := take(&s.kind, len(b.from))
	state := take(&s.state, n)
	pos := take(&s.pos, n)
	copy(pos, b.succStart[:n])
	b.post = takeCap(&s.post, n+1)
	stack := append(takeCap(&s.stack, 1), b.entry)
	state[b.entry] = onStack
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		if pos[v] == b.succStart[v+1] {
			state[v] = done
			b.post = append(b.post, v)
			stack = stack[:len(stack)-1]
			continue
		}
		e := b.succ[pos[v]]
		pos[v]++
		switch w := b.to[e]; state[w] {
		case unseen:
			state[w] = onStack
			stack = append(stack, w)
		case onStack:
			kind[e] = Backedge
		}
	}
	s.stack = stack[:0] // keep what it grew to
	for v := range n {
		if state[v] != done && v != int(b.exit) {
			return nil, nodeError(v, "not reachable from entry")
		}
	}
	if state[b.exit] != done {
		// A procedure that never returns (for (;;) {...}) still has paths:
		// they end at backedges, through the pseudo edges v→EXIT. Exit has
		// no successors, so it may head the reverse topological order.
		b.post = slices.Insert(b.post, 0, b.exit)
	}
	return kind, nil
}

// satAdd adds without wrapping: a uint64 overflow saturates, which is
// enough to tell that a count exceeds any limit.
func satAdd(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return s
}

// countRaw counts paths with the backedges alone removed, saturating, and
// refuses nodes that cannot reach Exit.
func (b *numberer) countRaw(kind []EdgeKind) (uint64, error) {
	for _, v := range b.post {
		if v == b.exit {
			b.np[v] = 1
			continue
		}
		if v == b.entry {
			continue
		}
		var s uint64
		for _, e := range b.succ[b.succStart[v]:b.succStart[v+1]] {
			if kind[e] == DAGEdge {
				s = satAdd(s, b.np[b.to[e]])
			} else {
				s = satAdd(s, 1) // the v→EXIT pseudo edge
			}
		}
		if s == 0 {
			return 0, nodeError(int(v), "no path to exit")
		}
		b.np[v] = s
	}
	s := b.entryTotal(kind)
	if s == 0 {
		return 0, nodeError(int(b.entry), "no path to exit")
	}
	return s, nil
}

// entryTotal counts the paths from Entry, given the counts of every other
// node in b.np: its own out-edges plus one ENTRY→w pseudo edge per distinct
// target w ≠ Entry of a backedge or broken edge.
func (b *numberer) entryTotal(kind []EdgeKind) uint64 {
	var s uint64
	v := b.entry
	for _, e := range b.succ[b.succStart[v]:b.succStart[v+1]] {
		if kind[e] == DAGEdge {
			s = satAdd(s, b.np[b.to[e]])
		} else {
			s = satAdd(s, 1)
		}
	}
	b.stamp++
	for e, k := range kind {
		if w := b.to[e]; k.Breaks() && w != b.entry && b.mark[w] != b.stamp {
			b.mark[w] = b.stamp
			s = satAdd(s, b.np[w])
		}
	}
	b.np[v] = s
	return s
}

// build lays out the DAG view for the final edge kinds, computes path
// counts and values, places increments on chords and fills num.
func (b *numberer) build(num *Numbering, kind []EdgeKind, maxPaths uint64) error {
	n, m := b.g.NumNodes, len(b.from)
	num.NumNodes, num.Entry, num.Exit = n, b.g.Entry, b.g.Exit
	num.entry, num.exit = b.entry, b.exit
	num.edgeTo = b.to
	num.kind = kind

	// DAG view: real DAG edges by index, then v→EXIT pseudo edges by index,
	// then one ENTRY→w pseudo edge per distinct target. This order is also
	// the Val order of each node's out-edges (see the package doc).
	s := b.s
	num.realDag = take(&s.realDag, m)
	num.exitDag = take(&s.exitDag, m)
	num.entryDag = take(&s.entryDag, n)
	for i := range num.realDag {
		num.realDag[i], num.exitDag[i] = -1, -1
	}
	for i := range num.entryDag {
		num.entryDag[i] = -1
	}
	dag := takeCap(&s.dag, m+m/4)
	for e, k := range kind {
		if k == DAGEdge {
			num.realDag[e] = int32(len(dag))
			dag = append(dag, dagEdge{from: b.from[e], to: b.to[e], edge: int32(e), weight: b.g.Edges[e].Weight})
		}
	}
	for e, k := range kind {
		if k.Breaks() {
			num.exitDag[e] = int32(len(dag))
			dag = append(dag, dagEdge{from: b.from[e], to: b.exit, edge: int32(e), pseudo: ToExit, weight: b.g.Edges[e].Weight})
		}
	}
	for e, k := range kind {
		w := b.to[e]
		if !k.Breaks() || w == b.entry {
			continue
		}
		if d := num.entryDag[w]; d >= 0 {
			// The path restarts at w after any backedge into w: the
			// pseudo edge is as hot as all of them together.
			if dag[d].weight += b.g.Edges[e].Weight; math.IsNaN(dag[d].weight) {
				dag[d].weight = math.Inf(1) // +Inf plus -Inf: call it hot
			}
			continue
		}
		num.entryDag[w] = int32(len(dag))
		dag = append(dag, dagEdge{from: b.entry, to: w, edge: int32(e), pseudo: FromEntry, weight: b.g.Edges[e].Weight})
	}
	num.dag = dag
	s.dag = dag[:0] // keep what it grew to

	// Out-lists by stable counting sort of dag indices on the source.
	num.outStart = take(&s.outStart, n+1)
	for i := range dag {
		num.outStart[dag[i].from+1]++
	}
	for v := range n {
		num.outStart[v+1] += num.outStart[v]
	}
	num.outList = take(&s.outList, len(dag))
	next := take(&s.next, n)
	copy(next, num.outStart[:n])
	for i := range dag {
		f := dag[i].from
		num.outList[next[f]] = int32(i)
		next[f]++
	}
	b.orderDispatch(num)

	// Path counts and edge values in reverse topological order
	// [Ball-Larus 96 §3]. Every node is reachable from Entry in the DAG
	// view, so no count exceeds Entry's, which the policy kept ≤ maxPaths.
	np := b.np
	for _, v := range b.post {
		if v == b.exit {
			np[v] = 1
			continue
		}
		var s uint64
		for _, d := range num.outList[num.outStart[v]:num.outStart[v+1]] {
			dag[d].val = s
			var carry uint64
			s, carry = bits.Add64(s, np[dag[d].to], 0)
			if carry != 0 || s > maxPaths {
				return fmt.Errorf("%w: node %d has more than %d paths", ErrPathLimit, v, maxPaths)
			}
		}
		if s == 0 {
			return nodeError(int(v), "no path to exit")
		}
		np[v] = s
	}
	num.total = np[b.entry]
	num.NumPaths = num.total
	if !b.lean {
		num.NodePaths = slices.Clone(np)
	}

	if err := num.placeIncrements(b.g.Entry, b.g.Exit, s); err != nil {
		return err
	}

	num.Kind = slices.Clone(kind)
	num.Val = take(&s.val, m)
	num.Inc = make([]int64, m)
	num.EntryVal = take(&s.entryVal, m)
	num.ExitVal = take(&s.exitVal, m)
	num.EntryInc = make([]int64, m)
	num.ExitInc = make([]int64, m)
	for e := range m {
		if d := num.realDag[e]; d >= 0 {
			num.Val[e], num.Inc[e] = dag[d].val, dag[d].inc
			continue
		}
		d := num.exitDag[e]
		num.ExitVal[e], num.ExitInc[e] = dag[d].val, dag[d].inc
		if d := num.entryDag[b.to[e]]; d >= 0 {
			num.EntryVal[e], num.EntryInc[e] = dag[d].val, dag[d].inc
		}
	}
	return nil
}

// orderDispatch puts each node's Dispatch pseudo edges to EXIT first
// among its pseudo edges, in the order of their targets (then of the
// input edges), so their values are consecutive in that order, and notes
// the first of each node in num.dispatchFirst (Edge.Dispatch).
func (b *numberer) orderDispatch(num *Numbering) {
	s := b.s
	num.dispatchFirst = takeCap(&s.dispatchFirst, 0)
	if !slices.ContainsFunc(b.g.Edges, func(e Edge) bool { return e.Dispatch }) {
		return
	}
	dag := num.dag
	isDispatch := func(d int32) bool {
		return dag[d].pseudo == ToExit && b.g.Edges[dag[d].edge].Dispatch
	}
	for v := range b.g.NumNodes {
		seg := num.outList[num.outStart[v]:num.outStart[v+1]]
		// Real DAG edges come first (dag order); the pseudo edges follow,
		// in input edge order, which the stable sort keeps among equals.
		first := 0
		for first < len(seg) && dag[seg[first]].pseudo != ToExit {
			first++
		}
		pseudo := seg[first:]
		if !slices.ContainsFunc(pseudo, isDispatch) {
			continue
		}
		slices.SortStableFunc(pseudo, func(x, y int32) int {
			dx, dy := isDispatch(x), isDispatch(y)
			switch {
			case dx != dy && dx:
				return -1
			case dx != dy:
				return 1
			case dx:
				return cmp.Compare(b.to[dag[x].edge], b.to[dag[y].edge])
			}
			return 0
		})
		num.dispatchFirst = append(num.dispatchFirst, pseudo[0])
	}
	s.dispatchFirst = num.dispatchFirst[:0]
}

// placeIncrements chooses a maximum spanning tree of the DAG view plus a
// fake EXIT→ENTRY edge, derives node potentials from it and sets
// inc = val + phi(from) - phi(to) on every edge [Ball 94; Ball-Larus 96
// §3.4]. Tree edges get 0, so the heaviest edges carry no instrumentation.
func (num *Numbering) placeIncrements(entry, exit int, s *scratch) error {
	dag := num.dag
	n := num.NumNodes

	order := take(&s.order, len(dag))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int {
		if r := cmp.Compare(dag[y].weight, dag[x].weight); r != 0 {
			return r // heavier first
		}
		return cmp.Compare(x, y)
	})

	// Kruskal with a union-find (union by size, path halving). The fake
	// EXIT→ENTRY edge goes in first: it makes phi(ENTRY) = phi(EXIT), so
	// the register starts at 0 and needs no initial value.
	parent := take(&s.parent, n)
	size := take(&s.size, n)
	for v := range parent {
		parent[v], size[v] = int32(v), 1
	}
	find := func(v int32) int32 {
		for parent[v] != v {
			parent[v] = parent[parent[v]]
			v = parent[v]
		}
		return v
	}
	union := func(x, y int32) bool {
		x, y = find(x), find(y)
		if x == y {
			return false
		}
		if size[x] < size[y] {
			x, y = y, x
		}
		parent[y] = x
		size[x] += size[y]
		return true
	}
	union(int32(entry), int32(exit))
	inTree := take(&s.inTree, len(dag))
	treeEdges := 0
	// A Dispatch source's first pseudo edge to EXIT goes in next, so its
	// potential is minus that edge's value and the ExitInc of each of
	// its Dispatch edges is the edge's rank (Edge.Dispatch). They join
	// distinct nodes to EXIT: no cycle.
	for _, d := range num.dispatchFirst {
		if union(dag[d].from, dag[d].to) {
			inTree[d] = true
			treeEdges++
		}
	}
	for _, d := range order {
		if union(dag[d].from, dag[d].to) {
			inTree[d] = true
			treeEdges++
		}
	}

	// Undirected adjacency of the tree (without the fake edge).
	adjStart := take(&s.adjStart, n+1)
	for d := range dag {
		if inTree[d] {
			adjStart[dag[d].from+1]++
			adjStart[dag[d].to+1]++
		}
	}
	for v := range n {
		adjStart[v+1] += adjStart[v]
	}
	adj := take(&s.adj, 2*treeEdges)
	next := take(&s.tnext, n)
	copy(next, adjStart[:n])
	for d := range dag {
		if inTree[d] {
			f, t := dag[d].from, dag[d].to
			adj[next[f]] = int32(d)
			next[f]++
			adj[next[t]] = int32(d)
			next[t]++
		}
	}

	// Potentials: walk the tree from ENTRY and from EXIT (joined by the
	// fake edge of value 0), phi(to) = phi(from) + val on each tree edge,
	// whichever way it is walked.
	phi := take(&s.phi, n)
	seen := take(&s.seen, n)
	queue := takeCap(&s.queue, n+1)
	queue = append(queue, int32(entry), int32(exit))
	seen[entry], seen[exit] = true, true
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, d := range adj[adjStart[u]:adjStart[u+1]] {
			e := &dag[d]
			val := int64(e.val) // val ≤ maxPathsLimit = MaxInt64
			var v int32
			var p int64
			var ok bool
			if e.from == u {
				v = e.to
				p, ok = addInt64(phi[u], val)
			} else {
				v = e.from
				p, ok = subInt64(phi[u], val)
			}
			if seen[v] {
				continue
			}
			if !ok {
				return fmt.Errorf("%w: potential of node %d", ErrIncrementRange, v)
			}
			seen[v] = true
			phi[v] = p
			queue = append(queue, v)
		}
	}
	for v := range n {
		if !seen[v] {
			// Every node is connected to ENTRY or EXIT through DAG or
			// pseudo edges; reaching this is a bug, reported not panicked.
			return fmt.Errorf("pathnum: internal error: node %d outside the spanning tree", v)
		}
	}
	num.phi = phi

	for d := range dag {
		e := &dag[d]
		if inTree[d] {
			e.inc = 0
			continue
		}
		inc, ok := addInt64(int64(e.val), phi[e.from])
		if ok {
			inc, ok = subInt64(inc, phi[e.to])
		}
		if !ok {
			return fmt.Errorf("%w: edge %d (%d→%d)", ErrIncrementRange, e.edge, e.from, e.to)
		}
		e.inc = inc
	}
	return nil
}

// addInt64 returns a+b and whether it did not overflow.
func addInt64(a, b int64) (int64, bool) {
	s := a + b
	return s, (b >= 0) == (s >= a)
}

// subInt64 returns a-b and whether it did not overflow.
func subInt64(a, b int64) (int64, bool) {
	s := a - b
	return s, (b >= 0) == (s <= a)
}
