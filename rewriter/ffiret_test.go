package rewriter_test

import (
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
)

// TestCodeSlotJump: ffiret.c's callk (libffi's ffi_call_unix64) jumps,
// its frame gone, to one of its own 8-byte return handlers after running
// its callee on a stack its caller alloca'd. It must run as the original
// does, with a profile whose every count is exact: no exit mismatches or
// paths without a record (taken for a tail call, each call to callk left
// both), and every block of the instrumented functions equal to
// callgrind's (decision 121).
func TestCodeSlotJump(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range []fixture.Config{
		{CC: "gcc", Opt: "-O2"},
		{CC: "gcc", Opt: "-O2", PIE: true},
		{CC: "clang", Opt: "-O2", PIE: true},
	} {
		_, _, prof := rewriteFixture(t, "ffiret.c", c)
		if w := report.RuntimeWarnings(prof.Stats); len(w) > 0 {
			t.Errorf("ffiret.c %s: the profile is not exact: %q", c, w)
		}
		checkExact(t, "ffiret.c", c)
	}
}
