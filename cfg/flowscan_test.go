package cfg

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestFlowScan: the flow scans the builder makes for discovery
// (flowScan) are what scanFunction finds decoding afresh: the same
// instructions in address order and the same calls, jumps out, operands
// and ends run into (as multisets: their order is the scan's). Discovery
// runs on large stripped libraries (libLLVM); -short skips them.
func TestFlowScan(t *testing.T) {
	var mu sync.Mutex
	checked, bad := 0, 0
	checkScan = func(p *Program, f *Function, g *Graph) {
		got, want := g.scan, p.scanFunction(f, g)
		sorted := func(s []uint64) []uint64 { s = slices.Clone(s); slices.Sort(s); return s }
		d := ""
		switch {
		case !reflect.DeepEqual(got.insts, want.insts):
			d = fmt.Sprintf("%d instructions, scan %d", len(got.insts), len(want.insts))
		case !slices.Equal(sorted(got.calls), sorted(want.calls)), !slices.Equal(sorted(got.jumps), sorted(want.jumps)),
			!slices.Equal(sorted(got.refs), sorted(want.refs)), !slices.Equal(sorted(got.reads), sorted(want.reads)),
			!slices.Equal(sorted(got.falls), sorted(want.falls)):
			d = fmt.Sprintf("calls %x/%x jumps %x/%x falls %x/%x", got.calls, want.calls, got.jumps, want.jumps, got.falls, want.falls)
		case got.size != want.size || got.nparts != want.nparts || got.graph != want.graph || !slices.Equal(got.ranges, want.ranges):
			d = "bounds"
		}
		mu.Lock()
		defer mu.Unlock()
		checked++
		if d != "" && bad < 10 {
			bad++
			t.Errorf("%s at %#x: %s", f.Name, f.Addr, d)
		}
	}
	defer func() { checkScan = nil }()
	// nofde.c built as Debian builds busybox (TestDiscoverNoFDE):
	// static, stripped, its own code without unwind tables.
	var bins []string
	for _, opt := range []string{"-O2", "-Os"} {
		bins = append(bins, fixture.Build(t, "nofde.c", fixture.Config{CC: "gcc", Opt: opt, Static: true, Strip: true,
			Extra: []string{"-fno-asynchronous-unwind-tables", "-fno-unwind-tables"}}))
	}
	if !testing.Short() {
		bins = append(bins, "/usr/lib/x86_64-linux-gnu/libLLVM-16.so.1")
	}
	for _, p := range bins {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Logf("%s: %v", p, err)
			continue
		}
		b, err := Load(data)
		if err != nil {
			t.Fatal(err)
		}
		Analyze(b, Options{})
	}
	if checked == 0 {
		t.Skip("no binary whose analysis runs discovery")
	}
	t.Logf("%d scans checked", checked)
}
