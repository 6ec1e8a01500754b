package report

// Golden tests of the per-procedure summary on the synthetic model of
// export_test.go (testdata/procs-*.golden), and its sums.

import (
	"bytes"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/golden"
)

func TestProcsGolden(t *testing.T) {
	for _, flowOnly := range []bool{false, true} {
		m := exModel(t, flowOnly)
		s := MakeProcs(m)
		var buf bytes.Buffer
		if err := ProcsText(&buf, s); err != nil {
			t.Fatal(err)
		}
		name := "procs.golden"
		if flowOnly {
			name = "procs-flow-only.golden"
		}
		golden.CheckString(t, name, buf.String())

		var ex, fex uint64
		var nb, fnb int
		for _, r := range s.Funcs {
			ex += r.Executed
			nb += r.NeverBlocks
			if r.NeverInsns > r.Static || r.NeverBlocks > r.Blocks {
				t.Errorf("%s: never run %d of %d insns, %d of %d blocks", r.Name, r.NeverInsns, r.Static, r.NeverBlocks, r.Blocks)
			}
		}
		for _, r := range s.Files {
			fex += r.Executed
			fnb += r.NeverBlocks
		}
		if ex != m.TotalInsns() || fex != ex || nb != fnb {
			t.Errorf("sums: functions %d, files %d, model %d; never-entered blocks %d vs %d", ex, fex, m.TotalInsns(), nb, fnb)
		}
	}
}
