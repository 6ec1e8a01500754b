package report

// This file renders a profile's calling-context tree the way HPCToolkit
// presents measurements [Tallent-Mellor-Crummey-Fagan 09]: top-down (the
// tree), bottom-up (callers of each procedure) and flat (per procedure),
// and the paths of chosen contexts [Ammons-Ball-Larus 97 §4]. The model,
// ContextTree, is computed once from the profile and the binary's
// metadata; every view and the JSON "contexts" array read it.

import (
	"fmt"
	"io"
	"math/bits"
	"sort"
	"strings"
	"text/tabwriter"

	"blpp/cct"
	"blpp/meta"
)

// MetricInsns is the derived metric: instructions executed, from block
// counts times each block's instruction count in the metadata. Exact, and
// available on machines without a PMU.
const MetricInsns = "insns"

// A Column is one metric of the model: a metric of the profile, in its
// order, or the derived insns (last).
type Column struct {
	Name    string
	Kind    cct.MetricKind
	Derived bool // computed by the report from block counts (insns)
}

// Label names the column for a header line, saying what its values are
// when they are not what the name suggests.
func (c Column) Label() string {
	switch {
	case c.Derived:
		return c.Name + " (derived: instructions of the executed blocks)"
	case c.Name == cct.FreqMetric:
		return c.Name + " (path executions)"
	case c.Kind == cct.MetricFallback && c.Name == "tsc":
		// The runtime's one fallback [DESIGN 8].
		return "tsc (fallback for cycles)"
	case c.Kind == cct.MetricFallback:
		return c.Name + " (fallback)"
	case c.Kind == cct.MetricUnavailable:
		return c.Name + " (unavailable: not measured, all 0)"
	}
	return c.Name
}

// Unit is what the column counts, for totals.
func (c Column) Unit() string {
	switch {
	case c.Derived:
		return "instructions"
	case c.Name == cct.FreqMetric:
		return "path executions"
	case c.Name == "tsc":
		return "ticks"
	}
	return c.Name
}

// A CNode is one calling context: a procedure reached through one chain of
// call sites, the records of every thread with that chain merged.
type CNode struct {
	ID     int // index in ContextTree.Nodes; parents come first
	Parent int // -1 for a root
	Func   uint32
	Name   string
	// CallSite is the original address of the call instruction in the
	// parent's function; 0 for a root and for an activation entered with
	// no known call site (a signal handler, a callback).
	CallSite uint64
	Calls    uint64
	// Excl holds, per column, the sums over the context's own paths
	// (exclusive of callees); insns includes the executed blocks of
	// partial paths. Incl adds the subtree.
	Excl, Incl []uint64
	Paths      []CPath // by path id
	// Partial counts activations that stopped without reaching a path
	// end, PartialUnknown those of them whose executed blocks are unknown
	// (not in insns).
	Partial, PartialUnknown uint64
	Children                []int // in ID order
	Depth                   int   // 0 for a root
	// Uninstrumented marks a context of a function blpp left out whose
	// entries it counted (decision 70): Calls is how often it was
	// entered there, it has no paths, and its children are the
	// instrumented functions it called back. Reason says why it was
	// left out.
	Uninstrumented bool
	Reason         string
}

// Label is the node's name, with why it was left out and how often it
// was entered when it is uninstrumented.
func (n *CNode) Label() string {
	if !n.Uninstrumented {
		return n.Name
	}
	return n.Name + "  [" + darkLabel(n.Reason, n.Calls) + "]"
}

// A CPath is a path of one context.
type CPath struct {
	ID      uint64
	Metrics []uint64 // per column; Metrics[0] is the count
	Blocks  []int    // blocks of the function it passes through, in order
}

