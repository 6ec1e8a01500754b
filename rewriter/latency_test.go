package rewriter_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
	"github.com/blpp/blpp/runtime"
)

// checkLatency requires of a profile whose first metric is measured that
// every path of every record carries a latency distribution of it whose
// bucket counts add up to the path's exact count (decision 93): the
// profiles of the tests that run a --metrics image are written at exit,
// with no path end in flight.
func checkLatency(t *testing.T, what string, p *cct.Profile) {
	t.Helper()
	if len(p.Metrics) < 2 || p.Metrics[1].Kind == cct.MetricUnavailable {
		return
	}
	if p.LatencyMetric != 1 {
		t.Errorf("%s: latency metric %d, want 1 (%s)", what, p.LatencyMetric, p.Metrics[1].Name)
	}
	for ti := range p.Threads {
		for _, r := range p.Threads[ti].Records {
			for _, x := range r.Paths {
				if x.Latency == nil {
					t.Errorf("%s: thread %d, function %#x path %d (%d executions) has no latency distribution", what, ti, r.Func, x.ID, x.Count)
					return
				}
			}
		}
	}
	if err := p.CheckLatencyCounts(); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// TestLatencyTwoModes is issue 28's acceptance 4: latency.c's step has
// one path, which takes about 100 ns or, one time in a hundred (201 of
// 20001), about 10 µs. Its histogram must show the two modes (a valley
// between a fast peak and a slow one at least 16 times slower), p50 in
// the fast mode and p99 in the slow one, its bucket counts must add up
// to the path's exact count, and its slowest values must be slow ones.
// With --no-latency the profile has no distribution and the same
// counts.
func TestLatencyTwoModes(t *testing.T) {
	c := fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}
	orig := fixture.Build(t, "latency.c", c)
	want := runProc(t, orig, nil)
	for _, m := range []struct {
		name string
		opts rewriter.Options
	}{
		{"context+tsc", rewriter.Options{Metrics: []rewriter.Metric{tscMetric}}},
		{"flow-only+tsc", rewriter.Options{NoContext: true, Metrics: []rewriter.Metric{tscMetric}}},
	} {
		dir := t.TempDir()
		inst := rewriteWith(t, orig, filepath.Join(dir, "latency.blpp"), m.opts)
		p := runProfiled(t, m.name, inst, want)
		step := stepPath(t, inst, p)
		l := step.Latency
		if step.Count != 20001 || l == nil || l.Count() != step.Count {
			t.Fatalf("%s: step's path ran %d times, latency %+v", m.name, step.Count, l)
		}
		var hist [cct.LatencyBuckets]uint64
		for _, b := range l.Buckets {
			hist[b.Log2] = b.Count
		}
		fast := 0
		for b := range hist {
			if hist[b] > hist[fast] {
				fast = b
			}
		}
		slow := fast + 4
		for b := fast + 4; b < len(hist); b++ {
			if hist[b] > hist[slow] {
				slow = b
			}
		}
		valley := fast + 1
		for b := fast + 1; b < slow; b++ {
			if hist[b] < hist[valley] {
				valley = b
			}
		}
		p50, _ := l.Quantile(0.5)
		p99, _ := l.Quantile(0.99)
		t.Logf("%s: buckets %v; fast peak %d, slow peak %d, valley %d; p50 %d, p99 %d; slowest %v",
			m.name, l.Buckets, fast, slow, valley, p50, p99, l.Slowest)
		// A mode's executions may straddle a bucket boundary (the slow
		// one near 2^14.6 ticks falls 98/99 into buckets 14 and 15 on
		// some machines): its mass is the peak and its larger neighbour.
		var slowMass uint64
		if slow+1 < len(hist) {
			slowMass = hist[slow] + max(hist[slow-1], hist[slow+1])
		}
		if slow >= len(hist) || slowMass < 100 || hist[valley]*10 > min(hist[fast], hist[slow]) {
			t.Errorf("%s: no two modes: fast peak bucket %d (%d), slow peak bucket %d, valley bucket %d (%d)",
				m.name, fast, hist[fast], slow, valley, hist[valley])
		}
		if int(p50) > fast+1 || int(p99) < fast+4 {
			t.Errorf("%s: p50 in bucket %d, p99 in bucket %d; want p50 at the fast peak (%d) and p99 in the slow mode (from %d)", m.name, p50, p99, fast, fast+4)
		}
		// The slowest values are the largest: the largest is in the
		// highest bucket, and fewer than them lie above the bucket of
		// the smallest of them.
		if len(l.Slowest) != runtime.LatencySlowest || cct.BucketOf(l.Slowest[len(l.Slowest)-1]) < uint8(fast+4) {
			t.Errorf("%s: slowest values %v: want %d slow ones (bucket %d and up)", m.name, l.Slowest, runtime.LatencySlowest, fast+4)
		} else {
			var above uint64
			for b := cct.BucketOf(l.Slowest[len(l.Slowest)-1]) + 1; b < cct.LatencyBuckets; b++ {
				above += hist[b]
			}
			if top := l.Buckets[len(l.Buckets)-1].Log2; cct.BucketOf(l.Slowest[0]) != top || above >= uint64(len(l.Slowest)) {
				t.Errorf("%s: slowest values %v are not the largest: the highest bucket is %d, and %d executions lie above the bucket of the smallest", m.name, l.Slowest, top, above)
			}
		}
		// Without latency: no distributions, the same count.
		noLat := m.opts
		noLat.NoLatency = true
		inst = rewriteWith(t, orig, filepath.Join(dir, "nolat.blpp"), noLat)
		prof := filepath.Join(dir, "nolat.out")
		sameBehaviour(t, m.name+" --no-latency", want, runProc(t, inst, nil, "BLPP_PROFILE="+prof))
		q, err := cct.ReadFile(prof)
		if err != nil {
			t.Fatal(err)
		}
		if s := stepPath(t, inst, q); q.LatencyMetric != 0 || s.Latency != nil || s.Count != 20001 || s.Metrics[0] == 0 {
			t.Errorf("%s --no-latency: latency metric %d, step's path %+v", m.name, q.LatencyMetric, s)
		}
	}
}

