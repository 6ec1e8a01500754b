package report

// This file finds the hot paths of a profile as Ammons, Ball and Larus do
// [Ammons-Ball-Larus 97 §6]: the paths of every calling context (threads
// merged) ranked by a metric, the hot ones being the fewest that cover a
// share of the metric's total, each classed dense or sparse by its metric
// per executed instruction against the program's average.

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/blpp/blpp/cct"
)

// DefaultHotShare is the share of the metric the hot paths cover.
const DefaultHotShare = 0.9

// A HotPath is one path of one context.
type HotPath struct {
	Context int // index in Model.Nodes
	Func    FuncID
	Name    string
	ID      uint64
	Count   uint64 // executions
	Insns   uint64 // instructions of one execution
	Value   uint64 // the metric, summed over the executions
	// Rate is the metric per executed instruction: Value / (Count × Insns).
	Rate   float64
	Dense  bool // Rate at least the program's average
	Blocks []int
}

// HotPaths is the hot-path model of a profile.
type HotPaths struct {
	Model  *Model
	Col    int     // the metric's column
	Share  float64 // the threshold: share of Total the hot paths cover
	Total  uint64  // the metric summed over every executed path
	Insns  uint64  // instructions of every executed path
	Paths  int     // executed paths (path × context) in the profile
	Hot    []HotPath
	HotSum uint64 // the metric summed over Hot
	// Average is the program's metric per executed instruction,
	// Total / Insns: a path is dense when its Rate is at least Average.
	Average float64
}

// DefaultHotMetric is the metric the hot view ranks by when none is
// asked for: the profile's first measured metric (cycles, misses, or
// their fallback), else the derived insns.
func DefaultHotMetric(c *Model) string {
	for _, col := range c.Columns {
		if !col.Derived && col.Name != cct.FreqMetric && col.Kind != cct.MetricUnavailable {
			return col.Name
		}
	}
	return MetricInsns
}

// MakeHotPaths ranks the paths of c by metric ("" for DefaultHotMetric)
// and keeps the smallest set whose metric reaches share of the total.
func MakeHotPaths(c *Model, metric string, share float64) (*HotPaths, error) {
	if metric == "" {
		metric = DefaultHotMetric(c)
	}
	col, err := c.Column(metric)
	if err != nil {
		return nil, err
	}
	if !(share > 0 && share <= 1) {
		return nil, fmt.Errorf("hot share %g: want a fraction in (0, 1]", share)
	}
	h := &HotPaths{Model: c, Col: col, Share: share}
	// Every path of every context is ranked by a small key; only the hot
	// ones become HotPaths (a whole-process profile has millions of
	// paths, a fifth of them hot). Context and path number make the
	// order total, so any sort gives the same ranking.
	type ranked struct {
		value, count  uint64
		context, path int // path: index in the context's Paths
		id            uint64
	}
	n := 0
	for i := range c.Nodes {
		n += len(c.Nodes[i].Paths)
	}
	all := make([]ranked, 0, n)
	for i := range c.Nodes {
		for k := range c.Nodes[i].Paths {
			p := &c.Nodes[i].Paths[k]
			v := p.Metrics[col]
			h.Total = satAdd(h.Total, v)
			h.Insns = satAdd(h.Insns, satMul(p.Metrics[0], p.Insns))
			all = append(all, ranked{value: v, count: p.Metrics[0], context: i, path: k, id: p.ID})
		}
	}
	h.Paths = len(all)
	if h.Insns > 0 {
		h.Average = float64(h.Total) / float64(h.Insns)
	}
	slices.SortFunc(all, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(b.value, a.value), cmp.Compare(b.count, a.count), cmp.Compare(a.context, b.context), cmp.Compare(a.id, b.id))
	})
	need := share * float64(h.Total)
	for _, r := range all {
		if r.value == 0 || (len(h.Hot) > 0 && float64(h.HotSum) >= need) {
			break
		}
		nd := &c.Nodes[r.context]
		p := &nd.Paths[r.path]
		hp := HotPath{Context: r.context, Func: nd.FuncID(), Name: nd.Name, ID: p.ID, Count: p.Metrics[0], Insns: p.Insns,
			Value: r.value, Blocks: p.Blocks}
		if d := float64(hp.Count) * float64(hp.Insns); d > 0 {
			hp.Rate = float64(hp.Value) / d
		}
		hp.Dense = hp.Rate >= h.Average
		h.Hot = append(h.Hot, hp)
		h.HotSum = satAdd(h.HotSum, hp.Value)
	}
	return h, nil
}

