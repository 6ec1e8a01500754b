package rewriter_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// TestFlagsAtEntry: flagsin.c's carry_add adds the carry flag its
// assembly caller left (as OpenSSL's __rsaz_512_mulx does). It must be
// left out for that reason, its entries still counted, and the copy,
// in context and flow-only images, must print what the original prints:
// entry instrumentation, or a counting stub's inline count, would change
// the carry (decision 116).
func TestFlagsAtEntry(t *testing.T) {
	for _, c := range []fixture.Config{
		{CC: "gcc", Opt: "-O2", PIE: true},
		{CC: "gcc", Opt: "-O2", Static: true},
		{CC: "clang", Opt: "-O2", Strip: true},
	} {
		orig := fixture.Build(t, "flagsin.c", c)
		plain := c
		plain.Strip = false
		names := symbolNames(t, fixture.Build(t, "flagsin.c", plain))
		want := runProc(t, orig, nil)
		for _, flow := range []bool{false, true} {
			what := fmt.Sprintf("flagsin.c %s flow-only=%v", c, flow)
			inst := filepath.Join(t.TempDir(), "flagsin.blpp")
			sum := rewriteSum(t, orig, inst, rewriter.Options{NoContext: flow})
			found := false
			for _, s := range sum.Skipped {
				if names[s.Entry] != "carry_add" {
					continue
				}
				found = true
				if s.Reason != "reads its caller's flags" || !s.EntriesCounted {
					t.Errorf("%s: carry_add left out for %q (%s), entries counted %v; want \"reads its caller's flags\", counted", what, s.Reason, s.Detail, s.EntriesCounted)
				}
			}
			if !found {
				t.Errorf("%s: carry_add is instrumented", what)
			}
			runProfiled(t, what, inst, want)
		}
	}
}
