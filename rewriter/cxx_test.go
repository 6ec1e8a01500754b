package rewriter_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
)

// cxxConfigs are the C++ builds: g++ and clang++, -O0 and -O2.
var cxxConfigs = []fixture.Config{
	{CC: "g++", Opt: "-O0", PIE: true, Extra: []string{"-pthread"}},
	{CC: "g++", Opt: "-O2", PIE: true, Extra: []string{"-pthread"}},
	{CC: "clang++", Opt: "-O0", PIE: false, Extra: []string{"-pthread"}},
	{CC: "clang++", Opt: "-O2", PIE: true, Extra: []string{"-pthread"}},
}

// TestCxxExceptions rewrites C++ programs whose exceptions pass through
// instrumented frames (a throw three frames below its catch, rethrow,
// cleanups, catch inside one function, exceptions in std::thread
// workers), plus virtual calls, templates and std::function. The
// rewritten program must behave exactly like the original, which needs
// unwind tables and exception tables for the relocated code; every
// instrumented function's block counts, and the calls counted per call
// site in the calling context tree, must equal callgrind's.
func TestCxxExceptions(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	fixture.RequireTool(t, "objdump", "binutils")
	for _, src := range []string{"throw.cpp", "features.cpp"} {
		for _, c := range cxxConfigs {
			src, c := src, c
			t.Run(strings.TrimSuffix(src, ".cpp")+"/"+c.String(), func(t *testing.T) {
				t.Parallel()
				checkCxx(t, src, c)
			})
		}
	}
}

func checkCxx(t *testing.T, src string, c fixture.Config) {
	what := src + " " + c.String()
	orig := fixture.Build(t, filepath.Join("cxx", src), c)
	dir := t.TempDir()
	inst := rewriteBinary(t, orig, filepath.Join(dir, strings.TrimSuffix(src, ".cpp")+".blpp"))
	native := runProc(t, orig, nil)
	if native.code != 0 || native.sig != 0 {
		t.Fatalf("%s: the original misbehaves: %s", what, native)
	}
	profPath := filepath.Join(dir, "blpp.out")
	got := runProc(t, inst, nil, "BLPP_PROFILE="+profPath)
	sameBehaviour(t, what, native, got)
	prof, err := cct.ReadFile(profPath)
	if err != nil {
		t.Fatalf("%s: profile: %v", what, err)
	}
	cg := callgrindOf(t, what, orig, nil, native)
	doc := compareCounts(t, what, inst, prof, cg, countCheck{own: []string{"main"}})
	compared := 0
	for _, fn := range doc.Functions {
		if fn.Instrumented && fn.PartialUnknown == 0 {
			compared++
		}
	}
	if compared < 5 {
		t.Errorf("%s: only %d functions compared", what, compared)
	}
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := newContexts(t, what, tab, prof)
	ctx.checkBlockSums(t, doc)
	bin := loadBinary(t, orig)
	ctx.checkSitesAgainstCallgrind(t, bin, cg)
}

// TestCxxModes: exceptions in the other instrumentation modes, whose
// entries, exits and landing pads take other code (the flat record table;
// the metric stubs): behaviour and block counts as in the default mode.
func TestCxxModes(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	c := cxxConfigs[1]
	orig := fixture.Build(t, filepath.Join("cxx", "throw.cpp"), c)
	want := runProc(t, orig, nil)
	cg := callgrindOf(t, "throw.cpp", orig, nil, want)
	for _, m := range []struct {
		name string
		opts rewriter.Options
	}{
		{"flow-only", rewriter.Options{NoContext: true}},
		{"context+tsc", rewriter.Options{Metrics: []rewriter.Metric{tscMetric}}},
	} {
		what := "throw.cpp " + c.String() + " " + m.name
		dir := t.TempDir()
		inst := rewriteWith(t, orig, filepath.Join(dir, "throw.blpp"), m.opts)
		prof := filepath.Join(dir, "blpp.out")
		got := runProc(t, inst, nil, "BLPP_PROFILE="+prof, "BLPP_QUIET=1")
		sameBehaviour(t, what, want, got)
		p, err := cct.ReadFile(prof)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		checkLatency(t, what, p)
		compareCounts(t, what, inst, p, cg, countCheck{own: []string{"main"}})
	}
}
