package report

// The loops view is tested on a synthetic profile over a hand-made table:
// work has a loop nest (an outer loop at 0x6010 around an inner one at
// 0x6020), scan one loop whose header has two backedges, main and leaf
// none. The golden files are testdata/loops-*.golden (-update rewrites
// them); the laws are assertions: the loops found match the stored loop
// depths, an outer loop's value is at least each inner loop's (for the
// additive metrics), and a context's loops are at most its exclusive value.

import (
	"bytes"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/golden"
	"github.com/blpp/blpp/meta"
)

const (
	lfMain = iota
	lfWork
	lfScan
	lfLeaf
)

// loopsTable:
//
//	main: 0x1000 one block, calls work at 0x1004 and 0x1008, scan at 0x100c
//	work: B0 0x6000 → B1 0x6010 (outer header) → B2 0x6020 (inner header)
//	      → B3 0x6030 (inner body, calls leaf at 0x6034) → B2;
//	      B2 → B4 0x6040 (outer latch) → B1; B1 → B5 0x6050 → exit
//	scan: B0 0x7000 → B1 0x7010 (header) → B2 0x7020 → B1 | B3 0x7030 → B1;
//	      B1 → B4 0x7040 → exit
//	leaf: one block
func loopsTable() *meta.Table {
	blk := func(addr uint64, insts, depth uint32) meta.Block {
		return meta.Block{Addr: addr, End: addr + 0x10, Insts: insts, LoopDepth: depth}
	}
	return &meta.Table{
		MaxPaths: 1 << 20,
		InstrID:  []byte{0x10, 0x0b},
		Funcs: []meta.Func{
			lfMain: {Name: "main", Entry: 0x1000, Size: 0x10, Instrumented: true,
				Blocks: []meta.Block{blk(0x1000, 4, 0)}, Edges: []meta.Edge{{From: 0, To: -1}}, NumPaths: 1,
				CallSites: []uint64{0x1004, 0x1008, 0x100c}},
			lfWork: {Name: "work", Entry: 0x6000, Size: 0x60, Instrumented: true,
				Blocks: []meta.Block{blk(0x6000, 2, 0), blk(0x6010, 1, 1), blk(0x6020, 2, 2), blk(0x6030, 5, 2), blk(0x6040, 1, 1), blk(0x6050, 3, 0)},
				Edges: []meta.Edge{{From: 0, To: 1}, {From: 1, To: 2}, {From: 1, To: 5}, {From: 2, To: 3}, {From: 2, To: 4},
					{From: 3, To: 2}, {From: 4, To: 1}, {From: 5, To: -1}},
				NumPaths: 8, CallSites: []uint64{0x6034}},
			lfScan: {Name: "scan", Entry: 0x7000, Size: 0x60, Instrumented: true,
				Blocks: []meta.Block{blk(0x7000, 1, 0), blk(0x7010, 2, 1), blk(0x7020, 3, 1), blk(0x7030, 1, 1), blk(0x7040, 1, 0)},
				Edges: []meta.Edge{{From: 0, To: 1}, {From: 1, To: 2}, {From: 1, To: 3}, {From: 1, To: 4}, {From: 2, To: 1},
					{From: 3, To: 1}, {From: 4, To: -1}}, NumPaths: 6},
			lfLeaf: {Name: "leaf", Entry: 0x8000, Size: 0x10, Instrumented: true,
				Blocks: []meta.Block{blk(0x8000, 3, 0)}, Edges: []meta.Edge{{From: 0, To: -1}}, NumPaths: 1},
		},
	}
}

func loopsLines() *DebugInfo {
	return pointLines([]lineAt{
		{0x1000, "/src/main.c", 3}, {0x1004, "/src/main.c", 4}, {0x1008, "/src/main.c", 5}, {0x100c, "/src/main.c", 6},
		{0x6000, "/src/work.c", 10}, {0x6010, "/src/work.c", 11}, {0x6020, "/src/work.c", 12}, {0x6030, "/src/work.c", 13},
		{0x6040, "/src/work.c", 14}, {0x6050, "/src/work.c", 16}, {0x6060, "", 0},
	}...)
}

