package rewriter_test

import (
	"path/filepath"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// TestColdLoopCopy checks coldloop.c's counts against callgrind's in
// context mode: its records start cold (decision 99), so the record form
// of its loop copy (decision 58) counts through its slow path until they
// get hot, and that path must give the stub the path register's value at
// the backedge (the copy does not keep it).
func TestColdLoopCopy(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range []fixture.Config{{CC: "gcc", Opt: "-O2", PIE: true}, fixture.Matrix()[0]} {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			what := "coldloop.c " + c.String()
			orig := fixture.Build(t, "coldloop.c", c)
			inst := filepath.Join(t.TempDir(), "coldloop.blpp")
			sum := rewriteSum(t, orig, inst, rewriter.Options{})
			if sum.LoopCopies == 0 {
				t.Fatalf("%s: no loop copy: the test tests nothing", what)
			}
			want := runProc(t, orig, nil)
			p := runProfiled(t, what, inst, want)
			cg := callgrindOf(t, what, orig, nil, want)
			compareCounts(t, what, inst, p, cg, countCheck{own: []string{"main", "work"}})
		})
	}
}
