package report

import (
	"io"
	"reflect"
	"regexp"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/meta"
)

// bigViewProfile is one thread of n records of viewTable's functions, a
// tree three wide (a, b and handler under every record, entered at an
// unknown call site), with their paths: the shape of a whole-process
// profile, millions of records, at a size a test can afford.
func bigViewProfile(n int) *cct.Profile {
	p := &cct.Profile{
		Version: cct.Version,
		BuildID: []byte{0xb1, 0xbb},
		Metrics: []cct.Metric{{Name: cct.FreqMetric, Kind: cct.MetricReal}, {Name: "tsc", Kind: cct.MetricFallback}},
	}
	th := cct.Thread{TID: 1, Records: make([]cct.Record, n)}
	funcs := []uint32{fnA, fnB, fnHandler}
	for i := range th.Records {
		r := cct.Record{Func: fnMain, Parent: -1, Calls: 1}
		if i > 0 {
			r.Parent, r.Func, r.Calls = (i-1)/3, funcs[(i-1)%3], uint64(i)
		}
		r.Paths = []cct.Path{tsc(uint64(i+1), uint64(7*i), 0)}
		if r.Func == fnA || r.Func == fnMain {
			r.Paths = append(r.Paths, tsc(uint64(i+2), uint64(3*i), 1))
		}
		th.Records[i] = r
	}
	th.Partials = []cct.Partial{{Record: 0, Func: fnMain, Block: 0, Reg: 0, Count: 1}, {Record: -1, Func: fnB, Block: 0, Reg: 0, Count: 2}}
	p.Threads = []cct.Thread{th}
	return p
}

// TestModelLean: laying a big profile over its metadata allocates a few
// objects per record, not one per frame, stack and path (decision 137):
// the stacks wait for a view that reads them.
func TestModelLean(t *testing.T) {
	const n = 30_000
	p := bigViewProfile(n)
	if err := p.CheckValid(); err != nil {
		t.Fatalf("the test profile is invalid: %v", err)
	}
	var m *Model
	allocs := testing.AllocsPerRun(2, func() {
		var err error
		if m, err = NewModel("prog.blpp", viewTable(), p, nil); err != nil {
			t.Fatal(err)
		}
	})
	if m.stacks != nil {
		t.Errorf("NewModel built the stacks")
	}
	perRec := allocs / n
	t.Logf("NewModel: %.2f allocations per record", perRec)
	if perRec > 2 {
		t.Errorf("NewModel: %.1f allocations per record", perRec)
	}
	// The stacks, built now, are those of the records, with their frames.
	st := m.Stacks()
	if len(st) != n+1 { // and one for b's partials without a record
		t.Fatalf("%d stacks for %d records", len(st), n)
	}
	for i := range n {
		want := 1
		for r := i; p.Threads[0].Records[r].Parent >= 0; r = p.Threads[0].Records[r].Parent {
			want++
		}
		if fr := m.StackFrames(i, nil); len(fr) != want || fr[0].Func.Func != p.Threads[0].Records[i].Func {
			t.Fatalf("stack %d: frames %+v, want %d frames", i, fr, want)
		}
	}
}

func benchModel(b *testing.B, n int, use func(*Model) error) {
	p := bigViewProfile(n)
	if err := p.CheckValid(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m, err := NewModel("prog.blpp", viewTable(), p, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := use(m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkModelPaths is blpp report's default view of a profile of
// 300000 records.
func BenchmarkModelPaths(b *testing.B) {
	benchModel(b, 300_000, func(m *Model) error { return PathsText(io.Discard, m, ViewOptions{}) })
}

// BenchmarkModelFolded is the folded-stacks export of it, which reads
// every stack.
func BenchmarkModelFolded(b *testing.B) {
	benchModel(b, 300_000, func(m *Model) error { return ExportFolded(io.Discard, m, ExportOptions{}) })
}

// twoModuleProfile is bigViewProfile(n) run in two modules: the
// executable (prog) and a library (libx.so, whose table lib has the same
// functions as viewTable), a record's module alternating down the tree,
// so that the stacks cross modules.
func twoModuleProfile(t *testing.T, n int) (p *cct.Profile, lib *meta.Table) {
	t.Helper()
	p = bigViewProfile(n)
	lib = viewTable()
	lib.InstrID = []byte{0x11, 0xb0}
	p.Modules = []cct.Module{{Tag: 0, Flags: cct.ModuleFlagExecutable, Path: "/bin/prog", BuildID: p.BuildID},
		{Tag: 1, Path: "/lib/libx.so", BuildID: lib.InstrID}}
	th := &p.Threads[0]
	for i := range th.Records {
		if i%2 == 1 {
			th.Records[i].Func |= 1 << cct.FidBits
		}
	}
	for i := range th.Partials {
		if r := th.Partials[i].Record; r >= 0 {
			th.Partials[i].Func = th.Records[r].Func
		}
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("the test profile is invalid: %v", err)
	}
	return p, lib
}

// twoModuleModel is the model of twoModuleProfile(n).
func twoModuleModel(t *testing.T, n int) *Model {
	t.Helper()
	p, lib := twoModuleProfile(t, n)
	m, err := NewModelWith("prog", viewTable(), p, nil, ModelOptions{Libs: map[uint32]ModuleFile{1: {Path: "libx.so", Table: lib}}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStacksFilteredLater: module filters made before the stacks are
// built (decision 137) give the stacks that filtering the built ones
// gives, for FilterModules (frames of other modules spliced out) and
// ModuleView (stacks cut where they leave the module).
func TestStacksFilteredLater(t *testing.T) {
	const n = 200
	for _, re := range []string{"^prog$", "libx"} {
		early, late := twoModuleModel(t, n), twoModuleModel(t, n)
		if err := early.FilterModules(regexp.MustCompile(re)); err != nil {
			t.Fatal(err)
		}
		late.Stacks()
		if err := late.FilterModules(regexp.MustCompile(re)); err != nil {
			t.Fatal(err)
		}
		a, b := early.Stacks(), late.Stacks()
		if len(a) == 0 || len(a) >= n || !reflect.DeepEqual(a, b) {
			t.Errorf("--module %s: %d stacks filtered before they were built, %d after; equal: %v", re, len(a), len(b), reflect.DeepEqual(a, b))
		}
	}
	for k := range 2 {
		early, late := twoModuleModel(t, n), twoModuleModel(t, n)
		late.Stacks()
		a, b := early.ModuleView(k).Stacks(), late.ModuleView(k).Stacks()
		if len(a) == 0 || !reflect.DeepEqual(a, b) {
			t.Errorf("module %d: %d stacks in the view of the model before its stacks were built, %d after", k, len(a), len(b))
		}
		if len(early.Stacks()) != len(late.Stacks()) {
			t.Errorf("module %d: the view changed its model's stacks", k)
		}
	}
}
