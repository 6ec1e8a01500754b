package report

import (
	"strings"
	"testing"
)

func TestRuntimeWarnings(t *testing.T) {
	if w := RuntimeWarnings(map[string]uint64{"records": 12, "stub_entries": 5, "arena_bytes": 1 << 20}); len(w) != 0 {
		t.Errorf("an exact profile's statistics give warnings: %q", w)
	}
	if w := RuntimeWarnings(nil); len(w) != 0 {
		t.Errorf("no statistics give warnings: %q", w)
	}
	w := RuntimeWarnings(map[string]uint64{"dropped_counts": 7, "no_record": 3, "records": 9, "bad_paths": 0})
	if len(w) != 2 {
		t.Fatalf("got %q, want two warnings", w)
	}
	if !strings.HasPrefix(w[0], "7 path executions were not counted") || !strings.HasSuffix(w[0], "(dropped_counts)") {
		t.Errorf("first warning %q", w[0])
	}
	if !strings.HasPrefix(w[1], "3 path executions ran in an activation") || !strings.HasSuffix(w[1], "(no_record)") {
		t.Errorf("second warning %q", w[1])
	}
}
