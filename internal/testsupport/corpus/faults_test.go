//go:build blppfault

package corpus_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/corpus"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// TestFaultsDetected needs a blpp built with the blppfault tag (TestFaults
// runs it): for each fault the code generator can plant, a fixture run
// under the same-run oracle must come out inexact. Without a fault the
// same fixtures must be exact, so that a pass means the fault was seen.
func TestFaultsDetected(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	c := fixture.Config{CC: "gcc", Opt: "-O2"}
	cases := []struct {
		fault, src string
		opts       rewriter.Options
	}{
		{"chord", "loops.c", rewriter.Options{}},
		{"pathend", "loops.c", rewriter.Options{NoContext: true}},
		{"partial", "noreturn.c", rewriter.Options{}},
	}
	for _, k := range cases {
		t.Run(k.fault, func(t *testing.T) {
			orig := fixture.Build(t, k.src, c)
			os.Setenv("BLPP_FAULT", "")
			if s := sameRun(t, orig, k.opts, nil); !s.Exact() || len(s.Partial) > 0 || s.Blocks == 0 {
				t.Fatalf("%s without a fault: %d blocks compared, %d differ, partial %v", k.src, s.Blocks, len(s.Diffs), s.Partial)
			}
			os.Setenv("BLPP_FAULT", k.fault)
			defer os.Setenv("BLPP_FAULT", "")
			s := sameRun(t, orig, k.opts, nil)
			if s.Exact() && len(s.Partial) == 0 {
				t.Fatalf("fault %s planted in %s: the same-run oracle found nothing (%d blocks compared)", k.fault, k.src, s.Blocks)
			}
			t.Logf("fault %s in %s: %d blocks differ, partial %v (first: %v)", k.fault, k.src, len(s.Diffs), s.Partial, s.Diffs[:min(1, len(s.Diffs))])
		})
	}
}

// TestFaultThreads: the same-run oracle cannot see updates lost between
// threads, since valgrind runs one thread at a time; race.c's threads
// overlap when run natively on two cores, and its counts do not depend on
// the schedule, so a native run of the copy is compared with callgrind's
// run of the original (CheckExact). Sharing one thread block between
// threads (fault "threads") must make it inexact, or break the run.
func TestFaultThreads(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	orig := fixture.Build(t, "faults/race.c", fixture.Config{CC: "gcc", Opt: "-O2"})
	cg, err := callgrind.Run(orig, callgrind.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct {
		name string
		opts rewriter.Options
	}{{"context", rewriter.Options{}}, {"flow-only", rewriter.Options{NoContext: true}}} {
		t.Run(mode.name, func(t *testing.T) {
			check := func(planted string) (exact bool, what string) {
				os.Setenv("BLPP_FAULT", planted)
				defer os.Setenv("BLPP_FAULT", "")
				data, err := os.ReadFile(orig)
				if err != nil {
					t.Fatal(err)
				}
				out, _, err := rewriter.Rewrite(data, mode.opts)
				if err != nil {
					t.Fatal(err)
				}
				dir := t.TempDir()
				inst := filepath.Join(dir, "race.blpp")
				prof := filepath.Join(dir, "blpp.out")
				if err := os.WriteFile(inst, out, 0o755); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(inst)
				cmd.Env = append(os.Environ(), "BLPP_PROFILE="+prof, "BLPP_QUIET=1")
				got, err := cmd.Output()
				if err != nil || !bytes.Equal(got, cg.Stdout) {
					return false, fmt.Sprintf("the copy ran differently: %v, %q (original %q)", err, got, cg.Stdout)
				}
				e, err := corpus.CheckExact(orig, inst, []string{prof}, cg, nil)
				if err != nil {
					return false, err.Error()
				}
				if e.Blocks == 0 {
					t.Fatalf("%s: no block compared", planted)
				}
				return e.Exact(), fmt.Sprintf("%d blocks compared, %d differ", e.Blocks, len(e.Diffs))
			}
			if ok, what := check(""); !ok {
				t.Fatalf("without a fault: %s", what)
			}
			// Lost updates need the threads to overlap, which a loaded
			// machine does not always grant, and flow-only code touches the
			// shared block rarely since direct calls skip the gate (decision
			// 100): up to two hundred runs (a run takes tens of ms).
			for run := 1; ; run++ {
				ok, what := check("threads")
				if !ok {
					t.Logf("fault threads: run %d: %s", run, what)
					break
				}
				if run == 200 {
					t.Fatalf("fault threads planted: still exact after %d runs (%s)", run, what)
				}
			}
		})
	}
}
