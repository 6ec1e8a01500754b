package report

// This file renders the loops view, HPCToolkit's "loops in context"
// [Tallent-Mellor-Crummey-Fagan 09]: under every calling context whose
// procedure has loops, the loop nest of the procedure with the metric
// that the context's paths spent in each loop.
//
// The metadata stores no loops, only each function's blocks and edges, so
// the loops are recovered here, by the loop finder that analysed the
// original binary (cfg.Flow.Loops, Havlak's nesting forest): the view
// shows the loops `blpp cfg` lists, irreducible regions included.

import (
	"fmt"
	"io"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/meta"
)

// A Loop is a loop of a function of the metadata: a natural loop, or an
// irreducible region (a cycle entered at more than one block), as cfg.Loop.
type Loop struct {
	Header   int   // block index; for an irreducible region, the entry met first
	Blocks   []int // sorted, the header among them
	Parent   int   // index of the innermost enclosing loop, -1 for none
	Depth    int   // 0 for an outermost loop
	Children []int // in header-address order
	// Irreducible: entered at more than one block (blpp cfg says
	// "irreducible region").
	Irreducible bool
	in          []bool
}

// Contains reports whether block b is in the loop.
func (l *Loop) Contains(b int) bool { return b >= 0 && b < len(l.in) && l.in[b] }

// FindLoops recovers the loops of f from its stored edges with cfg's loop
// finder, so they are the loops `blpp cfg` lists for the original. Loops
// come in preorder of the nest (a loop before those it contains), siblings
// by header address. Unreachable blocks are in no loop. A nest too large
// for cfg to describe gives no loops (the rewriter refuses such a
// function, so its metadata has no blocks).
func FindLoops(f *meta.Func) []Loop {
	n := len(f.Blocks)
	if n == 0 {
		return nil
	}
	edges := make([]cfg.FlowEdge, len(f.Edges))
	for i, e := range f.Edges {
		edges[i] = cfg.FlowEdge{From: cfg.BlockID(e.From), To: cfg.BlockID(e.To)}
	}
	cl, err := cfg.NewFlow(n, edges).Loops()
	if err != nil || len(cl) == 0 {
		return nil
	}
	// cfg orders siblings by block index; order them by header address.
	addr := func(i int) uint64 { return f.Blocks[cl[i].Header].Addr }
	kids := make([][]int, len(cl)+1) // kids[p+1]: the loops in loop p, -1 for none
	for i := range cl {
		kids[cl[i].Parent+1] = append(kids[cl[i].Parent+1], i)
	}
	out := make([]Loop, 0, len(cl))
	var walk func(ids []int, par int)
	walk = func(ids []int, par int) {
		sort.SliceStable(ids, func(a, b int) bool { return addr(ids[a]) < addr(ids[b]) })
		for _, i := range ids {
			c := &cl[i]
			l := Loop{Header: int(c.Header), Parent: par, Depth: c.Depth - 1, Irreducible: c.Irreducible,
				Blocks: make([]int, len(c.Blocks)), in: make([]bool, n)}
			for k, b := range c.Blocks {
				l.Blocks[k] = int(b)
				l.in[b] = true
			}
			k := len(out)
			out = append(out, l)
			if par >= 0 {
				out[par].Children = append(out[par].Children, k)
			}
			walk(kids[i+1], k)
		}
	}
	walk(kids[0], -1)
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
				where = "  @ " + site(n.CallSite, c.siteLines(n))
			case n.Parent >= 0:
				where = "  (no call site)"
			}
			fmt.Fprintf(tw, "%d\t%s\t  %s%s%s\n", n.Excl[col], pct(n.Excl[col], total), strings.Repeat("  ", n.Depth), c.DisplayName(n.Name), where)
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
				if l.Irreducible {
					label = "irreducible region " + hex(a)
				}
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
