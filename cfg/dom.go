package cfg

import "sync"

// Dominators, and the depth-first numbering that both they and the loop
// analysis (loops.go) are built on.
//
// Everything here is iterative: a function of 50 000 blocks can have a DFS
// path as long as the function, far deeper than a goroutine stack should be
// asked to recurse.

// NoBlock marks a block that has no immediate dominator because it cannot be
// reached from Entry. It is neither Exit nor an index into Graph.Blocks.
const NoBlock BlockID = -2

// dfsTree is a depth-first search of the blocks reachable from Entry.
// Successors are visited in the order of Graph.Succs; edges to Exit are
// not followed (Exit is not a node).
type dfsTree struct {
	// pre is each block's preorder number, -1 for blocks not reached.
	pre []int32
	// last is the largest preorder number in each block's DFS subtree, so
	// that a is an ancestor of b (or b itself) iff
	// pre[a] <= pre[b] <= last[a].
	last []int32
	// order lists the reached blocks in preorder, post in postorder.
	order []BlockID
	post  []BlockID
	stack []dfsFrame
}

// dfsFrame is a block on the search's stack and how many of its
// successor edges have been looked at.
type dfsFrame struct {
	b    BlockID
	next int32
}

// dfsPool keeps searches for the next: liveness, register liveness,
// loops and dominators each search every graph, and their arrays were
// 280 MB of garbage for libLLVM [decision 118]. A search is given back
// by release once its user is done with it.
var dfsPool = sync.Pool{New: func() any { return new(dfsTree) }}

// release gives t back for another search; t must not be used after.
func (t *dfsTree) release() { dfsPool.Put(t) }

// resize returns s with length n, reusing its array when large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// reached reports whether the search visited b.
func (t *dfsTree) reached(b BlockID) bool { return t.pre[b] >= 0 }

// ancestor reports whether a is b or a proper ancestor of b in the DFS
// tree. Both must have been reached.
func (t *dfsTree) ancestor(a, b BlockID) bool {
	return t.pre[a] <= t.pre[b] && t.pre[b] <= t.last[a]
}

// dfs runs an iterative depth-first search of g from Entry.
func (g *Graph) dfs() *dfsTree { return g.flow().dfs() }

// dfs runs an iterative depth-first search from Entry that visits
// successors in the same order a recursive one would.
func (f *Flow) dfs() *dfsTree {
	n := f.Len()
	t := dfsPool.Get().(*dfsTree)
	t.pre = resize(t.pre, n)
	t.last = resize(t.last, n)
	clear(t.last)
	t.order = resize(t.order, n)[:0]
	t.post = resize(t.post, n)[:0]
	for i := range t.pre {
		t.pre[i] = -1
	}
	if n == 0 {
		return t
	}
	stack := append(t.stack[:0], dfsFrame{Entry, 0})
	t.pre[Entry] = 0
	t.order = append(t.order, Entry)
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		succs := f.succs(top.b)
		pushed := false
		for int(top.next) < len(succs) {
			s := f.to(succs[top.next])
			top.next++
			if s < 0 || t.pre[s] >= 0 {
				continue
			}
			t.pre[s] = int32(len(t.order))
			t.order = append(t.order, s)
			stack = append(stack, dfsFrame{s, 0})
			pushed = true
			break
		}
		if pushed {
			continue
		}
		// All successors done: the subtree of top.b is numbered.
		t.last[top.b] = int32(len(t.order) - 1)
		t.post = append(t.post, top.b)
		stack = stack[:len(stack)-1]
	}
	t.stack = stack
	return t
}

// Dominators returns the immediate dominator of every block: idom[Entry] is
// Entry, blocks that cannot be reached from Entry get NoBlock. Edges to Exit
// play no part.
//
// The algorithm is the iterative one of Cooper, Harvey & Kennedy, "A Simple,
// Fast Dominance Algorithm" (2001): visit the blocks in reverse postorder,
// set each block's dominator to the nearest common ancestor, in the current
// tree, of its already-processed predecessors, and repeat until nothing
// changes. Reducible graphs settle in two passes; the paper measures it
// faster than Lengauer-Tarjan on CFGs of realistic size. Its worst case is
// quadratic, because a pass walks each backedge's whole span up the
// dominator tree: a contrived 50 000-block chain whose blocks each jump back
// half-way up it takes about a second.
func (g *Graph) Dominators() []BlockID {
	n := len(g.Blocks)
	idom := make([]BlockID, n)
	for i := range idom {
		idom[i] = NoBlock
	}
	if n == 0 {
		return idom
	}
	t := g.dfs()
	defer t.release()
	m := len(t.post)
	// Work on reverse-postorder indices: rpo[b] = m-1-postorder position,
	// so Entry is 0 and every DFS tree parent precedes its children. In
	// these numbers "walk up towards the entry" means "go to a smaller
	// number", which is what intersect relies on.
	rpo := make([]int32, n)
	for i := range rpo {
		rpo[i] = -1
	}
	for i, b := range t.post {
		rpo[b] = int32(m - 1 - i)
	}
	// Predecessors of each block, as RPO numbers of reached blocks, packed
	// into one array (CSR) so the fixed-point loop stays in cache.
	npred := 0
	for _, b := range t.post {
		npred += len(g.Preds(b))
	}
	start := make([]int32, m+1)
	preds := make([]int32, 0, npred)
	for r := 0; r < m; r++ {
		b := t.post[m-1-r]
		for _, e := range g.Preds(b) {
			if p := g.Edges[e].From; rpo[p] >= 0 {
				preds = append(preds, rpo[p])
			}
		}
		start[r+1] = int32(len(preds))
	}

	doms := make([]int32, m)
	for i := range doms {
		doms[i] = -1
	}
	doms[0] = 0
	intersect := func(a, b int32) int32 {
		for a != b {
			for a > b {
				a = doms[a]
			}
			for b > a {
				b = doms[b]
			}
		}
		return a
	}
	for changed := true; changed; {
		changed = false
		for r := int32(1); r < int32(m); r++ {
			nd := int32(-1)
			for _, p := range preds[start[r]:start[r+1]] {
				if doms[p] < 0 {
					continue // not processed yet in the first pass
				}
				if nd < 0 {
					nd = p
				} else {
					nd = intersect(p, nd)
				}
			}
			if nd != doms[r] {
				doms[r] = nd
				changed = true
			}
		}
	}
	for r := 0; r < m; r++ {
		idom[t.post[m-1-r]] = t.post[m-1-int(doms[r])]
	}
	return idom
}

