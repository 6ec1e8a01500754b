package corpus_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/corpus"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// sameRunConfigs are the fixture configurations of TestSameRunFixtures:
// PIE and not, both compilers, and static binaries, whose C library
// (every one of its instrumented functions, start-up and exit included)
// is compared too.
var sameRunConfigs = []fixture.Config{
	{CC: "gcc", Opt: "-O2", PIE: true},
	{CC: "clang", Opt: "-O2"},
	{CC: "gcc", Opt: "-O2", Static: true},
}

// TestSameRunFixtures runs every fixture's rewritten copy under callgrind,
// in both instrumentation modes, and requires every block of every
// instrumented function to count exactly what callgrind counted of its
// copies in the same run (CheckSameRun), with nothing left out.
func TestSameRunFixtures(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	configs := sameRunConfigs
	if testing.Short() {
		configs = configs[:1]
	}
	for _, c := range configs {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			for _, src := range fixture.Sources() {
				for _, mode := range []struct {
					name string
					opts rewriter.Options
				}{{"context", rewriter.Options{}}, {"flow-only", rewriter.Options{NoContext: true}}} {
					orig := fixture.Build(t, src, c)
					s := sameRun(t, orig, mode.opts, nil)
					name := fmt.Sprintf("%s %s %s", src, c, mode.name)
					reportSameRun(t, name, s)
				}
			}
		})
	}
}

// knownPartial are the functions whose activations the runtime records
// as partial paths it cannot locate, with the diagnosis. Their blocks
// are still compared as lower bounds (CheckSameRun).
var knownPartial = map[string]string{
	"__longjmp": "static glibc's __longjmp is one block ending in jmp *%rdx after it has loaded the setjmp caller's %rsp; the tail exit then finds its shadow frame stale and records the activation as a partial path without its block, so the block counts 0 where callgrind counts every longjmp (setjmp.c: 2)",
}

// sameRun rewrites orig with opts, runs the copy under callgrind with
// args and returns the oracle's verdict.
func sameRun(t *testing.T, orig string, opts rewriter.Options, args []string) corpus.SameRun {
	t.Helper()
	data, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := rewriter.Rewrite(data, opts)
	if err != nil {
		t.Fatalf("%s: rewrite: %v", orig, err)
	}
	dir := t.TempDir()
	inst := filepath.Join(dir, filepath.Base(orig)+".blpp")
	if err := os.WriteFile(inst, out, 0o755); err != nil {
		t.Fatal(err)
	}
	s, _, err := corpus.RunSameRun(inst, filepath.Join(dir, "prof"), callgrind.Options{Args: args})
	if err != nil {
		t.Fatalf("%s: %v", orig, err)
	}
	return s
}

// reportSameRun fails t on any difference, on a comparison of nothing and
// on a function left out for partial paths of unknown location, and on
// instrumented code that ran after the final profile was written.
func reportSameRun(t *testing.T, name string, s corpus.SameRun) {
	t.Helper()
	t.Logf("%s: %d functions, %d blocks compared, %d differ", name, s.Funcs, s.Blocks, len(s.Diffs))
	if s.Blocks == 0 {
		t.Errorf("%s: no block compared", name)
	}
	for i, d := range s.Diffs {
		if i == 10 {
			t.Errorf("%s: ... %d more differences", name, len(s.Diffs)-10)
			break
		}
		t.Errorf("%s: %s", name, diffString(d))
	}
	for _, f := range s.Partial {
		if why, ok := knownPartial[f]; ok {
			t.Logf("%s: %s has partial paths of unknown location (known: %s); its blocks count %d executions less in all", name, f, why, s.Missing)
			continue
		}
		t.Errorf("%s: %s has partial paths of unknown location: its blocks were compared only as lower bounds", name, f)
	}
	// The final profile is written at the exit hook and again before an
	// exit_group made by instrumented code (decision 71): no instrumented
	// code runs after it.
	if len(s.Late) > 0 {
		t.Errorf("%s: ran after the final profile was written (in no profile): %s", name, lateString(s.Late, 8))
	}
	if s.Prefix > 0 {
		t.Logf("%s: %d executions of original instructions before moved entry jumps (decision 67; in no block)", name, s.Prefix)
	}
}

func diffString(d corpus.BlockDiff) string {
	if d.Note != "" {
		return fmt.Sprintf("%s %s: %s (%d times)", d.Func, d.Addr, d.Note, d.Callgrind)
	}
	return fmt.Sprintf("%s block %s: blpp %d, callgrind %d", d.Func, d.Addr, d.Blpp, d.Callgrind)
}

func lateString(l []corpus.LateFunc, top int) string {
	var parts []string
	for i, f := range l {
		if i == top {
			parts = append(parts, fmt.Sprintf("... %d more", len(l)-top))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%d instructions)", f.Func, f.Insts))
	}
	return strings.Join(parts, ", ")
}
