package x86

import (
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestObjdumpFixtures checks instruction boundaries, kinds, branch and
// rip-relative targets against objdump for the whole .text of every C
// fixture in every configuration of the matrix (gcc and clang, -O0/-O2/-O3,
// PIE and not, static, stripped).
func TestObjdumpFixtures(t *testing.T) {
	objdump := fixture.RequireTool(t, "objdump", "binutils")
	total := 0
	for _, c := range fixture.Matrix() {
		for _, src := range fixture.Sources() {
			path := fixture.Build(t, src, c)
			a := compareWithObjdump(t, objdump, path, ".text")
			if a.insts == 0 {
				t.Errorf("%s %s: objdump listed no instructions", src, c)
			}
			total += a.insts
			if len(a.failures) > 0 || a.lenOK != a.insts {
				a.report(t, src+" "+c.String())
			}
		}
	}
	t.Logf("fixtures: %d instructions agree with objdump", total)
}