// Dominates reports whether a dominates b (every path from Entry to b passes
// through a; a block dominates itself), given idom as returned by
// Graph.Dominators. It walks b's dominator-tree ancestors, so it costs the
// depth of b; build a DomTree for many queries. Unreached blocks, Exit and
// out-of-range IDs dominate nothing and are dominated by nothing.
func Dominates(idom []BlockID, a, b BlockID) bool {
	n := BlockID(len(idom))
	if a < 0 || a >= n || b < 0 || b >= n || idom[a] == NoBlock {
		return false
	}
	// The step bound keeps a malformed idom (a cycle) from looping forever.
	for steps := 0; steps <= len(idom); steps++ {
		if b == a {
			return true
		}
		p := idom[b]
		if p < 0 || p >= n || p == b {
			return false
		}
		b = p
	}
	return false
}

// DomTree answers dominance queries in constant time by numbering the
// dominator tree: a dominates b iff b's preorder number lies in the range of
// a's subtree.
type DomTree struct {
	// Idom is the immediate dominator of each block, as from
	// Graph.Dominators.
	Idom []BlockID
	pre  []int32 // preorder number in the dominator tree, -1 if unreached
	last []int32 // largest preorder number in the subtree
}

// DomTree computes the dominators of g and numbers their tree.
func (g *Graph) DomTree() *DomTree { return NewDomTree(g.Dominators()) }

// NewDomTree numbers the dominator tree given by idom (as returned by
// Graph.Dominators: idom[Entry] == Entry, NoBlock for unreached blocks).
// Entries that do not form a tree rooted at Entry are treated as unreached.
func NewDomTree(idom []BlockID) *DomTree {
	n := len(idom)
	t := &DomTree{Idom: idom, pre: make([]int32, n), last: make([]int32, n)}
	for i := range t.pre {
		t.pre[i] = -1
	}
	if n == 0 || idom[Entry] != Entry {
		return t
	}
	// Children lists in CSR form, in ascending block order.
	start := make([]int32, n+1)
	for b, p := range idom {
		if BlockID(b) != Entry && p >= 0 && int(p) < n {
			start[p+1]++
		}
	}
	for i := 1; i <= n; i++ {
		start[i] += start[i-1]
	}
	kids := make([]BlockID, start[n])
	fill := append([]int32(nil), start[:n]...)
	for b, p := range idom {
		if BlockID(b) != Entry && p >= 0 && int(p) < n {
			kids[fill[p]] = BlockID(b)
			fill[p]++
		}
	}
	type frame struct {
		b    BlockID
		next int32
	}
	num := int32(0)
	t.pre[Entry] = num
	stack := []frame{{Entry, start[Entry]}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next < start[top.b+1] {
			c := kids[top.next]
			top.next++
			if t.pre[c] >= 0 {
				continue // malformed input; never for a real tree
			}
			num++
			t.pre[c] = num
			stack = append(stack, frame{c, start[c]})
			continue
		}
		t.last[top.b] = num
		stack = stack[:len(stack)-1]
	}
	return t
}

// Dominates reports whether a dominates b (reflexively). Unreached blocks,
// Exit and out-of-range IDs dominate nothing and are dominated by nothing.
func (t *DomTree) Dominates(a, b BlockID) bool {
	n := BlockID(len(t.pre))
	if a < 0 || a >= n || b < 0 || b >= n || t.pre[a] < 0 || t.pre[b] < 0 {
		return false
	}
	return t.pre[a] <= t.pre[b] && t.pre[b] <= t.last[a]
}

// StrictlyDominates reports whether a dominates b and a != b.
func (t *DomTree) StrictlyDominates(a, b BlockID) bool {
	return a != b && t.Dominates(a, b)
}