// A ContextTree is the calling-context tree of a profile over the binary's
// metadata, threads merged by matching (function, call site) chains from
// the root (cct.FoldThreads).
type ContextTree struct {
	Binary   string
	Columns  []Column
	Nodes    []CNode
	Roots    []int
	Threads  int  // threads merged
	FlowOnly bool // no calling context: every node is a root
	// Total holds per column the sum of Excl over the nodes (and so the
	// sum of Incl over the roots).
	Total []uint64
	// Partials of activations that had no record (the runtime's arena was
	// full) belong to no context: their count and their instructions. In
	// a flow-only profile they go to their function's root.
	UnattributedPartials, UnattributedInsns uint64

	table *meta.Table
}

var errInsnsOverflow = fmt.Errorf("the profile's instruction count (%s) overflows 64 bits", MetricInsns)

// mulAdd returns acc + a*b, or an error when it overflows.
func mulAdd(acc, a, b uint64) (uint64, error) {
	hi, lo := bits.Mul64(a, b)
	s, carry := bits.Add64(acc, lo, 0)
	if hi != 0 || carry != 0 {
		return 0, errInsnsOverflow
	}
	return s, nil
}

// MakeContextTree builds the model. p must be valid (CheckValid; the
// reader and Merge return only such profiles); it is checked against t
// here: function indices, call sites, path ids and partial blocks.
func MakeContextTree(binary string, t *meta.Table, p *cct.Profile) (*ContextTree, error) {
	if err := checkMatch(binary, t, p); err != nil {
		return nil, err
	}
	c := &ContextTree{Binary: binary, Threads: len(p.Threads), FlowOnly: p.Flags&cct.FlagFlowOnly != 0, table: t}
	insnsCol := -1
	for _, m := range p.Metrics {
		c.Columns = append(c.Columns, Column{Name: m.Name, Kind: m.Kind})
	}
	// A profile metric of the same name would shadow the derived one.
	if _, dup := c.column(MetricInsns); !dup {
		insnsCol = len(c.Columns)
		c.Columns = append(c.Columns, Column{Name: MetricInsns, Derived: true})
	}
	nc := len(c.Columns)
	c.Total = make([]uint64, nc)
	folded := p.FoldThreads()
	if len(folded.Threads) == 0 {
		return c, nil
	}
	th := &folded.Threads[0]
	// instrumented checks fn before its paths are expanded (checkMatch
	// has, so this is a second line of defence).
	instrumented := func(fn uint32) (*meta.Func, error) {
		if int(fn) >= len(t.Funcs) || !t.Funcs[fn].Instrumented {
			return nil, fmt.Errorf("the profile names function %d, which %s does not instrument", fn, binary)
		}
		return &t.Funcs[fn], nil
	}
	c.Nodes = make([]CNode, len(th.Records))
	vals := make([]uint64, 2*nc*len(th.Records))
	for i := range th.Records {
		r := &th.Records[i]
		var mf *meta.Func
		n := &c.Nodes[i]
		if uf := &t.Funcs[r.Func]; !uf.Instrumented { // checkMatch: it has no paths
			*n = CNode{ID: i, Parent: r.Parent, Func: r.Func, Name: uf.Name, Calls: r.Calls, Uninstrumented: true, Reason: uf.Reason}
		} else {
			var err error
			if mf, err = instrumented(r.Func); err != nil {
				return nil, err
			}
			*n = CNode{ID: i, Parent: r.Parent, Func: r.Func, Name: mf.Name, Calls: r.Calls}
		}
		n.Excl, n.Incl = vals[:nc:nc], vals[nc:2*nc:2*nc]
		vals = vals[2*nc:]
		if r.Parent < 0 {
			c.Roots = append(c.Roots, i)
		} else {
			parent := &c.Nodes[r.Parent]
			parent.Children = append(parent.Children, i)
			n.Depth = parent.Depth + 1
			if r.CallSite > 0 {
				// Record.CallSite is the parent's local call-site index + 1
				// (docs/profile-format.md).
				sites := t.Funcs[parent.Func].CallSites
				if int64(r.CallSite) > int64(len(sites)) {
					return nil, fmt.Errorf("a record of %s is called from call site %d of %s, which has %d call sites", n.Name, r.CallSite, parent.Name, len(sites))
				}
				n.CallSite = sites[r.CallSite-1]
			}
		}
		pvals := make([]uint64, nc*len(r.Paths))
		for _, path := range r.Paths {
			if path.ID >= mf.NumPaths {
				return nil, fmt.Errorf("%s: path %d, but the function has %d paths", n.Name, path.ID, mf.NumPaths)
			}
			e, err := t.ExpandPath(r.Func, path.ID)
			if err != nil {
				return nil, err
			}
			cp := CPath{ID: path.ID, Metrics: pvals[:nc:nc], Blocks: e.Blocks}
			pvals = pvals[nc:]
			cp.Metrics[0] = path.Count
			copy(cp.Metrics[1:], path.Metrics)
			if insnsCol >= 0 {
				if cp.Metrics[insnsCol], err = mulAdd(0, path.Count, e.Insns); err != nil {
					return nil, err
				}
			}
			for j, x := range cp.Metrics {
				if j == insnsCol {
					if n.Excl[j], err = mulAdd(n.Excl[j], x, 1); err != nil {
						return nil, err
					}
					continue
				}
				n.Excl[j] += x // fits: the profile's totals do
			}
			n.Paths = append(n.Paths, cp)
		}
	}
	// A flow-only profile has one context per function, its root; the
	// runtime writes such a profile's partials without a record.
	rootOf := map[uint32]int{}
	if c.FlowOnly {
		for i := range c.Nodes {
			rootOf[c.Nodes[i].Func] = i
		}
	}
	for qi := range th.Partials {
		q := &th.Partials[qi]
		mf, err := instrumented(q.Func)
		if err != nil {
			return nil, err
		}
		if _, err := t.FuncNumbering(q.Func); err != nil {
			return nil, err
		}
		e, err := expandPartial(t, q)
		if err != nil {
			return nil, err
		}
		known := e != nil
		var insns uint64
		if known {
			if insns, err = mulAdd(0, q.Count, e.Insns); err != nil {
				return nil, err
			}
		}
		rec := q.Record
		if rec < 0 && c.FlowOnly {
			r, ok := rootOf[q.Func]
			if !ok {
				// Only partial activations (_start, say, which never
				// returns): the function gets its root all the same.
				r = len(c.Nodes)
				c.Nodes = append(c.Nodes, CNode{ID: r, Parent: -1, Func: q.Func, Name: mf.Name,
					Excl: make([]uint64, nc), Incl: make([]uint64, nc)})
				c.Roots = append(c.Roots, r)
				rootOf[q.Func] = r
			}
			rec = r
		}
		if rec < 0 {
			c.UnattributedPartials += q.Count
			if c.UnattributedInsns, err = mulAdd(c.UnattributedInsns, insns, 1); err != nil {
				return nil, err
			}
			continue
		}
		n := &c.Nodes[rec]
		n.Partial += q.Count
		if !known {
			n.PartialUnknown += q.Count
		}
		if insnsCol >= 0 {
			if n.Excl[insnsCol], err = mulAdd(n.Excl[insnsCol], insns, 1); err != nil {
				return nil, err
			}
		}
	}
	// Totals first: every inclusive value is at most its column's total,
	// so once the totals fit, no sum below overflows.
	for i := range c.Nodes {
		for j, x := range c.Nodes[i].Excl {
			s, carry := bits.Add64(c.Total[j], x, 0)
			if carry != 0 {
				return nil, fmt.Errorf("the profile's total of %s overflows 64 bits", c.Columns[j].Name)
			}
			c.Total[j] = s
		}
	}
	for i := len(c.Nodes) - 1; i >= 0; i-- {
		n := &c.Nodes[i]
		for j, x := range n.Excl {
			n.Incl[j] += x
		}
		if n.Parent >= 0 {
			for j, x := range n.Incl {
				c.Nodes[n.Parent].Incl[j] += x
			}
		}
	}
	return c, nil
}

