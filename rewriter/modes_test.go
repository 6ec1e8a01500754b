package rewriter_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/counters"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
	"github.com/blpp/blpp/runtime"
)

// tscMetric is the time-stamp counter as a metric.
var tscMetric = rewriter.Metric{Name: "tsc", Type: runtime.MetricTypeTSC}

// rewriteWith rewrites orig into inst with opts.
func rewriteWith(t *testing.T, orig, inst string, opts rewriter.Options) string {
	t.Helper()
	rewriteSum(t, orig, inst, opts)
	return inst
}

// rewriteSum is rewriteWith, returning the rewrite's summary.
// runProfiled runs inst without arguments, with its profile written
// next to it, requires it to behave as want, and returns the profile.
func runProfiled(t *testing.T, what, inst string, want procResult) *cct.Profile {
	t.Helper()
	prof := filepath.Join(filepath.Dir(inst), "blpp.out")
	got := runProc(t, inst, nil, "BLPP_PROFILE="+prof, "BLPP_QUIET=1")
	sameBehaviour(t, what, want, got)
	p, err := cct.ReadFile(prof)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	checkLatency(t, what, p)
	return p
}

func rewriteSum(t *testing.T, orig, inst string, opts rewriter.Options) rewriter.Summary {
	t.Helper()
	data, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	out, sum, err := rewriter.Rewrite(data, opts)
	if err != nil {
		t.Fatalf("%s: rewrite: %v", orig, err)
	}
	if sum.Instrumented == 0 {
		t.Fatalf("%s: nothing instrumented", orig)
	}
	// The fixtures are ordinary compiler output: the code generator must
	// handle every function it chose, or a bug hides behind the
	// fallback that leaves a function alone. (Static libc's signal
	// trampolines and clone have unwind tables that cover only part of
	// them; leaving those alone is the fallback doing its job.)
	for _, s := range sum.Skipped {
		if s.Reason == "code generation" && !strings.HasPrefix(s.Detail, "unwind tables:") {
			t.Errorf("%s: %s left uninstrumented: %s", orig, s.Name, s.Detail)
		}
	}
	if err := os.WriteFile(inst, out, 0o755); err != nil {
		t.Fatal(err)
	}
	return *sum
}

