package rewriter_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// TestEmitFailureRedo: a function whose code generation fails is left
// out and the layout is redone without it, keeping the analysis or
// (as for the largest libraries) from a new one. is_odd fails here; its
// original code runs and calls is_even's entry, whose jump leads to the
// instrumented copy: the program behaves as before and every other
// function's blocks are exact.
func TestEmitFailureRedo(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	c := fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}
	orig := fixture.Build(t, "recursion.c", c)
	want := runProc(t, orig, nil)
	cg := callgrindOf(t, "recursion.c", orig, nil, want)
	for _, release := range []bool{false, true} {
		opts := rewriter.FailEmit(rewriter.Options{}, "is_odd")
		if release {
			opts = rewriter.ForceRelease(opts)
		}
		what := "recursion.c " + c.String()
		if release {
			what += ", dropping the analysis"
		}
		inst := filepath.Join(t.TempDir(), "prog.blpp")
		data, err := os.ReadFile(orig)
		if err != nil {
			t.Fatal(err)
		}
		out, sum, err := rewriter.Rewrite(data, opts)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := os.WriteFile(inst, out, 0o755); err != nil {
			t.Fatal(err)
		}
		left := false
		for _, s := range sum.Skipped {
			if s.Name == "is_odd" {
				left = s.Reason == "code generation" && strings.Contains(s.Detail, "failed as the test asked")
			}
		}
		if !left {
			t.Errorf("%s: is_odd not left out for its code generation: %+v", what, sum.Skipped)
		}
		p := runProfiled(t, what, inst, want)
		compareCounts(t, what, inst, p, cg, countCheck{own: []string{"main", "fib", "ackermann", "gcd", "is_even", "depth_sum"}})
	}
}