func (c *ContextTree) column(name string) (int, bool) {
	for i, col := range c.Columns {
		if col.Name == name {
			return i, true
		}
	}
	return -1, false
}

// Column returns the index of the named metric; the error lists the
// metrics there are.
func (c *ContextTree) Column(name string) (int, error) {
	if i, ok := c.column(name); ok {
		return i, nil
	}
	names := make([]string, len(c.Columns))
	for i, col := range c.Columns {
		names[i] = col.Name
	}
	return -1, fmt.Errorf("no metric %q in this profile (there are: %s)", name, strings.Join(names, ", "))
}

// Chain returns the function names from the root down to node i.
func (c *ContextTree) Chain(i int) []string {
	var rev []string
	for ; i >= 0; i = c.Nodes[i].Parent {
		rev = append(rev, c.Nodes[i].Name)
	}
	for l, r := 0, len(rev)-1; l < r; l, r = l+1, r-1 {
		rev[l], rev[r] = rev[r], rev[l]
	}
	return rev
}

// Match returns the nodes whose chain of function names ends with
// pattern: function names separated by '/', "a/b" matching every context
// of b called from a. A leading '/' anchors the pattern at a root
// ("/main/a" is only a called from the root main).
func (c *ContextTree) Match(pattern string) ([]int, error) {
	anchored := strings.HasPrefix(pattern, "/")
	parts := strings.Split(strings.TrimPrefix(pattern, "/"), "/")
	for _, s := range parts {
		if s == "" {
			return nil, fmt.Errorf("context %q: empty function name (want names separated by '/', like main/parse/next)", pattern)
		}
	}
	var out []int
	for i := range c.Nodes {
		j, k := i, len(parts)-1
		for ; k >= 0 && j >= 0 && c.Nodes[j].Name == parts[k]; k-- {
			j = c.Nodes[j].Parent
		}
		if k < 0 && (!anchored || j < 0) {
			out = append(out, i)
		}
	}
	return out, nil
}