// TestModesExact checks that the other instrumentation modes count as
// exactly as the default one: flow-only (--no-context) uses the flat
// record table, and with tsc the inline entries, exits and backedges
// also read the counter (decisions 41, 46). Block counts are compared
// with callgrind's.
func TestModesExact(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	modes := []struct {
		name string
		opts rewriter.Options
		flow bool
	}{
		{"flow-only", rewriter.Options{NoContext: true}, true},
		{"context+tsc", rewriter.Options{Metrics: []rewriter.Metric{tscMetric}}, false},
		{"flow-only+tsc", rewriter.Options{NoContext: true, Metrics: []rewriter.Metric{tscMetric}}, true},
		// Another code layout (blpp-bench's): only addresses change.
		{"flow-only, layout seed 5", rewriter.Options{NoContext: true, LayoutSeed: 5}, true},
		// Loop path registers everywhere they qualify, both kinds
		// [decision 56].
		{"flow-only, loop registers", rewriter.Options{NoContext: true, LoopRegs: rewriter.LoopRegsOnly}, true},
		{"flow-only, swapping loop registers", rewriter.Options{NoContext: true, LoopRegs: rewriter.LoopRegsSwap}, true},
		{"context, loop registers", rewriter.Options{LoopRegs: rewriter.LoopRegsOnly}, false},
		{"context, swapping loop registers", rewriter.Options{LoopRegs: rewriter.LoopRegsSwap}, false},
	}
	srcs := []string{"loops.c", "recursion.c", "setjmp.c", "funcptr.c", "hash.c", "irreducible.c", "interp.c", "switch.c", "cold.c", "pathreg.c", "manypaths.c", "loopsig.c", "closedsig.c", "cycles.c", "deep.c", "outcall.c"}
	loopRegs := map[string]int{}
	cfgs := []fixture.Config{fixture.Matrix()[0], {CC: "gcc", Opt: "-O2", PIE: true}}
	for _, c := range cfgs {
		for _, src := range srcs {
			orig := fixture.Build(t, src, c)
			want := runProc(t, orig, nil)
			cg := callgrindOf(t, src, orig, nil, want)
			for _, m := range modes {
				what := src + " " + c.String() + " " + m.name
				dir := t.TempDir()
				inst := filepath.Join(dir, "prog.blpp")
				sum := rewriteSum(t, orig, inst, m.opts)
				loopRegs[m.name] += sum.LoopRegisters
				loopRegs[m.name+" swaps"] += sum.LoopSwaps
				loopRegs[m.name+" closed"] += sum.ClosedFunctions
				loopRegs[m.name+" calling out"] += sum.ClosedCallingOut
				loopRegs[m.name+" self"] += sum.LoopCopies
				loopRegs[m.name+" partial"] += sum.LoopCopiesPartial
				p := runProfiled(t, what, inst, want)
				if got := p.Flags&cct.FlagFlowOnly != 0; got != m.flow {
					t.Errorf("%s: flow-only flag %v, want %v", what, got, m.flow)
				}
				check := countCheck{own: []string{"main"}}
				if src == "loopsig.c" {
					check.own = append(check.own, "sum", "spread")
					check.retried = map[string]uint64{"sum": 5} // its output says faults 5
				}
				if src == "outcall.c" {
					// A SIGSEGV inside strlen, three times, abandons
					// round_of, chain's 6, 7 and 8 activations and
					// scan, each stopped at a call: scan in its outside
					// call [decision 64].
					check.own = []string{"chain", "weigh", "order", "apply", "drop"}
					check.abandoned = map[string]uint64{"round_of": 3, "chain": 21, "scan": 3}
				}
				if src == "closedsig.c" {
					// main is left by longjmp (its setjmp call's path
					// is a partial), so it is compared, not owned.
					check.own = []string{"descend"}
					check.abandoned = map[string]uint64{"descend": 24, "main": 3}
				}
				compareCounts(t, what, inst, p, cg, check)
			}
		}
	}
	// Mutation guard: the loop modes must have given loops registers of
	// both kinds, or they tested nothing new.
	// And closed functions [decision 57] must have been tested too.
	if loopRegs["flow-only closed"] == 0 || loopRegs["flow-only, layout seed 5 closed"] == 0 {
		t.Errorf("closed functions: %v; want some in flow-only images", loopRegs)
	}
	// Some of them calling out [decision 64].
	if loopRegs["flow-only calling out"] == 0 {
		t.Errorf("closed functions calling out: %v; want some in flow-only images", loopRegs)
	}
	// And loops counted at the head of a second copy [decision 58], in
	// slot counters and in records.
	if loopRegs["flow-only self"] == 0 || loopRegs["flow-only, swapping loop registers self"] == 0 ||
		loopRegs["context, loop registers self"] == 0 || loopRegs["context, swapping loop registers self"] == 0 {
		t.Errorf("loop copies: %v; want some in flow-only and context images", loopRegs)
	}
	// Some of them of loops with more than one cycle [decision 63].
	if loopRegs["flow-only partial"] == 0 || loopRegs["context, loop registers partial"] == 0 {
		t.Errorf("loop copies of one of several cycles: %v; want some in flow-only and context images", loopRegs)
	}
	if loopRegs["flow-only, loop registers"] == 0 || loopRegs["flow-only, loop registers"] == loopRegs["flow-only, loop registers swaps"] ||
		loopRegs["flow-only, swapping loop registers swaps"] == 0 ||
		loopRegs["context, loop registers"] == 0 || loopRegs["context, swapping loop registers swaps"] == 0 {
		t.Errorf("loop registers given: %v; want loops of both kinds", loopRegs)
	}
}

