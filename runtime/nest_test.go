package runtime_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
)

// varNest is the harness in context mode with the runtime built with
// BLPP_TEST_NEST: at each place where a signal handler's stub may land in
// the middle of one that makes or moves a record or node (decision 99),
// the harness's hook enters a function the way a handler would.
var varNest = variant{name: "nest", flags: []string{"-fno-pie", "-no-pie"}, rtFlags: []string{"-DBLPP_TEST_NEST"}, context: true}

// TestNestedStubs runs the harness's nest mode: P(i) for 3000 i (each
// calls f, wide or big), then 200 root activations of wide, with a nested
// activation at every nesting point of the runtime: a node made or moved,
// a record linked, a root record or node lists made, a cold record given
// its hot twin. No signal is blocked there, so the profile must still hold
// one record per calling context (the reader refuses a second one) and
// every activation and path, whichever stub counted it.
func TestNestedStubs(t *testing.T) {
	exe, prof, r := run(t, varNest, "nest")
	wantExit(t, r, 0)
	where := map[int]int{}
	m := newModel()
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var k, n int
		switch {
		case strings.HasPrefix(l, "where"):
			if _, err := fmt.Sscanf(l, "where %d %d", &k, &n); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			where[k] = n
		case strings.HasPrefix(l, "ran"):
			if _, err := fmt.Sscanf(l, "ran %d %d", &k, &n); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			for i := 0; i < n; i++ {
				m.enter(k)
				m.count(k, 0) // f(0), wide(0), big(0), P(0): path 0
			}
		default:
			t.Fatalf("stdout: %q", r.stdout)
		}
	}
	// 1 node made, 2 node moved, 3 record linked, 4 root made, 5 twin
	// made, 6 node lists made, 7 a record about to be linked.
	for k := 1; k <= 7; k++ {
		if where[k] == 0 {
			t.Errorf("nesting point %d never reached", k)
		}
	}
	callP := func(i int) {
		m.enter(fP)
		m.count(fP, 0)
		switch i % 3 {
		case 0:
			m.f(i)
		case 1:
			m.enter(fWide)
			m.count(fWide, uint64(i%128))
		default:
			m.big(uint64(i % 100))
		}
	}
	for i := 0; i < 3000; i++ {
		callP(i)
	}
	for i := 0; i < 200; i++ {
		m.enter(fWide)
		m.count(fWide, uint64(i%128))
	}
	for i := 0; i < 300; i++ {
		m.enter(fQ)
		m.count(fQ, 0)
		callP(i)
	}
	_ = exe
	data, err := os.ReadFile(prof)
	if err != nil {
		t.Fatalf("profile: %v", err)
	}
	p, err := cct.Parse(data) // refuses a second record of one context
	if err != nil {
		t.Fatalf("profile: %v", err)
	}
	if p.Flags&cct.FlagFlowOnly != 0 {
		t.Errorf("flags %v: flow-only", p.Flags)
	}
	if len(p.Threads) != 1 {
		t.Fatalf("%d threads, want 1", len(p.Threads))
	}
	calls, paths := map[int]uint64{}, map[int]map[uint64]uint64{}
	recs := p.Threads[0].Records
	for i, rec := range recs {
		// f, wide and big call nothing: a record under one of them has
		// the wrong parent index (a place given twice: point 7).
		if rec.Parent >= 0 {
			if pf := recs[rec.Parent].Func; pf == fBasic || pf == fWide || pf == fBig {
				t.Errorf("record %d (%s) has parent %d (%s), which calls nothing",
					i, harnessFuncs[rec.Func].name, rec.Parent, harnessFuncs[pf].name)
			}
		}
	}
	for _, rec := range recs {
		fn := int(rec.Func)
		calls[fn] += rec.Calls
		if paths[fn] == nil {
			paths[fn] = map[uint64]uint64{}
		}
		for _, pa := range rec.Paths {
			paths[fn][pa.ID] += pa.Count
		}
	}
	for fn, c := range m.calls {
		if calls[fn] != c {
			t.Errorf("%s: %d activations, want %d", harnessFuncs[fn].name, calls[fn], c)
		}
		if got, want := fmtPaths(paths[fn]), fmtPaths(m.paths[fn]); got != want {
			t.Errorf("%s: paths %s, want %s", harnessFuncs[fn].name, got, want)
		}
	}
	for fn, c := range calls {
		if _, ok := m.calls[fn]; !ok {
			t.Errorf("%s: unexpected records (%d activations)", harnessFuncs[fn].name, c)
		}
	}
	for _, k := range []string{"dropped_records", "dropped_counts", "no_record", "bad_paths", "bad_funcs"} {
		if p.Stats[k] != 0 {
			t.Errorf("stat %s = %d, want 0", k, p.Stats[k])
		}
	}
}
