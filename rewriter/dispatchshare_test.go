package rewriter_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// TestDispatchShared rewrites cgoto.c, whose run() ends each of its
// twelve handlers with an indirect jump through one table of the twelve
// handlers, and counts the path-end trampolines of run() in the code map:
// the Dispatch edges share one per handler (decision 134), where each of
// the 144 edges had its own. TestDispatchTables checks the counts of
// the same builds against callgrind.
func TestDispatchShared(t *testing.T) {
	for _, c := range []fixture.Config{{CC: "gcc", Opt: "-O2"}, {CC: "clang", Opt: "-O2"}, {CC: "gcc", Opt: "-O2", PIE: true}} {
		for _, opts := range []rewriter.Options{{}, {NoContext: true}} {
			orig := fixture.Build(t, "cgoto.c", c)
			var cmap bytes.Buffer
			opts.CodeMap = &cmap
			rewriteSum(t, orig, filepath.Join(t.TempDir(), "prog.blpp"), opts)
			tramps := 0
			for _, l := range strings.Split(cmap.String(), "\n") {
				if f := strings.Fields(l); len(f) == 5 && f[2] == "path_end" && f[3] == "trampoline" && f[4] == "run" {
					tramps++
				}
			}
			t.Logf("%s flow-only %v: %d", c, opts.NoContext, tramps)
			// Twelve handlers, and a few other breaking edges at most.
			if tramps == 0 || tramps > 16 {
				t.Errorf("%s (flow-only %v): run() has %d path-end trampolines, want one per handler", c, opts.NoContext, tramps)
			}
		}
	}
}
