package main

// One loop forest (STYLE rule 10): `blpp report --view loops` on a
// rewritten and run fixture must show, for every function, the loops that
// `blpp cfg` lists for the original, irreducible regions included and
// marked as such. A second loop finder in the reports once dropped the
// irreducible ones; this test catches such a drift.

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
)

// agreeLoop is one loop as the tools print it: kind, header address,
// depth (1 for outermost), and its blocks' addresses or, where only the
// count is printed, nil.
type agreeLoop struct {
	irreducible bool
	header      uint64
	depth       int
	size        int
	blocks      []uint64
}

func (l agreeLoop) String() string {
	kind := "loop"
	if l.irreducible {
		kind = "irreducible region"
	}
	return fmt.Sprintf("%s %#x depth %d, %d blocks", kind, l.header, l.depth, l.size)
}

func sortLoops(ls []agreeLoop) {
	slices.SortFunc(ls, func(a, b agreeLoop) int {
		if a.header != b.header {
			return compareU64(a.header, b.header)
		}
		return a.depth - b.depth
	})
}

func compareU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

var (
	agreeFuncRE  = regexp.MustCompile(`^function (\S+) at (0x[0-9a-f]+), `)
	agreeBlockRE = regexp.MustCompile(`^  B(\d+) +(0x[0-9a-f]+)-`)
	// A loops-view row: value, share, then two spaces and the indented
	// context or loop.
	agreeRowRE  = regexp.MustCompile(`^ *\d+ +\S+%  ( *)(\S.*)$`)
	agreeViewRE = regexp.MustCompile(`^(loop|irreducible region) (0x[0-9a-f]+)(?: at \S+)?, (\d+) blocks?$`)
)

