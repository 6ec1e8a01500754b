package report

// This file renders the loops view, HPCToolkit's "loops in context"
// [Tallent-Mellor-Crummey-Fagan 09]: under every calling context whose
// procedure has loops, the loop nest of the procedure with the metric
// that the context's paths spent in each loop.
//
// The metadata stores no loops, only each function's blocks and edges, so
// the loops are recovered here: dominators on the metadata CFG (the
// iterative algorithm of Cooper, Harvey and Kennedy), backedges the edges
// whose target dominates their source, and a natural loop per header, the
// header and every block that reaches one of its backedges' sources
// without passing the header [Aho et al., Dragon book §9.6.6]. Natural
// loops are disjoint or nested, or share a header (those are merged), so
// containment gives the nest.

import (
	"fmt"
	"io"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"blpp/cct"
	"blpp/meta"
)

// A Loop is a natural loop of a function of the metadata.
type Loop struct {
	Header   int   // block index
	Blocks   []int // sorted, the header among them
	Parent   int   // index of the innermost enclosing loop, -1 for none
	Depth    int   // 0 for an outermost loop
	Children []int // in header-address order
	in       []bool
}

// Contains reports whether block b is in the loop.
func (l *Loop) Contains(b int) bool { return b >= 0 && b < len(l.in) && l.in[b] }

// FindLoops recovers the natural loops of f from its stored edges. Loops
// come in preorder of the nest (a loop before those it contains), siblings
// by header address. Unreachable blocks are in no loop.
func FindLoops(f *meta.Func) []Loop {
	n := len(f.Blocks)
	if n == 0 {
		return nil
	}
	succ := make([][]int, n)
	pred := make([][]int, n)
	for _, e := range f.Edges {
		if e.To < 0 || int(e.From) >= n || int(e.To) >= n || e.From < 0 {
			continue
		}
		succ[e.From] = append(succ[e.From], int(e.To))
		pred[e.To] = append(pred[e.To], int(e.From))
	}
	// Reverse postorder from the entry, iteratively.
	order := make([]int, n) // block → position in rpo, -1 if unreachable
	for i := range order {
		order[i] = -1
	}
	var post []int
	seen := make([]bool, n)
	type frame struct{ b, next int }
	stack := []frame{{0, 0}}
	seen[0] = true
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next < len(succ[top.b]) {
			s := succ[top.b][top.next]
			top.next++
			if !seen[s] {
				seen[s] = true
				stack = append(stack, frame{s, 0})
			}
			continue
		}
		post = append(post, top.b)
		stack = stack[:len(stack)-1]
	}
	rpo := make([]int, len(post))
	for i, b := range post {
		rpo[len(post)-1-i] = b
	}
	for i, b := range rpo {
		order[b] = i
	}
	// Immediate dominators [Cooper-Harvey-Kennedy 01].
	idom := make([]int, n)
	for i := range idom {
		idom[i] = -1
	}
	idom[0] = 0
	intersect := func(a, b int) int {
		for a != b {
			for order[a] > order[b] {
				a = idom[a]
			}
			for order[b] > order[a] {
				b = idom[b]
			}
		}
		return a
	}
	for changed := true; changed; {
		changed = false
		for _, b := range rpo[1:] {
			nd := -1
			for _, p := range pred[b] {
				if order[p] < 0 || idom[p] < 0 {
					continue
				}
				if nd < 0 {
					nd = p
				} else {
					nd = intersect(p, nd)
				}
			}
			if nd >= 0 && idom[b] != nd {
				idom[b] = nd
				changed = true
			}
		}
	}
	dominates := func(h, b int) bool {
		for {
			if b == h {
				return true
			}
			if b == 0 || idom[b] < 0 {
				return false
			}
			b = idom[b]
		}
	}
	// Natural loops, one per header.
	byHeader := map[int]*Loop{}
	var headers []int
	for _, e := range f.Edges {
		u, h := int(e.From), int(e.To)
		if e.To < 0 || u < 0 || u >= n || h >= n || order[u] < 0 || !dominates(h, u) {
			continue
		}
		l := byHeader[h]
		if l == nil {
			l = &Loop{Header: h, Parent: -1, in: make([]bool, n)}
			l.in[h] = true
			byHeader[h] = l
			headers = append(headers, h)
		}
		work := []int{}
		if !l.in[u] {
			l.in[u] = true
			work = append(work, u)
		}
		for len(work) > 0 {
			b := work[len(work)-1]
			work = work[:len(work)-1]
			for _, p := range pred[b] {
				if order[p] >= 0 && !l.in[p] {
					l.in[p] = true
					work = append(work, p)
				}
			}
		}
	}
	if len(headers) == 0 {
		return nil
	}
	ls := make([]*Loop, 0, len(headers))
	for _, h := range headers {
		l := byHeader[h]
		for b, in := range l.in {
			if in {
				l.Blocks = append(l.Blocks, b)
			}
		}
		ls = append(ls, l)
	}
	// Parents: the smallest loop that contains a loop's header, other
	// than itself. Outer loops are larger, so sort by size then address.
	addr := func(l *Loop) uint64 { return f.Blocks[l.Header].Addr }
	sort.SliceStable(ls, func(i, j int) bool {
		if len(ls[i].Blocks) != len(ls[j].Blocks) {
			return len(ls[i].Blocks) > len(ls[j].Blocks)
		}
		return addr(ls[i]) < addr(ls[j])
	})
	parent := make([]int, len(ls)) // index in ls
	for i, l := range ls {
		parent[i] = -1
		for j := i - 1; j >= 0; j-- {
			if j != i && ls[j].in[l.Header] && len(ls[j].Blocks) > len(l.Blocks) {
				if parent[i] < 0 || len(ls[j].Blocks) < len(ls[parent[i]].Blocks) {
					parent[i] = j
				}
			}
		}
	}
	kids := make([][]int, len(ls))
	var roots []int
	for i := range ls {
		if parent[i] < 0 {
			roots = append(roots, i)
		} else {
			kids[parent[i]] = append(kids[parent[i]], i)
		}
	}
	byAddr := func(s []int) {
		sort.SliceStable(s, func(a, b int) bool { return addr(ls[s[a]]) < addr(ls[s[b]]) })
	}
	var out []Loop
	var walk func(ids []int, par, depth int)
	walk = func(ids []int, par, depth int) {
		byAddr(ids)
		for _, i := range ids {
			k := len(out)
			l := *ls[i]
			l.Parent, l.Depth, l.Children = par, depth, nil
			out = append(out, l)
			if par >= 0 {
				out[par].Children = append(out[par].Children, k)
			}
			walk(kids[i], k, depth+1)
		}
	}
	walk(roots, -1, 0)
	return out
}