// outermost tells, per node, whether no proper ancestor has its function:
// summing Incl over those nodes counts recursion once.
func (c *ContextTree) outermost() []bool {
	out := make([]bool, len(c.Nodes))
	onChain := map[uint32]int{}
	var walk func(i int)
	walk = func(i int) {
		n := &c.Nodes[i]
		out[i] = onChain[n.Func] == 0
		onChain[n.Func]++
		for _, ch := range n.Children {
			walk(ch)
		}
		onChain[n.Func]--
	}
	for _, r := range c.Roots {
		walk(r)
	}
	return out
}

// A FlatRow is one procedure of the flat view.
type FlatRow struct {
	Func     uint32
	Name     string
	Excl     uint64 // sum over its contexts
	Incl     uint64 // sum over its outermost contexts: recursion counted once
	Calls    uint64
	Contexts int
	// Uninstrumented and Reason as CNode's: Calls is then how often the
	// function was entered.
	Uninstrumented bool
	Reason         string
}

// Flat sums the contexts of each procedure for column col, sorted by
// exclusive value, then inclusive, then name.
func (c *ContextTree) Flat(col int) []FlatRow {
	outer := c.outermost()
	idx := map[uint32]int{}
	var rows []FlatRow
	for i := range c.Nodes {
		n := &c.Nodes[i]
		k, ok := idx[n.Func]
		if !ok {
			k = len(rows)
			idx[n.Func] = k
			rows = append(rows, FlatRow{Func: n.Func, Name: n.Name, Uninstrumented: n.Uninstrumented, Reason: n.Reason})
		}
		r := &rows[k]
		r.Excl += n.Excl[col]
		if outer[i] {
			r.Incl += n.Incl[col]
		}
		r.Calls += n.Calls
		r.Contexts++
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := &rows[i], &rows[j]
		if a.Excl != b.Excl {
			return a.Excl > b.Excl
		}
		if a.Incl != b.Incl {
			return a.Incl > b.Incl
		}
		return a.Name < b.Name
	})
	return rows
}

