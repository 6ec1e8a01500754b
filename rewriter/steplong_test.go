package rewriter_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// steplongFuncs are steplong.c's functions whose activations it counts,
// in the order it prints them, and whether a longjmp abandons some.
var steplongFuncs = []struct {
	name    string
	abandon bool
}{{"leafc", false}, {"spin", true}, {"big", true}, {"settle", false}, {"small", false}, {"small2", false}}

// TestStepLongjmpClosed: a signal handler's siglongjmp out of closed
// functions (decision 57: flow-only images) leaves their shadow frames
// above the top, and the runtime, popping them (unwind_from), must clear
// their %rsp as it does every other frame's (decision 163). steplong.c
// abandons spin, closed, below a 16 KB frame; the next call at spin's
// depth (small2) reserves the same slot, and a handler that calls
// instrumented code between that reservation and small2's %rsp store
// would find spin's stale %rsp, far below its own, and unwind small2's
// live frame. The handler is left out of the instrumentation and calls
// probe_loop after one chosen step only, every step up to where small2's
// own code ran being tried in turn. Each run must count what the program
// counts, and lose nothing. With unwind_from skipping the clear of
// closed frames (fabea5b's fix undone), the step between the reservation
// and the store fails: exit_mismatch, no_record, bad_paths.
func TestStepLongjmpClosed(t *testing.T) {
	opts := rewriter.Options{NoContext: true, Exclude: regexp.MustCompile(`^on_trap$`)}
	for _, c := range procConfigs {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			orig := fixture.Build(t, "steplong.c", c)
			inst := rewriteWith(t, orig, filepath.Join(dir, "steplong.blpp"), opts)
			prof := filepath.Join(dir, "blpp.out")
			_, window := steplongRun(t, inst, prof, 0)
			if window == 0 || window > 1000 {
				t.Fatalf("steplong.c %s: window %d: the handler did not see small2 run", c, window)
			}
			for n := 1; n <= window; n++ {
				steplongRun(t, inst, prof, n)
				if t.Failed() {
					return
				}
			}
		})
	}
}

// steplongRun runs steplong.c's instrumented copy stepped, with the
// handler's call after step n (0: none), checks its profile against the
// program's own counts and returns them and the window it printed.
func steplongRun(t *testing.T, inst, prof string, n int) (map[string]uint64, int) {
	t.Helper()
	what := fmt.Sprintf("steplong.c, step %d", n)
	got := runProc(t, inst, []string{"1", strconv.Itoa(n)}, "BLPP_PROFILE="+prof)
	if got.code != 0 || got.sig != 0 || len(got.stderr) != 0 {
		t.Fatalf("%s: the rewritten program failed: %s", what, got)
	}
	counts := map[string]uint64{}
	for _, l := range strings.Split(strings.TrimSpace(string(got.stdout)), "\n") {
		var name string
		var v uint64
		if _, err := fmt.Sscanf(l, "%s %d", &name, &v); err != nil {
			t.Fatalf("%s: output line %q", what, l)
		}
		counts[name] = v
	}
	if counts["abandoned"] != 6 {
		t.Fatalf("%s: %d longjmps out of spin, want one a round (6):\n%s", what, counts["abandoned"], got.stdout)
	}
	p, err := cct.ReadFile(prof)
	if err != nil {
		t.Fatalf("%s: profile: %v", what, err)
	}
	nothingLost(t, what, p)
	calls, instr := funcCalls(t, inst, p)
	paths := funcTotals(t, inst, p)
	for _, f := range steplongFuncs {
		if !instr[f.name] {
			t.Fatalf("%s: %s is not instrumented", what, f.name)
		}
		want := counts[f.name]
		if calls[f.name] != want {
			t.Errorf("%s: %s: %d calls in the profile, the program counted %d activations", what, f.name, calls[f.name], want)
		}
		if !f.abandon && paths[f.name] < want {
			t.Errorf("%s: %s: %d path executions in the profile for %d activations, none abandoned", what, f.name, paths[f.name], want)
		}
	}
	return counts, int(counts["window"])
}
