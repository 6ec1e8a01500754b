package rewriter_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
)

// TestDispatchShared rewrites cgoto96.c, whose run() ends each of its 95
// handlers with an indirect jump through one table of all 96, and counts
// the path-end trampolines of run() in the code map: the Dispatch edges
// share one per handler (decision 134), where 7,641 of the 9,120 edges
// had one of their own (and the new code was 18 times larger).
// TestDispatchTables checks the counts of such builds against
// callgrind. cgoto.c, whose twelve handlers' edges are mostly chords,
// keeps them (analysis.Number clears its marks).
func TestDispatchShared(t *testing.T) {
	for _, c := range []fixture.Config{{CC: "gcc", Opt: "-O2"}, {CC: "clang", Opt: "-O2"}, {CC: "gcc", Opt: "-O2", PIE: true}} {
		for _, opts := range []rewriter.Options{{}, {NoContext: true}} {
			orig := fixture.Build(t, "cgoto96.c", c)
			var cmap bytes.Buffer
			opts.CodeMap = &cmap
			rewriteSum(t, orig, filepath.Join(t.TempDir(), "prog.blpp"), opts)
			tramps := 0
			for _, l := range strings.Split(cmap.String(), "\n") {
				if f := strings.Fields(l); len(f) == 5 && f[2] == "path_end" && f[3] == "trampoline" && f[4] == "run" {
					tramps++
				}
			}
			// 96 handlers, and a few other breaking edges at most.
			if tramps < 90 || tramps > 110 {
				t.Errorf("%s (flow-only %v): run() has %d path-end trampolines, want one per handler", c, opts.NoContext, tramps)
			}
		}
	}
}

// TestDispatchKept: the metadata marks run()'s dispatch edges in
// cgoto96.c, whose dispatch edges mostly end paths unmarked, and leaves
// them unmarked in cgoto.c, whose twelve handlers' edges are mostly
// chords (analysis.Number, decision 134).
func TestDispatchKept(t *testing.T) {
	for src, want := range map[string]bool{"cgoto96.c": true, "cgoto.c": false} {
		orig := fixture.Build(t, src, fixture.Config{CC: "gcc", Opt: "-O2"})
		inst := filepath.Join(t.TempDir(), "prog.blpp")
		rewriteSum(t, orig, inst, rewriter.Options{})
		tab, f, err := report.LoadMeta(inst)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		n := 0
		for _, mf := range tab.Funcs {
			for _, e := range mf.Edges {
				if e.Dispatch {
					n++
				}
			}
		}
		if (n > 0) != want {
			t.Errorf("%s: %d Dispatch edges in the metadata, want some: %v", src, n, want)
		}
	}
}