// A CallerNode is a row of the bottom-up view: at the top, a procedure
// with its totals; below, the callers along the chains that reach it,
// each with the share of the procedure's values that arrived that way.
type CallerNode struct {
	Func     uint32
	Name     string
	CallSite uint64 // in this caller, the call toward the row above; 0 at the top or unknown
	Excl     uint64 // the procedure's exclusive value along this chain
	Incl     uint64 // its inclusive value, recursion counted once
	Calls    uint64 // its activations along this chain
	Children []*CallerNode

	index map[callerKey]*CallerNode
}

type callerKey struct {
	fn   uint32
	site uint64
}

// Callers builds the bottom-up view for column col: one tree per
// procedure, sorted like Flat, children by exclusive value.
func (c *ContextTree) Callers(col int) []*CallerNode {
	outer := c.outermost()
	top := map[uint32]*CallerNode{}
	var tops []*CallerNode
	add := func(cn *CallerNode, n *CNode, i int) {
		cn.Excl += n.Excl[col]
		if outer[i] {
			cn.Incl += n.Incl[col]
		}
		cn.Calls += n.Calls
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		cn := top[n.Func]
		if cn == nil {
			cn = &CallerNode{Func: n.Func, Name: n.Name}
			top[n.Func] = cn
			tops = append(tops, cn)
		}
		add(cn, n, i)
		for m := n; m.Parent >= 0; m = &c.Nodes[m.Parent] {
			p := &c.Nodes[m.Parent]
			k := callerKey{p.Func, m.CallSite}
			next := cn.index[k]
			if next == nil {
				if cn.index == nil {
					cn.index = map[callerKey]*CallerNode{}
				}
				next = &CallerNode{Func: p.Func, Name: p.Name, CallSite: m.CallSite}
				cn.index[k] = next
				cn.Children = append(cn.Children, next)
			}
			add(next, n, i)
			cn = next
		}
	}
	var sortTree func(ns []*CallerNode)
	sortTree = func(ns []*CallerNode) {
		sort.SliceStable(ns, func(i, j int) bool {
			a, b := ns[i], ns[j]
			if a.Excl != b.Excl {
				return a.Excl > b.Excl
			}
			if a.Incl != b.Incl {
				return a.Incl > b.Incl
			}
			if a.Name != b.Name {
				return a.Name < b.Name
			}
			return a.CallSite < b.CallSite
		})
		for _, n := range ns {
			n.index = nil
			sortTree(n.Children)
		}
	}
	sortTree(tops)
	return tops
}

// Context is one entry of the JSON "contexts" array (docs/formats.md).
type Context struct {
	ID       int               `json:"id"`
	Parent   *int              `json:"parent"`
	Function string            `json:"function"`
	CallSite *string           `json:"callsite"`
	Calls    uint64            `json:"calls"`
	Metrics  map[string]uint64 `json:"metrics"`
	// Inclusive adds the subtree's exclusive values.
	Inclusive map[string]uint64 `json:"inclusive"`
	Paths     []ContextPath     `json:"paths"`
	// Partial counts activations that stopped mid-path.
	Partial uint64 `json:"partial,omitempty"`
	// Uninstrumented marks a function blpp left out, whose entries it
	// counted (calls) without paths; Reason says why (decision 70).
	Uninstrumented bool   `json:"uninstrumented,omitempty"`
	Reason         string `json:"reason,omitempty"`
}

// ContextPath is one path of a context in the JSON.
type ContextPath struct {
	ID      uint64            `json:"id"`
	Count   uint64            `json:"count"`
	Metrics map[string]uint64 `json:"metrics"`
}

