package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestReportRuntimeWarnings: a profile the runtime counted exactly is
// reported without a word on stderr, and its JSON report carries the
// runtime's statistics; the same profile with a loss recorded in its
// statistics (as the runtime writes when its memory limit stops a count)
// is reported with a warning that says what was lost.
func TestReportRuntimeWarnings(t *testing.T) {
	dir := t.TempDir()
	exe := fixture.Build(t, "loops.c", gccO2PIE)
	inst, prof, _ := profiled(t, dir, exe)
	mustBlpp(t, "report", prof, "--binary", inst)
	var doc struct {
		Runtime map[string]uint64 `json:"runtime_stats"`
	}
	if err := json.Unmarshal([]byte(mustBlpp(t, "report", prof, "--binary", inst, "--format", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Runtime["records"] == 0 || doc.Runtime["threads"] != 1 {
		t.Errorf("runtime_stats %v: want the profile's records and its one thread", doc.Runtime)
	}

	p, err := cct.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	p.Stats["dropped_counts"] = 41
	lossy := filepath.Join(dir, "lossy.prof")
	if err := p.WriteFile(lossy); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "json"} {
		o := blpp("report", lossy, "--binary", inst, "--format", format)
		if o.code != 0 {
			t.Fatalf("report --format %s: %s", format, o)
		}
		if !strings.Contains(o.stderr, "blpp: warning: 41 path executions were not counted") {
			t.Errorf("report --format %s: stderr %q: want the dropped counts' warning", format, o.stderr)
		}
	}
}
