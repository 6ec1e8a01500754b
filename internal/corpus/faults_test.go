//go:build blppfault

package corpus_test

import (
	"os"
	"testing"

	"blpp/internal/fixture"
	"blpp/rewriter"
)

// TestFaultsDetected needs a blpp built with the blppfault tag (TestFaults
// runs it): for each fault the code generator can plant, a fixture run
// under the same-run oracle must come out inexact. Without a fault the
// same fixtures must be exact, so that a pass means the fault was seen.
func TestFaultsDetected(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	c := fixture.Config{CC: "gcc", Opt: "-O2"}
	cases := []struct {
		fault, src string
		opts       rewriter.Options
	}{
		{"chord", "loops.c", rewriter.Options{}},
		{"pathend", "loops.c", rewriter.Options{NoContext: true}},
		{"partial", "noreturn.c", rewriter.Options{}},
	}
	for _, k := range cases {
		t.Run(k.fault, func(t *testing.T) {
			orig := fixture.Build(t, k.src, c)
			os.Setenv("BLPP_FAULT", "")
			if s := sameRun(t, orig, k.opts, nil); !s.Exact() || len(s.Partial) > 0 || s.Blocks == 0 {
				t.Fatalf("%s without a fault: %d blocks compared, %d differ, partial %v", k.src, s.Blocks, len(s.Diffs), s.Partial)
			}
			os.Setenv("BLPP_FAULT", k.fault)
			defer os.Setenv("BLPP_FAULT", "")
			s := sameRun(t, orig, k.opts, nil)
			if s.Exact() && len(s.Partial) == 0 {
				t.Fatalf("fault %s planted in %s: the same-run oracle found nothing (%d blocks compared)", k.fault, k.src, s.Blocks)
			}
			t.Logf("fault %s in %s: %d blocks differ, partial %v (first: %v)", k.fault, k.src, len(s.Diffs), s.Partial, s.Diffs[:min(1, len(s.Diffs))])
		})
	}
}