// loopsSetup returns the context tree of a profile that runs every path
// of work (from two call sites, two threads merged) and of scan.
func loopsSetup(t *testing.T) *Model {
	t.Helper()
	tab := loopsTable()
	work, scan := tab.Funcs[lfWork].NumPaths, tab.Funcs[lfScan].NumPaths
	paths := func(n uint64, count func(id uint64) uint64) []cct.Path {
		var ps []cct.Path
		for id := uint64(0); id < n; id++ {
			c := count(id)
			ps = append(ps, cct.Path{ID: id, Count: c, Metrics: []uint64{c * (7 + 3*id)}})
		}
		return ps
	}
	p := &cct.Profile{
		Version: cct.Version,
		BuildID: []byte{0x10, 0x0b},
		Metrics: []cct.Metric{{Name: cct.FreqMetric, Kind: cct.MetricReal}, {Name: "tsc", Kind: cct.MetricFallback}},
		Threads: []cct.Thread{
			{TID: 1, Records: []cct.Record{
				{Func: lfMain, Parent: -1, Calls: 1, Paths: []cct.Path{{ID: 0, Count: 1, Metrics: []uint64{50}}}},
				{Func: lfWork, Parent: 0, CallSite: 1, Calls: 10, Paths: paths(work, func(id uint64) uint64 { return 10 + 40*id })},
				{Func: lfLeaf, Parent: 1, CallSite: 1, Calls: 300, Paths: []cct.Path{{ID: 0, Count: 300, Metrics: []uint64{900}}}},
				{Func: lfWork, Parent: 0, CallSite: 2, Calls: 2, Paths: paths(work, func(id uint64) uint64 { return 2 + id })},
				{Func: lfScan, Parent: 0, CallSite: 3, Calls: 5, Paths: paths(scan, func(id uint64) uint64 { return 5 * (id + 1) })},
			}},
			{TID: 2, Records: []cct.Record{
				{Func: lfMain, Parent: -1, Calls: 1, Paths: []cct.Path{{ID: 0, Count: 1, Metrics: []uint64{60}}}},
				{Func: lfWork, Parent: 0, CallSite: 1, Calls: 4, Paths: paths(work, func(id uint64) uint64 { return 4 * (id + 1) })},
			}},
		},
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("the test profile is invalid: %v", err)
	}
	c, err := NewModel("loops.blpp", tab, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoopsFind(t *testing.T) {
	tab := loopsTable()
	for _, fi := range []int{lfMain, lfWork, lfScan, lfLeaf} {
		f := &tab.Funcs[fi]
		ls := FindLoops(f)
		// Every block's stored loop depth is the number of loops holding it.
		for b := range f.Blocks {
			d := 0
			for k := range ls {
				if ls[k].Contains(b) {
					d++
				}
			}
			if uint32(d) != f.Blocks[b].LoopDepth {
				t.Errorf("%s: block %d in %d loops, stored depth %d", f.Name, b, d, f.Blocks[b].LoopDepth)
			}
		}
		for k := range ls {
			l := &ls[k]
			if l.Parent >= 0 {
				p := &ls[l.Parent]
				if p.Depth+1 != l.Depth || !p.Contains(l.Header) || len(p.Blocks) <= len(l.Blocks) {
					t.Errorf("%s: loop at block %d: parent at block %d does not enclose it", f.Name, l.Header, p.Header)
				}
			}
		}
	}
	work := FindLoops(&tab.Funcs[lfWork])
	if len(work) != 2 || work[0].Header != 1 || work[1].Header != 2 || work[1].Parent != 0 ||
		len(work[0].Blocks) != 4 || len(work[1].Blocks) != 2 {
		t.Errorf("work: loops %+v; want the outer at block 1 (4 blocks) holding the inner at block 2 (2 blocks)", work)
	}
	if scan := FindLoops(&tab.Funcs[lfScan]); len(scan) != 1 || len(scan[0].Blocks) != 3 {
		t.Errorf("scan: loops %+v; want one loop of 3 blocks (two backedges, one header)", scan)
	}
}

func TestLoopsGolden(t *testing.T) {
	c := loopsSetup(t)
	c.Debug = loopsLines()
	c.Modules[0].Debug = c.Debug
	for _, metric := range []string{"freq", "insns", "tsc"} {
		t.Run(metric, func(t *testing.T) {
			col, err := c.Column(metric)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := LoopsText(&buf, c, ViewOptions{Metric: col}); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if strings.Contains(out, "leaf") {
				t.Errorf("leaf, which has no loops and no callees, is shown:\n%s", out)
			}
			golden.CheckString(t, "loops-metric-"+metric+".golden", out)
		})
	}
}

// TestLoopsLaws: an outer loop's value is at least each inner loop's, and
// a context's loops are at most the context's exclusive value, for every
// metric.
func TestLoopsLaws(t *testing.T) {
	c := loopsSetup(t)
	seen := 0
	for col, column := range c.Columns {
		for i := range c.Nodes {
			n := &c.Nodes[i]
			ls := FindLoops(c.Func(n.FuncID()))
			vals, err := c.LoopValues(i, col, ls)
			if err != nil {
				t.Fatal(err)
			}
			for k := range ls {
				if vals[k] > n.Excl[col] {
					t.Errorf("%s: %s: loop at block %d has %d, above the context's exclusive %d", column.Name, n.Name, ls[k].Header, vals[k], n.Excl[col])
				}
				if vals[k] > 0 {
					seen++
				}
				if p := ls[k].Parent; p >= 0 && vals[p] < vals[k] {
					t.Errorf("%s: %s: outer loop %d has %d, below inner loop %d's %d", column.Name, n.Name, ls[p].Header, vals[p], ls[k].Header, vals[k])
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no loop got a value: the test checks nothing")
	}
}
