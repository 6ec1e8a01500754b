package report

// Golden tests of the exporters, coverage, annotate and diff on a
// synthetic profile over a hand-made metadata table and hand-made DWARF
// facts, so the files under testdata/export-* do not depend on a
// compiler. Rewrite them with go test -update. The model's block counts
// are checked against MakePaths.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/golden"
	"github.com/blpp/blpp/meta"

	"github.com/google/pprof/profile"
)

// exTable: main loops calling work at 0x1010; work is a diamond; helper
// was left uninstrumented.
func exTable(t *testing.T) *meta.Table {
	tab := &meta.Table{MaxPaths: 1 << 20, InstrID: []byte("instr-id"), OrigBuildID: []byte{0xab, 0xcd}, Funcs: []meta.Func{
		{Name: "main", Entry: 0x1000, Size: 0x20, Instrumented: true,
			Blocks: []meta.Block{
				{Addr: 0x1000, End: 0x1008, Insts: 3},
				{Addr: 0x1008, End: 0x1010, Insts: 2, LoopDepth: 1},
				{Addr: 0x1010, End: 0x1015, Insts: 1, LoopDepth: 1},
				{Addr: 0x1015, End: 0x101a, Insts: 2, LoopDepth: 1},
				{Addr: 0x101a, End: 0x1020, Insts: 2},
			},
			Edges: []meta.Edge{
				{From: 0, To: 1, Kind: edgeFallThrough},
				{From: 1, To: 2, Kind: edgeFallThrough},
				{From: 1, To: 4, Kind: edgeBranch},
				{From: 2, To: 3, Kind: edgeCallReturn},
				{From: 3, To: 1, Kind: edgeBranch},
				{From: 4, To: -1, Kind: edgeReturn},
			},
			CallSites: []uint64{0x1010}},
		{Name: "work", Entry: 0x1100, Size: 0x18, Instrumented: true,
			Blocks: []meta.Block{
				{Addr: 0x1100, End: 0x1108, Insts: 3},
				{Addr: 0x1108, End: 0x1110, Insts: 2},
				{Addr: 0x1110, End: 0x1118, Insts: 2},
			},
			Edges: []meta.Edge{
				{From: 0, To: 1, Kind: edgeFallThrough},
				{From: 0, To: 2, Kind: edgeBranch},
				{From: 1, To: 2, Kind: edgeFallThrough},
				{From: 2, To: -1, Kind: edgeReturn},
			}},
		{Name: "helper", Entry: 0x1200, Size: 4, Reason: "too short"},
	}}
	for i := range tab.Funcs {
		f := &tab.Funcs[i]
		if !f.Instrumented {
			continue
		}
		f.NumPaths = 1 << 62
		if _, err := f.Numbering(tab.MaxPaths); err != nil {
			var n uint64
			if _, e := fmt.Sscanf(err.Error()[strings.Index(err.Error(), "numbering gives "):], "numbering gives %d paths", &n); e != nil {
				t.Fatal(err)
			}
			f.NumPaths = n
		}
	}
	return tab
}

