package rewriter_test

import (
	"bytes"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// TestCallCost holds the instructions a call costs to a budget (decision
// 100): callcost.c makes about 200,000 calls of every kind (direct calls
// to a function that calls on, to leaves of one and of several paths,
// calls through pointers), and the rewritten program, run under
// callgrind, may execute at most budget more instructions per call than
// the original, counted over the whole process (the runtime's start-up
// and profile included). Instruction counts do not vary between runs.
// The budgets are the costs measured with decision 119 (21.3 and 39.7)
// plus a little: decision 110's code cost 21.3 and 42.9 here, decision
// 104's 23.9 and 43.5, decision 100's 24 and 47, and without its direct
// calls the context image cost 52.
func TestCallCost(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	c := fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}
	orig := fixture.Build(t, "callcost.c", c)
	want := runProc(t, orig, nil)
	fields := bytes.Fields(want.stdout)
	if len(fields) != 2 {
		t.Fatalf("callcost.c printed %q, want the calls and a sum", want.stdout)
	}
	calls, err := strconv.ParseUint(string(fields[0]), 10, 64)
	if err != nil || calls < 100000 {
		t.Fatalf("callcost.c: %q calls", fields[0])
	}
	native := totalIr(callgrindOf(t, "callcost.c", orig, nil, want))
	for _, m := range []struct {
		name   string
		opts   rewriter.Options
		budget uint64
	}{
		{"flow-only", rewriter.Options{NoContext: true}, 22},
		{"context", rewriter.Options{}, 40},
	} {
		what := "callcost.c " + m.name
		dir := t.TempDir()
		inst := rewriteWith(t, orig, filepath.Join(dir, "callcost.blpp"), m.opts)
		cg, err := callgrind.Run(inst, callgrind.Options{Env: []string{"BLPP_PROFILE=" + filepath.Join(dir, "prof")}, Timeout: 120 * time.Second})
		if err != nil {
			t.Fatalf("%s: callgrind: %v", what, err)
		}
		if cg.ExitCode != 0 || !bytes.Equal(cg.Stdout, want.stdout) {
			t.Fatalf("%s: under callgrind: exit %d, stdout %q; natively %q", what, cg.ExitCode, cg.Stdout, want.stdout)
		}
		ir := totalIr(cg)
		if ir < native {
			t.Fatalf("%s: %d instructions, fewer than the original's %d", what, ir, native)
		}
		per := (ir - native) / calls
		t.Logf("%s: %d instructions, native %d, %d calls: %d more per call (budget %d)", what, ir, native, calls, per, m.budget)
		if per > m.budget {
			t.Errorf("%s: %d more instructions per call than the original, budget %d", what, per, m.budget)
		}
	}
}

// totalIr is the instructions every object of a callgrind run executed.
func totalIr(cg *callgrind.Profile) uint64 {
	var n uint64
	for _, ir := range cg.ObjectIr {
		n += ir
	}
	return n
}
