package report

// This file builds the calling contexts of the model the way HPCToolkit
// presents measurements [Tallent-Mellor-Crummey-Fagan 09] and PP records
// them [Ammons-Ball-Larus 97 §4]: one node per context, threads merged,
// with its paths and their metrics; and the queries the views ask of
// them (chains, matching, flat and bottom-up sums, the JSON contexts).

import (
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strings"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/meta"
)

// A CNode is one calling context: a procedure reached through one chain of
// call sites, the records of every thread with that chain merged.
type CNode struct {
	ID     int // index in Model.Nodes; parents come first
	Parent int // -1 for a root
	// Module and Func name the function (FuncID): the function's index
	// is scoped to its module.
	Module uint32
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
	// Sampled holds the context's samples by block and pseudo-block
	// (decision 92); nil without any.
	Sampled *NodeSamples
}

// Label is the node's name as o shows it, with why it was left out and
// how often it was entered when it is uninstrumented.
func (n *CNode) Label(o NameOptions) string {
	name := DisplayName(n.Name, o)
	if !n.Uninstrumented {
		return name
	}
	return name + "  [" + darkLabel(n.Reason, n.Calls) + "]"
}

// FuncID is the node's function.
func (n *CNode) FuncID() FuncID { return FuncID{Module: n.Module, Func: n.Func} }

// A CPath is a path of one context.
type CPath struct {
	ID      uint64
	Metrics []uint64 // per column; Metrics[0] is the count
	Blocks  []int    // blocks of the function it passes through, in order
	Insns   uint64   // instructions of one execution
	// Latency is the distribution of the per-execution values of the
	// model's latency metric (Model.LatencyCol), nil when the profile
	// has none (decision 93).
	Latency *cct.Latency
	// Samples is the path's estimated share of its context's samples
	// (attributeSamples).
	Samples float64
}

