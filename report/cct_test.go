package report

// The calling-context views are tested on a synthetic profile over a hand-
// made metadata table: a known tree (main → a → b, main → b, the recursion
// a → a folded onto a's record, a signal handler entered with no call
// site, a callback of a under b), two threads with the same chain merged,
// partial paths, and the metric "tsc" as the fallback for cycles. The text
// views are golden files named after their options (testdata/view-*.golden,
// rewritten by -update); the laws are checked by assertions: inclusive
// values add up, the flat view sums to the total, recursion counts once,
// JSON contexts come parents first with call sites from the metadata, and
// the instructions of the tree equal those of the flat block counts.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/golden"
	"github.com/blpp/blpp/meta"
)

// Function indices of the test table.
const (
	fnMain = iota
	fnA
	fnB
	fnHandler
	fnMemcpy
)

// viewTable is the metadata of a small program. main and a are diamonds
// (two paths each), b and handler one block (one path).
//
//	main: 0x1000 B0 (call a at 0x1008) → B1 (call b at 0x1012) | B2 → B3
//	a:    0x2000 B0 (call b at 0x2004) → B1 (call a at 0x200a) | → B2
func viewTable() *meta.Table {
	blk := func(addr, end uint64, insts uint32) meta.Block {
		return meta.Block{Addr: addr, End: end, Insts: insts}
	}
	return &meta.Table{
		MaxPaths: 1 << 20,
		InstrID:  []byte{0xb1, 0xbb},
		Funcs: []meta.Func{
			fnMain: {Name: "main", Entry: 0x1000, Size: 0x28, Instrumented: true,
				Blocks:    []meta.Block{blk(0x1000, 0x1010, 4), blk(0x1010, 0x1018, 2), blk(0x1018, 0x1020, 3), blk(0x1020, 0x1028, 1)},
				Edges:     []meta.Edge{{From: 0, To: 1}, {From: 0, To: 2}, {From: 1, To: 3}, {From: 2, To: 3}, {From: 3, To: -1}},
				NumPaths:  2,
				CallSites: []uint64{0x1008, 0x1012}},
			fnA: {Name: "a", Entry: 0x2000, Size: 0x14, Instrumented: true,
				Blocks:    []meta.Block{blk(0x2000, 0x2008, 3), blk(0x2008, 0x2010, 2), blk(0x2010, 0x2014, 1)},
				Edges:     []meta.Edge{{From: 0, To: 1}, {From: 0, To: 2}, {From: 1, To: 2}, {From: 2, To: -1}},
				NumPaths:  2,
				CallSites: []uint64{0x2004, 0x200a}},
			fnB: {Name: "b", Entry: 0x3000, Size: 0x10, Instrumented: true,
				Blocks: []meta.Block{blk(0x3000, 0x3010, 5)}, Edges: []meta.Edge{{From: 0, To: -1}}, NumPaths: 1},
			fnHandler: {Name: "handler", Entry: 0x4000, Size: 0x8, Instrumented: true,
				Blocks: []meta.Block{blk(0x4000, 0x4008, 2)}, Edges: []meta.Edge{{From: 0, To: -1}}, NumPaths: 1},
			fnMemcpy: {Name: "memcpy", Entry: 0x5000, Size: 0x40, Reason: "unresolved indirect jump"},
		},
	}
}

// lineAt is a row of test line information: it holds from its address
// to the next row's; a row without a file ends the one before.
type lineAt struct {
	addr uint64
	file string
	line int
}

// pointLines makes line information from rows in address order.
func pointLines(rows ...lineAt) *DebugInfo {
	di := &DebugInfo{}
	for i, r := range rows {
		if r.file == "" || i+1 == len(rows) {
			continue
		}
		di.rows = append(di.rows, LineRange{Addr: r.addr, End: rows[i+1].addr, File: r.file, Line: r.line})
	}
	return di
}

