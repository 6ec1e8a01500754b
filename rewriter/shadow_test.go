package rewriter_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
)

// deepDepth is DEPTH in testdata/deep.c: its thread runs down(deepDepth)
// and then down(deepDepth-17), each with one more activation than its
// argument.
const deepDepth = 1300000

// TestShadowFrames runs deep.c with a shadow stack of 4096 frames
// (Options.ShadowFrames): far fewer than its recursion needs, so the
// activations beyond take the overflow path. In a flow-only image down()
// is closed, and its internal entry [decision 61] tests nothing but the
// shadow stack's limit before it pushes: past the limit is address space
// reserved without access, so a missing or wrong test crashes the
// program. Overflowed activations lose their callers' path registers
// (each caller's path restarts at the call), so down's blocks before its
// call are not compared; everything else must be exact, down's entry
// block included, and the runtime must report exactly how many
// activations it could not frame. The default capacity (TestModesExact
// runs deep.c too) frames all of them, growing the stack as it deepens,
// and is exact everywhere.
func TestShadowFrames(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	const frames = 4096
	for _, c := range []fixture.Config{{CC: "gcc", Opt: "-O2", PIE: true}, {CC: "clang", Opt: "-O0", PIE: false}} {
		orig := fixture.Build(t, "deep.c", c)
		want := runProc(t, orig, nil)
		cg := callgrindOf(t, "deep.c", orig, nil, want)
		for _, m := range []struct {
			name   string
			opts   rewriter.Options
			closed bool
		}{
			{"flow-only", rewriter.Options{NoContext: true, ShadowFrames: frames}, true},
			{"context", rewriter.Options{ShadowFrames: frames}, false},
		} {
			what := "deep.c " + c.String() + " " + m.name
			dir := t.TempDir()
			inst := filepath.Join(dir, "prog.blpp")
			sum := rewriteSum(t, orig, inst, m.opts)
			if m.closed && sum.ClosedFunctions == 0 {
				t.Errorf("%s: no closed function: the internal entries are not tested", what)
			}
			p := runProfiled(t, what, inst, want)
			// The deep thread's frames: run's, then down's.
			over := uint64(deepDepth+1-(frames-1)) + uint64(deepDepth-16-(frames-1))
			if n := p.Stats["shadow_overflow"]; n != over {
				t.Errorf("%s: shadow_overflow %d, want %d", what, n, over)
			}
			doc := compareCounts(t, what, inst, p, cg, countCheck{own: []string{"main"},
				exclude: map[string]string{"down": "overflowed activations lose their callers' path registers"}})
			entry := downEntry(t, what, doc)
			if n, w := entry.count, cg.Exec[entry.addr]; n != w || n != 2*deepDepth-15 {
				t.Errorf("%s: down's entry block %#x ran %d times, callgrind %d, the program's logic %d", what, entry.addr, n, w, 2*deepDepth-15)
			}
		}
	}
}

type blockCount struct {
	addr, count uint64
}

// downEntry returns down's entry block and its count from a report.
func downEntry(t *testing.T, what string, doc *report.PathDoc) blockCount {
	t.Helper()
	for _, fn := range doc.Functions {
		if fn.Name != "down" {
			continue
		}
		entry, err := strconv.ParseUint(strings.TrimPrefix(fn.Entry, "0x"), 16, 64)
		if err != nil {
			t.Fatalf("%s: down's entry %q: %v", what, fn.Entry, err)
		}
		for _, b := range fn.Blocks {
			if b.Addr == fn.Entry {
				return blockCount{entry, b.Count}
			}
		}
		t.Fatalf("%s: down has no block at its entry %s", what, fn.Entry)
	}
	t.Fatalf("%s: down is not in the report", what)
	return blockCount{}
}