func parseHex(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

// cfgLoops parses `blpp cfg` text: each function's entry and name, and its
// loops with block addresses.
func cfgLoops(t *testing.T, text string) (byEntry map[uint64][]agreeLoop, names map[uint64]string) {
	t.Helper()
	byEntry, names = map[uint64][]agreeLoop{}, map[uint64]string{}
	var entry uint64
	var blocks map[int]uint64
	block := func(s string) uint64 {
		id, err := strconv.Atoi(strings.TrimPrefix(s, "B"))
		a, ok := blocks[id]
		if err != nil || !ok {
			t.Fatalf("blpp cfg: function %#x: loop names unknown block %q", entry, s)
		}
		return a
	}
	for _, line := range strings.Split(text, "\n") {
		if m := agreeFuncRE.FindStringSubmatch(line); m != nil {
			entry, blocks = parseHex(t, m[2]), map[int]uint64{}
			names[entry] = m[1]
			byEntry[entry] = []agreeLoop{}
			continue
		}
		if m := agreeBlockRE.FindStringSubmatch(line); m != nil {
			id, _ := strconv.Atoi(m[1])
			blocks[id] = parseHex(t, m[2])
			continue
		}
		m := cfgLoopRE.FindStringSubmatch(line) // main_test.go
		if m == nil {
			continue
		}
		depth, _ := strconv.Atoi(m[4])
		l := agreeLoop{irreducible: m[2] == "irreducible region", header: block("B" + m[3]), depth: depth}
		for _, b := range strings.Fields(m[6]) {
			l.blocks = append(l.blocks, block(b))
		}
		slices.Sort(l.blocks)
		l.size = len(l.blocks)
		byEntry[entry] = append(byEntry[entry], l)
	}
	for _, ls := range byEntry {
		sortLoops(ls)
	}
	return byEntry, names
}

// viewLoops parses the loops view: for each function that heads a shown
// context, the loops under it (the same under every context).
func viewLoops(t *testing.T, text string) map[string][]agreeLoop {
	t.Helper()
	out := map[string][]agreeLoop{}
	var fn string
	var ctxIndent int
	var cur []agreeLoop
	flush := func() {
		if fn == "" {
			return
		}
		sortLoops(cur)
		if prev, ok := out[fn]; ok && fmt.Sprint(prev) != fmt.Sprint(cur) {
			t.Errorf("loops view: %s shows %v in one context, %v in another", fn, prev, cur)
		}
		out[fn] = cur
	}
	for _, line := range strings.Split(text, "\n") {
		m := agreeRowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		indent, rest := len(m[1])/2, m[2]
		if l := agreeViewRE.FindStringSubmatch(rest); l != nil {
			n, _ := strconv.Atoi(l[3])
			cur = append(cur, agreeLoop{irreducible: l[1] == "irreducible region", header: parseHex(t, l[2]),
				depth: indent - ctxIndent, size: n})
			continue
		}
		flush()
		fn, ctxIndent, cur = rest, indent, []agreeLoop{}
		for _, sep := range []string{"  @ ", "  (no call site)"} {
			if i := strings.Index(fn, sep); i >= 0 {
				fn = fn[:i]
			}
		}
	}
	flush()
	return out
}

// TestLoopsAgree rewrites and runs fixtures with irreducible regions
// nested in natural loops and around them, and checks for every function
// that the loops view (headers, kinds, depths, block counts) and the loops
// report.FindLoops recovers from the rewritten binary's metadata (block
// sets) are those `blpp cfg` lists for the original.
func TestLoopsAgree(t *testing.T) {
	for _, tc := range []struct {
		src         string
		c           fixture.Config
		irreducible []string // functions the view must show an irreducible region for
	}{
		{"irreducible.c", gccO2PIE, []string{"twoentry", "irr_in_loop", "loop_in_irr"}},
		{"irreducible.c", clangO2PI, []string{"twoentry", "irr_in_loop", "loop_in_irr"}},
		{"irreducible.c", gccO0, []string{"twoentry", "irr_in_loop", "loop_in_irr"}},
		{"loops.c", gccO3PIE, nil},
	} {
		t.Run(tc.src+"/"+tc.c.String(), func(t *testing.T) {
			exe := fixture.Build(t, tc.src, tc.c)
			inst, prof, _ := profiled(t, t.TempDir(), exe)
			want, names := cfgLoops(t, mustBlpp(t, "cfg", exe))
			view := viewLoops(t, mustBlpp(t, "report", prof, "--binary", inst, "--view", "loops", "--all"))

			// The view, for every function it shows.
			byName := map[string][]agreeLoop{}
			for entry, ls := range want {
				byName[names[entry]] = ls
			}
			for fn, got := range view {
				w, ok := byName[fn]
				if !ok {
					t.Errorf("loops view shows %s, which blpp cfg does not list", fn)
					continue
				}
				if fmt.Sprint(got) != fmt.Sprint(w) {
					t.Errorf("%s: loops view shows %v; blpp cfg lists %v", fn, got, w)
				}
			}
			for _, fn := range tc.irreducible {
				if !slices.ContainsFunc(view[fn], func(l agreeLoop) bool { return l.irreducible }) {
					t.Errorf("%s: the loops view shows no irreducible region: %v", fn, view[fn])
				}
			}

			// The block sets, for every instrumented function.
			tab, f, err := report.LoadMeta(inst)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			checked := 0
			for i := range tab.Funcs {
				mf := &tab.Funcs[i]
				if len(mf.Blocks) == 0 {
					continue
				}
				w, ok := want[mf.Entry]
				if !ok {
					t.Errorf("%s at %#x: instrumented, but blpp cfg lists no function there", mf.Name, mf.Entry)
					continue
				}
				var got []agreeLoop
				for _, l := range report.FindLoops(mf) {
					g := agreeLoop{irreducible: l.Irreducible, header: mf.Blocks[l.Header].Addr, depth: l.Depth + 1, size: len(l.Blocks)}
					for _, b := range l.Blocks {
						g.blocks = append(g.blocks, mf.Blocks[b].Addr)
					}
					slices.Sort(g.blocks)
					got = append(got, g)
				}
				sortLoops(got)
				if fmt.Sprint(got) != fmt.Sprint(w) || !sameBlocks(got, w) {
					t.Errorf("%s: report.FindLoops gives %v; blpp cfg lists %v", mf.Name, got, w)
				}
				checked++
			}
			t.Logf("%d functions compared, %d in the loops view", checked, len(view))
			if checked == 0 || len(view) == 0 {
				t.Errorf("nothing compared: %d functions, %d in the view", checked, len(view))
			}
		})
	}
}

func sameBlocks(a, b []agreeLoop) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !slices.Equal(a[i].blocks, b[i].blocks) {
			return false
		}
	}
	return true
}
