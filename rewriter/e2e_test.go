package rewriter_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
)

// rewriteFixture builds src in configuration c, rewrites it, runs both and
// requires identical behaviour. It returns the original, the rewritten
// binary and the profile.
func rewriteFixture(t *testing.T, src string, c fixture.Config) (orig, inst string, prof *cct.Profile) {
	t.Helper()
	dir := t.TempDir()
	orig, inst = rewriteTo(t, src, c, dir)
	want := runProc(t, orig, nil)
	profPath := filepath.Join(dir, "blpp.out")
	got := runProc(t, inst, nil, "BLPP_PROFILE="+profPath)
	sameBehaviour(t, src+" "+c.String(), want, got)
	prof, err := cct.ReadFile(profPath)
	if err != nil {
		t.Fatalf("%s %s: profile: %v", src, c, err)
	}
	return orig, inst, prof
}

// e2eSources are the fixtures whose every block count must be exact.
var e2eSources = []string{"loops.c", "early.c", "switch.c", "irreducible.c", "recursion.c", "funcptr.c", "setjmp.c", "selfjmp.c", "noreturn.c", "cold.c", "interp.c", "hash.c", "manypaths.c", "ucontext.c", "tailfrag.c"}

// ownFuncs names the functions of e2e fixtures without expectations
// (fixture.ExpectFor) that a static build compares too.
var ownFuncs = map[string][]string{
	"selfjmp.c":  {"work", "self_jump", "sometimes"},
	"ucontext.c": {"step", "yield_to", "work", "fiber_a", "fiber_b", "again"},
	"tailfrag.c": {"dispatch", "shape_a", "shape_b", "shape_c", "shape_d", "shape_e"},
}

// TestRewriteBehaviour rewrites every fixture in every configuration of
// the matrix and requires the rewritten program to behave exactly like the
// original (stdout, stderr, exit status) and to write a valid profile.
func TestRewriteBehaviour(t *testing.T) {
	for _, c := range fixture.Matrix() {
		c := c
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			for _, src := range fixture.Sources() {
				rewriteFixture(t, src, c)
			}
		})
	}
}

// TestBlockCountsExact compares every block count derived from the path
// profile with callgrind's execution count of the block's first
// instruction in the original binary. No tolerance.
func TestBlockCountsExact(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	configs := fixture.Matrix()
	if testing.Short() {
		configs = configs[:2]
	}
	for _, c := range configs {
		c := c
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			for _, src := range e2eSources {
				checkExact(t, src, c)
			}
		})
	}
}

func checkExact(t *testing.T, src string, c fixture.Config) {
	orig, inst, prof := rewriteFixture(t, src, c)
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := report.MakePaths(inst, tab, prof)
	if err != nil {
		t.Fatalf("%s %s: report: %v", src, c, err)
	}
	cg, err := callgrind.Run(orig, callgrind.Options{})
	if err != nil {
		t.Fatalf("%s %s: callgrind: %v", src, c, err)
	}
	// In a static binary the C library's own start-up code walks the
	// program headers and memory map (_dl_relocate_static_pie,
	// _dlfo_process_initial, ...), which the rewriter and valgrind both
	// change; there only the fixture's own functions are compared.
	own := map[string]bool{"main": true}
	for _, n := range ownFuncs[src] {
		own[n] = true
	}
	if e, ok := fixture.ExpectFor(src); ok {
		for _, n := range e.Names() {
			own[n] = true
		}
	}
	checked, skipped := 0, []string{}
	for _, fn := range doc.Functions {
		if !fn.Instrumented || c.Static && !own[fn.Name] {
			continue
		}
		if fn.PartialUnknown > 0 {
			skipped = append(skipped, fn.Name)
			continue
		}
		for _, b := range fn.Blocks {
			var addr uint64
			if _, err := fmtSscan(b.Addr, &addr); err != nil {
				t.Fatal(err)
			}
			want := cg.Exec[addr]
			if b.Count != want {
				t.Errorf("%s %s: %s block %s: blpp %d, callgrind %d", src, c, fn.Name, b.Addr, b.Count, want)
			}
			checked++
		}
	}
	// Code of an instrumented function's range that ran but lies in none
	// of its blocks ran uncounted: a jump taken for a tail call left the
	// function's own cases out of its graph (decision 175).
	// A function's Size counts its fragments too: its own range ends at
	// the next function's entry at the latest.
	entries := make([]uint64, 0, len(tab.Funcs))
	for _, mf := range tab.Funcs {
		entries = append(entries, mf.Entry)
	}
	slices.Sort(entries)
	ran := make([]uint64, 0, len(cg.Exec))
	for a, n := range cg.Exec {
		if n > 0 {
			ran = append(ran, a)
		}
	}
	slices.Sort(ran)
	for _, mf := range tab.Funcs {
		if !mf.Instrumented || mf.Skipped || c.Static && !own[mf.Name] {
			continue
		}
		end := mf.Entry + mf.Size
		if k, _ := slices.BinarySearch(entries, mf.Entry+1); k < len(entries) {
			end = min(end, entries[k])
		}
		k, _ := slices.BinarySearch(ran, mf.Entry)
		for ; k < len(ran) && ran[k] < end; k++ {
			a := ran[k]
			in := false
			for _, b := range mf.Blocks {
				in = in || b.Addr <= a && a < b.End
			}
			if !in {
				t.Errorf("%s %s: %s: the instruction at %#x ran %d times in no block of the function", src, c, mf.Name, a, cg.Exec[a])
			}
		}
	}
	for _, s := range skipped {
		if s != "_start" && !strings.HasPrefix(s, "sub_") {
			t.Errorf("%s %s: %s has partial paths of unknown location; its blocks were not compared", src, c, s)
		}
	}
	if checked == 0 {
		t.Errorf("%s %s: no block compared", src, c)
	}
}

func fmtSscan(s string, v *uint64) (int, error) { return fmt.Sscanf(s, "0x%x", v) }