// TestLayoutSeed checks that a layout seed moves the code (blpp-bench
// measures over several layouts [decision 53]) and that the same seed
// always gives the same output.
func TestLayoutSeed(t *testing.T) {
	orig := fixture.Build(t, "loops.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true})
	data, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	outs := map[uint64][]byte{}
	for _, seed := range []uint64{0, 1, 2, 1} {
		out, _, err := rewriter.Rewrite(data, rewriter.Options{NoContext: true, LayoutSeed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := outs[seed]; ok && !bytes.Equal(prev, out) {
			t.Errorf("seed %d: two rewrites differ", seed)
		}
		outs[seed] = out
	}
	if bytes.Equal(outs[0], outs[1]) || bytes.Equal(outs[1], outs[2]) {
		t.Errorf("layout seeds 0, 1 and 2 do not give three different layouts")
	}
}

// TestFastPaths checks that flow-only frequency instrumentation runs its
// inline code, not the runtime's stubs: no backedge takes the stub, no
// exit but main's (its activation ends in exit()), in flow-only and in
// context mode, and the rewriter keeps path registers in general
// registers where it can [decisions 42, 44].
// A stub counts as exactly as the inline code, so a fast path that is
// never taken (a wrong frame offset, a stale Thread.Cur) shows only here.
func TestFastPaths(t *testing.T) {
	c := fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}
	for _, src := range []string{"pathreg.c", "loops.c", "interp.c", "recursion.c", "switch.c"} {
		orig := fixture.Build(t, src, c)
		data, err := os.ReadFile(orig)
		if err != nil {
			t.Fatal(err)
		}
		want := runProc(t, orig, nil)
		var ctxEntries uint64
		for _, m := range []struct {
			name string
			opts rewriter.Options
		}{
			{"flow-only", rewriter.Options{NoContext: true}},
			{"context", rewriter.Options{}},
			{"context+tsc", rewriter.Options{Metrics: []rewriter.Metric{tscMetric}}},
		} {
			what := src + " " + m.name
			tsc := len(m.opts.Metrics) > 0
			out, sum, err := rewriter.Rewrite(data, m.opts)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if sum.RegisterPaths == 0 && !tsc {
				t.Errorf("%s: no function keeps its path register in a general register", what)
			}
			dir := t.TempDir()
			inst := filepath.Join(dir, "prog.blpp")
			if err := os.WriteFile(inst, out, 0o755); err != nil {
				t.Fatal(err)
			}
			prof := filepath.Join(dir, "blpp.out")
			sameBehaviour(t, what, want, runProc(t, inst, nil, "BLPP_PROFILE="+prof, "BLPP_QUIET=1"))
			p, err := cct.ReadFile(prof)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			t.Logf("%s: %d/%d functions with register paths; stubs: %d entries, %d exits, %d backedges", what,
				sum.RegisterPaths, sum.Instrumented, p.Stats["stub_entries"], p.Stats["stub_exits"], p.Stats["stub_backedges"])
			if n := p.Stats["stub_backedges"]; n != 0 {
				t.Errorf("%s: %d backedges took the stub, want none", what, n)
			}
			if n := p.Stats["stub_exits"]; n > 1 && !tsc {
				t.Errorf("%s: %d exits took the stub, want at most main's", what, n)
			}
			// With tsc alone entries are inline too [decision 46]: only
			// a context's first entry takes the stub, as without
			// metrics. (Exits before a direct tail jump still do.)
			if tsc && p.Stats["stub_entries"] != ctxEntries {
				t.Errorf("%s: %d entries took the stub, %d without metrics", what, p.Stats["stub_entries"], ctxEntries)
			}
			if m.name == "context" {
				ctxEntries = p.Stats["stub_entries"]
			}
		}
	}
}

// TestTSCPerPath runs a program whose time is one loop, with tsc read at
// path boundaries [DESIGN 8]: the loop function's paths must carry at
// least 90% of the summed tsc, and the exclusive tsc summed over every
// record must be within 10% of the runtime's own rdtsc delta between its
// start and the profile write (STATS tsc_total).
func TestTSCPerPath(t *testing.T) {
	c := fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}
	orig := fixture.Build(t, "tscloop.c", c)
	dir := t.TempDir()
	inst := rewriteWith(t, orig, filepath.Join(dir, "tscloop.blpp"), rewriter.Options{Metrics: []rewriter.Metric{tscMetric}})
	prof := filepath.Join(dir, "blpp.out")
	want := runProc(t, orig, nil)
	got := runProc(t, inst, nil, "BLPP_PROFILE="+prof)
	sameBehaviour(t, "tscloop.c", want, got)
	p, err := cct.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Metrics) != 2 || p.Metrics[1].Name != "tsc" || p.Metrics[1].Kind != cct.MetricReal {
		t.Fatalf("metrics %v, want freq and tsc (real)", p.Metrics)
	}
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total, spin uint64
	for _, th := range p.Threads {
		for _, r := range th.Records {
			for _, pa := range r.Paths {
				total += pa.Metrics[0]
				if tab.Funcs[r.Func].Name == "spin" {
					spin += pa.Metrics[0]
				}
			}
		}
	}
	delta := p.Stats["tsc_total"]
	t.Logf("tsc: spin %d of %d summed (%.1f%%); runtime delta %d (sum/delta %.3f)", spin, total, 100*float64(spin)/float64(total), delta, float64(total)/float64(delta))
	if total == 0 || delta == 0 {
		t.Fatalf("no tsc recorded (sum %d, tsc_total %d)", total, delta)
	}
	if float64(spin) < 0.9*float64(total) {
		t.Errorf("spin's paths carry %d of %d tsc (%.1f%%), want ≥ 90%%", spin, total, 100*float64(spin)/float64(total))
	}
	if r := float64(total) / float64(delta); r < 0.9 || r > 1.1 {
		t.Errorf("summed exclusive tsc %d is %.3f of the runtime's delta %d, want within 10%%", total, r, delta)
	}
}

