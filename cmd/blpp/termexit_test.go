package main

import (
	"path/filepath"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestRunTermDuringExit: termexit.c's child gets SIGTERM while it writes
// its exit profile (it leaves through _exit; the C library is
// instrumented, so the write happens in its exit_group hook). The signal
// waits for the write: the child's profile is there, every time. Before,
// the handler found the exit claimed and let the signal kill the child
// mid-write in about three runs of four (Python's multiprocessing pool
// workers lost their profiles so; decision 121).
func TestRunTermDuringExit(t *testing.T) {
	exe := fixture.Build(t, "termexit.c", gccO2PIE)
	for i := 0; i < 3; i++ {
		dir := t.TempDir()
		want := runProc(t, dir, nil, nil, exe)
		got, prof := blppRun(t, dir, nil, nil, exe)
		sameBehaviour(t, "termexit", want, got)
		kids, err := filepath.Glob(prof + ".*")
		if err != nil {
			t.Fatal(err)
		}
		// blppRun runs the program twice (the first fills the cache).
		if len(kids) != 2 {
			t.Fatalf("run %d: child profiles %v, want one from each of the two runs", i, kids)
		}
		for _, k := range kids {
			if _, err := cct.ReadFile(k); err != nil {
				t.Errorf("run %d: a child's profile: %v", i, err)
			}
		}
	}
}
