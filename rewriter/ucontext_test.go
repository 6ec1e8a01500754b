package rewriter_test

import (
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
)

// TestUcontextMoves runs coroutines that move (decision 122,
// testdata/ucontext2.c): one resumed by another thread, 300 made one
// after another in the same ucontext_t (every other one abandoned), and
// one left suspended at a fork and resumed in both processes. The
// behaviour is the original's; neither profile has an inexact-count
// statistic; the contexts made in one ucontext_t share one thread block;
// and the parent's and child's block counts, summed, are callgrind's
// (the child's profile holds its own work: the resumed context's
// prefixes are subtracted as the forking thread's are).
func TestUcontextMoves(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range procConfigsAll {
		for _, m := range procModes {
			t.Run(c.String()+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				fr := runForking(t, "ucontext2.c", c, m.opts)
				what, orig, inst, want, parent, child := fr.what, fr.orig, fr.inst, fr.want, fr.parent, fr.child
				for _, p := range []*cct.Profile{parent, child} {
					if w := report.RuntimeWarnings(p.Stats); len(w) > 0 {
						t.Errorf("%s: pid %d: the profile is not exact: %q", what, p.PID, w)
					}
				}
				// Every context had room in the runtime's table.
				if v, ok := parent.Stats["contexts_untracked"]; !ok || v != 0 {
					t.Errorf("%s: STATS contexts_untracked = %d (present %v), want 0", what, v, ok)
				}
				// main's thread, the other thread, the coroutines' one
				// block (each made in the same ucontext_t).
				if n := len(parent.Threads); n != 3 {
					t.Errorf("%s: the parent's profile has %d threads, want 3", what, n)
				}
				merged, err := cct.Merge(parent, child)
				if err != nil {
					t.Fatalf("%s: merge: %v", what, err)
				}
				cg := callgrindOf(t, what, orig, nil, want)
				compareCounts(t, what, inst, merged, cg, countCheck{
					own:     []string{"mix", "pause_here", "body", "start", "resume", "other_thread"},
					ownOnly: c.Static,
				})
			})
		}
	}
}