// TestHashedInline runs manypaths.c, whose two functions have more paths
// than a dense array takes, in the frequency-only modes: the inline code
// counts a path found at its first probe in the record's first hash
// table [decision 48], so most path ends do not take the stub (before,
// all of them did). Exactness against callgrind is TestModesExact's
// and the e2e matrix's.
func TestHashedInline(t *testing.T) {
	c := fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}
	orig := fixture.Build(t, "manypaths.c", c)
	data, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	want := runProc(t, orig, nil)
	// classify's 64000 exits, scan's 10000 loop iterations and
	// guarded's 2000 exits; 4000 of the first two go to paths the first
	// tables cannot hold.
	const pathEnds = 64000 + 10000 + 2000
	for _, m := range []struct {
		name string
		opts rewriter.Options
	}{
		{"flow-only", rewriter.Options{NoContext: true}},
		{"context", rewriter.Options{}},
	} {
		out, _, err := rewriter.Rewrite(data, m.opts)
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		dir := t.TempDir()
		inst := filepath.Join(dir, "prog.blpp")
		if err := os.WriteFile(inst, out, 0o755); err != nil {
			t.Fatal(err)
		}
		prof := filepath.Join(dir, "blpp.out")
		sameBehaviour(t, m.name, want, runProc(t, inst, nil, "BLPP_PROFILE="+prof, "BLPP_QUIET=1"))
		p, err := cct.ReadFile(prof)
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		// guarded's record stays the running one when bounce longjmps
		// out; the runtime would count in the root record otherwise,
		// exactly in flow-only mode, but not silently [decision 51].
		if n := p.Stats["no_record"]; n != 0 {
			t.Errorf("%s: %d path ends found no record", m.name, n)
		}
		stubs := p.Stats["stub_exits"] + p.Stats["stub_backedges"]
		t.Logf("%s: %d of %d path ends took the stub", m.name, stubs, pathEnds)
		if stubs > pathEnds*3/10 {
			t.Errorf("%s: %d of %d hashed path ends took the stub, want under 30%%", m.name, stubs, pathEnds)
		}
	}
}

// TestCallCache checks that a call site cycling through several callees
// does not send every entry to the stub in context mode: funcptr.c's
// apply_all calls four functions in turn through one indirect call site,
// n times (12, or 32 with 20 arguments). The list of that site's nodes
// has the last callee first, so each entry finds its node through the
// thread's call cache [decision 49]; only the entries that make a node
// (and the program's other first entries) take the stub, the same number
// whatever n.
func TestCallCache(t *testing.T) {
	for _, c := range []fixture.Config{{CC: "gcc", Opt: "-O2", PIE: true}, {CC: "clang", Opt: "-O0"}} {
		orig := fixture.Build(t, "funcptr.c", c)
		for _, m := range []struct {
			name string
			opts rewriter.Options
		}{
			{"context", rewriter.Options{}},
			{"context+tsc", rewriter.Options{Metrics: []rewriter.Metric{tscMetric}}},
		} {
			what := "funcptr.c " + c.String() + " " + m.name
			dir := t.TempDir()
			inst := rewriteWith(t, orig, filepath.Join(dir, "prog.blpp"), m.opts)
			var stubs []uint64
			for _, args := range [][]string{nil, strings.Fields(strings.Repeat("x ", 20))} {
				prof := filepath.Join(dir, "blpp.out")
				sameBehaviour(t, what, runProc(t, orig, args), runProc(t, inst, args, "BLPP_PROFILE="+prof, "BLPP_QUIET=1"))
				p, err := cct.ReadFile(prof)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				stubs = append(stubs, p.Stats["stub_entries"])
			}
			t.Logf("%s: %d entries took the stub with n=12, %d with n=32", what, stubs[0], stubs[1])
			if stubs[0] != stubs[1] {
				t.Errorf("%s: %d entries took the stub with n=12, %d with n=32: want the same", what, stubs[0], stubs[1])
			}
		}
	}
}