// LoopRule says how the view attributes column col to a loop.
func (c *Model) LoopRule(col int) string {
	switch {
	case c.loopFreq(col):
		return "a loop's value is the number of path executions that touch any of its blocks"
	case c.Columns[col].Derived:
		return "a loop's value is the instructions its blocks executed on the context's paths"
	}
	return "a path's " + c.Columns[col].Name + " is apportioned to its blocks by their instruction counts; a loop's value is the share of its blocks"
}

func (c *Model) loopFreq(col int) bool {
	return col == 0 || (c.Columns[col].Name == cct.FreqMetric && !c.Columns[col].Derived)
}

// LoopValues attributes node i's paths to loops (FindLoops of its
// function) for column col, by LoopRule; partial paths count in no loop.
func (c *Model) LoopValues(i, col int, loops []Loop) ([]uint64, error) {
	n := &c.Nodes[i]
	mf := c.Func(n.FuncID())
	vals := make([]uint64, len(loops))
	for _, p := range n.Paths {
		var pathInsns uint64
		for _, b := range p.Blocks {
			pathInsns += uint64(mf.Blocks[b].Insts)
		}
		for k := range loops {
			l := &loops[k]
			if c.loopFreq(col) {
				// Paths touching the loop: an inner loop's paths touch
				// the outer loop too, so nesting never increases it.
				if slices.ContainsFunc(p.Blocks, l.Contains) {
					vals[k] += p.Metrics[0]
				}
				continue
			}
			// The loop's share of the path: instructions, or blocks when
			// the path has no instructions.
			var part, whole uint64
			for _, b := range p.Blocks {
				w := uint64(mf.Blocks[b].Insts)
				if pathInsns == 0 {
					w = 1
				}
				whole += w
				if l.Contains(b) {
					part += w
				}
			}
			if part == 0 || whole == 0 {
				continue
			}
			if c.Columns[col].Derived {
				v, err := mulAdd(vals[k], p.Metrics[0], part)
				if err != nil {
					return nil, err
				}
				vals[k] = v
				continue
			}
			// metric × part / whole ≤ metric: the quotient fits.
			hi, lo := bits.Mul64(p.Metrics[col], part)
			q, _ := bits.Div64(hi, lo, whole)
			vals[k] += q
		}
	}
	return vals, nil
}

