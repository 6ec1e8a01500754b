package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/internal/testsupport/golden"
)

// gxxO0 builds the C++ name fixture: at -O0 g++ keeps every function
// and its counts do not depend on inlining decisions.
var gxxO0 = fixture.Config{CC: "g++", Opt: "-O0", PIE: true}

// TestDemangle reports a profile of testdata/cxx/names.cpp (overloads,
// a namespace, a class, a template for two types, a static function, a
// lambda) and compares the text views, the folded stacks and the HTML
// page's procedure names with golden files: every name demangled. With
// --no-demangle the same views show the mangled names, and the exports
// read by tools that match linkage names keep them either way.
func TestDemangle(t *testing.T) {
	dir := t.TempDir()
	exe := fixture.Build(t, filepath.Join("cxx", "names.cpp"), gxxO0)
	inst, prof, out := profiled(t, dir, exe)
	if out != "135 17 45 45 7.0\n" {
		t.Fatalf("instrumented names.cpp printed %q", out)
	}
	// The goldens name the instrumented binary INST and the source tree
	// ROOT (the binary's name has the fixture cache's hash in it, and a
	// cached build keeps the tree it was first built in, which another
	// clone's may not be).
	srcRoot := regexp.MustCompile(`/\S*?/testdata/`)
	clean := func(s string) string {
		return srcRoot.ReplaceAllString(strings.ReplaceAll(s, inst, "INST"), "ROOT/testdata/")
	}
	const sym, name = "_Z3sumIlET_PKS0_i", "long sum<long>(long const*, int)"
	views := []struct {
		golden string
		args   []string
	}{
		{"demangle-flat.golden", []string{"report", "--view", "flat", "--metric", "freq", "--top", "0"}},
		{"demangle-tree.golden", []string{"report", "--view", "tree", "--metric", "freq", "--all"}},
		{"demangle-callers.golden", []string{"report", "--view", "callers", "--metric", "freq", "--all"}},
		{"demangle-loops.golden", []string{"report", "--view", "loops", "--metric", "freq", "--all"}},
		{"demangle-folded.golden", []string{"export", "--format", "folded", "--metric", "count"}},
		{"demangle-coverage.golden", []string{"coverage"}},
	}
	for _, v := range views {
		args := append(append([]string{}, v.args...), prof, "--binary", inst)
		got := clean(mustBlpp(t, args...))
		golden.CheckString(t, v.golden, got)
		raw := clean(mustBlpp(t, append(args, "--no-demangle")...))
		// --no-demangle shows the symbol table's names.
		if !strings.Contains(raw, sym) || strings.Contains(raw, name) {
			t.Errorf("%q --no-demangle does not show the mangled names:\n%s", v.args, raw)
		}
		if strings.Contains(got, sym) || !strings.Contains(got, name) {
			t.Errorf("%q does not demangle:\n%s", v.args, got)
		}
	}

	// The HTML page: its procedures table names every function demangled.
	page := filepath.Join(dir, "names.html")
	mustBlpp(t, "report", prof, "--binary", inst, "--html", page)
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var procs []string
	for _, m := range regexp.MustCompile(`<tr><td class="l"><code>([^<]*)</code>`).FindAllStringSubmatch(string(data), -1) {
		procs = append(procs, m[1])
	}
	slices.Sort(procs)
	golden.CheckString(t, "demangle-html-procs.golden", strings.Join(procs, "\n")+"\n")

	// The LLVM sample profile and BOLT fdata keep the linkage names clang
	// and llvm-bolt match on; lcov keeps them too (lcov 1.x's genhtml cuts
	// a name at its first comma; genhtml --demangle-cpp demangles).
	for _, args := range [][]string{{"export", "--format", "llvm-sample"}, {"export", "--format", "bolt-fdata"}, {"coverage", "--format", "lcov"}} {
		got := mustBlpp(t, append(args, prof, "--binary", inst)...)
		if !strings.Contains(got, "_ZN3geo5scaleEli") || strings.Contains(got, "geo::scale(") {
			t.Errorf("%q does not keep the mangled names:\n%s", args, got)
		}
	}
	// JSON keeps the raw name and adds the demangled one.
	js := mustBlpp(t, "report", prof, "--binary", inst, "--format", "json")
	if !strings.Contains(js, `"name": "_ZN3geo5scaleEli"`) || !strings.Contains(js, `"demangled": "geo::scale(long, int)"`) {
		t.Errorf("the JSON lacks the raw name or its demangled form")
	}
	// cfg, stats and annotate's headers demangle too; annotate takes the
	// function by either name.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"cfg", exe, "--func", "scale"}, "function geo::scale(long, int) at "},
		{[]string{"stats", exe, "--func", "scale"}, " geo::scale(long, int)\n"},
		{[]string{"stats", exe, "--func", "scale", "--json"}, `"demangled": "geo::scale(long, int)"`},
		{[]string{"annotate", prof, "--binary", inst, "--disasm", "geo::scale(long, int)"}, "geo::scale(long, int) at "},
		{[]string{"annotate", prof, "--binary", inst, "--disasm", "_ZN3geo5scaleEli"}, "geo::scale(long, int) at "},
	} {
		if got := mustBlpp(t, c.args...); !strings.Contains(got, c.want) {
			t.Errorf("blpp %q does not show %q:\n%s", c.args, c.want, got)
		}
	}
	if got := mustBlpp(t, "cfg", exe, "--func", "scale", "--no-demangle"); !strings.Contains(got, "function _ZN3geo5scaleEli at ") {
		t.Errorf("cfg --no-demangle does not show the symbol:\n%s", got)
	}
	// A context can be named either way.
	for _, chain := range []string{"main/geo::scale(long, int)", "main/_ZN3geo5scaleEli"} {
		if got := mustBlpp(t, "report", prof, "--binary", inst, "--context", chain); !strings.Contains(got, "geo::scale(long, int)") {
			t.Errorf("--context %s: %s", chain, got)
		}
	}
}