// Contexts renders the tree for the JSON document: ids are node indices,
// parents first.
func (c *ContextTree) Contexts() []Context {
	out := make([]Context, len(c.Nodes))
	byName := func(v []uint64) map[string]uint64 {
		m := make(map[string]uint64, len(v))
		for j, x := range v {
			m[c.Columns[j].Name] = x
		}
		return m
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		x := Context{ID: i, Function: n.Name, Calls: n.Calls, Metrics: byName(n.Excl), Inclusive: byName(n.Incl),
			Paths: make([]ContextPath, 0, len(n.Paths)), Partial: n.Partial, Uninstrumented: n.Uninstrumented, Reason: n.Reason}
		if n.Parent >= 0 {
			parent := n.Parent
			x.Parent = &parent
		}
		if n.CallSite != 0 {
			s := hex(n.CallSite)
			x.CallSite = &s
		}
		for _, p := range n.Paths {
			x.Paths = append(x.Paths, ContextPath{ID: p.ID, Count: p.Metrics[0], Metrics: byName(p.Metrics)})
		}
		out[i] = x
	}
	return out
}

// ViewOptions are the options of the text views.
type ViewOptions struct {
	Metric int // column
	// Top limits the procedures of the flat and callers views and the
	// contexts and paths of ContextPathsText; 0 shows all.
	Top int
	// All shows the rows of the tree and callers views under
	// 1/HideBelow of the total.
	All   bool
	Lines *LineTable
}

// HideBelow is the share of the total under which the tree and callers
// views leave a row out unless ViewOptions.All: one in a thousand.
const HideBelow = 1000

// hidden reports whether v is under 1/HideBelow of total.
func hidden(v, total uint64, all bool) bool {
	if all || total == 0 {
		return false
	}
	limit := total / HideBelow
	if total%HideBelow != 0 {
		limit++
	}
	return v < limit
}

func pct(v, total uint64) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(v)/float64(total))
}

// site says where a context was called from: file:line when the line
// tables know it, else the address.
func site(addr uint64, lines *LineTable) string {
	if loc := lines.At(addr); loc != "" {
		return loc
	}
	return hex(addr)
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// writeHeader writes the two lines every view starts with.
func (c *ContextTree) writeHeader(w io.Writer, view string, col int) {
	shape := plural(uint64(len(c.Nodes)), "context", "contexts")
	if c.Threads != 1 {
		shape += fmt.Sprintf(", %d threads merged", c.Threads)
	}
	if c.FlowOnly {
		shape += "; flow-only profile: no calling context, every procedure is a root"
	}
	fmt.Fprintf(w, "%s: %s (%s)\n", c.Binary, view, shape)
	fmt.Fprintf(w, "metric: %s, total %d %s\n\n", c.Columns[col].Label(), c.Total[col], c.Columns[col].Unit())
}

// writeFooter says what the view left out.
func (c *ContextTree) writeFooter(w io.Writer, hiddenRows int, what string) {
	if hiddenRows > 0 {
		fmt.Fprintf(w, "%s under 0.1%% of the total not shown (--all shows them)\n", plural(uint64(hiddenRows), what, what+"s"))
	}
	if c.UnattributedPartials > 0 {
		fmt.Fprintf(w, "%s had no record (the runtime's arena was full); their %d instructions are in no row\n",
			plural(c.UnattributedPartials, "partial activation", "partial activations"), c.UnattributedInsns)
	}
}

// TreeText writes the top-down view: every context under its caller,
// children by inclusive value, with inclusive and exclusive values and
// their share of the total, calls, and where it was called from.
func TreeText(w io.Writer, c *ContextTree, o ViewOptions) error {
	col := o.Metric
	c.writeHeader(w, "top-down calling-context tree", col)
	name := c.Columns[col].Name
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "incl %s\t%%\texcl %s\t%%\tcalls\t  context\n", name, name)
	total := c.Total[col]
	nHidden := 0
	var walk func(ids []int)
	order := func(ids []int) []int {
		s := append([]int(nil), ids...)
		sort.SliceStable(s, func(i, j int) bool {
			a, b := &c.Nodes[s[i]], &c.Nodes[s[j]]
			if a.Incl[col] != b.Incl[col] {
				return a.Incl[col] > b.Incl[col]
			}
			if a.Excl[col] != b.Excl[col] {
				return a.Excl[col] > b.Excl[col]
			}
			if a.Name != b.Name {
				return a.Name < b.Name
			}
			return a.ID < b.ID
		})
		return s
	}
	subtree := func(i int) int {
		k := 0
		var count func(i int)
		count = func(i int) {
			k++
			for _, ch := range c.Nodes[i].Children {
				count(ch)
			}
		}
		count(i)
		return k
	}
	walk = func(ids []int) {
		for _, i := range order(ids) {
			n := &c.Nodes[i]
			if hidden(n.Incl[col], total, o.All) {
				nHidden += subtree(i)
				continue
			}
			where := ""
			switch {
			case n.CallSite != 0:
				where = "  @ " + site(n.CallSite, o.Lines)
			case n.Parent >= 0:
				where = "  (no call site)"
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t  %s%s%s\n", n.Incl[col], pct(n.Incl[col], total), n.Excl[col], pct(n.Excl[col], total),
				n.Calls, strings.Repeat("  ", n.Depth), n.Label(), where)
			walk(n.Children)
		}
	}
	walk(c.Roots)
	if err := tw.Flush(); err != nil {
		return err
	}
	c.writeFooter(w, nHidden, "context")
	return nil
}

