package rewriter_test

import (
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
)

// TestSetjmpStrippedStatic: in a stripped static binary setjmp has no
// name, and only its code (it reads its return address and its caller's
// stack pointer) says that a call to it returns twice. setjmp.c and
// selfjmp.c built so must run as the originals do, with a profile that
// counted every path exactly: no bad path numbers, returns without
// frames or paths without records (decision 117; busybox's shell did
// all three on every `exit`).
func TestSetjmpStrippedStatic(t *testing.T) {
	c := fixture.Config{CC: "gcc", Opt: "-O2", Static: true, Strip: true}
	for _, src := range []string{"setjmp.c", "selfjmp.c"} {
		_, _, prof := rewriteFixture(t, src, c)
		if w := report.RuntimeWarnings(prof.Stats); len(w) > 0 {
			t.Errorf("%s %s: the profile is not exact: %q", src, c, w)
		}
	}
}
