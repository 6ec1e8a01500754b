package rewriter_test

import (
	"path/filepath"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// TestColdRecordsCountInline checks coldhit.c in context mode (decision
// 151): pick() and spin() have more than 64 paths, so their records start
// cold, and their path ends (exits, a backedge, a loop copy's head) go
// out of line to the record's small table, where the inline code counts
// the two paths each record keeps running. The counts must equal
// callgrind's; and the stubs must see few path ends: a record's first
// end of each path, and the one after which its twin is made, not the
// hundreds before it that the runtime counted when every cold end took
// the stub (393 exits and 244 backedges at the change).
func TestColdRecordsCountInline(t *testing.T) {
	for _, c := range []fixture.Config{{CC: "gcc", Opt: "-O2", PIE: true}, fixture.Matrix()[0]} {
		t.Run(c.String(), func(t *testing.T) {
			stubEnds(t, "coldhit.c", c, false, []string{"main", "pick", "spin"}, 80, "cold records' ends are not counted inline")
		})
	}
}

// stubEnds rewrites src's build c (flow-only with flow), compares the
// counts of funcs with callgrind's, and wants at most max path ends at
// the stubs (why: what it means when there are more).
func stubEnds(t *testing.T, src string, c fixture.Config, flow bool, funcs []string, max uint64, why string) {
	t.Helper()
	fixture.RequireTool(t, "valgrind", "valgrind")
	t.Parallel()
	what := src + " " + t.Name()
	orig := fixture.Build(t, src, c)
	inst := filepath.Join(t.TempDir(), "stubends.blpp")
	rewriteSum(t, orig, inst, rewriter.Options{NoContext: flow})
	want := runProc(t, orig, nil)
	p := runProfiled(t, what, inst, want)
	cg := callgrindOf(t, what, orig, nil, want)
	compareCounts(t, what, inst, p, cg, countCheck{own: funcs})
	if ends := p.Stats["stub_exits"] + p.Stats["stub_backedges"]; ends > max {
		t.Errorf("%s: %d path ends at the stubs (exits %d, backedges %d), want at most %d: %s",
			what, ends, p.Stats["stub_exits"], p.Stats["stub_backedges"], max, why)
	}
}

// TestHashedPathsInsertInline checks hashins.c (decision 161): wide()
// and loopy() count in hash tables, and most of their path ends are a
// path's first run in its record, which the inline code now puts into the
// table's home entry itself instead of calling the stub. The counts must
// equal callgrind's in both modes; and the stubs must see a fraction of
// the path ends they saw when every new key took them (6,438 in context
// mode and 6,242 flow-only at the change, 871 and 1,002 after it: the
// keys whose home entry was taken, and each table's growth).
func TestHashedPathsInsertInline(t *testing.T) {
	for _, c := range []fixture.Config{{CC: "gcc", Opt: "-O2", PIE: true}, fixture.Matrix()[0]} {
		for _, flow := range []bool{false, true} {
			name := c.String()
			if flow {
				name += "/flow"
			}
			t.Run(name, func(t *testing.T) {
				stubEnds(t, "hashins.c", c, flow, []string{"main", "wide", "loopy"}, 2000, "new keys of hashed records are not put in inline")
			})
		}
	}
}
