package rewriter_test

import (
	"debug/elf"
	"path/filepath"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// TestCodeKinds checks the summary's account of the new code
// (Summary.CodeKinds, decision 111): no kind or place is negative, the
// kinds and CodeElsewhere add up to CodeBytes with CodeElsewhere a small
// part, the copies of original instructions inline are no more than the
// original's text (each is copied once there), and the kinds a fixture
// with loops and calls must have are there, loop copies in their column.
func TestCodeKinds(t *testing.T) {
	for _, opts := range []rewriter.Options{{}, {NoContext: true}} {
		orig := fixture.Build(t, "cycles.c", fixture.Config{CC: "gcc", Opt: "-O2"})
		sum := rewriteSum(t, orig, filepath.Join(t.TempDir(), "prog.blpp"), opts)
		what := "cycles.c"
		if opts.NoContext {
			what += " flow-only"
		}
		kinds := map[string]rewriter.CodeKind{}
		total := sum.CodeElsewhere
		for _, k := range sum.CodeKinds {
			if k.Inline < 0 || k.Trampolines < 0 || k.Cold < 0 || k.LoopCopies < 0 || k.Bytes != k.Inline+k.Trampolines+k.Cold+k.LoopCopies {
				t.Errorf("%s: %+v: a negative place or a sum that is not the places'", what, k)
			}
			kinds[k.Kind] = k
			total += k.Bytes
		}
		if total != sum.CodeBytes {
			t.Errorf("%s: kinds add up to %d bytes, the code has %d", what, total, sum.CodeBytes)
		}
		if sum.CodeElsewhere < 0 || sum.CodeElsewhere > sum.CodeBytes/4 {
			t.Errorf("%s: %d of %d bytes outside functions", what, sum.CodeElsewhere, sum.CodeBytes)
		}
		for _, k := range []string{"original", "entry", "exit", "path_end", "increment", "padding", "jump"} {
			if kinds[k].Bytes == 0 {
				t.Errorf("%s: no %s code", what, k)
			}
		}
		// Taken branches with increments go through trampolines, which
		// jump back; backedges' slow paths are out of line.
		if kinds["jump"].Trampolines == 0 || kinds["path_end"].Cold == 0 || kinds["path_end"].Inline == 0 {
			t.Errorf("%s: jumps %+v, path ends %+v: want trampolines' jumps and path ends inline and cold", what, kinds["jump"], kinds["path_end"])
		}
		if kinds["original"].LoopCopies == 0 || sum.LoopCopies == 0 {
			t.Errorf("%s: %d loop copies, %d bytes of original code in them", what, sum.LoopCopies, kinds["original"].LoopCopies)
		}
		f, err := elf.Open(orig)
		if err != nil {
			t.Fatal(err)
		}
		text := f.Section(".text")
		f.Close()
		if text == nil || uint64(kinds["original"].Inline) > text.Size {
			t.Errorf("%s: %d bytes of original code copied inline, more than the text", what, kinds["original"].Inline)
		}
	}
}