// CallersText writes the bottom-up view: per procedure its exclusive and
// inclusive totals, then the chains of callers that reach it, each
// caller with the share of the procedure's values that came through it.
func CallersText(w io.Writer, c *ContextTree, o ViewOptions) error {
	col := o.Metric
	c.writeHeader(w, "bottom-up view (callers)", col)
	name := c.Columns[col].Name
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "excl %s\t%%\tincl %s\t%%\tcalls\t  procedure / called from\n", name, name)
	total := c.Total[col]
	nHidden, more := 0, 0
	var walk func(ns []*CallerNode, depth int)
	var rows func(n *CallerNode) int
	rows = func(n *CallerNode) int {
		k := 1
		for _, ch := range n.Children {
			k += rows(ch)
		}
		return k
	}
	walk = func(ns []*CallerNode, depth int) {
		for _, n := range ns {
			if hidden(max(n.Excl, n.Incl), total, o.All) {
				nHidden += rows(n)
				continue
			}
			where := ""
			switch {
			case n.CallSite != 0:
				where = "  @ " + site(n.CallSite, o.Lines)
			case depth > 0:
				where = "  (no call site)"
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t  %s%s%s\n", n.Excl, pct(n.Excl, total), n.Incl, pct(n.Incl, total),
				n.Calls, strings.Repeat("  ", depth), n.Name, where)
			walk(n.Children, depth+1)
		}
	}
	tops := c.Callers(col)
	shown := tops[:0:0]
	for _, n := range tops {
		if hidden(max(n.Excl, n.Incl), total, o.All) {
			nHidden += rows(n)
			continue
		}
		if o.Top > 0 && len(shown) >= o.Top {
			more++
			continue
		}
		shown = append(shown, n)
	}
	walk(shown, 0)
	if err := tw.Flush(); err != nil {
		return err
	}
	if more > 0 {
		fmt.Fprintf(w, "... and %s (--top 0 lists all)\n", plural(uint64(more), "more procedure", "more procedures"))
	}
	c.writeFooter(w, nHidden, "row")
	return nil
}

// FlatText writes the flat view: per procedure its exclusive value, its
// inclusive value with recursion counted once, calls and number of
// contexts.
func FlatText(w io.Writer, c *ContextTree, o ViewOptions) error {
	col := o.Metric
	c.writeHeader(w, "flat view of procedures", col)
	name := c.Columns[col].Name
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "excl %s\t%%\tincl %s\t%%\tcalls\tcontexts\t  procedure\n", name, name)
	total := c.Total[col]
	rows := c.Flat(col)
	more := 0
	if o.Top > 0 && len(rows) > o.Top {
		more = len(rows) - o.Top
		rows = rows[:o.Top]
	}
	for _, r := range rows {
		name := r.Name
		if r.Uninstrumented {
			name = r.Name + "  [" + darkLabel(r.Reason, r.Calls) + "]"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t%d\t  %s\n", r.Excl, pct(r.Excl, total), r.Incl, pct(r.Incl, total), r.Calls, r.Contexts, name)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if more > 0 {
		fmt.Fprintf(w, "... and %s (--top 0 lists all)\n", plural(uint64(more), "more procedure", "more procedures"))
	}
	c.writeFooter(w, 0, "")
	return nil
}

