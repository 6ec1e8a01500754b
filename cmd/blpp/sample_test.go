package main

// Sampled attribution (issue 28 acceptance 2, 3 and 5; decision 92):
// testdata/sample/sample.c run with --metrics sample:cpu-clock@10000,
// its samples laid over the exact counts by package report.

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
	blppruntime "github.com/blpp/blpp/runtime"
)

var gccO2PIEThreads = fixture.Config{CC: "gcc", Opt: "-O2", PIE: true, Extra: []string{"-pthread"}}

// sampled rewrites sample.c with sampling at 10 kHz, runs it in mode at
// scale and returns the instrumented binary, the profile and the model.
func sampled(t *testing.T, dir, mode, scale string, rewriteArgs ...string) (inst, prof string, m *report.Model, stderr string) {
	t.Helper()
	exe := fixture.Build(t, "sample/sample.c", gccO2PIEThreads)
	inst = filepath.Join(dir, "sample.blpp")
	if _, err := os.Stat(inst); err != nil {
		mustBlpp(t, append([]string{"rewrite", exe, "-o", inst, "--metrics", "sample:cpu-clock@10000"}, rewriteArgs...)...)
	}
	prof = filepath.Join(dir, mode+".prof")
	want, _, _ := runBinary(t, exe, []string{mode, scale})
	out, errb, code := runBinary(t, inst, []string{mode, scale}, "BLPP_PROFILE="+prof)
	if stderr = string(errb); code != 0 || string(out) != string(want) {
		t.Fatalf("%s %s: exit %d, stdout %q, want %q\n%s", inst, mode, code, out, want, stderr)
	}
	p, err := cct.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		t.Fatal(err)
	}
	if m, err = report.NewModel(inst, tab, p, f); err != nil {
		t.Fatal(err)
	}
	if m.Samples == nil || m.Samples.Event != "cpu-clock" || m.Samples.Period != 100000 || m.Samples.Unit != cct.UnitNanoseconds {
		t.Fatalf("sampling %+v, want cpu-clock every 100000 ns", m.Samples)
	}
	return inst, prof, m, stderr
}

// node finds the one context whose chain ends with the given names.
func node(t *testing.T, m *report.Model, chain ...string) *report.CNode {
	t.Helper()
	var found *report.CNode
	for i := range m.Nodes {
		c := m.Chain(i)
		if len(c) >= len(chain) && slices.Equal(c[len(c)-len(chain):], chain) {
			if found != nil {
				t.Fatalf("two contexts end with %v", chain)
			}
			found = &m.Nodes[i]
		}
	}
	if found == nil {
		t.Fatalf("no context ends with %v", chain)
	}
	return found
}

// within checks a sampled share against the truth, to 5 percentage
// points, with at least min samples behind it.
func within(t *testing.T, what string, sampled, truth float64, samples, min uint64) {
	t.Helper()
	withinPoints(t, what, sampled, truth, samples, min, 0.05)
}

// withinPoints is within with a margin of its own (a share, 0.05 for
// 5 points).
func withinPoints(t *testing.T, what string, sampled, truth float64, samples, min uint64, margin float64) {
	t.Helper()
	t.Logf("%s: sampled %.1f%%, truth %.1f%% (%d samples)", what, 100*sampled, 100*truth, samples)
	if samples < min {
		t.Errorf("%s: %d samples, want at least %d", what, samples, min)
	}
	if math.Abs(sampled-truth) > margin {
		t.Errorf("%s: sampled share %.1f%%, truth %.1f%%: more than %.0f points apart", what, 100*sampled, 100*truth, 100*margin)
	}
}

// threadCPU reads the spinner threads' CPU times (ns) that sample.c's
// threads mode prints on stderr.
func threadCPU(t *testing.T, stderr string) (a, b float64) {
	t.Helper()
	i := strings.Index(stderr, "thread cpu ns:")
	if i < 0 {
		t.Fatalf("no thread CPU times in the program's stderr:\n%s", stderr)
	}
	if _, err := fmt.Sscanf(stderr[i:], "thread cpu ns: a %g b %g", &a, &b); err != nil || a+b == 0 {
		t.Fatalf("thread CPU times in the program's stderr (%v):\n%s", err, stderr)
	}
	return a, b
}

