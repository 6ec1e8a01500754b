package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/blpp/blpp/counters"
)

// TestCounters runs `blpp counters` on this machine: whatever its PMU,
// every metric has a row, tsc and task-clock work, and cycles either
// works through rdpmc or says it falls back to tsc.
func TestCounters(t *testing.T) {
	o := blpp("counters")
	if o.code != 0 || o.stderr != "" {
		t.Fatalf("blpp counters: %v", o)
	}
	t.Logf("\n%s", o.stdout)
	rows := map[string]string{} // metric → status
	lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
	if len(lines) == 0 || strings.Join(strings.Fields(lines[0]), " ") != "metric event status" {
		t.Fatalf("no header line: %q", o.stdout)
	}
	// The status column starts where the header's "status" does.
	col := strings.Index(lines[0], "status")
	for _, l := range lines[1:] {
		if l == "" {
			break
		}
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("row not aligned with the header: %q", l)
			continue
		}
		rows[strings.Fields(l)[0]] = l[col:]
	}
	for _, s := range counters.All() {
		if _, ok := rows[s.Name]; !ok {
			t.Errorf("no row for %s", s.Name)
		}
	}
	if got := rows["tsc"]; got != "works (rdtsc)" {
		t.Errorf("tsc: %q, want works (rdtsc)", got)
	}
	if got := rows["task-clock"]; got != "works (read only)" {
		t.Errorf("task-clock: %q, want works (read only)", got)
	}
	if got := rows["cycles"]; got != "works (rdpmc)" && !strings.HasSuffix(got, "; falls back to tsc") {
		t.Errorf("cycles: %q, want works (rdpmc) or a fallback to tsc", got)
	}
}

func TestCountersJSON(t *testing.T) {
	o := blpp("counters", "--json")
	if o.code != 0 || o.stderr != "" {
		t.Fatalf("blpp counters --json: %v", o)
	}
	var doc struct {
		Metrics []counterJSON `json:"metrics"`
	}
	dec := json.NewDecoder(strings.NewReader(o.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	byName := map[string]counterJSON{}
	for _, m := range doc.Metrics {
		byName[m.Name] = m
	}
	if len(byName) != len(counters.All()) {
		t.Errorf("%d metrics, want %d", len(byName), len(counters.All()))
	}
	if m := byName["tsc"]; !m.Works || !m.TSC || m.Sample == 0 || m.Event != "rdtsc" {
		t.Errorf("tsc: %+v", m)
	}
	if m := byName["task-clock"]; !m.Works || m.Rdpmc || !m.ProbeOnly || m.Sample == 0 || m.Type != counters.TypeSoftware || m.Config != 1 {
		t.Errorf("task-clock: %+v", m)
	}
	if m := byName["cycles"]; !m.Rdpmc && (m.Fallback != "tsc" || m.Reason == "") {
		t.Errorf("cycles: %+v", m)
	}
}

func TestCountersUsage(t *testing.T) {
	if o := blpp("counters", "extra"); refusalProblem(o) != "" || !strings.Contains(o.stderr, "takes no arguments") {
		t.Errorf("blpp counters extra: %v (%s)", o, refusalProblem(o))
	}
	if o := blpp("counters", "--bogus"); refusalProblem(o) != "" {
		t.Errorf("blpp counters --bogus: %s", refusalProblem(o))
	}
}