// TestMetricFallback asks for cycles and instructions. Where the machine
// has no usable PMU (these machines) the runtime says so once on stderr
// (BLPP_QUIET=1 silences it), measures cycles with rdtsc, recorded as
// "tsc" of kind fallback, and records instructions as unavailable. Where
// the PMU works both are real. Either way the program's own behaviour is
// unchanged.
func TestMetricFallback(t *testing.T) {
	c := fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}
	orig := fixture.Build(t, "loops.c", c)
	dir := t.TempDir()
	var opts rewriter.Options
	for _, name := range []string{"cycles", "instructions"} {
		s, ok := counters.Lookup(name)
		if !ok {
			t.Fatalf("counters has no %s", name)
		}
		opts.Metrics = append(opts.Metrics, rewriter.Metric{Name: s.Name, Type: uint64(s.Type), Config: s.Config})
	}
	inst := rewriteWith(t, orig, filepath.Join(dir, "loops.blpp"), opts)
	want := runProc(t, orig, nil)
	prof := filepath.Join(dir, "blpp.out")
	loud := runProc(t, inst, nil, "BLPP_PROFILE="+prof)
	quiet := runProc(t, inst, nil, "BLPP_PROFILE="+prof, "BLPP_QUIET=1")
	sameBehaviour(t, "loops.c quiet", want, quiet)
	if !bytes.Equal(loud.stdout, want.stdout) || loud.code != want.code {
		t.Fatalf("loops.c: behaviour differs: %s vs %s", loud, want)
	}
	p, err := cct.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	cyclesWork := counters.Probe(opts0(t, "cycles")).Usable(opts0(t, "cycles"))
	insnsWork := counters.Probe(opts0(t, "instructions")).Usable(opts0(t, "instructions"))
	wantMetrics := []cct.Metric{{Name: "freq", Kind: cct.MetricReal}, {Name: "cycles", Kind: cct.MetricReal}, {Name: "instructions", Kind: cct.MetricReal}}
	if !cyclesWork {
		wantMetrics[1] = cct.Metric{Name: "tsc", Kind: cct.MetricFallback}
	}
	if !insnsWork {
		wantMetrics[2].Kind = cct.MetricUnavailable
	}
	if len(p.Metrics) != 3 || p.Metrics[1] != wantMetrics[1] || p.Metrics[2] != wantMetrics[2] {
		t.Errorf("metrics %v, want %v", p.Metrics, wantMetrics)
	}
	extra := strings.TrimPrefix(string(loud.stderr), string(want.stderr))
	if !cyclesWork || !insnsWork {
		n := strings.Count(extra, "blpp: no hardware performance counters") + strings.Count(extra, "blpp: hardware counters cannot be read")
		if n != 1 {
			t.Errorf("stderr %q: want the missing-counter message once", extra)
		}
		if !cyclesWork && !strings.Contains(extra, "cycles are measured with rdtsc") {
			t.Errorf("stderr %q does not say cycles fall back to rdtsc", extra)
		}
	} else if extra != "" {
		t.Errorf("stderr %q: want nothing extra when the counters work", extra)
	}
	var sum uint64
	for _, th := range p.Threads {
		for _, r := range th.Records {
			for _, pa := range r.Paths {
				sum += pa.Metrics[0]
				if !insnsWork && pa.Metrics[1] != 0 {
					t.Fatalf("unavailable instructions has value %d", pa.Metrics[1])
				}
			}
		}
	}
	if sum == 0 {
		t.Errorf("cycles (or their tsc fallback) sum to 0")
	}
}

func opts0(t *testing.T, name string) counters.Spec {
	s, ok := counters.Lookup(name)
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	return s
}