// TestSampledShares: a loop whose paths do 3:1 work and a function
// called from two contexts with 1:4 work. The truth is the exact
// instructions (insns) of each; the sampled shares, from about 2000
// samples each, are within 5 points; the reports show sample counts; go
// tool pprof -top -sample_index=cpu names the hottest function first.
func TestSampledShares(t *testing.T) {
	dir := t.TempDir()
	inst, prof, m, _ := sampled(t, dir, "split", "700")
	if m.Samples.Source != cct.SourcePerf {
		// perf_event_paranoid 3, or a sandbox: the tick-bound timer
		// cannot resolve this (TestSampledTimer tests it).
		t.Skipf("perf refused the software clock here (samples came from the %s)", m.Samples.Source)
	}
	col := m.Samples.Column
	insns, err := m.Column(report.MetricInsns)
	if err != nil {
		t.Fatal(err)
	}

	loopShares(t, m, node(t, m, "main", "loop"), insns)

	a, b := node(t, m, "ctx_a", "work"), node(t, m, "ctx_b", "work")
	within(t, "work from ctx_a", float64(a.Incl[col])/float64(a.Incl[col]+b.Incl[col]),
		float64(a.Incl[insns])/float64(a.Incl[insns]+b.Incl[insns]), (a.Incl[col]+b.Incl[col])/m.Samples.Period, 1500)

	// Every reported time carries its sample count.
	out := mustBlpp(t, "report", prof, "--binary", inst, "--context", "loop", "--metric", "cpu-clock")
	if !strings.Contains(out, "samples)") || !strings.Contains(out, "samples in the context itself") {
		t.Errorf("--context loop --metric cpu-clock shows no sample counts:\n%s", out)
	}
	for _, view := range []string{"tree", "flat", "callers", "hot", "loops"} {
		out := mustBlpp(t, "report", prof, "--binary", inst, "--view", view, "--metric", "cpu-clock")
		if !strings.Contains(out, "metric: cpu-clock (sampled: 1 sample per 100000 ns") {
			t.Errorf("--view %s --metric cpu-clock: no sampled header:\n%s", view, out)
		}
	}

	// JSON: every context's own samples, and cpu-clock among its metrics.
	var doc struct {
		Contexts []report.Context `json:"contexts"`
	}
	if err := json.Unmarshal([]byte(mustBlpp(t, "report", prof, "--binary", inst, "--format", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	var jsonSamples uint64
	for _, c := range doc.Contexts {
		jsonSamples += c.Samples
		if c.Metrics["cpu-clock"] != c.Samples*m.Samples.Period {
			t.Errorf("JSON context %d: cpu-clock %d, %d samples", c.ID, c.Metrics["cpu-clock"], c.Samples)
		}
	}
	if want := m.Samples.Recorded - m.Samples.Unattributed; jsonSamples != want {
		t.Errorf("JSON contexts hold %d samples, want %d", jsonSamples, want)
	}

	// Folded stacks carry the sampled time: ctx_b's work, 4/5 of the
	// two contexts' samples, is ctx_b's stack's value.
	folded := mustBlpp(t, "export", prof, "--binary", inst, "--format", "folded", "--metric", "cpu-clock")
	if want := fmt.Sprintf("_start;main;ctx_b;work %d\n", b.Excl[col]); !strings.Contains(folded, want) {
		t.Errorf("folded stacks of cpu-clock lack %q:\n%s", want, folded)
	}

	// pprof: cpu/nanoseconds, and -top names the hot function first.
	gotool := goTool(t)
	pb, p := exportPprof(t, dir, inst, prof)
	i := slices.IndexFunc(p.SampleType, func(v *profile.ValueType) bool { return v.Type == "cpu" })
	if i < 0 || p.SampleType[i].Unit != "nanoseconds" {
		t.Fatalf("pprof sample types %v: no cpu/nanoseconds", p.SampleType)
	}
	var hot string
	var hotv uint64
	for _, r := range m.Flat(col) {
		if r.Excl > hotv {
			hot, hotv = r.Name, r.Excl
		}
	}
	top := pprofCmd(t, gotool, nil, "-top", "-sample_index=cpu", pb)
	if first := pprofTopFirst(top); first != hot {
		t.Errorf("go tool pprof -top -sample_index=cpu names %q first, the hot function is %s:\n%s", first, hot, top)
	}
}

// pprofTopFirst is the function of -top's first row.
func pprofTopFirst(top string) string {
	rows := false
	for _, l := range strings.Split(top, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "flat" {
			rows = true
			continue
		}
		if rows && len(f) >= 6 {
			return f[5]
		}
	}
	return ""
}

// loopShares checks the loop's sampled split: its paths through the
// 1,024-round block against those through the 512-round one (the one path
// with neither is the entry).
func loopShares(t *testing.T, m *report.Model, loop *report.CNode, insns int) {
	t.Helper()
	var heavy, all, heavyTruth, allTruth float64
	mf := m.Func(loop.FuncID())
	for _, p := range loop.Paths {
		var n uint32
		for _, b := range p.Blocks {
			n = max(n, mf.Blocks[b].Insts)
		}
		all += p.Samples
		allTruth += float64(p.Metrics[insns])
		if n > 3000 { // the heavy path's own block (about 4,100 instructions; the blocks both paths run about 2,050)
			heavy += p.Samples
			heavyTruth += float64(p.Metrics[insns])
		}
	}
	if loop.Sampled == nil {
		t.Fatal("no samples in loop")
	}
	within(t, "loop, the heavy path", heavy/all, heavyTruth/allTruth, loop.Sampled.Total, 1500)
}

// TestSampledFlowOnly: the same split in a flow-only image, whose
// functions keep their path registers in general registers (read from
// the signal's ucontext) and count in slot counters.
func TestSampledFlowOnly(t *testing.T) {
	_, _, m, _ := sampled(t, t.TempDir(), "split", "700", "--no-context")
	if m.Samples.Source != cct.SourcePerf {
		t.Skipf("perf refused the software clock here (samples came from the %s)", m.Samples.Source)
	}
	insns, err := m.Column(report.MetricInsns)
	if err != nil {
		t.Fatal(err)
	}
	loopShares(t, m, node(t, m, "loop"), insns)
	t.Logf("samples: %d shared by prefix, %d by block, %d kept at a block, %d in pseudo-blocks, %d with no context",
		m.Samples.Prefixed, m.Samples.BlockLevel, m.Samples.Kept, m.Samples.Pseudo, m.Samples.Unattributed)
	if m.Samples.Unattributed > m.Samples.Recorded/100 {
		t.Errorf("%d of %d samples with no context", m.Samples.Unattributed, m.Samples.Recorded)
	}
}

// TestSampledPlaces: with two threads each thread's samples are in its
// own tree (the profile keeps threads apart; only spin_a's thread has
// samples in spin_a); samples during the program's own SIGPROF handler
// (its setitimer keeps working) land in the handler's context, under
// the interrupted one; samples in libc's memset (not instrumented) are
// a pseudo-block of the calling context; samples in blpp's runtime, if
// any, are a pseudo-block of a context too.
func TestSampledPlaces(t *testing.T) {
	dir := t.TempDir()
	_, prof, m, stderr := sampled(t, dir, "threads", "200")
	p, err := cct.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	tab, _, err := report.LoadMeta(filepath.Join(dir, "sample.blpp"))
	if err != nil {
		t.Fatal(err)
	}
	spinners := 0
	for ti, th := range p.Threads {
		in := map[string]uint64{}
		for _, q := range th.Samples {
			if q.Record >= 0 {
				in[tab.Funcs[th.Records[q.Record].Func].Name] += q.Count
			}
		}
		t.Logf("thread %d (tid %d): samples by function %v", ti, th.TID, in)
		switch {
		case in["spin_a"] > 0 && in["spin_b"] > 0:
			t.Errorf("thread %d has samples in spin_a and spin_b: %v", ti, in)
		case in["spin_a"] > 100 || in["spin_b"] > 100:
			spinners++
		}
	}
	if spinners != 2 {
		t.Errorf("%d threads with over 100 samples in their spinner, want 2", spinners)
	}
	// The samples split the threads' CPU time, which the program
	// measured itself; spin_b does twice spin_a's work, but on a busy
	// machine its CPU time is not exactly twice spin_a's.
	cpuA, cpuB := threadCPU(t, stderr)
	if a, b := node(t, m, "spin_a"), node(t, m, "spin_b"); a.Sampled == nil || b.Sampled == nil {
		t.Errorf("spin_a or spin_b has no samples: %+v, %+v", a.Sampled, b.Sampled)
	} else {
		within(t, "spin_b's share of the spinners", float64(b.Sampled.Total)/float64(a.Sampled.Total+b.Sampled.Total),
			cpuB/(cpuA+cpuB), a.Sampled.Total+b.Sampled.Total, 1000)
	}

	_, _, m, _ = sampled(t, dir, "places", "500")
	// The handler's contexts: one under each context it interrupted.
	var inHandler uint64
	for i := range m.Nodes {
		if n := &m.Nodes[i]; n.Name == "in_handler" && n.Sampled != nil {
			inHandler += n.Sampled.Total
			if n.Parent < 0 {
				t.Errorf("in_handler is a root: the handler should run under the interrupted context")
			}
			t.Logf("%s: %d samples", strings.Join(m.Chain(i), "/"), n.Sampled.Total)
		}
	}
	if inHandler < 20 {
		t.Errorf("in_handler (the SIGPROF handler's work): %d samples, want at least 20", inHandler)
	}
	lib := node(t, m, "main", "use_lib")
	if lib.Sampled == nil || lib.Sampled.Pseudo["[libc.so.6]"] < 20 {
		t.Errorf("use_lib: samples %+v, want at least 20 in [libc.so.6]", lib.Sampled)
	}
	for i := range m.Nodes {
		if s := m.Nodes[i].Sampled; s != nil && s.Pseudo[report.PseudoRuntime] > 0 {
			t.Logf("%s: %d samples in the runtime", strings.Join(m.Chain(i), "/"), s.Pseudo[report.PseudoRuntime])
		}
	}
	if m.Samples.Unattributed > m.Samples.Recorded/100 {
		t.Errorf("%d of %d samples ran under no record", m.Samples.Unattributed, m.Samples.Recorded)
	}
}

// TestSampledFallback: sample:cycles on a machine whose PMU cannot sample
// (none here) falls back to cpu-clock once, says so once on stderr, and
// the profile records it (kind fallback, the event asked for); with a
// PMU, cycles are sampled as asked.
func TestSampledFallback(t *testing.T) {
	dir := t.TempDir()
	exe := fixture.Build(t, "sample/sample.c", gccO2PIEThreads)
	inst := filepath.Join(dir, "cycles.blpp")
	mustBlpp(t, "rewrite", exe, "-o", inst, "--metrics", "sample:cycles@100000")
	prof := filepath.Join(dir, "cycles.prof")
	_, stderr, code := runBinary(t, inst, []string{"threads", "20"}, "BLPP_PROFILE="+prof)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	p, err := cct.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Sampling
	if s == nil || s.Requested != "cycles" {
		t.Fatalf("sampling %+v, want cycles asked for", s)
	}
	switch s.Kind {
	case cct.MetricFallback:
		if s.Event != "cpu-clock" || s.Unit != cct.UnitNanoseconds || s.Period != 1000000 {
			t.Errorf("fallback %+v, want cpu-clock every 1000000 ns", s)
		}
		if n := strings.Count(string(stderr), "blpp: cannot sample cycles"); n != 1 {
			t.Errorf("%d warnings, want 1:\n%s", n, stderr)
		}
	case cct.MetricReal:
		if s.Event != "cycles" || s.Unit != cct.UnitEvents || s.Period != 100000 {
			t.Errorf("sampling %+v, want cycles every 100000 events", s)
		}
	default:
		t.Errorf("kind %v", s.Kind)
	}
	if o := blpp("rewrite", exe, "-o", inst, "--metrics", "sample:tsc"); o.code == 0 || !strings.Contains(o.stderr, "tsc is read, not sampled") {
		t.Errorf("sample:tsc: %s", o)
	}
	if o := blpp("rewrite", exe, "-o", inst, "--metrics", "sample:cpu-clock@200000"); o.code == 0 || !strings.Contains(o.stderr, "Hz is over") {
		t.Errorf("sample:cpu-clock@200000: %s", o)
	}
}

// TestSampledTimer: the CPU-clock timer that stands in where perf
// refuses a software clock (forced here with SamplerFlagTimer) fires at
// the scheduler's tick; each signal counts its expirations (1 +
// si_overrun), so the samples still add up to the threads' CPU time and
// split it as the work is split.
func TestSampledTimer(t *testing.T) {
	dir := t.TempDir()
	exe := fixture.Build(t, "sample/sample.c", gccO2PIEThreads)
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := rewriter.Rewrite(data, rewriter.Options{Sample: &blppruntime.Sampler{Type: 1, Period: 1000000,
		Name: blppruntime.MetricName("cpu-clock"), Flags: blppruntime.SamplerFlagTimer}})
	if err != nil {
		t.Fatal(err)
	}
	inst := filepath.Join(dir, "timer.blpp")
	if err := os.WriteFile(inst, out, 0o755); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(dir, "timer.prof")
	_, stderr, code := runBinary(t, inst, []string{"threads", "800"}, "BLPP_PROFILE="+prof)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	cpuA, cpuB := threadCPU(t, string(stderr))
	p, err := cct.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Sampling; s == nil || s.Source != cct.SourceTimer || s.Kind != cct.MetricReal || s.Event != "cpu-clock" {
		t.Fatalf("sampling %+v, want cpu-clock by the timer", s)
	}
	tab, _, err := report.LoadMeta(inst)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]uint64{}
	for _, th := range p.Threads {
		for _, q := range th.Samples {
			if q.Record >= 0 {
				by[tab.Funcs[th.Records[q.Record].Func].Name] += q.Count
			}
		}
	}
	t.Logf("samples by function: %v (taken %d)", by, p.Sampling.Taken)
	if a, b := by["spin_a"], by["spin_b"]; a < 50 || b < 50 {
		t.Errorf("spin_a %d, spin_b %d samples: want 50 or more each", a, b)
	} else {
		// The timer fires at the scheduler's tick: coarser than perf's
		// clock, hence the wider margin.
		withinPoints(t, "spin_b's share of the spinners (timer)", float64(b)/float64(a+b), cpuB/(cpuA+cpuB), a+b, 100, 0.08)
	}
}
