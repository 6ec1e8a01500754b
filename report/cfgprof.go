package report

// This file draws the profiled control-flow graph of functions of an
// instrumented binary as Graphviz dot: the original CFG from the
// metadata, block and edge counts from the profile, and the edges of the
// function's hot paths in red, thicker the larger the share of the
// function's instructions executed on hot paths through them.

import (
	"fmt"
	"io"
	"sort"

	"github.com/blpp/blpp/meta"
)

// CFGProfileOptions are the options of CFGProfileDot.
type CFGProfileOptions struct {
	// Share: a function's hot paths are the fewest whose instructions
	// executed (count × instructions on the path) cover this share of
	// those of all its completed paths; 0 means DefaultHotShare.
	Share float64
}

// funcHotEdges returns, per edge of function fn, the share of the
// function's path instructions executed on its hot paths through it.
func (m *Model) funcHotEdges(fn FuncID, share float64) ([]float64, error) {
	mf := m.Func(fn)
	fp := m.Profile(fn)
	type pv struct {
		id uint64
		v  uint64
		e  *meta.Expansion
	}
	var ps []pv
	var total uint64
	for id, c := range fp.Paths {
		e, err := m.ExpandPath(fn, id)
		if err != nil {
			return nil, err
		}
		v := satMul(c, e.Insns)
		total = satAdd(total, v)
		ps = append(ps, pv{id, v, e})
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].v != ps[j].v {
			return ps[i].v > ps[j].v
		}
		return ps[i].id < ps[j].id
	})
	out := make([]float64, len(mf.Edges))
	var sum uint64
	for _, p := range ps {
		if p.v == 0 || float64(sum) >= share*float64(total) {
			break
		}
		sum = satAdd(sum, p.v)
		for _, k := range p.e.Edges {
			out[k] += float64(p.v) / float64(total)
		}
	}
	return out, nil
}

var edgeKindNames = [...]string{"fallthrough", "branch", "jumptable", "call-return", "tailcall", "return", "noreturn", "halt"}

// CFGProfileDot writes one digraph with a cluster per function of funcs
// (uninstrumented ones are refused).
func CFGProfileDot(w io.Writer, m *Model, funcs []FuncID, o CFGProfileOptions) error {
	share := o.Share
	if share == 0 {
		share = DefaultHotShare
	}
	fmt.Fprintln(w, "digraph blpp {")
	fmt.Fprintln(w, "  node [shape=box, fontname=\"monospace\", fontsize=10];")
	fmt.Fprintln(w, "  edge [fontname=\"monospace\", fontsize=9];")
	for ci, fn := range funcs {
		mf := m.Func(fn)
		if !mf.Instrumented {
			return fmt.Errorf("%s is not instrumented (%s): it has no counts", m.DisplayName(mf.Name), mf.Reason)
		}
		fp := m.Profile(fn)
		hot, err := m.funcHotEdges(fn, share)
		if err != nil {
			return err
		}
		var maxBlock uint64
		for _, c := range fp.Blocks {
			maxBlock = max(maxBlock, c)
		}
		fmt.Fprintf(w, "  subgraph cluster_%d {\n", ci)
		fmt.Fprintf(w, "    label=%q;\n", fmt.Sprintf("%s @ %s: %d calls, %d instructions executed; red: hot paths (%.4g%% of its path instructions)",
			m.DisplayName(mf.Name), hex(mf.Entry), fp.Calls, fp.Insns, 100*share))
		for b, blk := range mf.Blocks {
			label := fmt.Sprintf("B%d %s\n%d insts", b, hex(blk.Addr), blk.Insts)
			if loc := m.debugOf(fn).Span(blk.Addr, blk.End); loc != "" {
				label += "\n" + loc
			}
			label += fmt.Sprintf("\ncount %d", fp.Blocks[b])
			attrs := ""
			if fp.Blocks[b] == 0 {
				attrs = ", style=dashed, color=gray50, fontcolor=gray50"
			} else if maxBlock > 0 {
				// Heat: white for the coolest executed blocks up to a
				// saturated orange for the hottest.
				sat := 0.1 + 0.6*float64(fp.Blocks[b])/float64(maxBlock)
				attrs = fmt.Sprintf(", style=filled, fillcolor=\"0.08 %.3f 1.000\"", sat)
			}
			fmt.Fprintf(w, "    c%d_%d [label=%q%s];\n", ci, b, label, attrs)
		}
		fmt.Fprintf(w, "    c%d_exit [label=\"EXIT\", shape=ellipse];\n", ci)
		for k, e := range mf.Edges {
			to := fmt.Sprintf("c%d_%d", ci, e.To)
			if e.To < 0 {
				to = fmt.Sprintf("c%d_exit", ci)
			}
			kind := fmt.Sprint(e.Kind)
			if int(e.Kind) < len(edgeKindNames) {
				kind = edgeKindNames[e.Kind]
			}
			label := fmt.Sprintf("%s\n%d", kind, fp.Edges[k])
			attrs := ""
			switch {
			case hot[k] > 0:
				label += fmt.Sprintf(" (hot %.1f%%)", 100*hot[k])
				attrs = fmt.Sprintf(", color=red, fontcolor=red, penwidth=%.2f", 1+5*min(hot[k], 1))
			case fp.Edges[k] == 0:
				attrs = ", style=dotted, color=gray50"
			}
			fmt.Fprintf(w, "    c%d_%d -> %s [label=%q%s];\n", ci, e.From, to, label, attrs)
		}
		fmt.Fprintln(w, "  }")
	}
	fmt.Fprintln(w, "}")
	return nil
}

// MatchFuncs returns the instrumented functions for which match is true
// of the symbol or of its demangled form (whatever m.Names say), in
// table order.
func (m *Model) MatchFuncs(match func(name string) bool) []FuncID {
	var out []FuncID
	for _, i := range m.FuncIDs() {
		if name := m.Func(i).Name; m.Func(i).Instrumented && (match(name) || match(DisplayName(name, NameOptions{}))) {
			out = append(out, i)
		}
	}
	return out
}
