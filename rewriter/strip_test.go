package rewriter_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestStripRewritten: strip(1) on an instrumented binary leaves a program
// that runs as the original does and writes the same profile. strip lays
// the file out again by its sections; the new program header table's
// segment had none, lost p_offset ≡ p_vaddr (mod page) and the kernel
// refused to map the stripped file (SIGSEGV at exec).
func TestStripRewritten(t *testing.T) {
	strip := fixture.RequireTool(t, "strip", "binutils")
	for _, c := range []fixture.Config{
		{CC: "gcc", Opt: "-O2", PIE: true},
		{CC: "gcc", Opt: "-O2"},
		{CC: "gcc", Opt: "-O2", Static: true},
	} {
		t.Run(c.String(), func(t *testing.T) {
			dir := t.TempDir()
			orig, inst := rewriteTo(t, "loops.c", c, dir)
			stripped := filepath.Join(dir, "loops.strp") // as long as loops.blpp: static start-up code walks argv
			if out, err := exec.Command(strip, "-o", stripped, inst).CombinedOutput(); err != nil {
				t.Fatalf("strip: %v\n%s", err, out)
			}
			want := runProc(t, orig, nil)
			profInst := runProfiled(t, "instrumented", inst, want)
			profStrip := runProfiled(t, "instrumented and stripped", stripped, want)
			if a, b := pathCounts(profInst), pathCounts(profStrip); a != b {
				t.Errorf("path executions: %d in the instrumented run, %d in the stripped one", a, b)
			}
		})
	}
}

// pathCounts adds up every path execution of every record of p.
func pathCounts(p *cct.Profile) uint64 {
	var n uint64
	for _, th := range p.Threads {
		for _, r := range th.Records {
			for _, e := range r.Paths {
				n += e.Count
			}
		}
	}
	return n
}