// LoopsText writes the loops view: the calling contexts like the tree
// view, children by inclusive value, keeping those whose function has
// loops and their callers; under each context that has loops, its loop
// nest with the value of each loop and its share of the total.
func LoopsText(w io.Writer, c *Model, o ViewOptions) error {
	col := o.Metric
	c.writeHeader(w, "loops in context", col)
	fmt.Fprintf(w, "attribution: %s; a context row shows the context's exclusive value\n\n", c.LoopRule(col))
	loopsOf := map[FuncID][]Loop{}
	has := make([]bool, len(c.Nodes)) // the subtree has a context with loops
	for i := len(c.Nodes) - 1; i >= 0; i-- {
		n := &c.Nodes[i]
		ls, ok := loopsOf[n.FuncID()]
		if !ok {
			ls = FindLoops(c.Func(n.FuncID()))
			loopsOf[n.FuncID()] = ls
		}
		if len(ls) > 0 {
			has[i] = true
		}
		if has[i] && n.Parent >= 0 {
			has[n.Parent] = true
		}
	}
	name := c.Columns[col].Name
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\t%%\t  context / loop\n", name)
	total := c.Total[col]
	nHidden, shown := 0, 0
	mfOf := func(n *CNode) *meta.Func { return c.Func(n.FuncID()) }
	var walk func(ids []int) error
	walk = func(ids []int) error {
		s := append([]int(nil), ids...)
		sort.SliceStable(s, func(i, j int) bool {
			a, b := &c.Nodes[s[i]], &c.Nodes[s[j]]
			if a.Incl[col] != b.Incl[col] {
				return a.Incl[col] > b.Incl[col]
			}
			if a.Name != b.Name {
				return a.Name < b.Name
			}
			return a.ID < b.ID
		})
		for _, i := range s {
			n := &c.Nodes[i]
			if !has[i] {
				continue
			}
			if hidden(n.Incl[col], total, o.All) {
				var count func(i int)
				count = func(i int) {
					nHidden++
					for _, ch := range c.Nodes[i].Children {
						if has[ch] {
							count(ch)
						}
					}
				}
				count(i)
				continue
			}
			where := ""
			switch {
			case n.CallSite != 0:
				where = "  @ " + site(n.CallSite, c.Debug)
			case n.Parent >= 0:
				where = "  (no call site)"
			}
			fmt.Fprintf(tw, "%d\t%s\t  %s%s%s\n", n.Excl[col], pct(n.Excl[col], total), strings.Repeat("  ", n.Depth), n.Name, where)
			shown++
			ls := loopsOf[n.FuncID()]
			vals, err := c.LoopValues(i, col, ls)
			if err != nil {
				return err
			}
			mf := mfOf(n)
			for k := range ls {
				l := &ls[k]
				a := mf.Blocks[l.Header].Addr
				label := "loop " + hex(a)
				if loc := c.Debug.At(a); loc != "" {
					label += " at " + loc
				}
				fmt.Fprintf(tw, "%d\t%s\t  %s%s, %s\n", vals[k], pct(vals[k], total),
					strings.Repeat("  ", n.Depth+1+l.Depth), label, plural(uint64(len(l.Blocks)), "block", "blocks"))
			}
			if err := walk(n.Children); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(c.Roots); err != nil {
		return err
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if shown == 0 && nHidden == 0 {
		fmt.Fprintln(w, "no context's procedure has a loop")
	}
	c.writeFooter(w, nHidden, "context")
	return nil
}