// viewLines gives file:line to main, a and b; handler has none.
func viewLines() *DebugInfo {
	return pointLines([]lineAt{
		{0x1000, "/src/main.c", 3}, {0x1008, "/src/main.c", 10}, {0x1010, "/src/main.c", 11},
		{0x1012, "/src/main.c", 12}, {0x1018, "/src/main.c", 14}, {0x1020, "/src/main.c", 16},
		{0x2000, "/src/a.c", 2}, {0x2004, "/src/a.c", 5}, {0x2008, "/src/a.c", 6}, {0x200a, "/src/a.c", 7},
		{0x2010, "/src/a.c", 9}, {0x3000, "/src/b.c", 1}, {0x3010, "", 0},
	}...)
}

func tsc(count, ticks uint64, id uint64) cct.Path {
	return cct.Path{ID: id, Count: count, Metrics: []uint64{ticks}}
}

// viewProfile is two threads (say, two runs merged) of the program:
//
//	thread 0: main ─1→ a (5 calls: 1 + 4 recursive, folded) ─1→ b (2000 calls)
//	                                                           ├─0→ handler (a signal)
//	                                                           └─0→ a (a callback)
//	          main ─2→ b (2 calls)
//	thread 1: main ─1→ a ─1→ b   (merged with thread 0's chain)
//
// with partial paths: main stopped at its entry block (exit() from a
// callee), b once at an unknown block, b twice without a record.
func viewProfile() *cct.Profile {
	return &cct.Profile{
		Version: cct.Version,
		BuildID: []byte{0xb1, 0xbb},
		Metrics: []cct.Metric{{Name: cct.FreqMetric, Kind: cct.MetricReal}, {Name: "tsc", Kind: cct.MetricFallback}},
		Threads: []cct.Thread{
			{TID: 100,
				Records: []cct.Record{
					{Func: fnMain, Parent: -1, Calls: 1, Paths: []cct.Path{tsc(1, 40, 0)}},
					{Func: fnA, Parent: 0, CallSite: 1, Calls: 5, Paths: []cct.Path{tsc(1, 30, 0), tsc(4, 200, 1)}},
					{Func: fnB, Parent: 1, CallSite: 1, Calls: 2000, Paths: []cct.Path{tsc(2000, 9000, 0)}},
					{Func: fnB, Parent: 0, CallSite: 2, Calls: 2, Paths: []cct.Path{tsc(2, 180, 0)}},
					{Func: fnHandler, Parent: 2, Calls: 1, Paths: []cct.Path{tsc(1, 7, 0)}},
					{Func: fnA, Parent: 2, Calls: 3, Paths: []cct.Path{tsc(3, 60, 0)}},
				},
				Partials: []cct.Partial{
					{Record: 0, Func: fnMain, Block: 0, Reg: 0, Count: 1},
					{Record: 2, Func: fnB, Block: cct.BlockUnknown, Count: 1},
					{Record: -1, Func: fnB, Block: 0, Reg: 0, Count: 2},
				}},
			{TID: 101,
				Records: []cct.Record{
					{Func: fnMain, Parent: -1, Calls: 1, Paths: []cct.Path{tsc(1, 45, 1)}},
					{Func: fnA, Parent: 0, CallSite: 1, Calls: 1, Paths: []cct.Path{tsc(1, 25, 0)}},
					{Func: fnB, Parent: 1, CallSite: 1, Calls: 100, Paths: []cct.Path{tsc(100, 400, 0)}},
				}},
		},
	}
}