// ContextPathsText writes the hottest paths of the contexts that match
// pattern (Match), contexts by exclusive value: for each, its chain, call
// site, calls and values, then its paths by the metric with their blocks
// and file:line.
func ContextPathsText(w io.Writer, c *ContextTree, ids []int, pattern string, o ViewOptions) error {
	col := o.Metric
	c.writeHeader(w, fmt.Sprintf("paths of the %s matching %s", plural(uint64(len(ids)), "context", "contexts"), pattern), col)
	total := c.Total[col]
	ids = append([]int(nil), ids...)
	sort.SliceStable(ids, func(i, j int) bool {
		a, b := &c.Nodes[ids[i]], &c.Nodes[ids[j]]
		if a.Excl[col] != b.Excl[col] {
			return a.Excl[col] > b.Excl[col]
		}
		return a.ID < b.ID
	})
	more := 0
	if o.Top > 0 && len(ids) > o.Top {
		more = len(ids) - o.Top
		ids = ids[:o.Top]
	}
	name := c.Columns[col].Name
	for k, i := range ids {
		n := &c.Nodes[i]
		if k > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "context %d: %s", n.ID, strings.Join(c.Chain(i), "/"))
		if n.CallSite != 0 {
			fmt.Fprintf(w, "  @ %s", site(n.CallSite, o.Lines))
		}
		fmt.Fprintf(w, "\n  %s; %s %d exclusive (%s), %d inclusive (%s)\n", plural(n.Calls, "call", "calls"),
			name, n.Excl[col], pct(n.Excl[col], total), n.Incl[col], pct(n.Incl[col], total))
		if n.Uninstrumented {
			fmt.Fprintf(w, "  %s: no paths\n", darkLabel(n.Reason, n.Calls))
		}
		if n.Partial > 0 {
			fmt.Fprintf(w, "  %s stopped mid-path", plural(n.Partial, "activation", "activations"))
			if n.PartialUnknown > 0 {
				fmt.Fprintf(w, ", %d of them at an unknown block", n.PartialUnknown)
			}
			fmt.Fprintf(w, " (the blocks they executed, where known, count in %s)\n", MetricInsns)
		}
		paths := append([]CPath(nil), n.Paths...)
		sort.SliceStable(paths, func(a, b int) bool {
			if paths[a].Metrics[col] != paths[b].Metrics[col] {
				return paths[a].Metrics[col] > paths[b].Metrics[col]
			}
			return paths[a].ID < paths[b].ID
		})
		morePaths := 0
		if o.Top > 0 && len(paths) > o.Top {
			morePaths = len(paths) - o.Top
			paths = paths[:o.Top]
		}
		mf := &c.table.Funcs[n.Func]
		for r, p := range paths {
			fmt.Fprintf(w, "%3d. path %d: %s", r+1, p.ID, plural(p.Metrics[0], "execution", "executions"))
			if col != 0 {
				fmt.Fprintf(w, ", %s %d", name, p.Metrics[col])
			}
			fmt.Fprintf(w, " (%s of the context)\n", pct(p.Metrics[col], n.Excl[col]))
			for _, b := range p.Blocks {
				writeBlockLine(w, "       ", mf.Blocks[b].Addr, o.Lines)
			}
		}
		if morePaths > 0 {
			fmt.Fprintf(w, "  ... and %s (--top 0 lists all)\n", plural(uint64(morePaths), "more path", "more paths"))
		}
	}
	if more > 0 {
		fmt.Fprintf(w, "\n... and %s (--top 0 lists all)\n", plural(uint64(more), "more context", "more contexts"))
	}
	return nil
}
