package rewriter_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// TestPromoteLinear: the runtime's work to make a cold record hot does
// not grow with the folded calls the thread made before (decision 129).
// foldchain.c makes 8,192 folded nodes and 1,000 hot records, in either
// order; both orders are the same work, and under callgrind (instruction
// counts do not vary between runs) the context-mode program must execute
// the same number of instructions within 5% either way. A promotion that
// walked the thread's every folded node cost the tree-first order 2.15
// times the other's.
func TestPromoteLinear(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	orig := fixture.Build(t, "foldchain.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true})
	dir := t.TempDir()
	inst := rewriteWith(t, orig, filepath.Join(dir, "foldchain.blpp"), rewriter.Options{})
	var ir [2]uint64
	for i, order := range []string{"tree", "hot"} {
		want := runProc(t, orig, []string{order})
		cg, err := callgrind.Run(inst, callgrind.Options{Args: []string{order}, Env: []string{"BLPP_PROFILE=" + filepath.Join(dir, order+".prof")}, Timeout: 120 * time.Second})
		if err != nil {
			t.Fatalf("foldchain %s: callgrind: %v", order, err)
		}
		if cg.ExitCode != 0 || !bytes.Equal(cg.Stdout, want.stdout) {
			t.Fatalf("foldchain %s: under callgrind: exit %d, stdout %q; natively %q", order, cg.ExitCode, cg.Stdout, want.stdout)
		}
		ir[i] = totalIr(cg)
	}
	t.Logf("folded nodes first: %d instructions, hot records first: %d (%.3fx)", ir[0], ir[1], float64(ir[0])/float64(ir[1]))
	if ir[0] > ir[1]+ir[1]/20 || ir[1] > ir[0]+ir[0]/20 {
		t.Errorf("the same work costs %d instructions with the folded nodes made first and %d with the hot records made first: promotion depends on the folded nodes", ir[0], ir[1])
	}
}
