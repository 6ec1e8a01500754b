package rewriter_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
)

// TestDarkEntries: dark.c's dispatch, which no analysis can resolve, is
// left out, but its entries go through a counting stub (decision 70). In
// flow-only and context images the rewritten program behaves like the
// original; dispatch's entry count equals callgrind's count of calls to
// it; in context images its callbacks (visit) hang under its records,
// and its records under the contexts that called it; every block of the
// instrumented functions stays exact.
func TestDarkEntries(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	configs := fixture.Matrix()
	if testing.Short() {
		configs = configs[:2]
	}
	for _, c := range configs {
		c := c
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			orig := fixture.Build(t, "dark.c", c)
			// A stripped build names functions by address: take the
			// names from the same build before stripping.
			plain := c
			plain.Strip = false
			names := symbolNames(t, fixture.Build(t, "dark.c", plain))
			want := runProc(t, orig, nil)
			cg, err := callgrind.Run(orig, callgrind.Options{})
			if err != nil {
				t.Fatalf("callgrind: %v", err)
			}
			for _, flow := range []bool{false, true} {
				what := fmt.Sprintf("dark.c %s flow-only=%v", c, flow)
				inst := filepath.Join(t.TempDir(), "dark.blpp")
				sum := rewriteSum(t, orig, inst, rewriter.Options{NoContext: flow})
				checkDarkSummary(t, what, &sum, names)
				prof := runProfiled(t, what, inst, want)
				checkDarkProfile(t, what, c, inst, prof, cg, names)
			}
		})
	}
}

// checkDarkSummary requires dispatch left out for an unresolved jump, with
// its entries counted, and every left-out function listed with a reason
// for entries that are not counted.
func checkDarkSummary(t *testing.T, what string, sum *rewriter.Summary, names map[string]string) {
	t.Helper()
	found, counted := false, 0
	for _, s := range sum.Skipped {
		if s.EntriesCounted {
			counted++
		} else if s.NotCounted == "" {
			t.Errorf("%s: %s: entries not counted, and no reason given", what, s.Name)
		}
		if names[s.Entry] != "dispatch" {
			continue
		}
		found = true
		if !s.EntriesCounted {
			t.Errorf("%s: dispatch's entries not counted: %s", what, s.NotCounted)
		}
	}
	if !found {
		t.Fatalf("%s: dispatch is instrumented; the fixture needs a function blpp must leave out", what)
	}
	if counted != sum.EntriesCounted {
		t.Errorf("%s: summary counts %d functions with counted entries, the list %d", what, sum.EntriesCounted, counted)
	}
}

func checkDarkProfile(t *testing.T, what string, c fixture.Config, inst string, prof *cct.Profile, cg *callgrind.Profile, names map[string]string) {
	t.Helper()
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := report.MakePaths(inst, tab, prof)
	if err != nil {
		t.Fatalf("%s: report: %v", what, err)
	}
	var entry uint64
	own := map[string]bool{"main": true, "run": true, "visit": true, "dispatch_init": true}
	checked := 0
	for i := range doc.Functions {
		fn := &doc.Functions[i]
		fn.Name = names[fn.Entry]
	}
	for _, fn := range doc.Functions {
		if fn.Name == "dispatch" {
			fmtSscan(fn.Entry, &entry)
			var calls uint64
			for k, n := range cg.Calls {
				if k[1] == entry {
					calls += n
				}
			}
			if calls == 0 || fn.Entries != calls || cg.Exec[entry] != calls {
				t.Errorf("%s: dispatch entered %d times, callgrind: %d calls, first instruction %d", what, fn.Entries, calls, cg.Exec[entry])
			}
			continue
		}
		if !fn.Instrumented || c.Static && !own[fn.Name] {
			continue
		}
		for _, b := range fn.Blocks {
			var addr uint64
			fmtSscan(b.Addr, &addr)
			if b.Count != cg.Exec[addr] {
				t.Errorf("%s: %s block %s: blpp %d, callgrind %d", what, fn.Name, b.Addr, b.Count, cg.Exec[addr])
			}
			checked++
		}
	}
	if entry == 0 || checked == 0 {
		t.Fatalf("%s: dispatch found: %v, blocks compared: %d", what, entry != 0, checked)
	}
	if prof.Flags&cct.FlagFlowOnly != 0 {
		return
	}
	// The calling context tree: dispatch's contexts are under run (its
	// loop) and main (the call through hop), every visit context under a
	// dispatch context, and visit's calls add up to callgrind's.
	tree, err := report.NewModel(inst, tab, prof, nil)
	if err != nil {
		t.Fatalf("%s: context tree: %v", what, err)
	}
	for i := range tree.Nodes {
		n := &tree.Nodes[i]
		n.Name = names[fmt.Sprintf("%#x", tab.Funcs[n.Func].Entry)]
	}
	var visits, visitCalls uint64
	callers := map[string]uint64{}
	for _, n := range tree.Nodes {
		switch n.Name {
		case "dispatch":
			if !n.Uninstrumented || n.Parent < 0 {
				t.Errorf("%s: dispatch context %d: uninstrumented %v, parent %d", what, n.ID, n.Uninstrumented, n.Parent)
				continue
			}
			callers[tree.Nodes[n.Parent].Name] += n.Calls
		case "visit":
			visits += n.Calls
			if n.Parent < 0 || tree.Nodes[n.Parent].Name != "dispatch" {
				t.Errorf("%s: visit context %d is not under dispatch: %v", what, n.ID, tree.Chain(n.ID))
			}
		}
	}
	for k, n := range cg.Calls {
		if fnAt(doc, k[1]) == "visit" {
			visitCalls += n
		}
	}
	if visits == 0 || visits != visitCalls {
		t.Errorf("%s: visit called %d times under dispatch, callgrind %d", what, visits, visitCalls)
	}
	var fromRun, fromMain uint64
	for k, n := range cg.Calls {
		if k[1] == entry {
			switch fnAt(doc, k[0]) {
			case "run":
				fromRun += n
			case "main":
				fromMain += n
			}
		}
	}
	if callers["run"] != fromRun || callers["main"] != fromMain || fromRun == 0 {
		t.Errorf("%s: dispatch entered from %v, callgrind: run %d, main %d", what, callers, fromRun, fromMain)
	}
}

// fnAt names the function of doc whose blocks hold addr ("" if none).
func fnAt(doc *report.PathDoc, addr uint64) string {
	for _, fn := range doc.Functions {
		var entry uint64
		fmtSscan(fn.Entry, &entry)
		if addr == entry {
			return fn.Name
		}
		for _, b := range fn.Blocks {
			var a uint64
			fmtSscan(b.Addr, &a)
			if a == addr {
				return fn.Name
			}
		}
	}
	return fnContaining(doc, addr)
}

// fnContaining names the instrumented function with the greatest block
// address at or below addr.
func fnContaining(doc *report.PathDoc, addr uint64) string {
	best, name := uint64(0), ""
	for _, fn := range doc.Functions {
		for _, b := range fn.Blocks {
			var a uint64
			fmtSscan(b.Addr, &a)
			if a <= addr && a > best {
				best, name = a, fn.Name
			}
		}
	}
	return name
}