// HotOptions are the options of HotText.
type HotOptions struct {
	// Asm lists each block's instructions, decoded from the original
	// code the model's instrumented binary keeps (Model.File).
	Asm bool
	// Top is how many of the hot paths are listed, hottest first; 0
	// lists them all. A whole-process profile can have a hundred
	// thousand hot paths.
	Top int
}

// DensityRule states how HotText classes paths.
func (h *HotPaths) DensityRule() string {
	col := h.Model.Columns[h.Col]
	return fmt.Sprintf("a path is dense when its %s per executed instruction (%s / (executions × instructions on the path)) is at least the program's average, %.4g %s per instruction; sparse otherwise",
		col.Name, col.Name, h.Average, col.Unit())
}

// HotText writes the hot paths, hottest first, each with its context,
// counts, share, density and blocks (address range, file:line range,
// instructions; with o.Asm the instructions themselves).
func HotText(w io.Writer, h *HotPaths, o HotOptions) error {
	c := h.Model
	col := c.Columns[h.Col]
	c.writeHeader(w, "hot paths", h.Col)
	fmt.Fprintf(w, "hot: the %s covering %s of %s (the threshold is %.4g%%) out of %s executed\n",
		plural(uint64(len(h.Hot)), "path", "paths"), pct(h.HotSum, h.Total), col.Name, 100*h.Share, plural(uint64(h.Paths), "path", "paths"))
	fmt.Fprintf(w, "density: %s\n", h.DensityRule())
	if col.Derived {
		fmt.Fprintf(w, "  (with %s every path's rate is 1: rank by another metric to tell dense from sparse)\n", col.Name)
	}
	var code *Model
	if o.Asm && c.File != nil {
		code = c
	}
	var cum uint64
	shown := h.Hot
	if o.Top > 0 && len(shown) > o.Top {
		shown = shown[:o.Top]
	}
	for r, hp := range shown {
		cum += hp.Value
		n := &c.Nodes[hp.Context]
		mf := c.Func(hp.Func)
		dense := "sparse"
		if hp.Dense {
			dense = "dense"
		}
		fmt.Fprintf(w, "\n%3d. %s  path %d", r+1, c.DisplayChain(hp.Context), hp.ID)
		if n.CallSite != 0 {
			fmt.Fprintf(w, "  @ %s", site(n.CallSite, c.siteLines(n)))
		}
		fmt.Fprintf(w, "\n     %s × %d instructions; %s %d (%s, cumulative %s); %.4g per instruction: %s\n",
			plural(hp.Count, "execution", "executions"), hp.Insns, col.Name, hp.Value, pct(hp.Value, h.Total), pct(cum, h.Total), hp.Rate, dense)
		for _, b := range hp.Blocks {
			blk := &mf.Blocks[b]
			fmt.Fprintf(w, "       B%d %s-%s", b, hex(blk.Addr), hex(blk.End))
			if loc := c.Debug.Span(blk.Addr, blk.End); loc != "" {
				fmt.Fprintf(w, "  %s", loc)
			}
			fmt.Fprintf(w, "  %s\n", plural(uint64(blk.Insts), "instruction", "instructions"))
			if o.Asm {
				writeBlockAsm(w, "           ", code, hp.Func, b)
			}
		}
	}
	if more := len(h.Hot) - len(shown); more > 0 {
		writeMore(w, "\n", more, "more hot path", "more hot paths")
	}
	if len(h.Hot) == 0 {
		fmt.Fprintf(w, "\nno path has any %s\n", col.Name)
	}
	return nil
}

// writeBlockAsm lists the instructions of block bi of function fn,
// decoded from the original code (BlockInsts).
func writeBlockAsm(w io.Writer, indent string, m *Model, fn FuncID, bi int) {
	if m == nil {
		fmt.Fprintf(w, "%s(%v)\n", indent, errNoFile)
		return
	}
	insts, err := m.BlockInsts(fn, bi)
	if err != nil {
		fmt.Fprintf(w, "%s(not decodable: %v)\n", indent, err)
		return
	}
	for _, in := range insts {
		fmt.Fprintf(w, "%s%s  %s\n", indent, hex(in.Addr), in.String())
	}
}