func viewTree(t *testing.T) *Model {
	t.Helper()
	p := viewProfile()
	if err := p.CheckValid(); err != nil {
		t.Fatalf("the test profile is invalid: %v", err)
	}
	c, err := NewModel("prog.blpp", viewTable(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// viewNode finds the node of a '/'-separated chain from a root.
func viewNode(t *testing.T, c *Model, chain string) *CNode {
	t.Helper()
	ids, err := c.Match("/" + chain)
	if err != nil || len(ids) != 1 {
		t.Fatalf("context /%s: %v, %v (want exactly one)", chain, ids, err)
	}
	return &c.Nodes[ids[0]]
}

func TestViewGolden(t *testing.T) {
	c := viewTree(t)
	c.Debug = viewLines()
	c.Modules[0].Debug = c.Debug
	tests := []struct {
		args []string // the options, which name the golden file
		run  func(buf *bytes.Buffer, o ViewOptions) error
	}{
		{[]string{"tree"}, func(b *bytes.Buffer, o ViewOptions) error { return TreeText(b, c, o) }},
		{[]string{"tree", "all"}, func(b *bytes.Buffer, o ViewOptions) error { return TreeText(b, c, o) }},
		{[]string{"tree", "metric", "tsc"}, func(b *bytes.Buffer, o ViewOptions) error { return TreeText(b, c, o) }},
		{[]string{"tree", "metric", "insns"}, func(b *bytes.Buffer, o ViewOptions) error { return TreeText(b, c, o) }},
		{[]string{"callers"}, func(b *bytes.Buffer, o ViewOptions) error { return CallersText(b, c, o) }},
		{[]string{"callers", "metric", "tsc"}, func(b *bytes.Buffer, o ViewOptions) error { return CallersText(b, c, o) }},
		{[]string{"flat"}, func(b *bytes.Buffer, o ViewOptions) error { return FlatText(b, c, o) }},
		{[]string{"flat", "metric", "insns", "top", "2"}, func(b *bytes.Buffer, o ViewOptions) error { return FlatText(b, c, o) }},
		{[]string{"paths", "context", "a/b"}, nil},
		{[]string{"paths", "context", "a", "metric", "tsc"}, nil},
		{[]string{"paths", "context", "/main/a", "metric", "insns", "top", "1"}, nil},
	}
	for _, tt := range tests {
		name := golden.Name(append([]string{"view"}, tt.args...)...)
		name = strings.ReplaceAll(name, "-_", "-")
		t.Run(name, func(t *testing.T) {
			o := ViewOptions{Top: 20}
			pattern := ""
			for i := 1; i < len(tt.args); i++ {
				switch tt.args[i] {
				case "all":
					o.All = true
				case "metric":
					i++
					col, err := c.Column(tt.args[i])
					if err != nil {
						t.Fatal(err)
					}
					o.Metric = col
				case "top":
					i++
					fmt.Sscan(tt.args[i], &o.Top)
				case "context":
					i++
					pattern = tt.args[i]
				}
			}
			var buf bytes.Buffer
			var err error
			if tt.run != nil {
				err = tt.run(&buf, o)
			} else {
				var ids []int
				if ids, err = c.Match(pattern); err == nil {
					err = ContextPathsText(&buf, c, ids, pattern, o)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			golden.CheckString(t, name, buf.String())
		})
	}
}

func TestViewTreeShape(t *testing.T) {
	c := viewTree(t)
	// Thread 1's main → a → b merged with thread 0's: six contexts.
	if len(c.Nodes) != 6 || len(c.Roots) != 1 || c.Threads != 2 {
		t.Fatalf("%d nodes, %d roots, %d threads; want 6, 1, 2", len(c.Nodes), len(c.Roots), c.Threads)
	}
	ab := viewNode(t, c, "main/a/b")
	if ab.Calls != 2100 || ab.Excl[0] != 2100 || ab.Excl[1] != 9400 {
		t.Errorf("main/a/b: calls %d, freq %d, tsc %d; want the two threads' sums 2100, 2100, 9400", ab.Calls, ab.Excl[0], ab.Excl[1])
	}
	a := viewNode(t, c, "main/a")
	if a.Calls != 6 {
		t.Errorf("main/a: %d calls, want 6 (recursive activations folded in, both threads)", a.Calls)
	}
	// insns: paths × their blocks' instructions, plus partial prefixes.
	insns, _ := c.Column(MetricInsns)
	if got := viewNode(t, c, "main").Excl[insns]; got != 4+2+1+4+3+1+4 {
		// path 0 and path 1 (one run each: B0 B1 B3 and B0 B2 B3, in some
		// order) and the partial that stopped in B0.
		t.Errorf("main: %d insns, want %d", got, 4+2+1+4+3+1+4)
	}
	if ab.Excl[insns] != 2100*5 || ab.Partial != 1 || ab.PartialUnknown != 1 {
		t.Errorf("main/a/b: %d insns, %d partial (%d unknown); want %d, 1 (1)", ab.Excl[insns], ab.Partial, ab.PartialUnknown, 2100*5)
	}
	if c.UnattributedPartials != 2 || c.UnattributedInsns != 10 {
		t.Errorf("unattributed: %d partials, %d insns; want 2, 10", c.UnattributedPartials, c.UnattributedInsns)
	}
	// Call sites are the original addresses of the calls, from the
	// parent's call-site table; CallSite 0 gives none.
	for chain, want := range map[string]uint64{"main": 0, "main/a": 0x1008, "main/b": 0x1012, "main/a/b": 0x2004, "main/a/b/handler": 0, "main/a/b/a": 0} {
		if got := viewNode(t, c, chain).CallSite; got != want {
			t.Errorf("%s: call site %#x, want %#x", chain, got, want)
		}
	}
}

// TestViewSums: for every metric, a node's inclusive value is its
// exclusive value plus its children's inclusive values, the roots'
// inclusive values add up to the total, which is the sum of exclusive
// values over the tree; the flat view's exclusive values add up to the
// total too, and its inclusive values count recursion once.
func TestViewSums(t *testing.T) {
	c := viewTree(t)
	for col, column := range c.Columns {
		var excl, roots uint64
		for i := range c.Nodes {
			n := &c.Nodes[i]
			excl += n.Excl[col]
			want := n.Excl[col]
			for _, ch := range n.Children {
				want += c.Nodes[ch].Incl[col]
			}
			if n.Incl[col] != want {
				t.Errorf("%s: node %d (%s): inclusive %d, want exclusive + children = %d", column.Name, i, n.Name, n.Incl[col], want)
			}
		}
		for _, r := range c.Roots {
			roots += c.Nodes[r].Incl[col]
		}
		if roots != excl || excl != c.Total[col] {
			t.Errorf("%s: roots' inclusive %d, sum of exclusive %d, total %d: want all equal", column.Name, roots, excl, c.Total[col])
		}
		var flat uint64
		for _, r := range c.Flat(col) {
			flat += r.Excl
			if r.Incl > c.Total[col] {
				t.Errorf("%s: flat inclusive of %s is %d, above the total %d", column.Name, r.Name, r.Incl, c.Total[col])
			}
			if r.Name == "main" && r.Incl != c.Total[col] {
				t.Errorf("%s: flat inclusive of main %d, want the total %d", column.Name, r.Incl, c.Total[col])
			}
			if r.Name == "a" {
				// a appears below itself (main/a/b/a): counted once, so
				// its inclusive value is that of the outer context.
				if outer := viewNode(t, c, "main/a").Incl[col]; r.Incl != outer {
					t.Errorf("%s: flat inclusive of a %d, want %d (main/a's, recursion counted once)", column.Name, r.Incl, outer)
				}
				if r.Contexts != 2 || r.Calls != 9 {
					t.Errorf("flat a: %d contexts, %d calls; want 2, 9", r.Contexts, r.Calls)
				}
			}
		}
		if flat != c.Total[col] {
			t.Errorf("%s: flat exclusive values add up to %d, want the total %d", column.Name, flat, c.Total[col])
		}
		// Bottom-up: each procedure's callers partition its values.
		for _, top := range c.Callers(col) {
			var check func(n *CallerNode)
			check = func(n *CallerNode) {
				if len(n.Children) == 0 {
					return
				}
				var e, calls uint64
				for _, ch := range n.Children {
					e += ch.Excl
					calls += ch.Calls
					check(ch)
				}
				// Contexts that are roots end their chain here.
				if e > n.Excl || calls > n.Calls {
					t.Errorf("%s: callers of %s: children hold %d/%d calls, more than the row's %d/%d", column.Name, n.Name, e, calls, n.Excl, n.Calls)
				}
			}
			check(top)
		}
	}
}

// TestViewInsnsMatchBlockCounts: the tree's instructions (and those of
// partials without a context) equal the flat block counts of MakePaths
// times the blocks' instruction counts, and its freq total MakePaths'
// path executions.
func TestViewInsnsMatchBlockCounts(t *testing.T) {
	c := viewTree(t)
	tab := viewTable()
	d, err := MakePaths("prog.blpp", tab, viewProfile())
	if err != nil {
		t.Fatal(err)
	}
	var want uint64
	for fi, f := range d.Functions {
		for bi, b := range f.Blocks {
			want += b.Count * uint64(tab.Funcs[fi].Blocks[bi].Insts)
		}
	}
	insns, _ := c.Column(MetricInsns)
	if got := c.Total[insns] + c.UnattributedInsns; got != want {
		t.Errorf("tree insns %d + unattributed %d = %d, block counts give %d", c.Total[insns], c.UnattributedInsns, got, want)
	}
	if c.Total[0] != d.TotalPaths {
		t.Errorf("freq total %d, MakePaths counts %d path executions", c.Total[0], d.TotalPaths)
	}
}

// TestViewContextsJSON checks the "contexts" array through its JSON
// encoding: ids 0..n-1, parents before children, call sites that are the
// parent function's call instructions, every metric present.
func TestViewContextsJSON(t *testing.T) {
	c := viewTree(t)
	tab := c.Table
	var buf bytes.Buffer
	if err := PathsJSON(&buf, c); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Functions []json.RawMessage `json:"functions"`
		Contexts  []struct {
			ID       *int              `json:"id"`
			Parent   *int              `json:"parent"`
			Function *string           `json:"function"`
			CallSite *string           `json:"callsite"`
			Calls    *uint64           `json:"calls"`
			Metrics  map[string]uint64 `json:"metrics"`
			Paths    []struct {
				ID      *uint64           `json:"id"`
				Count   *uint64           `json:"count"`
				Metrics map[string]uint64 `json:"metrics"`
			} `json:"paths"`
		} `json:"contexts"`
	}
	dec := json.NewDecoder(&buf)
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Functions) != len(tab.Funcs) || len(doc.Contexts) != len(c.Nodes) {
		t.Fatalf("%d functions, %d contexts; want %d, %d", len(doc.Functions), len(doc.Contexts), len(tab.Funcs), len(c.Nodes))
	}
	funcOf := map[int]string{}
	wantMetrics := []string{"freq", "insns", "tsc"}
	for i, x := range doc.Contexts {
		if x.ID == nil || *x.ID != i || x.Function == nil || x.Calls == nil {
			t.Fatalf("context %d: id, function or calls missing or wrong: %+v", i, x)
		}
		funcOf[i] = *x.Function
		if x.Parent != nil && (*x.Parent < 0 || *x.Parent >= i) {
			t.Errorf("context %d: parent %d does not precede it", i, *x.Parent)
		}
		if x.CallSite != nil {
			if x.Parent == nil {
				t.Errorf("context %d: a root with call site %s", i, *x.CallSite)
				continue
			}
			var addr uint64
			if _, err := fmt.Sscanf(*x.CallSite, "0x%x", &addr); err != nil {
				t.Errorf("context %d: call site %q is not a hex address", i, *x.CallSite)
			}
			caller := funcOf[*x.Parent]
			fi := slices.IndexFunc(tab.Funcs, func(f meta.Func) bool { return f.Name == caller })
			if !slices.Contains(tab.Funcs[fi].CallSites, addr) {
				t.Errorf("context %d (%s): call site %s is not a call instruction of its caller %s %#x", i, *x.Function, *x.CallSite, caller, tab.Funcs[fi].CallSites)
			}
		}
		keys := make([]string, 0, len(x.Metrics))
		for k := range x.Metrics {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, wantMetrics) {
			t.Errorf("context %d: metrics %v, want %v", i, keys, wantMetrics)
		}
		var freq uint64
		for _, p := range x.Paths {
			if p.ID == nil || p.Count == nil || p.Metrics["freq"] != *p.Count || len(p.Metrics) != len(wantMetrics) {
				t.Errorf("context %d: path %+v: want id, count and metrics %v with freq = count", i, p, wantMetrics)
				continue
			}
			freq += *p.Count
		}
		if freq != x.Metrics["freq"] {
			t.Errorf("context %d: paths count %d, metrics.freq %d", i, freq, x.Metrics["freq"])
		}
	}
	// The resolved call sites of the known tree.
	for i, x := range doc.Contexts {
		if x.Parent != nil && funcOf[*x.Parent] == "main" && *x.Function == "a" && (x.CallSite == nil || *x.CallSite != "0x1008") {
			t.Errorf("context %d (main → a): call site %v, want 0x1008", i, x.CallSite)
		}
	}
}

func TestViewMatch(t *testing.T) {
	c := viewTree(t)
	for pattern, want := range map[string][]string{
		"b":          {"main/a/b", "main/b"},
		"a/b":        {"main/a/b"},
		"/main/b":    {"main/b"},
		"/b":         nil,
		"main":       {"main"},
		"b/a":        {"main/a/b/a"},
		"a":          {"main/a", "main/a/b/a"},
		"x/main/a":   nil,
		"b/handler":  {"main/a/b/handler"},
		"/main/a/b":  {"main/a/b"},
		"main/a/b/a": {"main/a/b/a"},
	} {
		ids, err := c.Match(pattern)
		if err != nil {
			t.Errorf("Match(%q): %v", pattern, err)
			continue
		}
		var got []string
		for _, i := range ids {
			got = append(got, strings.Join(c.Chain(i), "/"))
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("Match(%q) = %v, want %v", pattern, got, want)
		}
	}
	for _, bad := range []string{"", "/", "a//b", "a/"} {
		if _, err := c.Match(bad); err == nil {
			t.Errorf("Match(%q): no error", bad)
		}
	}
}

func TestViewColumns(t *testing.T) {
	c := viewTree(t)
	_, err := c.Column("cycles")
	if err == nil || !strings.Contains(err.Error(), "freq, tsc, insns") {
		t.Errorf("Column(cycles): %v, want an error listing freq, tsc, insns", err)
	}
	for _, tt := range []struct {
		col  Column
		want string
	}{
		{Column{Name: "tsc", Kind: cct.MetricFallback}, "tsc (fallback for cycles)"},
		{Column{Name: "instructions", Kind: cct.MetricUnavailable}, "instructions (unavailable: not measured, all 0)"},
		{Column{Name: "cycles", Kind: cct.MetricReal}, "cycles"},
		{Column{Name: "freq"}, "freq (path executions)"},
	} {
		if got := tt.col.Label(); got != tt.want {
			t.Errorf("%+v.Label() = %q, want %q", tt.col, got, tt.want)
		}
	}
}

// TestViewFlowOnly: in a flow-only profile every record is a root, one
// context per procedure; the tree view says so.
func TestViewFlowOnly(t *testing.T) {
	p := &cct.Profile{
		Version: cct.Version, Flags: cct.FlagFlowOnly, BuildID: []byte{0xb1, 0xbb},
		Metrics: []cct.Metric{{Name: cct.FreqMetric}},
		Threads: []cct.Thread{{Records: []cct.Record{
			{Func: fnMain, Parent: -1, Calls: 1, Paths: []cct.Path{{ID: 0, Count: 1}}},
			{Func: fnB, Parent: -1, Calls: 7, Paths: []cct.Path{{ID: 0, Count: 7}}},
		}, Partials: []cct.Partial{
			// As the runtime writes them: no record.
			{Record: -1, Func: fnMain, Block: 0, Reg: 0, Count: 1},
			{Record: -1, Func: fnHandler, Block: 0, Reg: 0, Count: 2},
		}}},
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	c, err := NewModel("prog.blpp", viewTable(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The partials go to their function's root; handler, with partials
	// only, gets one.
	if len(c.Roots) != 3 || !c.FlowOnly || c.UnattributedPartials != 0 {
		t.Fatalf("%d roots, flow-only %v, %d partials without a context; want 3, true, 0", len(c.Roots), c.FlowOnly, c.UnattributedPartials)
	}
	insns, _ := c.Column(MetricInsns)
	if m, h := viewNode(t, c, "main"), viewNode(t, c, "handler"); m.Partial != 1 || h.Partial != 2 || h.Calls != 0 || h.Excl[insns] != 4 || h.Excl[0] != 0 {
		t.Errorf("main: %d partial; handler: %d partial, %d calls, %d insns, freq %d; want 1; 2, 0, 4, 0", m.Partial, h.Partial, h.Calls, h.Excl[insns], h.Excl[0])
	}
	var buf bytes.Buffer
	if err := TreeText(&buf, c, ViewOptions{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	bLine := out[strings.LastIndex(out[:strings.Index(out, "  b\n")], "\n")+1:]
	if !strings.Contains(out, "flow-only") || !strings.HasPrefix(strings.Fields(bLine)[1], "87.50%") {
		t.Errorf("tree of a flow-only profile (want it said, and b at 87.50%%):\n%s", out)
	}
}

// TestViewRefusals: a profile that does not fit the metadata is refused
// with an error, not a panic or a wrong tree.
func TestViewRefusals(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(p *cct.Profile)
		want string
	}{
		{"call site past the caller's", func(p *cct.Profile) { p.Threads[0].Records[1].CallSite = 3 }, "call site 3 of main, which has 2 call sites"},
		{"uninstrumented function", func(p *cct.Profile) { p.Threads[0].Records[4].Func = fnMemcpy }, "does not instrument"},
		{"function out of range", func(p *cct.Profile) { p.Threads[0].Partials[2].Func = 99 }, "function 99"},
		{"path out of range", func(p *cct.Profile) { p.Threads[0].Records[3].Paths[0].ID = 1 }, "path 1, but the function has 1 paths"},
		{"partial block out of range", func(p *cct.Profile) { p.Threads[0].Partials[0].Block = 4 }, "block 4: out of range"},
		{"another binary", func(p *cct.Profile) { p.BuildID = []byte{1} }, "another instrumented binary"},
		{"insns overflow", func(p *cct.Profile) {
			p.Threads[1].Records[2].Paths[0].Count = 1 << 62
			p.Threads[1].Records[2].Calls = 1 << 62
		}, "overflows 64 bits"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := viewProfile()
			tt.edit(p)
			if err := p.CheckValid(); err != nil {
				t.Fatalf("the edited profile is invalid: %v", err)
			}
			_, err := NewModel("prog.blpp", viewTable(), p, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestViewUninstrumented: a record of an uninstrumented function whose
// entries the binary counts (decision 70) shows, in the tree and flat
// views and the JSON, as uninstrumented with its reason and entry count,
// with the callbacks it made under it; one with paths, or of a function
// whose entries are not counted, is refused.
func TestViewUninstrumented(t *testing.T) {
	tab := viewTable()
	tab.Funcs[fnMemcpy].EntriesCounted = true
	p := viewProfile()
	th := &p.Threads[0]
	// main ─2→ memcpy (7 entries) ─0→ handler (a callback from it)
	th.Records = append(th.Records,
		cct.Record{Func: fnMemcpy, Parent: 0, CallSite: 2, Calls: 7},
		cct.Record{Func: fnHandler, Parent: 6, Calls: 3, Paths: []cct.Path{tsc(3, 9, 0)}})
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	c, err := NewModel("prog.blpp", tab, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := viewNode(t, c, "main/memcpy")
	if !m.Uninstrumented || m.Reason != "unresolved indirect jump" || m.Calls != 7 || m.Incl[0] != 3 || m.Excl[0] != 0 {
		t.Errorf("main/memcpy: %+v", *m)
	}
	viewNode(t, c, "main/memcpy/handler")
	var buf bytes.Buffer
	for _, view := range []func(io.Writer, *Model, ViewOptions) error{TreeText, FlatText} {
		buf.Reset()
		if err := view(&buf, c, ViewOptions{All: true}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "memcpy  [uninstrumented (unresolved indirect jump), entered 7 times]") {
			t.Errorf("the view does not say memcpy is uninstrumented and entered 7 times:\n%s", buf.String())
		}
	}
	found := false
	for _, x := range c.Contexts() {
		if x.Function == "memcpy" {
			found = x.Uninstrumented && x.Reason == "unresolved indirect jump" && x.Calls == 7 && len(x.Paths) == 0
		}
	}
	if !found {
		t.Errorf("the JSON contexts do not mark memcpy uninstrumented with 7 calls")
	}
	doc := c.PathDoc()
	if f := doc.Functions[fnMemcpy]; !f.EntriesCounted || f.Entries != 7 {
		t.Errorf("paths document: memcpy entries counted %v, %d entries; want true, 7", f.EntriesCounted, f.Entries)
	}
	buf.Reset()
	if err := PathsText(&buf, c, ViewOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "uninstrumented (unresolved indirect jump), entered 7 times") {
		t.Errorf("the paths report does not list memcpy's entries:\n%s", buf.String())
	}

	th.Records[6].Paths = []cct.Path{tsc(1, 1, 0)}
	if _, err := NewModel("prog.blpp", tab, p, nil); err == nil || !strings.Contains(err.Error(), "gives paths to function") {
		t.Errorf("a path of an uninstrumented function: error %v", err)
	}
	th.Records[6].Paths = nil
	tab.Funcs[fnMemcpy].EntriesCounted = false
	if _, err := NewModel("prog.blpp", tab, p, nil); err == nil || !strings.Contains(err.Error(), "does not instrument") {
		t.Errorf("entries of a function whose entries are not counted: error %v", err)
	}
}

// TestModelModules: the model names every function by (module, function):
// one module today, the executable, whose metadata and counts the
// contexts' FuncIDs reach.
func TestModelModules(t *testing.T) {
	c := viewTree(t)
	if len(c.Modules) != 1 || c.Modules[0].Path != "prog.blpp" || c.Modules[0].Table != c.Table ||
		string(c.Modules[0].BuildID) != string(c.Table.InstrID) {
		t.Fatalf("modules: %+v", c.Modules)
	}
	if ids := c.FuncIDs(); len(ids) != len(c.Table.Funcs) || len(c.Modules[0].Funcs) != len(c.Table.Funcs) {
		t.Fatalf("%d function ids, %d function profiles, %d functions", len(ids), len(c.Modules[0].Funcs), len(c.Table.Funcs))
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if id := n.FuncID(); id.Module != 0 || c.Func(id).Name != n.Name || c.FuncName(id) != n.Name {
			t.Errorf("context %d (%s): function %+v is %s", i, n.Name, id, c.Func(id).Name)
		}
	}
	for i := range c.Stacks() {
		for _, fr := range c.StackFrames(i, nil) {
			if fr.Func.Module != 0 || int(fr.Func.Func) >= len(c.Table.Funcs) {
				t.Errorf("stack frame %+v names no function of the executable", fr)
			}
		}
	}
}

// TestCallersPruned: the bottom-up trees built with rows taken out as
// they are made are the whole trees with the same rows cut, top-down,
// and the count is of the rows cut there.
func TestCallersPruned(t *testing.T) {
	c := viewTree(t)
	for col := range c.Columns {
		whole := c.Callers(col)
		// Every row's value, to cut at several thresholds in turn.
		var vals []uint64
		var all func(ns []*CallerNode)
		all = func(ns []*CallerNode) {
			for _, n := range ns {
				vals = append(vals, max(n.Excl, n.Incl))
				all(n.Children)
			}
		}
		all(whole)
		for _, limit := range vals {
			show := func(n *CallerNode) bool { return max(n.Excl, n.Incl) >= limit }
			var want []string
			cut := 0
			var walk func(ns []*CallerNode, depth int)
			walk = func(ns []*CallerNode, depth int) {
				for _, n := range ns {
					if !show(n) {
						cut++
						continue
					}
					want = append(want, fmt.Sprintf("%*s%s@%#x %d %d %d", depth, "", n.Name, n.CallSite, n.Excl, n.Incl, n.Calls))
					walk(n.Children, depth+1)
				}
			}
			walk(whole, 0)
			pruned, taken, made := c.callerTree(col, show)
			var got []string
			var list func(ns []*CallerNode, depth int)
			list = func(ns []*CallerNode, depth int) {
				for _, n := range ns {
					got = append(got, fmt.Sprintf("%*s%s@%#x %d %d %d", depth, "", n.Name, n.CallSite, n.Excl, n.Incl, n.Calls))
					list(n.Children, depth+1)
				}
			}
			list(pruned, 0)
			if strings.Join(got, "\n") != strings.Join(want, "\n") || taken != cut {
				t.Errorf("column %d, rows from %d: pruned tree (%d cut)\n%s\nwant (%d cut)\n%s", col, limit, taken, strings.Join(got, "\n"), cut, strings.Join(want, "\n"))
			}
			// Nothing is made below a row cut: the rows made are those
			// shown and those cut.
			if made != len(got)+taken {
				t.Errorf("column %d, rows from %d: %d rows made, %d shown and %d cut", col, limit, made, len(got), taken)
			}
		}
	}
}