// exProfile: every path of main and work, in two threads, with a tsc
// metric (a fallback); flowOnly gives one root per function.
func exProfile(t *testing.T, tab *meta.Table, flowOnly bool) *cct.Profile {
	p := &cct.Profile{Version: cct.Version, BuildID: tab.InstrID, Metrics: []cct.Metric{{Name: "freq"}, {Name: "tsc", Kind: cct.MetricFallback}}}
	paths := func(fn int, scale uint64) []cct.Path {
		var out []cct.Path
		for id := uint64(0); id < tab.Funcs[fn].NumPaths; id++ {
			c := (id + 1) * scale
			out = append(out, cct.Path{ID: id, Count: c, Metrics: []uint64{c * 7}})
		}
		return out
	}
	parent, site := 0, uint32(1)
	if flowOnly {
		p.Flags = cct.FlagFlowOnly
		parent, site = -1, 0
	}
	for th := uint64(1); th <= 2; th++ {
		p.Threads = append(p.Threads, cct.Thread{TID: th, Records: []cct.Record{
			{Func: 0, Parent: -1, Calls: 1, Paths: paths(0, th)},
			{Func: 1, Parent: parent, CallSite: site, Calls: 4 * th, Paths: paths(1, th)},
		}, Partials: []cct.Partial{{Record: 0, Func: 0, Block: cct.BlockUnknown, Count: 1}}})
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	return p
}

// exDebug: lines of /src/demo.c; helper inlined into work at line 20.
func exDebug() *DebugInfo {
	const file = "/src/demo.c"
	di := &DebugInfo{rows: []LineRange{
		{0x1000, 0x1008, file, 10, 0, 0},
		{0x1008, 0x1010, file, 11, 0, 0},
		{0x1010, 0x1015, file, 12, 0, 0},
		{0x1015, 0x101a, file, 11, 2, 0},
		{0x101a, 0x1020, file, 14, 0, 0},
		{0x1100, 0x1104, file, 20, 0, 0},
		{0x1104, 0x1108, file, 31, 0, 0},
		{0x1108, 0x1110, file, 21, 0, 0},
		{0x1110, 0x1118, file, 23, 0, 0},
	}}
	work := &Scope{Name: "work", DeclFile: file, DeclLine: 19, Ranges: [][2]uint64{{0x1100, 0x1118}}}
	work.Inlined = []*Scope{{Name: "helper", DeclFile: file, DeclLine: 30, Ranges: [][2]uint64{{0x1104, 0x1108}},
		CallFile: file, CallLine: 20, Parent: work}}
	di.scopes = []*Scope{
		{Name: "main", DeclFile: file, DeclLine: 9, Ranges: [][2]uint64{{0x1000, 0x1020}}},
		work,
	}
	return di.finish()
}

func exModel(t *testing.T, flowOnly bool) *Model {
	tab := exTable(t)
	m, err := NewModel("demo.blpp", tab, exProfile(t, tab, flowOnly), nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Debug = exDebug()
	m.Modules[0].Debug = m.Debug
	return m
}

func TestExportModelAgreesWithMakePaths(t *testing.T) {
	for _, flowOnly := range []bool{false, true} {
		tab := exTable(t)
		p := exProfile(t, tab, flowOnly)
		m, err := NewModel("demo.blpp", tab, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, err := MakePaths("demo.blpp", tab, p)
		if err != nil {
			t.Fatal(err)
		}
		var insns uint64
		for i, f := range d.Functions {
			for j, b := range f.Blocks {
				if got := m.Profile(FuncID{Func: uint32(i)}).Blocks[j]; got != b.Count {
					t.Errorf("%s block %d: model %d, MakePaths %d", f.Name, j, got, b.Count)
				}
				insns += b.Count * uint64(tab.Funcs[i].Blocks[j].Insts)
			}
		}
		var stacks uint64
		for _, s := range m.Stacks() {
			stacks += s.Insns
		}
		if stacks != insns || m.TotalInsns() != insns {
			t.Errorf("instructions: stacks %d, functions %d, MakePaths blocks %d", stacks, m.TotalInsns(), insns)
		}
	}
}

func TestExportGolden(t *testing.T) {
	type format struct {
		name string
		fn   func(*bytes.Buffer, *Model) error
	}
	formats := []format{
		{"folded", func(b *bytes.Buffer, m *Model) error { return ExportFolded(b, m, ExportOptions{}) }},
		{"folded-metric-tsc", func(b *bytes.Buffer, m *Model) error { return ExportFolded(b, m, ExportOptions{Metric: "tsc"}) }},
		{"llvm-sample", func(b *bytes.Buffer, m *Model) error { return ExportLLVMSample(b, m, ExportOptions{}) }},
		{"pprof", func(b *bytes.Buffer, m *Model) error {
			// What ExportPprof streams, read back (the golden file is
			// MakePprof's model, which the stream must decode to).
			var z bytes.Buffer
			if err := ExportPprof(&z, m, ExportOptions{}); err != nil {
				return err
			}
			p, err := profile.Parse(&z)
			if err != nil {
				return err
			}
			b.WriteString(p.String())
			return nil
		}},
		{"coverage-text", func(b *bytes.Buffer, m *Model) error { return CoverageText(b, MakeCoverage(m)) }},
		{"coverage-lcov", func(b *bytes.Buffer, m *Model) error { return CoverageLcov(b, MakeCoverage(m)) }},
		{"annotate-work", func(b *bytes.Buffer, m *Model) error {
			return Annotate(b, m, AnnotateOptions{Target: "work", ReadFile: exSource})
		}},
		{"annotate-file", func(b *bytes.Buffer, m *Model) error {
			return Annotate(b, m, AnnotateOptions{Target: "demo.c", ReadFile: exSource})
		}},
	}
	for _, flowOnly := range []bool{false, true} {
		for _, f := range formats {
			name := "export-" + f.name
			if flowOnly {
				name += "-flow-only"
			}
			t.Run(name, func(t *testing.T) {
				var b bytes.Buffer
				if err := f.fn(&b, exModel(t, flowOnly)); err != nil {
					t.Fatal(err)
				}
				golden.CheckString(t, name+".golden", b.String())
			})
		}
	}
}

// exSource is /src/demo.c for annotate.
func exSource(name string) ([]byte, error) {
	if name != "/src/demo.c" {
		return nil, os.ErrNotExist
	}
	var b strings.Builder
	for i := 1; i <= 32; i++ {
		fmt.Fprintf(&b, "/* line %d */\n", i)
	}
	return []byte(b.String()), nil
}

func TestExportDiff(t *testing.T) {
	a, b := exModel(t, false), exModel(t, false)
	var out bytes.Buffer
	if err := DiffText(&out, MakeDiff(a, b), 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\nno change\n") {
		t.Errorf("diff of a model with itself:\n%s", out.String())
	}
	// Double work's counts in the new profile.
	tab := exTable(t)
	p := exProfile(t, tab, false)
	for ti := range p.Threads {
		r := &p.Threads[ti].Records[1]
		for k := range r.Paths {
			r.Paths[k].Count *= 2
			r.Paths[k].Metrics[0] *= 2
		}
	}
	c, err := NewModel("demo.blpp", tab, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := DiffText(&out, MakeDiff(a, c), 0); err != nil {
		t.Fatal(err)
	}
	golden.CheckString(t, "export-diff.golden", out.String())
}

func TestExportRefusals(t *testing.T) {
	tab := exTable(t)
	p := exProfile(t, tab, false)
	p.BuildID = []byte("other")
	if _, err := NewModel("demo.blpp", tab, p, nil); err == nil || !strings.Contains(err.Error(), "another instrumented binary") {
		t.Errorf("profile of another binary: %v", err)
	}
	p = exProfile(t, tab, false)
	p.Threads[0].Records[1].Func = 2 // helper: not instrumented
	if _, err := NewModel("demo.blpp", tab, p, nil); err == nil || !strings.Contains(err.Error(), "does not instrument") {
		t.Errorf("profile naming an uninstrumented function: %v", err)
	}
	m := exModel(t, false)
	m.Debug = nil
	m.Modules[0].Debug = m.Debug
	if err := ExportLLVMSample(&bytes.Buffer{}, m, ExportOptions{}); err != ErrNoDebugInfo {
		t.Errorf("llvm-sample without DWARF: %v", err)
	}
	if err := ExportFolded(&bytes.Buffer{}, m, ExportOptions{Metric: "nope"}); err == nil {
		t.Errorf("folded with an unknown metric: no error")
	}
	if err := Annotate(&bytes.Buffer{}, exModel(t, false), AnnotateOptions{Target: "nope", ReadFile: exSource}); err == nil {
		t.Errorf("annotate of an unknown target: no error")
	}
}

// TestPathsJSONStreamed: PathsJSON, which writes the contexts one at a
// time, writes what json.Encoder writes of the whole PathDoc, contexts
// and all; and a model without contexts too.
func TestPathsJSONStreamed(t *testing.T) {
	for _, flowOnly := range []bool{false, true} {
		m := exModel(t, flowOnly)
		var got, want bytes.Buffer
		if err := PathsJSON(&got, m); err != nil {
			t.Fatal(err)
		}
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(m.PathDoc()); err != nil {
			t.Fatal(err)
		}
		if len(m.Nodes) < 2 || !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("flow-only=%v: %d contexts; PathsJSON wrote\n%s\nwant\n%s", flowOnly, len(m.Nodes), got.String(), want.String())
		}
		m.Nodes = nil
		got.Reset()
		want.Reset()
		if err := PathsJSON(&got, m); err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(m.PathDoc()); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("flow-only=%v, no contexts: PathsJSON wrote\n%s\nwant\n%s", flowOnly, got.String(), want.String())
		}
	}
}

// TestFunctionsOnly: a model made without its contexts writes the paths
// view as the whole model does, and has neither contexts nor stacks. The
// example profile has several threads, and a copy of its first makes
// one more: the whole model folds them and the one without contexts
// sums them as they are (decision 164), so the views must agree (a sum
// over the first thread only fails it).
func TestFunctionsOnly(t *testing.T) {
	for _, c := range []struct {
		flowOnly bool
		extra    bool
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		flowOnly := c.flowOnly
		tab := exTable(t)
		whole := exModel(t, flowOnly)
		// The lite model reads the graphs of the profile's functions
		// alone, as blpp report's paths view does.
		prof := exProfile(t, tab, flowOnly)
		if c.extra {
			twice := func() *cct.Profile {
				p := exProfile(t, tab, flowOnly)
				second := p.Threads[0]
				second.TID++
				p.Threads = append(p.Threads, second)
				return p
			}
			prof = twice()
			var err error
			if whole, err = NewModel("demo.blpp", tab, twice(), nil); err != nil {
				t.Fatal(err)
			}
			whole.Debug = exDebug()
			whole.Modules[0].Debug = whole.Debug
		}
		idle := tab.Funcs[1] // a function that never ran
		idle.Name, idle.Entry = "idle", 0x1300
		withIdle := *tab
		withIdle.Funcs = append(append([]meta.Func(nil), tab.Funcs...), idle)
		some, err := meta.DecodeSome(meta.Encode(&withIdle), ProfileFuncs(prof).of(0))
		if err != nil {
			t.Fatal(err)
		}
		skipped := 0
		for i := range some.Funcs {
			if some.Funcs[i].Skipped {
				skipped++
			}
		}
		if skipped == 0 {
			t.Fatalf("flow-only=%v: every function of the table is in the profile: nothing tests DecodeSome", flowOnly)
		}
		some.InstrID = tab.InstrID
		lite, err := NewModelWith("demo.blpp", some, prof, nil, ModelOptions{FunctionsOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		lite.Debug = exDebug()
		lite.Modules[0].Debug = lite.Debug
		var a, b bytes.Buffer
		if err := PathsText(&a, whole, ViewOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := PathsText(&b, lite, ViewOptions{}); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() || len(whole.Nodes) == 0 {
			t.Errorf("flow-only=%v, %d threads: paths view of the whole model (%d contexts)\n%s\nwithout contexts\n%s", flowOnly, len(prof.Threads), len(whole.Nodes), a.String(), b.String())
		}
		if len(lite.Nodes) != 0 || len(lite.Stacks()) != 0 {
			t.Errorf("flow-only=%v: FunctionsOnly model has %d contexts, %d stacks", flowOnly, len(lite.Nodes), len(lite.Stacks()))
		}
	}
}

// TestViewsOfProfileFuncs: every view that shows only what ran (the
// paths, tree, callers, flat, loops and hot views and --context) is the
// same from a table that holds the graphs of the profile's functions
// alone (meta.DecodeSome, as blpp report reads the metadata for them)
// and from the whole table with a function that never ran.
func TestViewsOfProfileFuncs(t *testing.T) {
	for _, flowOnly := range []bool{false, true} {
		tab := exTable(t)
		idle := tab.Funcs[1]
		idle.Name, idle.Entry = "idle", 0x1300
		tab.Funcs = append(tab.Funcs, idle)
		prof := exProfile(t, exTable(t), flowOnly)
		some, err := meta.DecodeSome(meta.Encode(tab), ProfileFuncs(prof).of(0))
		if err != nil {
			t.Fatal(err)
		}
		some.InstrID, tab.InstrID = prof.BuildID, prof.BuildID
		views := func(tab *meta.Table) map[string]string {
			m, err := NewModel("demo.blpp", tab, exProfile(t, exTable(t), flowOnly), nil)
			if err != nil {
				t.Fatal(err)
			}
			m.Debug = exDebug()
			m.Modules[0].Debug = m.Debug
			out := map[string]string{}
			o := ViewOptions{Top: 0, All: true}
			for name, view := range map[string]func(*bytes.Buffer) error{
				"paths":   func(w *bytes.Buffer) error { return PathsText(w, m, o) },
				"tree":    func(w *bytes.Buffer) error { return TreeText(w, m, o) },
				"callers": func(w *bytes.Buffer) error { return CallersText(w, m, o) },
				"flat":    func(w *bytes.Buffer) error { return FlatText(w, m, o) },
				"loops":   func(w *bytes.Buffer) error { return LoopsText(w, m, o) },
				"hot": func(w *bytes.Buffer) error {
					h, err := MakeHotPaths(m, "", 1)
					if err != nil {
						return err
					}
					return HotText(w, h, HotOptions{})
				},
				"context": func(w *bytes.Buffer) error {
					ids, err := m.Match("work")
					if err != nil {
						return err
					}
					return ContextPathsText(w, m, ids, "work", o)
				},
			} {
				var b bytes.Buffer
				if err := view(&b); err != nil {
					t.Fatalf("flow-only=%v: %s: %v", flowOnly, name, err)
				}
				out[name] = b.String()
			}
			return out
		}
		whole, lite := views(tab), views(some)
		for name := range whole {
			if whole[name] != lite[name] || whole[name] == "" {
				t.Errorf("flow-only=%v: the %s view differs with the profile's functions alone:\n%s\nwhole table:\n%s", flowOnly, name, lite[name], whole[name])
			}
		}
	}
}
