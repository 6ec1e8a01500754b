package rewriter_test

import (
	"bytes"
	"debug/elf"
	"fmt"
	"path/filepath"
	"strings"
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
	// A layout seed puts padding before functions (decision 53).
	for _, opts := range []rewriter.Options{{}, {NoContext: true}, {LayoutSeed: 3}} {
		orig := fixture.Build(t, "cycles.c", fixture.Config{CC: "gcc", Opt: "-O2"})
		var cmap bytes.Buffer
		opts.CodeMap = &cmap
		inst := filepath.Join(t.TempDir(), "prog.blpp")
		sum := rewriteSum(t, orig, inst, opts)
		checkCodeMap(t, what(opts), cmap.String(), sum, inst)
		what := what(opts)
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

func what(opts rewriter.Options) string {
	w := "cycles.c"
	if opts.NoContext {
		w += " flow-only"
	}
	if opts.LayoutSeed != 0 {
		w += fmt.Sprintf(" layout %d", opts.LayoutSeed)
	}
	return w
}

// checkCodeMap checks the code map m (Options.CodeMap) against the
// summary: its stretches do not overlap, lie in address order, and add
// up per kind and place to the summary's counts.
func checkCodeMap(t *testing.T, what, m string, sum rewriter.Summary, inst string) {
	t.Helper()
	got := map[string]int{}
	var last uint64
	// Each function's stretches, the padding before it aside, are where
	// the output's symbol for its new code says.
	lo, hi := map[string]uint64{}, map[string]uint64{}
	lines := strings.Split(strings.TrimSuffix(m, "\n"), "\n")
	for i, l := range lines {
		var start, end uint64
		var kind, place, fn string
		if n, err := fmt.Sscanf(l, "%x %x %s %s %s", &start, &end, &kind, &place, &fn); n != 5 || err != nil || end <= start || start < last {
			t.Fatalf("%s: code map line %d %q: want start end kind place function, in address order, not overlapping (%v)", what, i+1, l, err)
		}
		last = end
		got[kind+" "+place] += int(end - start)
		if _, ok := lo[fn]; !ok && kind != "padding" {
			lo[fn] = start
		}
		hi[fn] = end
	}
	f, err := elf.Open(inst)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]bool{}
	for _, s := range syms {
		at[fmt.Sprintf("%s %x %x", s.Name, s.Value, s.Value+s.Size)] = true
	}
	for fn := range lo {
		if !at[fmt.Sprintf("%s %x %x", fn, lo[fn], hi[fn])] {
			t.Errorf("%s: %s's stretches in the code map are %#x-%#x, where no symbol %s is", what, fn, lo[fn], hi[fn], fn)
		}
	}
	if len(lo) < 5 {
		t.Errorf("%s: %d functions in the code map", what, len(lo))
	}
	want := map[string]int{}
	for _, k := range sum.CodeKinds {
		for place, n := range map[string]int{"inline": k.Inline, "trampoline": k.Trampolines, "cold": k.Cold, "loop_copy": k.LoopCopies} {
			if n != 0 {
				want[k.Kind+" "+place] = n
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: the code map's stretches add up to\n%v\nthe summary says\n%v", what, got, want)
	}
}
