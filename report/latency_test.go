package report

// The latency view (decision 93) on viewProfile with distributions: b's
// path under a under main has 2000 executions of about 4 ticks and, in
// thread 1 (merged into the same context), 100 more of which one took
// 5000; the other paths have one bucket each. Golden files with and
// without the counter's rate; the laws: percentiles are buckets of the
// merged histogram, max is the largest value, the JSON carries the
// distributions, the HTML page draws one histogram per hot path.

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/golden"
)

// latencyViewProfile is viewProfile with a distribution on every path:
// one bucket holding all the executions at the mean, except b under a,
// whose thread-1 record has a slow execution.
func latencyViewProfile(rate bool) *cct.Profile {
	p := viewProfile()
	p.LatencyMetric = 1
	for ti := range p.Threads {
		for ri := range p.Threads[ti].Records {
			for pi := range p.Threads[ti].Records[ri].Paths {
				x := &p.Threads[ti].Records[ri].Paths[pi]
				mean := x.Metrics[0] / x.Count
				x.Latency = &cct.Latency{Buckets: []cct.Bucket{{Log2: cct.BucketOf(mean), Count: x.Count}}, Slowest: []uint64{mean + 1}}
			}
		}
	}
	// thread 1's b: 99 of 1 or 2 ticks... and one of 5000.
	b := &p.Threads[1].Records[2].Paths[0]
	b.Metrics[0] = 5400
	b.Latency = &cct.Latency{Buckets: []cct.Bucket{{Log2: 1, Count: 99}, {Log2: 12, Count: 1}}, Slowest: []uint64{5000, 5, 4, 4}}
	if rate {
		p.Stats = map[string]uint64{"tsc_total": 26_000_000, "tsc_ns": 10_000_000}
	}
	return p
}

func latencyModel(t *testing.T, rate bool) *Model {
	t.Helper()
	p := latencyViewProfile(rate)
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckLatencyCounts(); err != nil {
		t.Fatal(err)
	}
	m, err := NewModel("prog.blpp", viewTable(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Debug = viewLines()
	m.Modules[0].Debug = m.Debug
	return m
}

func TestLatencyGolden(t *testing.T) {
	for _, rate := range []bool{false, true} {
		m := latencyModel(t, rate)
		v, err := MakeLatency(m, 1)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := LatencyText(&buf, v, LatencyOptions{Top: 3}); err != nil {
			t.Fatal(err)
		}
		name := "latency-top-3.golden"
		if rate {
			name = "latency-top-3-rate.golden"
		}
		golden.CheckString(t, name, buf.String())
	}
}

func TestLatencyLaws(t *testing.T) {
	m := latencyModel(t, true)
	v, err := MakeLatency(m, 1)
	if err != nil {
		t.Fatal(err)
	}
	if v.TicksPerNS != 2.6 {
		t.Errorf("rate %v ticks/ns, want 2.6", v.TicksPerNS)
	}
	if len(v.Paths) != len(v.Hot.Hot) {
		t.Fatalf("%d latency rows for %d hot paths", len(v.Paths), len(v.Hot.Hot))
	}
	// The hottest path is b under a under main: 2100 executions, the
	// two threads' histograms merged (2000 in bucket 2, 99 in bucket 1,
	// 1 in bucket 12), its max the slow one.
	top := v.Paths[0]
	if got := m.DisplayChain(top.Context); got != "main/a/b" || top.Count != 2100 {
		t.Fatalf("top path %s, %d executions", got, top.Count)
	}
	if l := top.Latency; l.Count() != 2100 || l.Max() != 5000 || len(l.Buckets) != 3 {
		t.Errorf("merged distribution %+v", l)
	}
	if want := []uint8{2, 2, 2}; string(top.Quantiles) != string(want) {
		t.Errorf("quantiles %v, want %v", top.Quantiles, want)
	}
	if top.Mean != float64(9000+5400)/2100 {
		t.Errorf("mean %v", top.Mean)
	}
	// Without distributions the view says why.
	plain, err := NewModel("prog.blpp", viewTable(), viewProfile(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := MakeLatency(plain, 0.9); err == nil || !strings.Contains(err.Error(), "no latency distributions") {
		t.Errorf("MakeLatency without distributions: %v", err)
	}
}

func TestLatencyJSONAndHTML(t *testing.T) {
	m := latencyModel(t, true)
	var buf bytes.Buffer
	if err := PathsJSON(&buf, m); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		LatencyMetric string  `json:"latency_metric"`
		Rate          float64 `json:"tsc_ticks_per_ns"`
		Contexts      []struct {
			Function string `json:"function"`
			Paths    []struct {
				Count   uint64       `json:"count"`
				Latency *LatencyJSON `json:"latency"`
			} `json:"paths"`
		} `json:"contexts"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.LatencyMetric != "tsc" || doc.Rate != 2.6 {
		t.Errorf("latency metric %q, rate %v", doc.LatencyMetric, doc.Rate)
	}
	paths := 0
	for _, c := range doc.Contexts {
		for _, p := range c.Paths {
			paths++
			var n uint64
			if p.Latency == nil {
				t.Fatalf("%s: a path without its distribution", c.Function)
			}
			for _, b := range p.Latency.Buckets {
				n += b.Count
			}
			if n != p.Count || len(p.Latency.Slowest) == 0 {
				t.Errorf("%s: buckets count %d of %d executions; slowest %v", c.Function, n, p.Count, p.Latency.Slowest)
			}
		}
	}
	if paths == 0 {
		t.Fatal("no paths in the JSON")
	}
	// Without distributions, no latency field at all.
	plain, err := NewModel("prog.blpp", viewTable(), viewProfile(), nil)
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := PathsJSON(&buf, plain); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "latency") {
		t.Error("the JSON of a profile without distributions mentions latency")
	}

	h, err := MakeHotPaths(m, "", DefaultHotShare)
	if err != nil {
		t.Fatal(err)
	}
	v, err := MakeLatency(m, DefaultHotShare)
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := HTML(&buf, m, HTMLOptions{Hot: h, Latency: v}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	seen := checkXHTML(t, page)
	if seen["svg"] != len(v.Paths) || seen["rect"] < len(v.Paths) || !strings.Contains(page, `id="latency"`) || !strings.Contains(page, "1.54-3.08ns: 2000") {
		t.Errorf("latency section: %d svg for %d hot paths, %d bars", seen["svg"], len(v.Paths), seen["rect"])
	}
}