// stepPath returns the one path of latency.c's step, its records merged.
func stepPath(t *testing.T, inst string, p *cct.Profile) cct.Path {
	t.Helper()
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out *cct.Path
	for _, r := range p.FoldThreads().Threads[0].Records {
		if tab.Funcs[r.Func].Name != "step" {
			continue
		}
		if len(r.Paths) != 1 || out != nil {
			t.Fatalf("step: paths %+v in another record too or more than one", r.Paths)
		}
		out = &r.Paths[0]
	}
	if out == nil {
		t.Fatal("no record of step")
	}
	return *out
}

// TestLatencyRegionFull bounds each thread's latency entries to 1
// (Options.LatencyEntries). A path that runs once keeps its value in its
// latency word and needs no entry (decision 148): latency.c's paths that
// run once all have their one-value distribution. Of the two that run
// more often, the first to run a second time gets the entry and counts
// every execution in it; every execution of the other, its first
// included, is dropped (a histogram holds all of a path's executions or
// none), and STATS latency_dropped counts exactly those.
func TestLatencyRegionFull(t *testing.T) {
	c := fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}
	orig := fixture.Build(t, "latency.c", c)
	want := runProc(t, orig, nil)
	for _, flow := range []bool{false, true} {
		dir := t.TempDir()
		inst := rewriteWith(t, orig, filepath.Join(dir, "latency.blpp"), rewriter.Options{NoContext: flow, Metrics: []rewriter.Metric{tscMetric}, LatencyEntries: 1})
		prof := filepath.Join(dir, "blpp.out")
		sameBehaviour(t, "latency.c, 1 entry", want, runProc(t, inst, nil, "BLPP_PROFILE="+prof, "BLPP_QUIET=1"))
		p, err := cct.ReadFile(prof)
		if err != nil {
			t.Fatal(err)
		}
		once, onceWith, with, without, dropped := 0, 0, 0, 0, uint64(0)
		for _, th := range p.Threads {
			for _, r := range th.Records {
				for _, x := range r.Paths {
					switch {
					case x.Count == 1:
						once++
						if x.Latency != nil {
							onceWith++
						}
					case x.Latency == nil:
						without++
						dropped += x.Count
					default:
						with++
					}
				}
			}
		}
		if err := p.CheckLatencyCounts(); err != nil {
			t.Error(err)
		}
		if once == 0 || onceWith != once {
			t.Errorf("flow-only %v: %d of %d paths that ran once have a distribution, want all", flow, onceWith, once)
		}
		if with != 1 || without == 0 || p.Stats["latency_dropped"] != dropped || p.Stats["latency_bytes"] != runtime.LatencyEntrySize {
			t.Errorf("flow-only %v: %d paths that ran more than once with a distribution (want 1), %d without, %d executions of them; stats latency_dropped %d, latency_bytes %d",
				flow, with, without, dropped, p.Stats["latency_dropped"], p.Stats["latency_bytes"])
		}
		if w := report.RuntimeWarnings(p.Stats); len(w) != 1 || !strings.Contains(w[0], "(latency_dropped)") {
			t.Errorf("flow-only %v: runtime warnings %q, want one about latency_dropped", flow, w)
		}
	}
}