// buildContexts builds the calling contexts of the folded profile (one
// thread), their paths and their metric columns.
func (c *Model) buildContexts(folded *cct.Profile) error {
	insnsCol := -1
	for _, m := range folded.Metrics {
		c.Columns = append(c.Columns, Column{Name: m.Name, Kind: m.Kind})
	}
	// A profile metric of the same name would shadow the derived one.
	if _, dup := c.column(MetricInsns); !dup {
		insnsCol = len(c.Columns)
		c.Columns = append(c.Columns, Column{Name: MetricInsns, Derived: true})
	}
	sampleCol := -1
	if s := folded.Sampling; s != nil {
		if _, dup := c.column(s.Event); !dup {
			sampleCol = len(c.Columns)
			c.Columns = append(c.Columns, Column{Name: s.Event, Kind: s.Kind})
		}
	}
	nc := len(c.Columns)
	c.Total = make([]uint64, nc)
	if len(folded.Threads) == 0 {
		return nil
	}
	th := &folded.Threads[0]
	// instrumented checks fid before its paths are expanded (checkMatch
	// has, so this is a second line of defence).
	instrumented := func(fid uint32) (*meta.Func, error) {
		id := c.id(fid)
		mod := &c.Modules[id.Module]
		if t := mod.Table; int(id.Func) >= len(t.Funcs) || !t.Funcs[id.Func].Instrumented {
			return nil, fmt.Errorf("the profile names function %d, which %s does not instrument", id.Func, mod.Path)
		}
		return c.Func(id), nil
	}
	c.Nodes = make([]CNode, len(th.Records))
	vals := make([]uint64, 2*nc*len(th.Records))
	// The paths of every context, and their metrics, in one allocation
	// each: a whole-process profile has millions.
	npaths := 0
	for i := range th.Records {
		npaths += len(th.Records[i].Paths)
	}
	cpaths := make([]CPath, npaths)
	pvals := make([]uint64, nc*npaths)
	// Children too: each node's list is cut, at its size, from one.
	nchild := make([]int32, len(th.Records))
	for i := range th.Records {
		if r := &th.Records[i]; r.Parent >= 0 && r.Parent < i {
			nchild[r.Parent]++
		}
	}
	arena := make([]int, 0, len(th.Records))
	for i, k := range nchild {
		if k > 0 {
			c.Nodes[i].Children, arena = arena[len(arena):len(arena):len(arena)+int(k)], arena[:len(arena)+int(k)]
		}
	}
	nchild = nil
	for i := range th.Records {
		r := &th.Records[i]
		var mf *meta.Func
		n := &c.Nodes[i]
		children := n.Children // cut above, filled below
		id := c.id(r.Func)
		t := c.Modules[id.Module].Table
		if uf := c.Func(id); !uf.Instrumented { // checkMatch: it has no paths
			*n = CNode{ID: i, Parent: r.Parent, Module: id.Module, Func: id.Func, Name: uf.Name, Calls: r.Calls, Uninstrumented: true, Reason: uf.Reason}
		} else {
			var err error
			if mf, err = instrumented(r.Func); err != nil {
				return err
			}
			*n = CNode{ID: i, Parent: r.Parent, Module: id.Module, Func: id.Func, Name: mf.Name, Calls: r.Calls}
		}
		n.Children = children
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
				sites := c.Func(parent.FuncID()).CallSites
				if int64(r.CallSite) > int64(len(sites)) {
					return fmt.Errorf("a record of %s is called from call site %d of %s, which has %d call sites", n.Name, r.CallSite, parent.Name, len(sites))
				}
				n.CallSite = sites[r.CallSite-1]
			}
		}
		if len(r.Paths) > 0 {
			n.Paths, cpaths = cpaths[:0:len(r.Paths)], cpaths[len(r.Paths):]
		}
		for _, path := range r.Paths {
			if path.ID >= mf.NumPaths {
				return fmt.Errorf("%s: path %d, but the function has %d paths", n.Name, path.ID, mf.NumPaths)
			}
			e, err := t.ExpandPath(id.Func, path.ID)
			if err != nil {
				return err
			}
			cp := CPath{ID: path.ID, Metrics: pvals[:nc:nc], Blocks: e.Blocks, Insns: e.Insns, Latency: path.Latency}
			pvals = pvals[nc:]
			cp.Metrics[0] = path.Count
			copy(cp.Metrics[1:], path.Metrics)
			if insnsCol >= 0 {
				if cp.Metrics[insnsCol], err = mulAdd(0, path.Count, e.Insns); err != nil {
					return err
				}
			}
			for j, x := range cp.Metrics {
				if j == insnsCol {
					if n.Excl[j], err = mulAdd(n.Excl[j], x, 1); err != nil {
						return err
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
	rootOf := map[FuncID]int{}
	if c.FlowOnly {
		for i := range c.Nodes {
			rootOf[c.Nodes[i].FuncID()] = i
		}
	}
	for qi := range th.Partials {
		q := &th.Partials[qi]
		mf, err := instrumented(q.Func)
		if err != nil {
			return err
		}
		id := c.id(q.Func)
		t := c.Modules[id.Module].Table
		if _, err := t.FuncNumbering(id.Func); err != nil {
			return err
		}
		e, err := expandPartial(t, id.Func, q)
		if err != nil {
			return err
		}
		known := e != nil
		var insns uint64
		if known {
			if insns, err = mulAdd(0, q.Count, e.Insns); err != nil {
				return err
			}
		}
		rec := q.Record
		if rec < 0 && c.FlowOnly {
			r, ok := rootOf[id]
			if !ok {
				// Only partial activations (_start, say, which never
				// returns): the function gets its root all the same.
				r = len(c.Nodes)
				c.Nodes = append(c.Nodes, CNode{ID: r, Parent: -1, Module: id.Module, Func: id.Func, Name: mf.Name,
					Excl: make([]uint64, nc), Incl: make([]uint64, nc)})
				c.Roots = append(c.Roots, r)
				rootOf[id] = r
			}
			rec = r
		}
		if rec < 0 {
			c.UnattributedPartials += q.Count
			if c.UnattributedInsns, err = mulAdd(c.UnattributedInsns, insns, 1); err != nil {
				return err
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
				return err
			}
		}
	}
	if sampleCol >= 0 {
		if err := c.attributeSamples(folded.Sampling, th, sampleCol); err != nil {
			return err
		}
		c.Columns[sampleCol].Sampled = c.Samples
	}
	// Totals first: every inclusive value is at most its column's total,
	// so once the totals fit, no sum below overflows.
	for i := range c.Nodes {
		for j, x := range c.Nodes[i].Excl {
			s, carry := bits.Add64(c.Total[j], x, 0)
			if carry != 0 {
				return fmt.Errorf("the profile's total of %s overflows 64 bits", c.Columns[j].Name)
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
	return nil
}

// Chain returns the function names from the root down to node i.
func (c *Model) Chain(i int) []string {
	var rev []string
	for ; i >= 0; i = c.Nodes[i].Parent {
		rev = append(rev, c.Nodes[i].Name)
	}
	for l, r := 0, len(rev)-1; l < r; l, r = l+1, r-1 {
		rev[l], rev[r] = rev[r], rev[l]
	}
	return rev
}

// DisplayChain is Chain(i) as the views show it: display names
// (DisplayName) joined by '/'.
func (c *Model) DisplayChain(i int) string {
	names := c.Chain(i)
	for k, n := range names {
		names[k] = c.DisplayName(n)
	}
	return strings.Join(names, "/")
}

// Match returns the nodes whose chain of function names ends with
// pattern: function names separated by '/', "a/b" matching every context
// of b called from a. A leading '/' anchors the pattern at a root
// ("/main/a" is only a called from the root main). A name is the symbol
// or its demangled form (matchesName).
func (c *Model) Match(pattern string) ([]int, error) {
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
		for ; k >= 0 && j >= 0 && matchesName(c.Nodes[j].Name, parts[k]); k-- {
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
func (c *Model) outermost() []bool {
	out := make([]bool, len(c.Nodes))
	onChain := map[FuncID]int{}
	var walk func(i int)
	walk = func(i int) {
		n := &c.Nodes[i]
		out[i] = onChain[n.FuncID()] == 0
		onChain[n.FuncID()]++
		for _, ch := range n.Children {
			walk(ch)
		}
		onChain[n.FuncID()]--
	}
	for _, r := range c.Roots {
		walk(r)
	}
	return out
}

// A FlatRow is one procedure of the flat view.
type FlatRow struct {
	Func     FuncID
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
func (c *Model) Flat(col int) []FlatRow {
	outer := c.outermost()
	idx := map[FuncID]int{}
	var rows []FlatRow
	for i := range c.Nodes {
		n := &c.Nodes[i]
		k, ok := idx[n.FuncID()]
		if !ok {
			k = len(rows)
			idx[n.FuncID()] = k
			rows = append(rows, FlatRow{Func: n.FuncID(), Name: n.Name, Uninstrumented: n.Uninstrumented, Reason: n.Reason})
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
	Func     FuncID
	Name     string
	CallSite uint64 // in this caller, the call toward the row above; 0 at the top or unknown
	Excl     uint64 // the procedure's exclusive value along this chain
	Incl     uint64 // its inclusive value, recursion counted once
	Calls    uint64 // its activations along this chain
	Children []*CallerNode

	index map[callerKey]*CallerNode
	gone  bool // taken out (callerTree)
}

type callerKey struct {
	fn   FuncID
	site uint64
}

// Callers builds the bottom-up view for column col: one tree per
// procedure, sorted like Flat, children by exclusive value.
func (c *Model) Callers(col int) []*CallerNode {
	tops, _, _ := c.callerTree(col, nil)
	return tops
}

// callerTree builds Callers' trees level by level: the procedures, then
// their direct callers, then theirs. A row's values are whole once its
// level is done (only the contexts whose chain passes it at that depth
// add to it), so with show, a row it rejects is taken out then and the
// chains through it go no further: a whole-process profile's inverted
// tree (2.1 M contexts 41 deep) would be tens of millions of rows, nearly
// all below what a view shows (decision 139). It returns the trees, the
// number of rows taken out and the number of rows made (those two and
// the rows kept: nothing is made below a row taken out).
func (c *Model) callerTree(col int, show func(*CallerNode) bool) (tops []*CallerNode, taken, made int) {
	outer := c.outermost()
	top := map[FuncID]*CallerNode{}
	add := func(cn *CallerNode, n *CNode, i int) {
		cn.Excl += n.Excl[col]
		if outer[i] {
			cn.Incl += n.Incl[col]
		}
		cn.Calls += n.Calls
	}
	// A cursor is a context on its way up: the row it reached and the
	// context whose caller is next.
	type cursor struct {
		row *CallerNode
		at  int32
		ctx int32
	}
	var cur, next []cursor
	for i := range c.Nodes {
		n := &c.Nodes[i]
		cn := top[n.FuncID()]
		if cn == nil {
			cn = &CallerNode{Func: n.FuncID(), Name: n.Name}
			top[n.FuncID()] = cn
			tops = append(tops, cn)
			made++
		}
		add(cn, n, i)
		if n.Parent >= 0 {
			cur = append(cur, cursor{cn, int32(i), int32(i)})
		}
	}
	// Each row's children are made in one level, the one after its own:
	// once a level is done, its rows' children are whole and are cut.
	cut := func(rows []*CallerNode) []*CallerNode {
		if show == nil {
			return rows
		}
		return slices.DeleteFunc(rows, func(r *CallerNode) bool {
			if show(r) {
				return false
			}
			r.gone = true
			taken++
			return true
		})
	}
	tops = cut(tops)
	level := tops
	for len(cur) > 0 {
		next = next[:0]
		for _, k := range cur {
			if k.row.gone {
				continue
			}
			m := &c.Nodes[k.at]
			p := &c.Nodes[m.Parent]
			key := callerKey{p.FuncID(), m.CallSite}
			cn := k.row
			row := cn.index[key]
			if row == nil {
				if cn.index == nil {
					cn.index = map[callerKey]*CallerNode{}
				}
				row = &CallerNode{Func: p.FuncID(), Name: p.Name, CallSite: m.CallSite}
				cn.index[key] = row
				cn.Children = append(cn.Children, row)
				made++
			}
			add(row, &c.Nodes[k.ctx], int(k.ctx))
			if p.Parent >= 0 {
				next = append(next, cursor{row, int32(m.Parent), k.ctx})
			}
		}
		var below []*CallerNode
		for _, r := range level {
			r.Children = cut(r.Children)
			below = append(below, r.Children...)
		}
		level = below
		cur, next = next, cur
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
	return tops, taken, made
}

// Context is one entry of the JSON "contexts" array (docs/formats.md).
type Context struct {
	ID       int    `json:"id"`
	Parent   *int   `json:"parent"`
	Function string `json:"function"`
	// Module is the name of the function's module (PathDoc.Modules).
	Module string `json:"module"`
	// Demangled is Function demangled, when it is a C++ or Rust name.
	Demangled string            `json:"demangled,omitempty"`
	CallSite  *string           `json:"callsite"`
	Calls     uint64            `json:"calls"`
	Metrics   map[string]uint64 `json:"metrics"`
	// Inclusive adds the subtree's exclusive values.
	Inclusive map[string]uint64 `json:"inclusive"`
	Paths     []ContextPath     `json:"paths"`
	// Partial counts activations that stopped mid-path.
	Partial uint64 `json:"partial,omitempty"`
	// Uninstrumented marks a function blpp left out, whose entries it
	// counted (calls) without paths; Reason says why (decision 70).
	Uninstrumented bool   `json:"uninstrumented,omitempty"`
	Reason         string `json:"reason,omitempty"`
	// Samples are the context's samples (decision 92), exclusive; the
	// sampled metric is samples × period. Absent without samples.
	Samples uint64 `json:"samples,omitempty"`
}

// ContextPath is one path of a context in the JSON.
type ContextPath struct {
	ID      uint64            `json:"id"`
	Count   uint64            `json:"count"`
	Metrics map[string]uint64 `json:"metrics"`
	// Latency is the distribution of the path's values of
	// PathDoc.LatencyMetric per execution (decision 93), omitted when
	// the profile has none.
	Latency *LatencyJSON `json:"latency,omitempty"`
	// Samples is the path's estimated share of its context's samples.
	Samples float64 `json:"samples,omitempty"`
}

// Contexts renders the tree for the JSON document: ids are node indices,
// parents first.
func (c *Model) Contexts() []Context {
	out := make([]Context, len(c.Nodes))
	for i := range c.Nodes {
		out[i] = c.context(i)
	}
	return out
}

// context renders node i for the JSON document.
func (c *Model) context(i int) Context {
	byName := func(v []uint64) map[string]uint64 {
		m := make(map[string]uint64, len(v))
		for j, x := range v {
			m[c.Columns[j].Name] = x
		}
		return m
	}
	n := &c.Nodes[i]
	x := Context{ID: i, Function: RawName(n.Name), Module: c.Modules[n.Module].Name, Demangled: demangled(n.Name), Calls: n.Calls, Metrics: byName(n.Excl), Inclusive: byName(n.Incl),
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
		x.Paths = append(x.Paths, ContextPath{ID: p.ID, Count: p.Metrics[0], Metrics: byName(p.Metrics), Samples: p.Samples, Latency: latencyJSON(p.Latency)})
	}
	if n.Sampled != nil {
		x.Samples = n.Sampled.Total
	}
	return x
}
