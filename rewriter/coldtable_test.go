package rewriter_test

import (
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
)

// TestColdTableStripped: a non-PIE jump table whose entry 0 leads to the
// function's unnamed .cold fragment is the function's own table, not a
// tail call through an array of function pointers (its frame is set up
// at the jump), and the fragment joins the function. Taken for a tail
// call, the path ended at the jump and every case ran in the original,
// uncounted bytes: cc1's blocks after such switches counted 0 for
// callgrind's 1 (decision 121).
func TestColdTableStripped(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range []fixture.Config{
		{CC: "gcc", Opt: "-O2", Strip: true},
		{CC: "gcc", Opt: "-O2", PIE: true, Strip: true},
	} {
		checkExact(t, "coldtable.c", c)
		// Exact because instrumented: pick with its fragment.
		_, inst, prof := rewriteFixture(t, "coldtable.c", c)
		tab, f, err := report.LoadMeta(inst)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := report.MakePaths(inst, tab, prof)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, fn := range doc.Functions {
			if !fn.Instrumented && strings.HasPrefix(fn.Name, "sub_") {
				t.Errorf("coldtable.c %s: %s left uninstrumented: %s", c, fn.Name, fn.Reason)
			}
		}
	}
}
