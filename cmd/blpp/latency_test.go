package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestReportLatency runs latency.c (one path of ~100 ns, one time in a
// hundred ~10 µs) rewritten with --metrics tsc and checks the latency
// view, the JSON and the HTML page on its profile (decision 93); blpp
// merge of two runs adds the histograms; an image rewritten with
// --no-latency has none, and the view says so.
func TestReportLatency(t *testing.T) {
	dir := t.TempDir()
	exe := fixture.Build(t, "latency.c", gccO2PIE)
	inst := filepath.Join(dir, "latency.blpp")
	mustBlpp(t, "rewrite", exe, "-o", inst, "--metrics", "tsc")
	var profs []string
	for i := range 2 {
		prof := filepath.Join(dir, "run"+string(rune('0'+i))+".prof")
		if _, stderr, code := runBinary(t, inst, nil, "BLPP_PROFILE="+prof); code != 0 {
			t.Fatalf("%s: exit %d\n%s", inst, code, stderr)
		}
		profs = append(profs, prof)
	}

	// The default view (blpp run's summary) of a profile with latencies.
	if paths := mustBlpp(t, "report", profs[0], "--binary", inst); !strings.Contains(paths, "hottest paths:") {
		t.Errorf("the paths view of a profile with latencies:\n%s", paths)
	}

	// Every path (--hot 1): on a loaded machine a preemption inside one
	// of main's paths can outweigh step's time.
	view := mustBlpp(t, "report", profs[0], "--binary", inst, "--view", "latency", "--hot", "1")
	for _, want := range []string{": latency of the hot paths (", "p50", "p99", "bucket resolution", "ticks per ns", "slowest: "} {
		if !strings.Contains(view, want) {
			t.Errorf("--view latency lacks %q:\n%s", want, view)
		}
	}
	// step's row: 20001 executions, p50 of about 100 ns, p99 in
	// microseconds, the largest value in microseconds or more.
	row := regexp.MustCompile(`(?m)^ +\d+ +20001 +\S+ +(\S+) +\S+ +(\S+) +(\S+)  +\S*main/step  path 0`).FindStringSubmatch(view)
	if row == nil {
		t.Fatalf("no row for step's path:\n%s", view)
	}
	if !strings.HasSuffix(row[1], "ns") || !strings.HasSuffix(row[2], "µs") || strings.HasSuffix(row[3], "ns") {
		t.Errorf("step: p50 %s, p99 %s, max %s; want p50 in ns, p99 and max in µs or more:\n%s", row[1], row[2], row[3], view)
	}

	// JSON: every path's distribution, counts adding up.
	var doc struct {
		LatencyMetric string `json:"latency_metric"`
		Contexts      []struct {
			Function string `json:"function"`
			Paths    []struct {
				Count   uint64 `json:"count"`
				Latency struct {
					Buckets []struct{ Count uint64 } `json:"buckets"`
				} `json:"latency"`
			} `json:"paths"`
		} `json:"contexts"`
	}
	if err := json.Unmarshal([]byte(mustBlpp(t, "report", profs[0], "--binary", inst, "--format", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.LatencyMetric != "tsc" {
		t.Errorf("latency_metric %q", doc.LatencyMetric)
	}
	for _, c := range doc.Contexts {
		for _, p := range c.Paths {
			var n uint64
			for _, b := range p.Latency.Buckets {
				n += b.Count
			}
			if n != p.Count {
				t.Errorf("%s: JSON buckets count %d of %d executions", c.Function, n, p.Count)
			}
		}
	}

	// The HTML page draws the histograms.
	page := filepath.Join(dir, "latency.html")
	mustBlpp(t, "report", profs[0], "--binary", inst, "--html", page)
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), `<h2 id="latency">`) || !strings.Contains(string(html), `class="hist"`) {
		t.Errorf("the page has no latency histograms")
	}

	// blpp merge adds the histograms: step's doubles, exactly.
	merged := filepath.Join(dir, "merged.prof")
	mustBlpp(t, "merge", profs[0], profs[1], "-o", merged, "--fold-threads")
	p, err := cct.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckLatencyCounts(); err != nil {
		t.Error(err)
	}
	found := false
	for _, r := range p.Threads[0].Records {
		for _, x := range r.Paths {
			if x.Count == 40002 && x.Latency != nil && x.Latency.Count() == 40002 {
				found = true
			}
		}
	}
	if !found {
		t.Error("merged profile: no path of 40002 executions with a histogram of them (step's, twice)")
	}

	// --no-latency: no distributions; the view says why.
	plain := filepath.Join(dir, "plain.blpp")
	mustBlpp(t, "rewrite", exe, "-o", plain, "--metrics", "tsc", "--no-latency")
	prof := filepath.Join(dir, "plain.prof")
	if _, stderr, code := runBinary(t, plain, nil, "BLPP_PROFILE="+prof); code != 0 {
		t.Fatalf("%s: exit %d\n%s", plain, code, stderr)
	}
	if q, err := cct.ReadFile(prof); err != nil || q.LatencyMetric != 0 {
		t.Fatalf("--no-latency profile: %v, latency metric %d", err, q.LatencyMetric)
	}
	if o := blpp("report", prof, "--binary", plain, "--view", "latency"); o.code == 0 || !strings.Contains(o.stderr, "no latency distributions") {
		t.Errorf("--view latency of a --no-latency profile: %s", o)
	}
	for _, args := range [][]string{
		{"rewrite", exe, "-o", filepath.Join(dir, "x"), "--no-latency"},
		{"report", profs[0], "--binary", inst, "--view", "latency", "--metric", "freq"},
		{"report", profs[0], "--binary", inst, "--view", "latency", "--hot", "2"},
	} {
		if p := refusalProblem(blpp(args...)); p != "" {
			t.Errorf("blpp %q: %s", args, p)
		}
	}
}
