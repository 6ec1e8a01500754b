package pathnum

import (
	"math"
	"math/rand/v2"
)

// Random graph generators for the property tests. Every generator returns
// a valid Graph: every node reachable from Entry, Exit without out-edges,
// every other node with at least one out-edge. Node labels and edge order
// are shuffled so that Entry is not always 0 and edge indices carry no
// structure.

// shuffled relabels nodes by a random permutation and shuffles edges.
func shuffled(rng *rand.Rand, n, entry, exit int, edges []Edge) *Graph {
	perm := rng.Perm(n)
	out := make([]Edge, len(edges))
	for i, e := range edges {
		out[i] = Edge{From: perm[e.From], To: perm[e.To], Weight: e.Weight}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return &Graph{NumNodes: n, Entry: perm[entry], Exit: perm[exit], Edges: out}
}

// randomDAG builds an acyclic graph on n ≥ 2 nodes: 0 is Entry, n-1 is Exit,
// edges go forward only, mostly to near successors so path counts stay
// enumerable. Parallel edges happen.
func randomDAG(rng *rand.Rand, n int) *Graph {
	var edges []Edge
	hasIn := make([]bool, n)
	for i := 0; i < n-1; i++ {
		deg := 1
		if rng.IntN(5) < 2 {
			deg++
		}
		if rng.IntN(10) == 0 {
			deg++
		}
		for range deg {
			span := min(n-1-i, 1+rng.IntN(4))
			j := i + 1 + rng.IntN(span)
			edges = append(edges, Edge{From: i, To: j, Weight: float64(rng.IntN(100))})
			hasIn[j] = true
		}
	}
	for j := 1; j < n; j++ {
		if !hasIn[j] {
			edges = append(edges, Edge{From: rng.IntN(j), To: j, Weight: 1})
		}
	}
	return shuffled(rng, n, 0, n-1, edges)
}

// structGen composes a reducible CFG from structured statements: sequences,
// if/else, switch, while, do-while and infinite loops, break, continue and
// early return. Weights are 10^loopdepth, as the cfg package estimates them.
type structGen struct {
	rng    *rand.Rand
	edges  []Edge
	n      int
	exit   int
	budget int
	loops  []*loopCtx
}

// loopCtx holds a loop's continue and break targets, created on first use
// so that no block is left unreachable.
type loopCtx struct {
	g          *structGen
	cont, brk  int
	depth      int
	contLazily bool
}

func (l *loopCtx) breakTarget() int {
	if l.brk < 0 {
		l.brk = l.g.node()
	}
	return l.brk
}

func (l *loopCtx) contTarget() int {
	if l.cont < 0 {
		l.cont = l.g.node()
	}
	return l.cont
}

func (s *structGen) node() int {
	s.n++
	return s.n - 1
}

func (s *structGen) edge(a, b, depth int) {
	s.edges = append(s.edges, Edge{From: a, To: b, Weight: math.Pow(10, float64(depth))})
}

// stmts emits a few statements starting in block cur and returns the block
// control falls out of, or -1 if it never does.
func (s *structGen) stmts(cur, depth int) int {
	k := 1 + s.rng.IntN(3)
	for i := 0; i < k && cur >= 0; i++ {
		cur = s.stmt(cur, depth)
	}
	return cur
}

func (s *structGen) stmt(cur, depth int) int {
	if s.n+5 > s.budget {
		return cur
	}
	var loop *loopCtx
	if len(s.loops) > 0 {
		loop = s.loops[len(s.loops)-1]
	}
	join := -1
	joinFrom := func(b int) {
		if b < 0 {
			return
		}
		if join < 0 {
			join = s.node()
		}
		s.edge(b, join, depth)
	}
	choice := s.rng.IntN(11)
	if choice >= 5 && choice <= 7 && depth >= 6 {
		choice = 0 // no loops nested deeper than real code has them
	}
	switch choice {
	case 0, 1: // straight-line code: a new block
		b := s.node()
		s.edge(cur, b, depth)
		return b
	case 2: // if/else
		t, e := s.node(), s.node()
		s.edge(cur, t, depth)
		s.edge(cur, e, depth)
		joinFrom(s.stmts(t, depth))
		joinFrom(s.stmts(e, depth))
		return join
	case 3: // if without else, sometimes an empty one (parallel edges)
		t := s.node()
		s.edge(cur, t, depth)
		if s.rng.IntN(3) == 0 {
			s.edge(cur, t, depth)
			return t
		}
		joinFrom(cur)
		joinFrom(s.stmts(t, depth))
		return join
	case 4: // switch
		k := 2 + s.rng.IntN(3)
		for range k {
			c := s.node()
			s.edge(cur, c, depth)
			joinFrom(s.stmts(c, depth))
		}
		return join
	case 5: // while (c) body
		h, body := s.node(), s.node()
		s.edge(cur, h, depth+1)
		s.edge(h, body, depth+1)
		l := &loopCtx{g: s, cont: h, brk: s.node(), depth: depth + 1}
		s.edge(h, l.brk, depth)
		s.loops = append(s.loops, l)
		if end := s.stmts(body, depth+1); end >= 0 {
			s.edge(end, h, depth+1)
		}
		s.loops = s.loops[:len(s.loops)-1]
		return l.brk
	case 6: // do body while (c)
		body := s.node()
		s.edge(cur, body, depth+1)
		l := &loopCtx{g: s, cont: -1, brk: -1, depth: depth + 1}
		s.loops = append(s.loops, l)
		end := s.stmts(body, depth+1)
		s.loops = s.loops[:len(s.loops)-1]
		if end >= 0 {
			s.edge(end, l.contTarget(), depth+1)
		}
		if l.cont >= 0 {
			s.edge(l.cont, body, depth+1)
			s.edge(l.cont, l.breakTarget(), depth)
		}
		return l.brk
	case 7: // for (;;) body: leaves only by break or return
		h := s.node()
		s.edge(cur, h, depth+1)
		l := &loopCtx{g: s, cont: h, brk: -1, depth: depth + 1}
		s.loops = append(s.loops, l)
		if end := s.stmts(h, depth+1); end >= 0 {
			s.edge(end, h, depth+1)
		}
		s.loops = s.loops[:len(s.loops)-1]
		return l.brk
	case 8: // if (c) return
		t := s.node()
		s.edge(cur, t, depth)
		s.edge(cur, s.exit, depth)
		return t
	case 9: // if (c) break / continue inside a loop
		if loop == nil {
			return cur
		}
		t := s.node()
		s.edge(cur, t, depth)
		if s.rng.IntN(2) == 0 {
			s.edge(cur, loop.breakTarget(), depth)
		} else {
			s.edge(cur, loop.contTarget(), depth)
		}
		return t
	default: // unconditional return, break or continue ends the sequence
		if loop != nil && s.rng.IntN(2) == 0 {
			if s.rng.IntN(2) == 0 {
				s.edge(cur, loop.breakTarget(), depth)
			} else {
				s.edge(cur, loop.contTarget(), depth)
			}
			return -1
		}
		if s.rng.IntN(3) == 0 {
			s.edge(cur, s.exit, depth)
			return -1
		}
		return cur
	}
}

// structuredCFG builds a reducible CFG of about budget nodes.
func structuredCFG(rng *rand.Rand, budget int) *Graph {
	s := &structGen{rng: rng, budget: budget}
	entry := s.node()
	s.exit = s.node()
	end := entry
	for end >= 0 && s.n+5 <= budget {
		end = s.stmts(end, 0)
	}
	if end >= 0 {
		s.edge(end, s.exit, 0)
	}
	return shuffled(rng, s.n, entry, s.exit, s.edges)
}

// randomCFG builds an arbitrary, usually irreducible, graph on n ≥ 2 nodes:
// random edges (self loops, edges into Entry and parallel edges included),
// then repairs so every node is reachable and every node but Exit has a
// successor.
func randomCFG(rng *rand.Rand, n int, extra int) *Graph {
	entry, exit := 0, n-1
	var edges []Edge
	add := func(a, b int) {
		edges = append(edges, Edge{From: a, To: b, Weight: float64(1 + rng.IntN(1000))})
	}
	for range n - 1 + extra {
		a := rng.IntN(n - 1) // never Exit
		add(a, rng.IntN(n))
	}
	// Reachability repair: BFS, then hook each unreached node to a reached
	// non-exit node and continue the search from it.
	reached := make([]bool, n)
	var order []int
	visit := func(v int) {
		reached[v] = true
		order = append(order, v)
	}
	visit(entry)
	for i := 0; ; {
		for ; i < len(order); i++ {
			v := order[i]
			for _, e := range edges {
				if e.From == v && !reached[e.To] {
					visit(e.To)
				}
			}
		}
		u := -1
		for v := range n {
			if !reached[v] {
				u = v
				break
			}
		}
		if u < 0 {
			break
		}
		var srcs []int
		for _, v := range order {
			if v != exit {
				srcs = append(srcs, v)
			}
		}
		add(srcs[rng.IntN(len(srcs))], u)
		visit(u)
	}
	hasOut := make([]bool, n)
	for _, e := range edges {
		hasOut[e.From] = true
	}
	for v := range n {
		if v != exit && !hasOut[v] {
			add(v, rng.IntN(n))
		}
	}
	return shuffled(rng, n, entry, exit, edges)
}

// diamonds builds a chain of k if/else diamonds: 2^k paths.
func diamonds(k int) *Graph {
	var edges []Edge
	top := 0
	n := 1
	for range k {
		a, b, j := n, n+1, n+2
		n += 3
		edges = append(edges,
			Edge{From: top, To: a, Weight: 1}, Edge{From: top, To: b, Weight: 1},
			Edge{From: a, To: j, Weight: 1}, Edge{From: b, To: j, Weight: 1})
		top = j
	}
	exit := n
	edges = append(edges, Edge{From: top, To: exit, Weight: 1})
	return &Graph{NumNodes: n + 1, Entry: 0, Exit: exit, Edges: edges}
}

// loopChain builds k loops in sequence, each a header with an if/else body
// and a latch, and an early return out of every other body: a large graph
// with a small path count.
func loopChain(k int) *Graph {
	var edges []Edge
	e := func(a, b int, w float64) { edges = append(edges, Edge{From: a, To: b, Weight: w}) }
	cur, n := 0, 1
	exit := -1
	var rets []int
	for i := range k {
		h, t, f, l := n, n+1, n+2, n+3
		n += 4
		e(cur, h, 1)
		e(h, t, 10)
		e(h, f, 10)
		e(t, l, 10)
		e(f, l, 10)
		e(l, h, 10)
		if i%2 == 1 {
			rets = append(rets, t)
		}
		cur = n
		n++
		e(h, cur, 1)
	}
	exit = n
	n++
	e(cur, exit, 1)
	for _, r := range rets {
		e(r, exit, 1)
	}
	return &Graph{NumNodes: n, Entry: 0, Exit: exit, Edges: edges}
}
